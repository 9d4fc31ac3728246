"""Models moving between real MXNet 1.9.1 and minigluon through exported graphs.

One MXNet process exports every model-zoo family (random weights, BatchNorm
statistics away from their defaults, one forward first) and a custom HybridBlock with
two inputs and a nested output, at the smallest input each model takes; minigluon
imports each with ``SymbolBlock.imports`` and must give MXNet's outputs to 1e-5. The
imported ResNet fine-tunes with a Trainer exactly as minigluon's own zoo model with
the same weights. Then minigluon writes the graphs, and MXNet must run them to 1e-5.
Needs MINIGLUON_MXNET_PYTHON (see ``tests/conftest.py``); skips without it."""
import json

import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, gluon, nd
from minigluon.gluon.model_zoo import vision
from minigluon.test_utils import assert_almost_equal

# the smallest square input of each family (the fixed-size pools of DenseNet,
# SqueezeNet and Inception need that much); 10 classes keep the files small
SIDES = {'resnet18_v1': 32, 'resnet18_v2': 32, 'vgg11_bn': 32, 'alexnet': 63,
         'densenet121': 221, 'squeezenet1.0': 213, 'inceptionv3': 299, 'mobilenet1.0': 32,
         'mobilenetv2_1.0': 32}

# code both sides run (``mx`` is MXNet or minigluon): BatchNorm statistics and affine
# parameters away from their defaults, and a block with two inputs and a nested output
SHARED_CODE = '''
def spread_statistics(net):
    for k, p in net.collect_params().items():
        if k.endswith(('running_mean', 'beta')):
            p.set_data(mx.nd.array(np.random.RandomState(1).uniform(-0.2, 0.2, p.shape)))
        if k.endswith(('running_var', 'gamma')):
            p.set_data(mx.nd.array(np.random.RandomState(2).uniform(0.5, 1.5, p.shape)))


class TwoInputs(mx.gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.dense = mx.gluon.nn.Dense(6, flatten=False)
            self.norm = mx.gluon.nn.LayerNorm()
            self.conv = mx.gluon.nn.Conv2D(3, 3, padding=1)
            self.bn = mx.gluon.nn.BatchNorm()
            self.act = mx.gluon.nn.LeakyReLU(0.1)

    def hybrid_forward(self, F, x, y):
        h = self.norm(self.dense(x))
        img = self.act(self.bn(self.conv(y)))
        img = F.Pooling(img, kernel=(3, 3), pad=(1, 1), pool_type='avg',
                        count_include_pad=False)
        pooled = F.mean(img, axis=(2, 3)) * (F.max(img, axis=(2, 3)) <= 0.5)
        joint = F.concat(h.sum(axis=1), pooled, dim=1)
        probs = F.softmax(joint * 2 + 1)
        return probs, [F.relu(h).transpose((0, 2, 1)), F.sigmoid(pooled) - 0.5]
'''

MXNET_EXPORT = '''
import json
import sys
import numpy as np
import mxnet as mx
folder = sys.argv[1]
SIDES = %r
mx.random.seed(0)
%s


for name, side in SIDES.items():
    net = mx.gluon.model_zoo.vision.get_model(name, classes=10)
    net.initialize(mx.init.Xavier(magnitude=2))
    net.hybridize()
    x = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, (1, 3, side, side)))
    net(x)
    spread_statistics(net)
    net.export('%%s/%%s' %% (folder, name))
    if name == 'resnet18_v1':  # the same weights by structural name, for minigluon's zoo
        net.save_parameters('%%s/%%s.params' %% (folder, name))
        with open('%%s/%%s-names.json' %% (folder, name), 'w') as f:
            json.dump({k: p.name for k, p in net._collect_params_with_prefix().items()}, f)
    np.save('%%s/%%s-x.npy' %% (folder, name), x.asnumpy())
    np.save('%%s/%%s-out.npy' %% (folder, name), net(x).asnumpy())

net = TwoInputs()
net.initialize(mx.init.Xavier())
net.hybridize()
rng = np.random.RandomState(3)
x, y = mx.nd.array(rng.uniform(-1, 1, (2, 4, 5))), mx.nd.array(rng.uniform(-1, 1, (2, 2, 6, 6)))
net(x, y)
spread_statistics(net)
net.export(folder + '/custom')
probs, (h, p) = net(x, y)
for key, value in dict(x=x, y=y, probs=probs, h=h, p=p).items():
    np.save('%%s/custom-%%s.npy' %% (folder, key), value.asnumpy())
''' % (SIDES, SHARED_CODE)

# MXNet runs each graph minigluon wrote: jobs.json lists (file prefix, input names,
# input files); the outputs go to <prefix>-mxnet<i>.npy
MXNET_IMPORT = '''
import json
import sys
import numpy as np
import mxnet as mx
folder = sys.argv[1]
with open(folder + '/jobs.json') as f:
    jobs = json.load(f)
for prefix, names, inputs in jobs:
    path = '%s/%s' % (folder, prefix)
    net = mx.gluon.SymbolBlock.imports(path + '-symbol.json', names, path + '-0000.params')
    outs = net(*[mx.nd.array(np.load('%s/%s' % (folder, x))) for x in inputs])
    for i, out in enumerate(outs if isinstance(outs, list) else [outs]):
        np.save('%s-mxnet%d.npy' % (path, i), out.asnumpy())
mx.mod.Module.load(folder + '/mg-resnet18_v1', 0, label_names=None)
'''

@pytest.fixture(autouse=True)
def _fresh_names():
    """Nodes made here take counters of their own (``activation0``), leaving the
    process's names to the tests that check them."""
    with mx.name.NameManager():
        yield


_EXPORTED = {}


@pytest.fixture
def mxnet_exports(request, tmp_path_factory):
    """The folder where MXNet exported the models (once per test session: only the
    first test asks run_mxnet, which starts MXNet to check it imports)."""
    if 'folder' not in _EXPORTED:
        run_mxnet = request.getfixturevalue('run_mxnet')
        folder = tmp_path_factory.mktemp('mxnet_exports')
        run_mxnet(folder, MXNET_EXPORT)
        _EXPORTED['folder'] = folder
    return _EXPORTED['folder']


def _close(out, expected):
    return np.abs(out - expected).max() <= 1e-5 * np.abs(expected).max()


def test_mxnet_exports_of_every_zoo_family_run_in_minigluon(mxnet_exports):
    folder = mxnet_exports
    wrong = []
    for name in SIDES:
        net = gluon.SymbolBlock.imports('%s/%s-symbol.json' % (folder, name), ['data'],
                                        '%s/%s-0000.params' % (folder, name))
        out = net(nd.array(np.load(folder / ('%s-x.npy' % name)))).asnumpy()
        expected = np.load(folder / ('%s-out.npy' % name))
        if out.shape != expected.shape or not _close(out, expected):
            wrong.append(name)
    assert not wrong, 'outputs differ from MXNet for %s' % wrong


def test_mxnet_export_of_a_block_with_two_inputs_and_a_nested_output(mxnet_exports):
    folder = mxnet_exports
    net = gluon.SymbolBlock.imports(str(folder / 'custom-symbol.json'), ['data0', 'data1'],
                                    str(folder / 'custom-0000.params'))
    saved = {k: np.load(folder / ('custom-%s.npy' % k)) for k in ('x', 'y', 'probs', 'h', 'p')}
    outs = net(nd.array(saved['x']), nd.array(saved['y']))
    assert len(outs) == 3  # MXNet's file keeps no nesting: the outputs come flat
    for out, key in zip(outs, ('probs', 'h', 'p')):
        assert _close(out.asnumpy(), saved[key]), key


def test_imported_resnet_fine_tunes_as_the_zoo_model(mxnet_exports):
    folder = mxnet_exports
    imported = gluon.SymbolBlock.imports(str(folder / 'resnet18_v1-symbol.json'), ['data'],
                                         str(folder / 'resnet18_v1-0000.params'))
    zoo = vision.resnet18_v1(classes=10)
    zoo.load_parameters(str(folder / 'resnet18_v1.params'))
    mxnet_names = json.loads((folder / 'resnet18_v1-names.json').read_text())
    pairs = [(path, param, imported.collect_params()[mxnet_names[path]])
             for path, param in zoo._collect_params_with_prefix().items()]
    rng = np.random.RandomState(5)
    x = nd.array(rng.uniform(-1, 1, (4, 3, 32, 32)))
    label = nd.array(rng.randint(0, 10, 4))
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for net in (zoo, imported):
        with autograd.record():
            loss = loss_fn(net(x), label)
        loss.backward()
    assert len(pairs) == len(imported.collect_params())
    for path, param, twin in pairs:
        assert twin.grad_req == param.grad_req, path
        if param.grad_req != 'null':
            assert_almost_equal(twin.grad(), param.grad(), rtol=1e-4, atol=1e-6,
                                names=(twin.name, path))
        else:  # training updated the moving statistics alike
            assert_almost_equal(twin.data(), param.data(), rtol=1e-5, atol=1e-6,
                                names=(twin.name, path))
    trainer = gluon.Trainer(imported.collect_params(), 'sgd', {'learning_rate': 0.001})
    losses = []
    for _ in range(3):
        with autograd.record():
            loss = loss_fn(imported(x), label)
        loss.backward()
        trainer.step(4)
        losses.append(loss.mean().asscalar())
    assert losses[2] < losses[1] < losses[0]


def _shared():
    """``SHARED_CODE`` run with ``mx`` meaning minigluon."""
    namespace = {'mx': mx, 'np': np}
    exec(SHARED_CODE, namespace)  # pylint: disable=exec-used
    return namespace


def test_minigluon_exports_run_in_mxnet(mxnet_exports, run_mxnet, tmp_path):
    """minigluon exports every zoo family and the custom block, and re-exports graphs
    MXNet wrote; MXNet 1.9.1 imports each and gives minigluon's outputs."""
    shared = _shared()
    jobs, expected = [], {}

    def export(net, prefix, inputs, outputs):
        net.export(str(tmp_path / prefix))
        names = ['data'] if len(inputs) == 1 else ['data%d' % i for i in range(len(inputs))]
        files = []
        for i, x in enumerate(inputs):
            files.append('%s-x%d.npy' % (prefix, i))
            np.save(tmp_path / files[-1], x.asnumpy())
        jobs.append([prefix, names, files])
        expected[prefix] = [o.asnumpy() for o in outputs]

    rng = np.random.RandomState(0)
    mx.random.seed(0)
    for name, side in SIDES.items():
        net = vision.get_model(name, classes=10)
        net.initialize(mx.init.Xavier(magnitude=2))
        net.hybridize()
        x = nd.array(rng.uniform(-1, 1, (1, 3, side, side)))
        net(x)
        shared['spread_statistics'](net)
        export(net, 'mg-' + name, [x], [net(x)])
    net = shared['TwoInputs']()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    xy = [nd.array(rng.uniform(-1, 1, (2, 4, 5))), nd.array(rng.uniform(-1, 1, (2, 2, 6, 6)))]
    net(*xy)
    shared['spread_statistics'](net)
    probs, (h, p) = net(*xy)
    export(net, 'mg-custom', xy, [probs, h, p])
    # minigluon's own import gives the nesting back (graph attribute minigluon_formats)
    again = gluon.SymbolBlock.imports(str(tmp_path / 'mg-custom-symbol.json'),
                                      ['data0', 'data1'], str(tmp_path / 'mg-custom-0000.params'))
    assert_almost_equal(again(*xy)[1][1], p)
    # graphs MXNet wrote, read and written again by minigluon
    for name in ('resnet18_v1', 'custom'):
        names = ['data'] if name != 'custom' else ['data0', 'data1']
        block = gluon.SymbolBlock.imports(str(mxnet_exports / ('%s-symbol.json' % name)),
                                          names, str(mxnet_exports / ('%s-0000.params' % name)))
        inputs = [nd.array(np.load(mxnet_exports / ('%s-x.npy' % name)))] if name != 'custom' \
            else [nd.array(np.load(mxnet_exports / ('custom-%s.npy' % k))) for k in 'xy']
        outs = block(*inputs)
        export(block, 'again-' + name, inputs, outs if isinstance(outs, list) else [outs])
    (tmp_path / 'jobs.json').write_text(json.dumps(jobs))
    run_mxnet(tmp_path, MXNET_IMPORT)
    wrong = []
    for prefix, outputs in expected.items():
        for i, out in enumerate(outputs):
            if not _close(np.load(tmp_path / ('%s-mxnet%d.npy' % (prefix, i))), out):
                wrong.append('%s output %d' % (prefix, i))
    assert not wrong, 'MXNet gives other outputs for the graphs minigluon wrote: %s' % wrong
