"""mx.io.CSVIter: batches, pads, indices and epochs as MXNet 1.9.1's C++ CSVIter."""
import numpy as np
import pytest

import minigluon as mx

_SCRIPT = '''
import json, os, sys
import mxnet as mx

folder = sys.argv[1]
def write(name, rows):
    path = os.path.join(folder, name)
    with open(path, 'w') as f:
        f.write(''.join(','.join(str(v) for v in row) + '\\n' for row in rows))
    return path

data = write('data.csv', [[i, 10 * i, 0.5 * i, -i] for i in range(1, 11)])
labels = write('labels.csv', [[i, -i] for i in range(1, 11)])
big = write('big.csv', [[2147483648 + i] * 4 for i in range(3)])

def epochs(it, n):
    out = []
    for _ in range(n):
        out.append([[b.data[0].asnumpy().tolist(), b.label[0].asnumpy().tolist(), b.pad,
                     b.index.tolist()] for b in it])
        it.reset()
    return out

def desc(it):
    return [[d.name, list(d.shape), str(d.dtype)] for d in it.provide_data + it.provide_label]

answer = {}
it = mx.io.CSVIter(data_csv=data, data_shape=(2, 2), batch_size=3)
answer['round'] = [epochs(it, 4), desc(it)]
it = mx.io.CSVIter(data_csv=data, data_shape=(4,), label_csv=labels, label_shape=(2,),
                   batch_size=4, round_batch=False, dtype='int32')
answer['no-round-int32'] = [epochs(it, 2), desc(it)]
it = mx.io.CSVIter(data_csv=big, data_shape=(4,), batch_size=2, dtype='int64',
                   data_name='x', label_name='y')
answer['int64'] = [epochs(it, 2), desc(it)]
it = mx.io.CSVIter(data_csv=data, data_shape=(4,), label_csv=labels, label_shape=(2,),
                   batch_size=12)
answer['bigger-batch'] = epochs(it, 1)
with open(os.path.join(folder, 'answer.json'), 'w') as f:
    json.dump(answer, f)
'''


def test_batches_match_mxnet(answers_of_both):
    mxnet, minigluon = answers_of_both(_SCRIPT, 'answer.json')
    for key in mxnet:
        assert minigluon[key] == mxnet[key], key


def _write(path, rows):
    path.write_text(''.join(','.join(str(v) for v in row) + '\n' for row in rows))
    return str(path)


def test_round_batch_continues_after_the_borrowed_rows(tmp_path):
    # MXNet's documented example: 4 rows, batches of 3
    path = _write(tmp_path / 'd.csv', [[1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 6]])
    it = mx.io.CSVIter(data_csv=path, data_shape=(3,), batch_size=3)
    first = [(b.data[0].asnumpy()[:, 0].tolist(), b.pad) for b in it]
    assert first == [([1, 2, 3], 0), ([4, 1, 2], 2)]
    it.reset()
    assert it.next().data[0].asnumpy()[:, 0].tolist() == [3, 4, 1]


def test_reset_right_after_construction_acts_as_mxnet_reading_ahead(tmp_path):
    path = _write(tmp_path / 'd.csv', [[i] for i in range(1, 11)])
    it = mx.io.CSVIter(data_csv=path, data_shape=(1,), batch_size=3)
    it.reset()
    # MXNet's thread read the whole epoch, borrowing two rows of the next one
    assert [b.data[0].asnumpy()[:, 0].tolist() for b in it] == [[3, 4, 5], [6, 7, 8],
                                                                [9, 10, 1]]


def test_a_folder_is_read_file_by_file_and_blank_lines_are_skipped(tmp_path):
    _write(tmp_path / 'b.csv', [[3, 30], [4, 40]])
    (tmp_path / 'a.csv').write_text('1,10,\n\n2, 20\n')
    it = mx.io.CSVIter(data_csv=str(tmp_path), data_shape=(2,), batch_size=4)
    np.testing.assert_array_equal(it.next().data[0].asnumpy(),
                                  [[1, 10], [2, 20], [3, 30], [4, 40]])


def test_errors_name_the_problem(tmp_path):
    path = _write(tmp_path / 'd.csv', [[1, 2], [3]])
    with pytest.raises(mx.MXNetError, match=r'line 2 of .* has 1 values but data_shape=\(2,\)'):
        mx.io.CSVIter(data_csv=path, data_shape=(2,), batch_size=1)
    with pytest.raises(mx.MXNetError, match='float64.* is not supported'):
        mx.io.CSVIter(data_csv=path, data_shape=(2,), batch_size=1, dtype='float64')
    with pytest.raises(mx.MXNetError, match='needs batch_size'):
        mx.io.CSVIter(data_csv=path, data_shape=(2,))
