"""datasets/synthetic_ptb.py writes a learnable corpus in the Penn Treebank text format."""
import collections
import importlib.util
import math
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location('synthetic_ptb',
                                              os.path.join(ROOT, 'datasets', 'synthetic_ptb.py'))
synthetic_ptb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(synthetic_ptb)


def _read(folder, split):
    with open(os.path.join(str(folder), 'ptb.%s.txt' % split), encoding='utf-8') as f:
        return f.read()


@pytest.fixture(scope='module')
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp('ptb')
    assert synthetic_ptb.main(['--root', str(root), '--train', '2000', '--valid', '300',
                               '--test', '200']) == 0
    return root


def test_the_files_are_in_the_ptb_format(corpus):
    assert sorted(os.listdir(str(corpus))) == ['SYNTHETIC', 'ptb.test.txt', 'ptb.train.txt',
                                               'ptb.valid.txt']
    train_words = set()
    for split, count in (('train', 2000), ('valid', 300), ('test', 200)):
        lines = _read(corpus, split).split('\n')
        assert lines[-1] == '' and len(lines) == count + 1
        for line in lines[:-1]:
            # " word word ... word " as in Mikolov's files; <eos> is the reader's to add
            assert re.fullmatch(r' ([a-z]+|N|<unk>)( ([a-z]+|N|<unk>))* ', line), line
        words = set(' '.join(lines).split())
        if split == 'train':
            train_words = words
        assert words <= train_words  # held-out words outside the vocabulary are <unk>
    assert '<unk>' in train_words and 'N' in train_words and '<eos>' not in train_words
    assert 'not the real corpus' in (corpus / 'SYNTHETIC').read_text()


def test_the_vocabulary_is_capped_with_unk(tmp_path):
    synthetic_ptb.make_ptb(str(tmp_path), 500, 50, 50, vocab=100)
    tokens = _read(tmp_path, 'train').split()
    assert len(set(tokens)) == 100 - 1  # with <eos>: 100
    assert 0.05 < tokens.count('<unk>') / len(tokens) < 0.6


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path):
    def text(seed, where):
        synthetic_ptb.make_ptb(str(tmp_path / where), 30, 5, 5, seed=seed)
        return _read(tmp_path / where, 'valid')
    assert text(1, 'a') == text(1, 'b')
    assert text(1, 'a') != text(2, 'c')


def test_a_bigram_model_does_far_better_than_the_vocabulary_size(corpus):
    """There is something to learn: an interpolated bigram model's perplexity on the
    validation text is a small fraction of the vocabulary size and of a unigram model's."""
    def tokens(split):
        return [w for line in _read(corpus, split).splitlines() for w in line.split() + ['<eos>']]
    train, valid = tokens('train'), tokens('valid')
    unigram, bigram = collections.Counter(train), collections.Counter(zip(train, train[1:]))
    size = len(unigram)

    def p_unigram(word):
        return (unigram[word] + 1) / (len(train) + size)

    uni = math.exp(-sum(math.log(p_unigram(w)) for w in valid) / len(valid))
    bi = math.exp(-sum(math.log(0.7 * bigram[(a, b)] / unigram[a] + 0.3 * p_unigram(b))
                       for a, b in zip(valid, valid[1:])) / (len(valid) - 1))
    assert size > 500
    assert bi < size / 8 and bi < uni * 0.6, (size, uni, bi)


def test_verbs_agree_with_their_subjects():
    """Verb forms follow the subject's number (``doks lune``, ``dok lunes``), also in
    relative clauses: a dependency a bigram model cannot see past an adjective."""
    import random
    grammar = synthetic_ptb.Grammar(random.Random(0))
    nouns, verbs = set(grammar.words['noun']), set(grammar.words['verb'])
    rng, checked = random.Random(1), 0

    def plural_noun(word):  # True, False, or None for a word that is no noun
        return True if word[:-1] in nouns else False if word in nouns else None

    def plural_verb(word):  # verbs take an s with a singular subject
        return True if word in verbs else False if word[:-1] in verbs else None

    for _ in range(300):
        words = grammar.clause(rng, grammar.topics[0])
        # the subject's head noun and the word after it, and every "noun that <verb>"
        subject = next(i for i, w in enumerate(words) if plural_noun(w) is not None)
        pairs = [(subject, subject + 1)] + [(i - 1, i + 1) for i in range(1, len(words) - 1)
                                            if words[i] == 'that']
        for noun, verb in pairs:
            if plural_noun(words[noun]) is not None and plural_verb(words[verb]) is not None:
                assert plural_noun(words[noun]) == plural_verb(words[verb]), words
                checked += 1
    assert checked > 200


def test_bad_sizes_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        synthetic_ptb.main(['--root', str(tmp_path), '--valid', '0'])
    assert 'need at least 1 sentence per file' in capsys.readouterr().err
