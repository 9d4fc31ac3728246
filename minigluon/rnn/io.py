"""Sentences to integer ids, and the bucketing iterator of MXNet 1.x's language models."""
import bisect
import logging
import random

import numpy as np

from .. import ndarray
from ..base import MXNetError
from ..io import DataBatch, DataDesc, DataIter

__all__ = ['encode_sentences', 'BucketSentenceIter']


def encode_sentences(sentences, vocab=None, invalid_label=-1, invalid_key='\n',
                     start_label=0, unknown_token=None):
    """Encode tokenized sentences as lists of ids, building the vocabulary if none is given.

    Parameters
    ----------
    sentences : list of list of str
    vocab : dict of str to int, optional
        A fixed vocabulary; if None a new one is built, ``{invalid_key: invalid_label}``
        plus every word met, numbered from ``start_label`` (skipping ``invalid_label``).
    invalid_label : int, default -1
        The id of ``invalid_key`` (end of sentence) in a new vocabulary.
    invalid_key : str, default '\\n'
    start_label : int, default 0
        The first id given to a new word.
    unknown_token : str, optional
        With a fixed vocabulary, words missing from it are encoded as this token (added
        to ``vocab`` with the next free id if it is not there); without it a missing word
        is an error.

    Returns
    -------
    encoded : list of list of int
    vocab : dict of str to int
        The vocabulary, updated in place when one was given.
    """
    new_vocab = vocab is None
    if new_vocab:
        vocab = {invalid_key: invalid_label}
    next_id = start_label
    encoded = []
    for sentence in sentences:
        coded = []
        for word in sentence:
            if word not in vocab:
                if not new_vocab:
                    if not unknown_token:
                        raise MXNetError('encode_sentences: unknown token %r (not in the '
                                         'given vocab); pass unknown_token= to encode such '
                                         'words as one token' % word)
                    word = unknown_token
                if word not in vocab:
                    if next_id == invalid_label:
                        next_id += 1
                    vocab[word] = next_id
                    next_id += 1
            coded.append(vocab[word])
        encoded.append(coded)
    return encoded, vocab


class BucketSentenceIter(DataIter):
    """Batches of sentences of similar length, for language models: each sentence goes to
    the smallest bucket that holds it, padded with ``invalid_label``; the label of each step
    is the next token (``invalid_label`` after the last). Batches come from one bucket at a
    time, in random order; ``reset()`` reshuffles (Python's ``random`` for the batch order,
    ``np.random`` for the sentences of each bucket, as MXNet does, so seeding both gives
    MXNet's batches). Sentences longer than the largest bucket are dropped; a bucket's last
    incomplete batch is left out.

    Parameters
    ----------
    sentences : list of list of int
        Encoded sentences (see :func:`encode_sentences`).
    batch_size : int
    buckets : list of int, optional
        Bucket lengths; if None, every sentence length that at least ``batch_size``
        sentences have.
    invalid_label : int, default -1
    data_name : str, default 'data'
    label_name : str, default 'softmax_label'
    dtype : str, default 'float32'
    layout : str, default 'NT'
        'NT': batches of shape (batch_size, length); 'TN': (length, batch_size).
    """

    def __init__(self, sentences, batch_size, buckets=None, invalid_label=-1,
                 data_name='data', label_name='softmax_label', dtype='float32', layout='NT'):
        super().__init__(batch_size)
        if layout not in ('NT', 'TN'):
            raise ValueError('BucketSentenceIter: invalid layout %r: must be NT (batch major) '
                             'or TN (time major)' % (layout,))
        if not buckets:
            counts = np.bincount([len(s) for s in sentences])
            buckets = [length for length, count in enumerate(counts) if count >= batch_size]
        if not buckets:
            raise MXNetError('BucketSentenceIter: no sentence length occurs batch_size=%d '
                             'times; pass buckets= explicitly' % batch_size)
        buckets.sort()  # in place, as MXNet does with the caller's list

        per_bucket = [[] for _ in buckets]
        discarded = 0
        for sentence in sentences:
            bucket = bisect.bisect_left(buckets, len(sentence))
            if bucket == len(buckets):
                discarded += 1
                continue
            padded = np.full((buckets[bucket],), invalid_label, dtype=dtype)
            padded[:len(sentence)] = sentence
            per_bucket[bucket].append(padded)
        if discarded:
            logging.warning('BucketSentenceIter: discarded %d sentences longer than the '
                            'largest bucket (%d).', discarded, buckets[-1])
        # Buckets no sentence fell into are dropped.
        self.buckets = [b for b, rows in zip(buckets, per_bucket) if rows]
        self.data = [np.asarray(rows, dtype=dtype) for rows in per_bucket if rows]
        if not self.data:
            raise MXNetError('BucketSentenceIter: no sentence fits in buckets %s' % buckets)

        self.data_name = data_name
        self.label_name = label_name
        self.dtype = dtype
        self.invalid_label = invalid_label
        self.layout = layout
        self.major_axis = layout.find('N')
        self.default_bucket_key = max(self.buckets)
        shape = (batch_size, self.default_bucket_key)
        if self.major_axis == 1:
            shape = shape[::-1]
        self.provide_data = [DataDesc(name=data_name, shape=shape, layout=layout)]
        self.provide_label = [DataDesc(name=label_name, shape=shape, layout=layout)]

        self.idx = [(i, start) for i, rows in enumerate(self.data)
                    for start in range(0, len(rows) - batch_size + 1, batch_size)]
        self.curr_idx = 0
        self.nddata = []
        self.ndlabel = []
        self.reset()

    def reset(self):
        """Reshuffle the batch order and each bucket's sentences; start again."""
        self.curr_idx = 0
        random.shuffle(self.idx)
        for rows in self.data:
            np.random.shuffle(rows)
        self.nddata = []
        self.ndlabel = []
        for rows in self.data:
            label = np.empty_like(rows)
            label[:, :-1] = rows[:, 1:]
            label[:, -1] = self.invalid_label
            self.nddata.append(ndarray.array(rows, dtype=self.dtype))
            self.ndlabel.append(ndarray.array(label, dtype=self.dtype))

    def next(self):
        """The next batch (its ``bucket_key`` is the bucket's length)."""
        if self.curr_idx == len(self.idx):
            raise StopIteration
        i, start = self.idx[self.curr_idx]
        self.curr_idx += 1
        data = self.nddata[i][start:start + self.batch_size]
        label = self.ndlabel[i][start:start + self.batch_size]
        if self.major_axis == 1:
            data, label = data.T, label.T
        return DataBatch([data], [label], pad=0, bucket_key=self.buckets[i],
                         provide_data=[DataDesc(name=self.data_name, shape=data.shape,
                                                layout=self.layout)],
                         provide_label=[DataDesc(name=self.label_name, shape=label.shape,
                                                 layout=self.layout)])
