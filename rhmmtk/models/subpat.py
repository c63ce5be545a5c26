"""A second-order (label-trigram) feature-based tagger with sub-pattern features, trained by
the averaged structured perceptron (Collins 2002) or as a CRF: paper 002's CRF/perceptron peer ("a
standard feature-based trigram tagger that represents input-output trigrams using
sub-pattern features") and, with letter n-grams conjoined with label pairs (graphone
context, as DirecTL+), a G2P tagger.

A feature template is data: (offset, length, order). Its attribute at letter i is the
letter n-gram x[i+offset .. i+offset+length-1] (a boundary symbol past either end of the
word; length 0: no letters, a pure label feature), conjoined with the last `order` labels
(1: y_i; 2: (y_{i-1}, y_i); 3: (y_{i-2}, y_{i-1}, y_i)). A word is framed as START START
x_1 .. x_T END: the labels before the word are START, and one more factor at END scores
the label-only templates (length 0, order >= 2) with y = END. The score of a labelling is
the sum over letters (and END) of the weights of its features; feature (template t,
attribute, labels) has weight w[hash(t, attribute, labels) mod 2^bits] (the hashing
trick: no feature dictionary, memory fixed by --hash-bits).

Template sets (`--features`, FEATURE_SETS):
- paper: each bi-symbol (x_i, y_i) with the input context of the trigram (nothing,
  x_{i-1}, x_{i-2} x_{i-1}) and with its output context (nothing, y_{i-1}, y_{i-2} y_{i-1}):
  the n-grams ending at x_i, n <= 3, each at orders 1, 2 and 3 (nine templates).
- g2p: a bias and every letter n-gram (n <= --ngram) inside +-(--window) with the label;
  the label bigram and the n-grams inside +-(--graphone-window) with the label pair
  (-1: none); with --label-order 2 the label trigram and x_i with the label triple.

Outputs are restricted per letter to the labels seen with it in training (trigram.py's
bi-symbols, paper 002 footnote 5), and decoding is exact second-order Viterbi over those
label pairs in a compiled (numba) kernel that loops over whole batches of words; its
k best labellings (`nbest`, `pronounce --nbest`) by rhmmtk/kbest.py's second-order list
Viterbi over the same factors.
Training (--loss): epochs in a seeded random word order, by the averaged perceptron (the
mean of the weight vectors after every word, kept lazily: w - u / c) or as a CRF (SGD on
the negative conditional log-likelihood + L2, rhmmtk/models/subpat_crf.py; --average
keeps the mean of its iterates, lazily as the perceptron's); after each
epoch the weights are scored on dev and the best epoch kept.
"""
import dataclasses
import os

import click
import numpy as np

from ..click_types import Count, Real
from ..errors import InputError
from ..options import option, shared
from . import Decoded, Model
from .trigram import PAD, Batch, BiSymbolModel, read_dev, read_training

MODEL_TYPE = "subpat"
FEATURE_SETS = ("g2p", "paper")
LOSSES = ("perceptron", "crf")
MAX_KEY_BITS = 60           # an attribute's letters packed into one int64


@dataclasses.dataclass
class SubpatOptions:
    """Training options of the sub-pattern trigram tagger."""

    features: str = option("--features", default="g2p", type=click.Choice(FEATURE_SETS),
                           help="Template set: g2p (letter n-grams in a window, graphone "
                                "pairs, label trigram; the options below) or paper (paper "
                                "002's peer: each bi-symbol with the trigram's input and "
                                "output contexts; the options below unused).")
    window: int = shared("window", default=5)
    ngram: int = shared("ngram", default=5)
    graphone_window: int = option("--graphone-window", default=1, type=click.IntRange(-1),
                                  help="g2p: letter n-grams inside +-K conjoined with the "
                                       "(previous label, label) pair; -1: none.")
    label_order: int = option("--label-order", default=2, type=click.IntRange(1, 2),
                              help="g2p: 2 adds the label trigram and the letter with the "
                                   "label triple; 1: label bigrams only.")
    hash_bits: int = option("--hash-bits", default=22, type=click.IntRange(12, 28),
                            help="Weights: 2^B hashed slots.")
    loss: str = option("--loss", default="perceptron", type=click.Choice(LOSSES),
                       help="Training: the averaged perceptron, or crf (SGD on the negative "
                            "conditional log-likelihood + L2, rhmmtk/models/subpat_crf.py).")
    l2: float = option("--l2", default=1.0, type=Real(0),
                       help="crf: L2 penalty l2 / 2 |w|^2 on the summed word log-losses.")
    rate: float = option("--rate", default=0.1, type=Real(0, min_open=True),
                         help="crf: initial SGD step; the t-th word's step is rate / (1 + "
                              "rate l2 t / N), N words a pass.")
    average: bool = shared("average",
                           help="crf: score and keep the mean of the SGD iterates after every "
                                "word (Polyak-Ruppert averaging, as the perceptron's) instead "
                                "of the last iterate.")
    iters: int = shared("iters", default=15, type=Count(1),
                        help="Epochs (each scored on dev; the best kept).")
    seed: int = shared("seed", help="Seed of each epoch's word order.")
    patience: int = shared("patience")


def templates(opts):
    """The template set of `opts` as an (n, 3) int64 array of (offset, length, order)."""
    if opts.features == "paper":
        rows = [(1 - n, n, o) for o in (1, 2, 3) for n in (1, 2, 3)]
    else:
        w, n_max, g = opts.window, opts.ngram, opts.graphone_window
        rows = [(0, 0, 1)] + [(k, n, 1) for n in range(1, n_max + 1)
                              for k in range(-w, w - n + 2)]
        rows += [(0, 0, 2)] + [(k, n, 2) for n in range(1, n_max + 1)
                               for k in range(-g, g - n + 2)]
        if opts.label_order == 2:
            rows += [(0, 0, 3), (0, 1, 3)]
    return np.array(rows, dtype=np.int64).reshape(-1, 3)


def letter_bits(num_inputs):
    """Bits per letter of an attribute key (the boundary symbol is id num_inputs)."""
    return int(num_inputs).bit_length()


def attribute_keys(batch, tmpl, num_inputs):
    """keys[position, template]: each template's letter n-gram at every letter of `batch`,
    packed into an int64 (`letter_bits` per letter; the boundary symbol past the word's
    ends); 0 for length-0 templates. All words at once (numpy)."""
    bits = letter_bits(num_inputs)
    if len(tmpl) and tmpl[:, 1].max() * bits > MAX_KEY_BITS:
        raise InputError(f"letter n-grams of {tmpl[:, 1].max()} symbols do not fit a "
                         f"feature key with {num_inputs} input symbols: lower --ngram")
    N = len(batch.inputs)
    lengths = np.diff(batch.offsets)
    word = np.repeat(np.arange(len(lengths)), lengths)
    start = batch.offsets[:-1][word]
    i = np.arange(N) - start
    T = lengths[word]
    keys = np.zeros((N, len(tmpl)), dtype=np.int64)
    for t, (off, n, _) in enumerate(tmpl):
        for j in range(n):
            at = i + off + j
            inside = (at >= 0) & (at < T)
            code = np.where(inside, batch.inputs[np.clip(start + at, 0, max(N - 1, 0))],
                            num_inputs)
            keys[:, t] |= code.astype(np.int64) << (bits * j)
    return keys


# --- compiled kernels ----------------------------------------------------------------------

_KERNELS = {}


def kernels():
    """Compile (once) and return the numba kernels."""
    if _KERNELS:
        return _KERNELS
    # Module globals, not closure cells, so numba's disk cache hits (trigram.kernels says why).
    global second_order, trace_back, slot, factor, candidates, word_factors, word_viterbi, \
        kbest_batch, scratch, viterbi_batch, add_path, path_score, perceptron_epoch
    import numba

    from ..kbest import second_order
    from .trigram import kernels as trigram_kernels

    njit = numba.njit(cache=True, nogil=True)
    trace_back = trigram_kernels()["trace_back"]
    M1 = np.uint64(0x9E3779B97F4A7C15)
    M2 = np.uint64(0xBF58476D1CE4E5B9)
    M3 = np.uint64(0x94D049BB133111EB)
    S1, S2, S3 = np.uint64(30), np.uint64(27), np.uint64(31)

    @njit
    def slot(key, t, y, yp, yo, mask):
        """Weight index of template t's attribute `key` with labels (yo, yp, y) (label id
        + 1; 0 where the template's order does not reach): splitmix64 of the packed
        key, so that nearby keys spread over the table."""
        lab = np.uint64(((t * 256 + yo) * 256 + yp) * 256 + y)
        z = np.uint64(key) * M1 + lab * M3
        z = (z ^ (z >> S1)) * M2
        z = (z ^ (z >> S2)) * M3
        z = z ^ (z >> S3)
        return np.int64(z & np.uint64(mask))

    @njit
    def factor(w, mask, keys, row, bounds, tlen, last, order, y, yp, yo):
        """Sum of the weights of the templates of `order` (bounds[order - 1] ..
        bounds[order] - 1: templates are sorted by order) at one position (row of keys;
        at END (`last`) only the label-only templates)."""
        s = 0.0
        for t in range(bounds[order - 1], bounds[order]):
            if last:
                if tlen[t] != 0 or order == 1:
                    continue
                key = 0
            else:
                key = keys[row, t]
            s += w[slot(key, t, y + 1, yp + 1 if order >= 2 else 0,
                        yo + 1 if order == 3 else 0, mask)]
        return s

    @njit
    def candidates(inputs, lo, hi, first, count, pair_label, L, clab, cn):
        """The labels allowed at each position jj of word inputs[lo:hi] (jj = letter
        index + 2; 0, 1: START (label L); T + 2: END (label L + 1)): clab[jj, :cn[jj]]."""
        T = hi - lo
        cn[0] = 1
        clab[0, 0] = L
        cn[1] = 1
        clab[1, 0] = L
        for j in range(T):
            x = inputs[lo + j]
            cn[j + 2] = count[x]
            for k in range(count[x]):
                clab[j + 2, k] = pair_label[first[x] + k]
        cn[T + 2] = 1
        clab[T + 2, 0] = L + 1

    @njit
    def word_factors(w, mask, keys, bounds, tlen, row0, clab, cn, pair, triple):
        """The factors of one word (candidates clab, cn; its first letter's keys at row0)
        that word_viterbi and kbest_batch maximise over: pair[jj, q, p] = the order-1
        and -2 templates' weights, triple[jj, q, p, o] = the order-3 templates'."""
        for jj in range(2, len(cn)):
            last = jj == len(cn) - 1
            row = row0 + jj - 2
            for q in range(cn[jj]):
                y = clab[jj, q]
                a = 0.0 if last else factor(w, mask, keys, row, bounds, tlen, False, 1, y, 0, 0)
                for p in range(cn[jj - 1]):
                    yp = clab[jj - 1, p]
                    pair[jj, q, p] = a + factor(w, mask, keys, row, bounds, tlen, last, 2, y,
                                                yp, 0)
                    for o in range(cn[jj - 2]):
                        triple[jj, q, p, o] = factor(w, mask, keys, row, bounds, tlen, last, 3,
                                                     y, yp, clab[jj - 2, o])

    @njit
    def word_viterbi(w, mask, keys, bounds, tlen, inputs, lo, hi, first, count, pair_label,
                     L, work, out):
        """Best labelling of one word (inputs[lo:hi]) under weights w; writes label ids
        into out[lo:hi] and returns its score. Position jj = letter index + 2 (0, 1: the
        START labels; T + 2: END); delta[jj, q, p]: the best prefix ending in candidate p
        at jj - 1 and q at jj. `work`: scratch's arrays."""
        delta, bp, clab, cn, pair, triple = work
        T = hi - lo
        candidates(inputs, lo, hi, first, count, pair_label, L, clab, cn)
        m = cn[:T + 3]
        word_factors(w, mask, keys, bounds, tlen, lo, clab, m, pair, triple)
        delta[1, 0, 0] = 0.0
        for jj in range(2, T + 3):
            for q in range(cn[jj]):
                for p in range(cn[jj - 1]):
                    b = pair[jj, q, p]
                    best = -np.inf
                    arg = 0
                    for o in range(cn[jj - 2]):
                        s = delta[jj - 1, p, o] + b + triple[jj, q, p, o]
                        if s > best:
                            best = s
                            arg = o
                    delta[jj, q, p] = best
                    bp[jj, q, p] = arg
        best = trace_back(delta, bp, cn, T, out, lo)
        for j in range(T):
            out[lo + j] = clab[j + 2, out[lo + j]]
        return best

    @njit
    def kbest_batch(w, mask, keys, bounds, tlen, inputs, offsets, max_len, first, count,
                    pair_label, L, k, scores, paths):
        """The k best labellings of every word: scores[word, :n], label ids paths[:n,
        lo:hi] (kbest's second-order list Viterbi over word_factors); returns each
        word's n (fewer than k when fewer labellings exist)."""
        _, _, clab, cn, pair, triple = scratch(count, max_len)
        found = np.zeros(len(offsets) - 1, dtype=np.int64)
        idx = np.zeros((k, max_len), dtype=np.int64)
        for d in range(len(offsets) - 1):
            lo, hi = offsets[d], offsets[d + 1]
            candidates(inputs, lo, hi, first, count, pair_label, L, clab, cn)
            m = cn[:hi - lo + 3]
            word_factors(w, mask, keys, bounds, tlen, lo, clab, m, pair, triple)
            found[d] = second_order(pair, triple, m, k, scores[d], idx)
            for i in range(found[d]):
                for j in range(hi - lo):
                    paths[i, lo + j] = clab[j + 2, idx[i, j]]
        return found

    @njit
    def scratch(count, max_len):
        """Per-position arrays of words up to max_len letters: delta, bp, the candidate
        labels clab and counts cn, the factor tables pair and triple."""
        kmax = 1
        for x in range(len(count)):
            kmax = max(kmax, count[x])
        return (np.empty((max_len + 3, kmax, kmax)),
                np.zeros((max_len + 3, kmax, kmax), dtype=np.int32),
                np.zeros((max_len + 3, kmax), dtype=np.int64),
                np.zeros(max_len + 3, dtype=np.int64),
                np.zeros((max_len + 3, kmax, kmax)),
                np.zeros((max_len + 3, kmax, kmax, kmax)))

    @njit
    def viterbi_batch(w, mask, keys, bounds, tlen, inputs, offsets, max_len, first, count,
                      pair_label, L, out):
        work = scratch(count, max_len)
        total = 0.0
        for k in range(len(offsets) - 1):
            total += word_viterbi(w, mask, keys, bounds, tlen, inputs, offsets[k],
                                  offsets[k + 1], first, count, pair_label, L, work, out)
        return total

    @njit
    def add_path(w, mask, keys, bounds, tlen, path, lo, hi, L, step):
        """w += step * phi(path): the features of labelling path[lo:hi], END's included."""
        T = hi - lo
        for j in range(T + 1):
            last = j == T
            y = L + 1 if last else path[lo + j]
            yp = path[lo + j - 1] if j >= 1 else L
            yo = path[lo + j - 2] if j >= 2 else L
            for t in range(bounds[3]):
                order = 1 if t < bounds[1] else (2 if t < bounds[2] else 3)
                if last and (tlen[t] != 0 or order == 1):
                    continue
                key = 0 if last else keys[lo + j, t]
                i = slot(key, t, y + 1, yp + 1 if order >= 2 else 0,
                         yo + 1 if order == 3 else 0, mask)
                w[i] += step

    @njit
    def path_score(w, mask, keys, bounds, tlen, path, lo, hi, L):
        """The score of labelling path[lo:hi] (word_viterbi's maximand)."""
        T = hi - lo
        s = 0.0
        for j in range(T + 1):
            last = j == T
            y = L + 1 if last else path[lo + j]
            yp = path[lo + j - 1] if j >= 1 else L
            yo = path[lo + j - 2] if j >= 2 else L
            for order in (1, 2, 3):
                s += factor(w, mask, keys, lo + j, bounds, tlen, last, order, y, yp, yo)
        return s

    @njit
    def perceptron_epoch(w, u, c, mask, keys, bounds, tlen, inputs, offsets, max_len, first,
                         count, pair_label, L, gold, order, work):
        """One perceptron epoch over words in `order`: when the best labelling of a word
        differs from gold, w += phi(gold) - phi(best); u accumulates c times each update,
        c counting the words seen before it, so that after the epoch w - u / c is the mean
        of the weight vectors after each word (Daume's lazy averaging). Returns (mistakes,
        c)."""
        scr = scratch(count, max_len)
        mistakes = 0
        for k in order:
            lo, hi = offsets[k], offsets[k + 1]
            word_viterbi(w, mask, keys, bounds, tlen, inputs, lo, hi, first, count, pair_label,
                         L, scr, work)
            differ = False
            for i in range(lo, hi):
                if work[i] != gold[i]:
                    differ = True
                    break
            if differ:
                mistakes += 1
                add_path(w, mask, keys, bounds, tlen, gold, lo, hi, L, 1.0)
                add_path(w, mask, keys, bounds, tlen, work, lo, hi, L, -1.0)
                add_path(u, mask, keys, bounds, tlen, gold, lo, hi, L, c)
                add_path(u, mask, keys, bounds, tlen, work, lo, hi, L, -c)
            c += 1.0
        return mistakes, c

    _KERNELS.update(slot=slot, viterbi_batch=viterbi_batch, path_score=path_score,
                    perceptron_epoch=perceptron_epoch, kbest_batch=kbest_batch)
    return _KERNELS


# --- the model -----------------------------------------------------------------------------

class SubpatModel(BiSymbolModel, Model):
    model_type = MODEL_TYPE
    decode_options = None

    def __init__(self, labels, observations, bis, tmpl, weights, info=None):
        self.labels, self.observations, self.bis = labels, observations, bis
        self.templates = np.asarray(tmpl, dtype=np.int64).reshape(-1, 3)
        if np.any(np.diff(self.templates[:, 2]) < 0) or not np.isin(self.templates[:, 2],
                                                                    (1, 2, 3)).all():
            raise ValueError("templates not sorted by order 1..3")
        self.weights = np.asarray(weights, dtype=np.float64)
        self.info = dict(info or {})
        n = len(self.weights)
        if n & (n - 1) or n == 0:
            raise ValueError(f"{n} weights: not a power of two")
        if not np.all(np.isfinite(self.weights)):
            raise ValueError("weights hold non-finite numbers")
        if len(labels) + 2 > 255:
            raise ValueError(f"{len(labels)} labels: at most 253 fit a feature's key")

    @property
    def mask(self):
        return len(self.weights) - 1

    def arrays(self, batch):
        """What the kernels read of `batch`: (keys, where each order's templates begin and
        end, template lengths)."""
        keys = attribute_keys(batch, self.templates, len(self.observations))
        bounds = np.searchsorted(self.templates[:, 2], [1, 2, 3, 4]).astype(np.int64)
        return keys, bounds, np.ascontiguousarray(self.templates[:, 1])

    def label_paths(self, batch, weights=None):
        """Flat label ids of the best labelling of every word of `batch`, and the total score."""
        keys, bounds, tlen = self.arrays(batch)
        out = np.zeros(len(batch.inputs), dtype=np.int64)
        total = kernels()["viterbi_batch"](
            self.weights if weights is None else weights, self.mask, keys, bounds, tlen,
            batch.inputs, batch.offsets, batch.max_len, self.bis.first, self.bis.count,
            self.bis.pair_label, len(self.labels), out)
        return out, total

    def path_scores(self, batch, paths):
        """Per-word scores of flat label-id `paths` (what Viterbi maximises)."""
        keys, bounds, tlen = self.arrays(batch)
        f = kernels()["path_score"]
        return np.array([f(self.weights, self.mask, keys, bounds, tlen, paths,
                           batch.offsets[k], batch.offsets[k + 1], len(self.labels))
                         for k in range(len(batch))])

    def nbest(self, seqs, k):
        """The k best labellings of each word (second-order k-best list Viterbi; the first
        is `decode`'s): [[(score, label ids)]], best first. A score is the perceptron's
        (the sum of the labelling's feature weights, path_scores), not a probability."""
        batch = Batch(self.bis, seqs)
        keys, bounds, tlen = self.arrays(batch)
        scores = np.full((len(batch), k), -np.inf)
        paths = np.zeros((k, len(batch.inputs)), dtype=np.int64)
        found = kernels()["kbest_batch"](
            self.weights, self.mask, keys, bounds, tlen, batch.inputs, batch.offsets,
            batch.max_len, self.bis.first, self.bis.count, self.bis.pair_label,
            len(self.labels), k, scores, paths)
        lo = batch.offsets
        return [[(float(scores[d, i]), paths[i, lo[d]:lo[d + 1]].tolist())
                 for i in range(found[d])] for d in range(len(batch))]

    def decode(self, seqs, options=None, progress=None):
        batch = Batch(self.bis, seqs)
        paths, _ = self.label_paths(batch)
        if progress is not None:
            progress.update(len(seqs))
        return Decoded(batch.split(paths), None, {"positions": len(batch.inputs)})

    def describe(self):
        out = self._describe_common()
        out["templates"] = len(self.templates)
        out["hash_slots"] = len(self.weights)
        out["nonzero_weights"] = int(np.count_nonzero(self.weights))
        for k in ("features", "window", "ngram", "graphone_window", "label_order", "loss",
                  "l2", "rate", "average", "iters", "seed", "best_iteration", "train_utts",
                  "train_positions", "dev_accuracy"):
            if k in self.info:
                out[k] = self.info[k]
        return out

    def save(self, path, provenance):
        self._save(path, provenance, {"templates": self.templates, "weights": self.weights},
                   ("weights",))

    @classmethod
    def load(cls, path):
        path = os.fspath(path)
        labels, obs, bis, info, attrs, (tmpl, weights) = cls._load(
            path, MODEL_TYPE, ("templates", "weights"))
        try:
            model = cls(labels, obs, bis, tmpl, weights, info)
        except ValueError as e:
            raise InputError(f"model file is inconsistent: {e}", path) from None
        model.attrs = attrs
        return model


# --- training ------------------------------------------------------------------------------

def averaged_perceptron(model, batch, iters, seed, evaluate=None, on_epoch=None, patience=0):
    """Train model.weights in place by the averaged perceptron: `iters` epochs in a seeded
    random word order; after each, the averaged weights are scored by `evaluate` (dev
    accuracy; without it the last epoch is kept) and the best kept. Returns the records."""
    from .maxmargin import KeepBest

    keys, bounds, tlen = model.arrays(batch)
    w = np.zeros_like(model.weights)
    u = np.zeros_like(w)
    c = 0.0
    work = np.zeros(len(batch.inputs), dtype=np.int64)
    rng = np.random.default_rng(seed)
    bis = model.bis

    keep = KeepBest(evaluate, on_epoch, patience=patience)
    for t in range(1, iters + 1):
        order = rng.permutation(len(batch)).astype(np.int64)
        mistakes, c = kernels()["perceptron_epoch"](
            w, u, c, model.mask, keys, bounds, tlen, batch.inputs, batch.offsets,
            batch.max_len, bis.first, bis.count, bis.pair_label, len(model.labels),
            batch.labels, order, work)
        keep(t, {"iter": t, "train_word_errors": int(mistakes)}, w - u / c)
        if keep.stalled:
            break
    model.weights = keep.best
    return keep.records


def train(obs_path, ali_path, opts=None, dev_obs=None, dev_ali=None):
    """Train a SubpatModel on a codes archive of letters and an alignment; with dev data
    the best epoch on dev is kept. Returns (model, per-epoch records)."""
    from ..progress import log, progress
    from ..selection import require_dev

    opts = opts or SubpatOptions()
    if (dev_obs is None) != (dev_ali is None):
        raise InputError("give both --dev-obs and --dev-ali, or neither")
    require_dev(opts.patience, dev_obs is not None)
    corpus, bis, batch = read_training(obs_path, ali_path)
    tmpl = templates(opts)
    model = SubpatModel(corpus.label_table, corpus.obs_table, bis, tmpl,
                        np.zeros(1 << opts.hash_bits))
    log.info("%d words, %d positions, %d bi-symbols, %d templates (%s), seed %d",
             len(corpus), corpus.num_positions, bis.nb - PAD, len(tmpl), opts.features,
             opts.seed)
    evaluate = None
    if dev_obs is not None:
        dev_batch, dev_gold = read_dev(dev_obs, dev_ali, model)

        def evaluate(weights):
            paths, _ = model.label_paths(dev_batch, weights)
            return float(np.mean(paths == dev_gold)) * 100.0

    with progress(total=opts.iters, desc=opts.loss, unit="epoch") as bar:
        def on_epoch(t, row):
            bar.update(1)
            log.debug("epoch %d: %s", t, row)

        if opts.loss == "crf":
            from .subpat_crf import crf_sgd

            records = crf_sgd(model, batch, opts.iters, opts.seed, opts.l2, opts.rate,
                              evaluate, on_epoch, opts.patience, opts.average)
        else:
            records = averaged_perceptron(model, batch, opts.iters, opts.seed, evaluate,
                                          on_epoch, opts.patience)
    best = max((r for r in records if r.get("best")), key=lambda r: r["iter"])
    model.info = {"estimator": MODEL_TYPE, **dataclasses.asdict(opts),
                  "best_iteration": best["iter"], "train_utts": len(corpus),
                  "train_positions": corpus.num_positions}
    if "dev_acc" in best:
        model.info["dev_accuracy"] = best["dev_acc"]
        log.info("best dev accuracy %.2f at epoch %d", best["dev_acc"], best["iter"])
    return model, records
