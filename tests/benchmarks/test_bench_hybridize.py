"""benchmarks/bench_hybridize.py runs end to end at a tiny size (``--smoke``), so it
cannot rot; with MINIGLUON_MXNET_PYTHON set it also runs MXNet's hybridized step beside
minigluon's."""
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_bench_hybridize_prints_its_table_and_writes_json_at_a_tiny_size(tmp_path):
    # numpy's kernels: numba's first compilation would take longer than the whole run
    env = dict(os.environ, PYTHONPATH=REPO, MINIGLUON_CPU_KERNELS='numpy')
    out = str(tmp_path / 'results.json')
    done = subprocess.run([sys.executable, os.path.join(REPO, 'benchmarks', 'bench_hybridize.py'),
                           '--smoke', '--json', out],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    with_mxnet = bool(os.environ.get('MINIGLUON_MXNET_PYTHON'))
    rows = [line.split('|') for line in done.stdout.splitlines()
            if line.startswith('| mlp |') or line.startswith('| resnet |')]
    runs = [row for row in rows if row[2].split()[0] in ('minigluon', 'MXNet')]
    assert len(runs) == 2 * (3 if with_mxnet else 2), done.stdout
    assert all(float(row[3]) > 0 for row in runs), done.stdout
    assert 'WARNING' not in done.stdout, done.stdout
    with open(out) as f:
        report = json.load(f)
    assert report['settings']['batch_size'] == 2 and report['settings']['repeat'] == 1
    floor = [row for row in rows if row[2].strip() == 'GEMM floor']
    assert len(floor) == 1 and floor[0][1].strip() == 'mlp' and float(floor[0][3]) > 0
    assert report['ratios']['mlp']['GEMM floor/imperative speed'] > 0
    assert report['ratios']['resnet']['imperative/its Convolution kernels'] > 1
    assert report['ratios']['mlp']['hybridized/imperative speed, paired in one process'] > 0
    assert 'resnet: the hybridized step\'s time in kernels (profiler): Convolution' in done.stdout
    for model in ('mlp', 'resnet'):
        ratios = report['ratios'][model]
        assert ratios['hybridized/imperative speed'] > 0
        assert ratios['hybridized/imperative peak RSS'] > 0
        assert ('minigluon/MXNet hybridized speed' in ratios) == with_mxnet
        imperative = report['results'][model]['minigluon imperative']
        hybridized = report['results'][model]['minigluon hybridized']
        assert imperative['first_loss'] == hybridized['first_loss'] or \
            abs(imperative['first_loss'] - hybridized['first_loss']) < 1e-4
