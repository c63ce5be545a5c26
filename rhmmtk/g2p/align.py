"""Many-to-many EM alignment of a lexicon into per-letter labels (`rhmmtk align`).

As m2m-aligner (Jiampojamarn, Kondrak and Sherif 2007) and Phonetisaurus' aligner: a
word and its pronunciation are cut into pairs of chunks, a letter chunk of 1..X letters
with a phoneme chunk of 0..Y phonemes (no phonemes only for a single letter: a silent
letter; never phonemes without a letter, so every phoneme belongs to a letter). The
chunk pairs have one joint distribution p, estimated by EM over every cutting of every
entry: expected counts by forward-backward on the (letters+1) x (phonemes+1) lattice of
each entry, p = counts / total, starting from uniform p. The best cutting of each entry
under the final p (Viterbi) is its alignment.

A chunk pair becomes per-letter labels (rhmmtk.g2p.labels): each letter of the chunk
gets 0, 1 or more of its phonemes, in order (silent, a phoneme, a compound label); the
split is the one the single-letter chunk pairs' probabilities like best (`ph` -> `f`:
`f -`; `ck` -> `k`: `- k`), earlier letters first on ties.

The lattices of all entries are built once as flat edge arrays (source node, target
node, chunk pair id), each entry's edges in the order of their source node, so the
compiled forward pass (in edge order) and backward pass (reverse order) see every
node's value complete before using it.
"""
import dataclasses
import itertools
import math

import numpy as np
from numba import njit

from ..errors import InputError
from ..options import option, shared
from ..click_types import Count
from .labels import compound


@dataclasses.dataclass
class AlignOptions:
    max_letters: int = option("--max-letters", default=2, type=Count(1),
                              help="Most letters in one chunk.")
    max_phones: int = option("--max-phones", default=2, type=Count(1),
                             help="Most phonemes in one chunk (a letter with more than one "
                                  "gets a compound label).")
    iters: int = shared("iters", default=10, help="EM iterations.")


def chunk_shapes(max_letters, max_phones):
    """The (letters, phonemes) sizes a chunk pair may have: a silent letter (1, 0), and
    every (i, j) with 1 <= i <= X, 1 <= j <= Y."""
    return [(1, 0)] + [(i, j) for i in range(1, max_letters + 1)
                       for j in range(1, max_phones + 1)]


# --- the lattices -------------------------------------------------------------

@njit(cache=True)
def _edges(letters, l_off, phones, p_off, shapes, base_l, base_p, pow_p, count_only,
           src, dst, key, shape_of):
    """Every entry's lattice edges (or their count): node (t, u) of entry w is
    node_off[w] + t (m + 1) + u; an edge covers letters t..t+i, phonemes u..u+j; its key
    numbers the chunk pair (letter and phoneme ids are >= 1, so chunk lengths differ in
    their digits)."""
    e = 0
    node = 0
    for w in range(len(l_off) - 1):
        n = l_off[w + 1] - l_off[w]
        m = p_off[w + 1] - p_off[w]
        for t in range(n + 1):
            for u in range(m + 1):
                for s in range(shapes.shape[0]):
                    i, j = shapes[s, 0], shapes[s, 1]
                    if t + i > n or u + j > m:
                        continue
                    if not count_only:
                        lc = 0
                        for k in range(i):
                            lc = lc * base_l + letters[l_off[w] + t + k]
                        pc = 0
                        for k in range(j):
                            pc = pc * base_p + phones[p_off[w] + u + k]
                        src[e] = node + t * (m + 1) + u
                        dst[e] = node + (t + i) * (m + 1) + u + j
                        key[e] = lc * pow_p + pc
                        shape_of[e] = s
                    e += 1
        node += (n + 1) * (m + 1)
    return e


@njit(cache=True)
def _expected_counts(src, dst, chunk, e_off, n_off, p, counts):
    """Add every entry's expected chunk-pair counts under p into `counts`; return the sum
    of log p(entry) (every entry has a path: checked before)."""
    n_nodes = n_off[-1]
    alpha = np.zeros(n_nodes)
    beta = np.zeros(n_nodes)
    loglik = 0.0
    for w in range(len(e_off) - 1):
        first, last = n_off[w], n_off[w + 1] - 1
        alpha[first] = 1.0
        for e in range(e_off[w], e_off[w + 1]):
            alpha[dst[e]] += alpha[src[e]] * p[chunk[e]]
        beta[last] = 1.0
        for e in range(e_off[w + 1] - 1, e_off[w] - 1, -1):
            beta[src[e]] += p[chunk[e]] * beta[dst[e]]
        z = alpha[last]
        loglik += np.log(z)
        for e in range(e_off[w], e_off[w + 1]):
            counts[chunk[e]] += alpha[src[e]] * p[chunk[e]] * beta[dst[e]] / z
    return loglik


@njit(cache=True)
def _viterbi(src, dst, chunk, e_off, n_off, logp, best_edge):
    """best_edge[node] = the edge into `node` on the most probable path from the entry's
    first node (earlier edges win ties)."""
    score = np.full(n_off[-1], -np.inf)
    for w in range(len(e_off) - 1):
        score[n_off[w]] = 0.0
        for e in range(e_off[w], e_off[w + 1]):
            s = score[src[e]] + logp[chunk[e]]
            if s > score[dst[e]]:
                score[dst[e]] = s
                best_edge[dst[e]] = e


class Lattices:
    """The alignment lattices of a list of (letters, phonemes) pairs; `chunks[c]` is the
    chunk pair (letters tuple, phonemes tuple) of id c."""

    def __init__(self, pairs, max_letters=2, max_phones=2):
        self.pairs = pairs
        self.shapes = np.array(chunk_shapes(max_letters, max_phones), dtype=np.int64)
        letter_syms = sorted({c for lets, _ in pairs for c in lets})
        phone_syms = sorted({p for _, phs in pairs for p in phs})
        base_l, base_p = len(letter_syms) + 1, len(phone_syms) + 1
        if base_l ** max_letters * base_p ** max_phones >= 2 ** 62:
            raise InputError(f"{len(letter_syms)} letters and {len(phone_syms)} phonemes: too "
                             "many for chunks this long (lower --max-letters/--max-phones)")
        lid = {c: k + 1 for k, c in enumerate(letter_syms)}
        pid = {c: k + 1 for k, c in enumerate(phone_syms)}
        letters = np.array([lid[c] for lets, _ in pairs for c in lets], dtype=np.int64)
        phones = np.array([pid[c] for _, phs in pairs for c in phs], dtype=np.int64)
        n = np.array([len(lets) for lets, _ in pairs], dtype=np.int64)
        m = np.array([len(phs) for _, phs in pairs], dtype=np.int64)
        l_off, p_off = _offsets(n), _offsets(m)
        self.n_off = _offsets((n + 1) * (m + 1))
        args = (letters, l_off, phones, p_off, self.shapes, base_l, base_p,
                base_p ** max_phones)
        empty = np.zeros(0, dtype=np.int64)
        total = _edges(*args, True, empty, empty, empty, empty)
        self.src, self.dst, key, self.shape_of = (np.zeros(total, dtype=np.int64)
                                                  for _ in range(4))
        _edges(*args, False, self.src, self.dst, key, self.shape_of)
        keys, self.chunk = _number(key, base_l ** max_letters * base_p ** max_phones)
        # each entry's edges come in one block, in entry order: count them per entry
        entry = np.searchsorted(self.n_off, self.src, side="right") - 1
        self.e_off = _offsets(np.bincount(entry, minlength=len(pairs)))
        self.chunks = list(zip(_digits(keys // base_p ** max_phones, base_l, letter_syms),
                               _digits(keys % base_p ** max_phones, base_p, phone_syms)))

    def expected_counts(self, p):
        """(expected count of every chunk pair, sum of log p(entry)) under p."""
        counts = np.zeros(len(self.chunks))
        loglik = _expected_counts(self.src, self.dst, self.chunk, self.e_off, self.n_off,
                                  np.asarray(p, dtype=np.float64), counts)
        return counts, loglik

    def best_cuts(self, p):
        """Every entry's most probable cutting: a list of chunk-pair ids per entry."""
        best = np.full(self.n_off[-1], -1, dtype=np.int64)
        with np.errstate(divide="ignore"):
            logp = np.log(np.asarray(p, dtype=np.float64))
        _viterbi(self.src, self.dst, self.chunk, self.e_off, self.n_off, logp, best)
        cuts = []
        for w in range(len(self.pairs)):
            node, path = self.n_off[w + 1] - 1, []
            while node != self.n_off[w]:
                e = best[node]
                path.append(int(self.chunk[e]))
                node = self.src[e]
            cuts.append(path[::-1])
        return cuts


def _number(key, space):
    """(the distinct keys, sorted; each key's index among them). Without a sort when the
    key space is small enough for a table (NETtalk's: 2 million keys, 3.6 million edges)."""
    if space > 1 << 26:
        keys, inverse = np.unique(key, return_inverse=True)
        return keys, inverse.reshape(-1).astype(np.int64)
    present = np.zeros(space, dtype=bool)
    present[key] = True
    keys = np.flatnonzero(present)
    index = np.cumsum(present, dtype=np.int64) - 1
    return keys, index[key]


def _digits(codes, base, symbols):
    """The symbol tuples that `_edges` numbered as base-`base` digits (ids from 1)."""
    out = []
    for code in codes.tolist():
        syms = []
        while code:
            code, d = divmod(code, base)
            syms.append(symbols[d - 1])
        out.append(tuple(syms[::-1]))
    return out


def _offsets(lengths):
    return np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)


# --- EM and the labels ----------------------------------------------------------

@dataclasses.dataclass
class Alignment:
    """Per-letter labels of every entry, the chunk-pair model and EM's log-likelihoods
    (before each M-step: history[k] is that of the k-th model, the uniform one first)."""

    labels: list
    chunks: list
    p: np.ndarray
    history: list


def em(lattices, iters):
    """p after `iters` EM steps from uniform, and the log-likelihood of every model."""
    p = np.full(len(lattices.chunks), 1.0 / len(lattices.chunks))
    history = []
    for _ in range(iters):
        counts, loglik = lattices.expected_counts(p)
        history.append(loglik)
        p = counts / counts.sum()
    history.append(lattices.expected_counts(p)[1])
    return p, history


def check_alignable(entries, opts, path=None):
    """InputError naming the line of the first entry no cutting can cover: more phonemes
    than max_phones per letter."""
    for e in entries:
        if len(e.phones) > opts.max_phones * len(e.word):
            raise InputError(f"line {e.line}: {e.word!r} has {len(e.phones)} phonemes, more "
                             f"than --max-phones {opts.max_phones} per letter allows", path)


def align(entries, opts=None, path=None):
    """Align lexicon entries (rhmmtk.io.lexicon.Entry) into per-letter labels."""
    opts = opts or AlignOptions()
    check_alignable(entries, opts, path)
    lattices = Lattices([(tuple(e.word), tuple(e.phones)) for e in entries],
                        opts.max_letters, opts.max_phones)
    p, history = em(lattices, opts.iters)
    split = LetterSplit(lattices.chunks, p, opts.max_phones)
    labels = [[lab for c in cut for lab in split(c)] for cut in lattices.best_cuts(p)]
    return Alignment(labels, lattices.chunks, p, history)


class LetterSplit:
    """Per-letter labels of a chunk pair: the split of its phonemes over its letters (in
    order, at most max_phones each) that the single-letter chunk pairs' probabilities
    like best."""

    def __init__(self, chunks, p, max_phones):
        self.single = {c: float(q) for c, q in zip(chunks, p) if len(c[0]) == 1}
        self.chunks, self.max_phones = chunks, max_phones
        self.cache = {}

    def __call__(self, c):
        if c not in self.cache:
            self.cache[c] = self._split(*self.chunks[c])
        return self.cache[c]

    def _split(self, lets, phs):
        if len(lets) == 1:
            return [compound(phs)]
        best, best_score = None, -math.inf
        # cut points 0 <= c_1 <= ... <= c_{i-1} <= j (letter k gets phs[c_k:c_{k+1}]), late
        # cuts first so that earlier letters get the phonemes on ties
        cut_points = itertools.combinations_with_replacement(range(len(phs) + 1), len(lets) - 1)
        for cuts in reversed(list(cut_points)):
            bounds = (0, *cuts, len(phs))
            parts = [phs[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
            if any(len(q) > self.max_phones for q in parts):
                continue
            score = sum(math.log(self.single.get(((l,), q), 0.0) or 1e-300)
                        for l, q in zip(lets, parts))
            if score > best_score:
                best, best_score = parts, score
        return [compound(q) for q in best]


def align_file(lexicon, letters_out, ali_out, opts=None, stress="keep", skip_duplicates=False):
    """rhmmtk align: lexicon file -> `utt-id l e t t e r s` and `utt-id label ...` files
    (utterance ids: the word, `word(N)` for its N-th pronunciation). Returns the
    Alignment."""
    from ..io.lexicon import read_lexicon, utterance_ids
    from ..io.output import check_outputs, open_output
    from ..progress import log

    check_outputs(letters_out, ali_out, inputs=[lexicon])
    entries = read_lexicon(lexicon, stress, skip_duplicates)
    result = align(entries, opts, lexicon)
    log.info("aligned %d entries: %d chunk pairs, log-likelihood %.1f -> %.1f",
             len(entries), len(result.chunks), result.history[0], result.history[-1])
    with open_output(letters_out) as fl, open_output(ali_out) as fa:
        for utt, e, labels in zip(utterance_ids(entries), entries, result.labels):
            fl.write(f"{utt} {' '.join(e.word)}\n")
            fa.write(f"{utt} {' '.join(labels)}\n")
    return result
