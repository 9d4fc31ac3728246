"""mx.rnn.encode_sentences and BucketSentenceIter: vocabularies, buckets, padding, labels,
and the very batches MXNet 1.9.1 gives for the same sentences and seeds."""
import inspect
import json
import random

import numpy as np
import pytest

import minigluon as mx
from minigluon.base import MXNetError


def test_encode_sentences_builds_and_uses_a_vocabulary():
    encoded, vocab = mx.rnn.encode_sentences([['a', 'b'], ['b', 'c', 'a']], invalid_label=0,
                                             start_label=0)
    assert vocab == {'\n': 0, 'a': 1, 'b': 2, 'c': 3}  # new ids skip invalid_label
    assert encoded == [[1, 2], [2, 3, 1]]
    encoded, vocab = mx.rnn.io.encode_sentences([['a', 'x'], ['y']], vocab=dict(vocab),
                                                unknown_token='<unk>', start_label=4)
    assert encoded == [[1, 4], [4]] and vocab['<unk>'] == 4
    with pytest.raises(MXNetError, match="unknown token 'x'"):
        mx.rnn.encode_sentences([['x']], vocab={'a': 1})


def test_bucket_sentence_iter_pads_shifts_and_drops():
    sentences = [[1, 2], [3, 4, 5], [6], [7, 8, 9, 10, 11], [12, 13, 14]]
    it = mx.rnn.BucketSentenceIter(sentences, batch_size=2, buckets=[4, 2], invalid_label=0)
    assert it.buckets == [2, 4] and it.default_bucket_key == 4  # too long: dropped
    assert it.provide_data[0].shape == (2, 4) and it.provide_label[0].name == 'softmax_label'
    batches = {b.bucket_key: b for b in it}
    assert sorted(batches) == [2, 4]
    rows = sorted(batches[4].data[0].asnumpy().tolist())
    assert rows == [[3, 4, 5, 0], [12, 13, 14, 0]]
    labels = sorted(batches[4].label[0].asnumpy().tolist())
    assert labels == [[4, 5, 0, 0], [13, 14, 0, 0]]
    time_major = mx.rnn.BucketSentenceIter(sentences, batch_size=2, buckets=[2, 4],
                                           layout='TN')
    batch = next(b for b in time_major if b.bucket_key == 4)
    assert batch.data[0].shape == (4, 2) and batch.provide_data[0].shape == (4, 2)
    with pytest.raises(MXNetError, match='no sentence length occurs'):
        mx.rnn.BucketSentenceIter(sentences, batch_size=3)


def _batches(mx, folder):
    """Two epochs of BucketSentenceIter batches, written to folder/batches.json (runs under
    MXNet and under minigluon, the same source)."""
    import json
    import os
    import random
    import numpy as np
    lengths = np.random.RandomState(3).randint(1, 10, size=70)
    sentences = [list(range(1, n + 1)) for n in lengths]
    answers = {}
    for case, kwargs in (('explicit', dict(buckets=[6, 3, 8], invalid_label=-1)),
                         ('auto_tn', dict(layout='TN', invalid_label=0))):
        random.seed(11)
        np.random.seed(11)
        it = mx.rnn.BucketSentenceIter(sentences, 4, **kwargs)
        epochs = []
        for _ in range(2):
            epochs.append([[b.bucket_key, b.data[0].asnumpy().tolist(),
                            b.label[0].asnumpy().tolist(), list(b.provide_data[0].shape)]
                           for b in it])
            it.reset()
        answers[case] = [it.buckets, it.default_bucket_key,
                         list(it.provide_data[0].shape), epochs]
    with open(os.path.join(folder, 'batches.json'), 'w') as f:
        json.dump(answers, f)


def test_bucket_sentence_iter_gives_mxnets_batches(tmp_path, run_mxnet):
    run_mxnet(tmp_path, 'import sys\nimport mxnet as mx\n%s\n_batches(mx, sys.argv[1])\n'
              % inspect.getsource(_batches))
    theirs = json.loads((tmp_path / 'batches.json').read_text())
    saved = random.getstate(), np.random.get_state()
    try:
        _batches(mx, str(tmp_path))
    finally:
        random.setstate(saved[0])
        np.random.set_state(saved[1])
    mine = json.loads((tmp_path / 'batches.json').read_text())
    assert mine == theirs
