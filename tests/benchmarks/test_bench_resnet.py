"""benchmarks/bench_resnet.py runs end to end at a tiny size (``--smoke``), so it cannot
rot, with PyTorch beside it when it is there and MXNet 1.9.1 when
``MINIGLUON_MXNET_PYTHON`` names a Python that has it; its PyTorch twins have the model
zoo's parameters, shape for shape. Its float16 runs are for GPUs (numpy has no float16
BLAS: 20 s for one tiny step here); tools/gpu_check.sh runs them."""
import importlib.util
import os
import re
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HAS_TORCH = importlib.util.find_spec('torch') is not None


def test_thumbnail_table_and_profile_at_one_and_two_threads(smoke):
    # (PyTorch beside it in the next test: one thread count is enough to check its rows)
    mxnet = os.environ.get('MINIGLUON_MXNET_PYTHON')
    flags = ['--profile', '--tf32', '--threads', '1,2']
    flags += ['--mxnet-python', mxnet] if mxnet else []
    out = smoke('bench_resnet.py', *flags)
    assert 'resnet18_v1(classes=10, thumbnail=True) at 32 pixels, batch 2, float32 (TF32), ' \
        'cpu: ' in out, out
    frameworks = ['minigluon'] + (['mxnet'] if mxnet else [])
    rows = re.findall(r'^([12]) +(minigluon|torch|mxnet) +([\d.]+) ', out, re.M)
    assert [(t, fw) for t, fw, _ in rows] == [(t, fw) for t in '12' for fw in frameworks]
    assert all(float(speed) > 0 for _, _, speed in rows), out
    assert len(re.findall(r'^ratio minigluon/', out, re.M)) == 2 * (len(frameworks) - 1)
    assert re.search(r'^Convolution 2x64x32x32 64x64x3x3 s1,1 +4 ', out, re.M), out


def test_imagenet_stem_runs_at_its_smoke_size(smoke):
    out = smoke('bench_resnet.py', '--model', 'resnet18_v1', '--image-size', '224', '--classes', '1000',
               *(['--compare-torch'] if HAS_TORCH else []))
    assert 'resnet18_v1(classes=1000) at 64 pixels, batch 2' in out, out
    rows = re.findall(r'^\S+ +(minigluon|torch) +([\d.]+) ', out, re.M)
    assert [fw for fw, _ in rows] == ['minigluon'] + (['torch'] if HAS_TORCH else []), out
    assert all(float(speed) > 0 for _, speed in rows), out


@pytest.mark.skipif(not HAS_TORCH, reason='the twins are PyTorch modules: '
                    '`pip install -r benchmarks/requirements.txt`')
@pytest.mark.parametrize('model,thumbnail', [('resnet18_v1', True), ('resnet50_v1', False)])
def test_torch_twins_have_the_model_zoos_parameters(model, thumbnail):
    sys.path.insert(0, os.path.join(REPO, 'benchmarks'))
    try:
        from bench_resnet import torch_resnet
    finally:
        sys.path.pop(0)
    import minigluon as mx
    net = mx.gluon.model_zoo.vision.get_model(model, classes=7, thumbnail=thumbnail)
    net.initialize()
    net(mx.nd.zeros((1, 3, 64, 64)))
    mine = sorted(tuple(p.shape) for name, p in net.collect_params().items()
                  if not name.endswith(('running_mean', 'running_var')))
    twin = torch_resnet(model, 7, thumbnail)
    theirs = sorted(tuple(p.shape) for p in twin.parameters())
    assert len(mine) == len(theirs)
    assert sum(int(np.prod(s)) for s in mine) == sum(int(np.prod(s)) for s in theirs)


def test_layers_are_timed_alone_beside_pytorch(smoke):
    out = smoke('bench_resnet.py', '--layers', '--threads', '1', *(['--compare-torch'] if HAS_TORCH else []))
    names = ['7x7 stride-2 stem convolution', '3x3 stride-2 max pooling',
             '3x3 convolution, 64 channels, 56x56', '3x3 stride-2 convolution, 64 to 128',
             '1x1 stride-2 convolution, 64 to 128', '3x3 convolution, 512 channels, 7x7',
             'BatchNorm + ReLU, 64 channels, 56x56']
    for name in names:
        row = re.search(r'^1 +%s +([\d.]+) +([\d.]+|-)' % re.escape(name), out, re.M)
        assert row and float(row.group(1)) > 0, (name, out)
        assert (row.group(2) != '-') == HAS_TORCH, (name, out)
