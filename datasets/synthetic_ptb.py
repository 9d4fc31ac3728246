#!/usr/bin/env python3
"""Write a learnable synthetic corpus in the Penn Treebank language-modelling format.

    python datasets/synthetic_ptb.py --root DIR --train 20000 --valid 2000 --test 2000

creates ``DIR/ptb.train.txt``, ``ptb.valid.txt`` and ``ptb.test.txt`` (that many
sentences each) and a ``SYNTHETIC`` marker. As in Mikolov's PTB files there is one
sentence a line, lower-case tokens separated by single spaces (a space before the first
and after the last), no punctuation, numbers written ``N``, and the words outside the
vocabulary replaced by ``<unk>``; a reader appends ``<eos>`` to every line.

The text comes from a small grammar over invented words. Sentences come in "articles"
of a few sentences sharing a topic, which skews which nouns, verbs and adjectives are
likely; verbs agree in number with their subject across prepositional phrases and
relative clauses (``the doks of the mirat lune``, ``the doks that lune mirats tope``).
So there is something for a language model to learn at every range: a bigram model's
perplexity is far below the vocabulary size and a recurrent one does better still.
The vocabulary is the training words seen at least twice, at most ``--vocab`` of them
counting ``<unk>`` and ``<eos>`` (PTB: 10,000). The same seed and sizes always give the
same bytes. Needs only the standard library.
"""
import argparse
import bisect
import os
import random
import sys

SPLITS = ('train', 'valid', 'test')
FILE = 'ptb.%s.txt'
MARKER = 'SYNTHETIC'
UNK, EOS = '<unk>', '<eos>'
NUM_TOPICS = 8
ZIPF_EXPONENT = 1.5        # how much each topic favours its first words
ARTICLE_SENTENCES = (3, 8)     # sentences per article, both ends included
_SYLLABLES = [c + v for c in 'bdfgklmnprstvz' for v in 'aeiou'] + ['ar', 'el', 'in', 'or']
# closed word classes, as real English words; 'N' is PTB's token for a number
SINGULAR_DETERMINERS = ('the', 'a', 'this', 'that', 'every', 'one', 'its')
PLURAL_DETERMINERS = ('the', 'these', 'those', 'some', 'many', 'N', 'its', 'all')
PREPOSITIONS = ('of', 'in', 'for', 'on', 'with', 'at', 'from', 'by', 'about', 'under')
CONJUNCTIONS = ('and', 'but', 'while', 'because')
CLASS_SIZES = {'noun': 600, 'verb': 250, 'adjective': 200, 'adverb': 60}


class _Sampler:
    """Draws from fixed weights with ``rng.random()`` alone, whose sequence for a seed
    Python guarantees across versions (``random.choices`` is not promised)."""

    def __init__(self, items, weights):
        self.items, self.cumulative, total = list(items), [], 0.0
        for w in weights:
            total += w
            self.cumulative.append(total)

    def __call__(self, rng):
        index = bisect.bisect_right(self.cumulative, rng.random() * self.cumulative[-1])
        return self.items[min(index, len(self.items) - 1)]


def _pick(rng, items):
    return items[int(rng.random() * len(items))]


def invent_words(rng, count, taken):
    """``count`` new pronounceable words of 2 or 3 syllables, none of them in ``taken``
    (which is updated), nor their form with an ``s`` added."""
    words = []
    while len(words) < count:
        word = ''.join(_pick(rng, _SYLLABLES) for _ in range(2 + int(rng.random() * 2)))
        if word not in taken and word + 's' not in taken:
            taken.update((word, word + 's'))
            words.append(word)
    return words


class Grammar:
    """A topic-skewed probabilistic grammar; ``article(rng)`` yields sentences as lists
    of tokens."""

    def __init__(self, rng):
        taken = set(SINGULAR_DETERMINERS + PLURAL_DETERMINERS + PREPOSITIONS + CONJUNCTIONS +
                    ('that', 'N', UNK, EOS))
        self.words = {name: invent_words(rng, size, taken) for name, size in
                      sorted(CLASS_SIZES.items())}
        # every topic ranks each class's words its own way; Zipf weights over the ranks
        # give each topic a few frequent words and a long tail shared with the others
        self.topics = []
        for _ in range(NUM_TOPICS):
            samplers = {}
            for name, words in sorted(self.words.items()):
                order = list(words)
                rng.shuffle(order)
                samplers[name] = _Sampler(order, [1.0 / (r + 1) ** ZIPF_EXPONENT
                                                  for r in range(len(order))])
            self.topics.append(samplers)

    def article(self, rng):
        topic = _pick(rng, self.topics)
        low, high = ARTICLE_SENTENCES
        for _ in range(low + int(rng.random() * (high - low + 1))):
            yield self.sentence(rng, topic)

    def sentence(self, rng, topic):
        words = self.clause(rng, topic)
        if rng.random() < 0.25:
            words += [_pick(rng, CONJUNCTIONS)] + self.clause(rng, topic)
        return words

    def clause(self, rng, topic):
        plural = rng.random() < 0.4
        return self.noun_phrase(rng, topic, plural, depth=0) + \
            self.verb_phrase(rng, topic, plural, depth=0)

    def noun_phrase(self, rng, topic, plural, depth):
        words = [_pick(rng, PLURAL_DETERMINERS if plural else SINGULAR_DETERMINERS)]
        while rng.random() < 0.35 and len(words) < 3:
            words.append(topic['adjective'](rng))
        noun = topic['noun'](rng)
        words.append(noun + 's' if plural else noun)
        if depth < 2:
            chance = rng.random()
            if chance < 0.2:      # "of the ...": the verb still agrees with the head noun
                words += [_pick(rng, PREPOSITIONS)] + \
                    self.noun_phrase(rng, topic, rng.random() < 0.4, depth + 1)
            elif chance < 0.3:    # "that <verb> ...": the relative clause agrees as well
                words += ['that'] + self.verb_phrase(rng, topic, plural, depth + 1)
        return words

    def verb_phrase(self, rng, topic, plural, depth):
        verb = topic['verb'](rng)
        words = [verb if plural else verb + 's']
        if rng.random() < 0.7:
            words += self.noun_phrase(rng, topic, rng.random() < 0.4, depth + 1)
        if rng.random() < 0.3:
            words.append(topic['adverb'](rng))
        if depth == 0 and rng.random() < 0.25:
            words += [_pick(rng, PREPOSITIONS)] + \
                self.noun_phrase(rng, topic, rng.random() < 0.4, depth + 1)
        return words


def generate(sentences, seed=0):
    """{split: list of sentences (token lists)} before any word becomes ``<unk>``."""
    rng = random.Random(seed)
    grammar = Grammar(rng)
    out = {}
    for split in SPLITS:
        lines = []
        while len(lines) < sentences[split]:
            lines.extend(grammar.article(rng))
        out[split] = lines[:sentences[split]]
    return out


def vocabulary(train, size):
    """The training words seen at least twice, the most frequent first (ties in order
    of first appearance), at most ``size`` of them counting ``<unk>`` and ``<eos>``."""
    counts = {}
    for line in train:
        for word in line:
            counts[word] = counts.get(word, 0) + 1
    frequent = sorted((w for w, c in counts.items() if c >= 2), key=lambda w: -counts[w])
    return set(frequent[:size - 2])


def _write_atomic(path, text):
    tmp = path + '.tmp-%d' % os.getpid()
    with open(tmp, 'w', encoding='utf-8', newline='\n') as f:
        f.write(text)
    os.replace(tmp, path)


def make_ptb(root, train=20000, valid=2000, test=2000, vocab=10000, seed=0):
    """Write the three files and the marker under ``root``; returns ``root``.

    Several processes may call it at once for the same folder (the workers of one job):
    each file is written whole under a temporary name and renamed, the marker last, and
    every process writes the same bytes.
    """
    sizes = {'train': train, 'valid': valid, 'test': test}
    if min(sizes.values()) < 1 or vocab < 3:
        raise ValueError('need at least 1 sentence per file and a vocabulary of 3 or more '
                         '(<unk>, <eos> and a word), got --train %d --valid %d --test %d '
                         '--vocab %d' % (train, valid, test, vocab))
    corpus = generate(sizes, seed)
    known = vocabulary(corpus['train'], vocab)
    root = os.path.expanduser(root)
    os.makedirs(root, exist_ok=True)
    for split in SPLITS:
        text = ''.join(' %s \n' % ' '.join(w if w in known else UNK for w in line)
                       for line in corpus[split])
        _write_atomic(os.path.join(root, FILE % split), text)
    _write_atomic(os.path.join(root, MARKER),
                  'Synthetic Penn Treebank stand-in written by datasets/synthetic_ptb.py '
                  '(--train %d --valid %d --test %d --vocab %d --seed %d); not the real '
                  'corpus.\n' % (train, valid, test, vocab, seed))
    return root


def main(argv=None):
    default_root = os.path.join(os.environ.get('MINIGLUON_HOME') or '~/.minigluon',
                                'datasets', 'ptb', 'synthetic')
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--root', default=default_root,
                        help='folder to write the ptb.*.txt files into (default %(default)s)')
    parser.add_argument('--train', type=int, default=20000, help='training sentences')
    parser.add_argument('--valid', type=int, default=2000, help='validation sentences')
    parser.add_argument('--test', type=int, default=2000, help='test sentences')
    parser.add_argument('--vocab', type=int, default=10000,
                        help='largest vocabulary, <unk> and <eos> included (default 10000)')
    parser.add_argument('--seed', type=int, default=0)
    args = parser.parse_args(argv)
    try:
        folder = make_ptb(args.root, args.train, args.valid, args.test, args.vocab, args.seed)
    except ValueError as exc:
        parser.error(str(exc))
    print('wrote a synthetic Penn Treebank (%d / %d / %d sentences, seed %d) to %s'
          % (args.train, args.valid, args.test, args.seed, folder))
    return 0


if __name__ == '__main__':
    sys.exit(main())
