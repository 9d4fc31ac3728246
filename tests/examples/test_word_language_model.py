"""examples/word_language_model.py: alone and under the launcher with dist_sync, on a
tiny synthetic corpus; and what it says when the Penn Treebank is not there."""
import importlib.util
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAUNCH = [sys.executable, os.path.join(ROOT, 'tools', 'launch.py')]
PROGRAM = [sys.executable, 'examples/word_language_model.py']
# no dropout: a run with 2 workers of 4 columns takes the steps of one with 8 columns
TINY = ['--synthetic', '300', '--emsize', '16', '--nhid', '16', '--nlayers', '1', '--bptt',
        '10', '--epochs', '2', '--dropout', '0', '--tied', '--log-interval', '20']
VALID = r'^%s\| end of epoch +(\d) \| time: +[\d.]+s \| valid loss +[\d.]+ \| valid ppl +([\d.]+)$'


def _run(cmd, tmp_path):
    env = dict(os.environ)
    env['PYTHONPATH'] = ROOT + os.pathsep + env.get('PYTHONPATH', '')
    env['MINIGLUON_HOME'] = str(tmp_path / 'home')
    env['OMP_NUM_THREADS'] = '1'
    env.pop('DMLC_ROLE', None)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240,
                          stdin=subprocess.DEVNULL)
    return proc.returncode, proc.stdout + proc.stderr


def _vocabulary_size(out):
    return int(re.search(r'Vocabulary: (\d+) words', out).group(1))


@pytest.fixture(scope='module')
def alone(tmp_path_factory):
    """One process, 8 columns, hybridized: (output, [valid ppl of epochs 1 and 2])."""
    tmp_path = tmp_path_factory.mktemp('alone')
    code, out = _run(PROGRAM + TINY + ['--batch-size', '8', '--hybridize',
                                       '--save', str(tmp_path / 'best.params')], tmp_path)
    assert code == 0, out
    assert os.path.getsize(str(tmp_path / 'best.params')) > 0
    return out, [float(ppl) for _, ppl in re.findall(VALID % '', out, re.M)]


def test_alone_perplexity_falls(alone):
    out, ppl = alone
    assert 'synthetic corpus of 300 sentences' in out, out
    assert re.search(r'^\| epoch   1 \| batch    20/   46 \| lr 20\.00 \| ms/batch +[\d.]+ \| '
                     r'loss +[\d.]+ \| ppl +[\d.]+$', out, re.M), out
    # an untrained model's perplexity is about the vocabulary's size (313 words)
    assert len(ppl) == 2 and ppl[1] < ppl[0] < _vocabulary_size(out) / 3, out
    assert re.search(r'^\| end of training \| [\d.]+ s \| best valid ppl +%.2f \| its test '
                     r'ppl +[\d.]+$' % ppl[1], out, re.M), out


def test_two_workers_agree_and_take_the_steps_of_one_process(tmp_path, alone):
    code, out = _run(LAUNCH + ['-n', '2', '-s', '1', '--launcher', 'local'] + PROGRAM + TINY +
                     ['--kvstore', 'dist_sync', '--batch-size', '4',
                      '--save', str(tmp_path / 'best.params')], tmp_path)
    assert code == 0, out
    ppl = [[float(p) for _, p in re.findall(VALID % (r'\[worker %d\] ' % rank), out, re.M)]
           for rank in (0, 1)]
    assert len(ppl[0]) == 2 and ppl[0] == ppl[1], out   # one model on every worker
    assert ppl[0][1] < ppl[0][0] < _vocabulary_size(out) / 3, out
    # each worker trains on its 4 of the 8 columns: the first epoch is the single
    # process's (the later ones drift apart by float32 rounding in the sums)
    assert ppl[0][0] == pytest.approx(alone[1][0], rel=1e-3), (out, alone[0])
    assert out.count('saved to %s' % (tmp_path / 'best.params')) == 2, out  # worker 0 only
    assert '[worker 1] | end of epoch   2 | test loss' in out


def _example():
    spec = importlib.util.spec_from_file_location(
        'word_language_model', os.path.join(ROOT, 'examples', 'word_language_model.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_without_the_penn_treebank_it_says_so_and_writes_a_synthetic_one(tmp_path, capsys,
                                                                          monkeypatch):
    example = _example()
    monkeypatch.setattr(example, 'DEFAULT_SYNTHETIC', 40)
    folder = example.corpus_folder(example.parse_args(['--data', str(tmp_path)]))
    assert 'The Penn Treebank is not in %s' % tmp_path in capsys.readouterr().out
    assert folder == str(tmp_path / 'synthetic-40')
    vocab, ids = example.read_corpus(folder)
    assert len(ids['train']) > 40 * 5 and ids['train'].max() == len(vocab) - 1
    assert vocab.count('<eos>') == 1 and (ids['valid'] == vocab.index('<eos>')).sum() == 4
    (tmp_path / 'ptb.train.txt').write_text(' a b \n')
    with pytest.raises(SystemExit, match='ptb.valid.txt, ptb.test.txt missing'):
        example.corpus_folder(example.parse_args(['--data', str(tmp_path)]))


def test_batches_are_columns_and_targets_are_one_token_on():
    import numpy as np
    example = _example()
    data = example.batchify(np.arange(23), 4)     # 5 rows of 4 columns; 3 tokens dropped
    assert data.shape == (5, 4) and list(data[:, 1]) == [5, 6, 7, 8, 9]
    pieces = list(example.segments(data, 3))
    assert [d.shape for d, _ in pieces] == [(3, 4), (1, 4)]
    assert list(pieces[1][1]) == [4, 9, 14, 19]   # the last row, flattened


def test_tied_needs_equal_sizes(capsys):
    with pytest.raises(SystemExit):
        _example().parse_args(['--tied', '--emsize', '8', '--nhid', '16'])
    assert '--emsize (8) must equal --nhid (16)' in capsys.readouterr().err
