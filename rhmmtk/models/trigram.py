"""Bi-symbols and second-order Viterbi over trigram score tables (paper 002, section 2.4).

A bi-symbol is an (input, output) pair -- for NETtalk a (letter, phoneme) pair. Outputs
are restricted per input symbol to the bi-symbols seen in training (paper 002, footnote 5:
2 to 18 phonemes per letter), numbered so that each input symbol's bi-symbols form one
contiguous range of ids (the inner loops then read memory in order). Two padding
bi-symbols, START (id 0) and END (id 1), frame every word: START START x_1 .. x_T END,
so the first letters are scored by full trigrams and the last ones see the word end.

A trigram score table H has rows indexed by bi-symbol pairs (u, a) (row u*nb + a) and
columns by bi-symbols v: H[(u, a), v] = F(u a v), the score of the input-output trigram.
It is the Hankel matrix of paper 002 over prefixes P = bi-symbol pairs and suffixes
S = bi-symbols, whose entries carry no equality constraints (section 3.2, last remark).
Which trigrams score a word is the boundary convention (BOUNDARIES, `--boundary`):
- padded: all T+1 trigrams of START START x_1 .. x_T END (the edges see the padding);
- paper: paper 002's rule (4) with k = 2 as written, F_2 = sum_{t=3..T} F(x_{t-2:t}):
  only the T-2 trigrams inside the word (words of 1 or 2 letters score 0);
- paper-all: the paper's F_[2] = sum_{t=2..T} F(x_{t-1:t}) + sum_{t=3..T} F(x_{t-2:t}),
  bigrams and trigrams inside the word; the bigram a v is stored in row (START, a) --
  the prefix "a" of the paper's basis P = P'.(X' x Y'), START playing the empty string.
The non-padded conventions are run by the padded kernels on an effective table
E(H) (`effective_table`) whose padded score is the convention's score; gradients go back
through the adjoint E^T (`table_gradient`). Second-order Viterbi maximises the score,
optionally augmented by a Hamming task loss (the Viterbi-hinge loss L_2).
The kernels are compiled (numba) and loop over whole batches of words; Python never
loops over positions.
"""
import numpy as np

from ..errors import InputError

START, END = 0, 1
PAD = 2                      # number of padding bi-symbols
BOUNDARIES = ("padded", "paper", "paper-all")


class BiSymbols:
    """The bi-symbols seen in training: pair_input[b], pair_label[b] for b >= PAD, and per
    input symbol x the contiguous id range first[x] .. first[x] + count[x] - 1."""

    def __init__(self, pair_input, pair_label, num_inputs):
        pair_input = np.asarray(pair_input, dtype=np.int64)
        pair_label = np.asarray(pair_label, dtype=np.int64)
        order = np.lexsort((pair_label, pair_input))
        self.pair_input = np.concatenate([[-1, -1], pair_input[order]])
        self.pair_label = np.concatenate([[-1, -1], pair_label[order]])
        self.num_inputs = int(num_inputs)
        real = self.pair_input[PAD:]
        self.count = np.bincount(real, minlength=num_inputs).astype(np.int64)
        self.first = (PAD + np.concatenate([[0], np.cumsum(self.count)[:-1]])).astype(np.int64)

    @property
    def nb(self):
        return len(self.pair_input)

    @property
    def max_outputs(self):
        return int(self.count.max()) if len(self.count) else 0

    @classmethod
    def from_corpus(cls, obs, labels, num_inputs):
        """Every (input, label) pair occurring in lists of id arrays `obs`, `labels`."""
        x = np.concatenate(obs)
        y = np.concatenate(labels)
        key = np.unique(x * (int(y.max()) + 1) + y)
        return cls(key // (int(y.max()) + 1), key % (int(y.max()) + 1), num_inputs)

    def index_all(self, x, y):
        """Bi-symbol ids of positions with inputs x and labels y (flat arrays); -1 where
        the pair was never seen."""
        key_b = self.pair_input[PAD:] * (self.num_labels_hint + 1) + self.pair_label[PAD:]
        key = x * (self.num_labels_hint + 1) + y
        if not len(key_b):
            return np.full(len(x), -1, dtype=np.int64)
        pos = np.searchsorted(key_b, key)
        pos = np.minimum(pos, len(key_b) - 1)
        hit = key_b[pos] == key
        return np.where(hit, pos + PAD, -1)

    @property
    def num_labels_hint(self):
        return int(self.pair_label.max()) + 1


class Batch:
    """Words concatenated: inputs (flat), offsets (words + 1), optional gold labels and gold
    bi-symbols (flat)."""

    def __init__(self, bis, obs, labels=None, path=None, keys=None):
        lengths = np.array([len(x) for x in obs], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        self.inputs = (np.concatenate(obs) if len(obs) else np.zeros(0)).astype(np.int64)
        self.max_len = int(lengths.max()) if len(lengths) else 0
        if len(self.inputs) and (self.inputs.min() < 0 or self.inputs.max() >= bis.num_inputs):
            raise InputError("input symbol id out of range of the model's table", path)
        unseen = bis.count[self.inputs] == 0 if len(self.inputs) else np.zeros(0, bool)
        if unseen.any():
            i = int(np.argmax(unseen))
            w = int(np.searchsorted(self.offsets, i, side="right") - 1)
            raise InputError(f"input symbol id {self.inputs[i]} at position {i - self.offsets[w] + 1}"
                             " was never seen in training: no (input, output) pair to choose "
                             "from", path, None if keys is None else keys[w])
        self.labels = None
        self.gold = None
        if labels is not None:
            self.labels = np.concatenate(labels).astype(np.int64)
            self.gold = bis.index_all(self.inputs, self.labels)

    def __len__(self):
        return len(self.offsets) - 1

    def subset(self, words):
        """A Batch of the given words (indices), in that order (vectorised gather)."""
        lengths = np.diff(self.offsets)[words]
        out = Batch.__new__(Batch)
        out.offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        idx = np.repeat(self.offsets[words] - out.offsets[:-1], lengths) + np.arange(out.offsets[-1])
        out.inputs = self.inputs[idx]
        out.max_len = int(lengths.max()) if len(lengths) else 0
        out.labels = None if self.labels is None else self.labels[idx]
        out.gold = None if self.gold is None else self.gold[idx]
        return out

    def split(self, pairs):
        """Per-word arrays of a flat per-position array."""
        return [pairs[self.offsets[w]:self.offsets[w + 1]] for w in range(len(self))]


def kernel_layout(H, nb):
    """H (nb*nb, nb) rows (u, a) -> K[a, v, u] contiguous in u, the Viterbi inner loop."""
    return np.ascontiguousarray(H.reshape(nb, nb, nb).transpose(1, 2, 0))


def effective_table(H, nb, boundary):
    """The padded table E(H) whose padded score of every word is its score under
    `boundary` (see the module docstring); H itself for padded."""
    if boundary == "padded":
        return H
    T = H.reshape(nb, nb, nb)                       # [u, a, v]
    E = np.zeros_like(T)
    E[PAD:, PAD:, PAD:] = T[PAD:, PAD:, PAD:]
    if boundary == "paper-all":
        bigram = T[START, PAD:, PAD:]
        E[PAD:, PAD:, PAD:] += bigram[None]
        E[START, PAD:, PAD:] = bigram               # the word's first bigram
    return E.reshape(nb * nb, nb)


def table_gradient(G, nb, boundary):
    """E^T G: a gradient with respect to E(H) taken back to H (zero outside the entries
    `boundary` scores)."""
    if boundary == "padded":
        return G
    T = G.reshape(nb, nb, nb)
    out = np.zeros_like(T)
    out[PAD:, PAD:, PAD:] = T[PAD:, PAD:, PAD:]
    if boundary == "paper-all":
        out[START, PAD:, PAD:] = T[PAD:, PAD:, PAD:].sum(axis=0) + T[START, PAD:, PAD:]
    return out.reshape(nb * nb, nb)


def table_from_effective(E, nb, boundary):
    """H with effective_table(H) = E, for E in the range of effective_table (the
    perceptron keeps E)."""
    if boundary != "paper-all":
        return E
    T = E.reshape(nb, nb, nb).copy()
    T[PAD:, PAD:, PAD:] -= T[START, PAD:, PAD:][None]
    return T.reshape(nb * nb, nb)


def _numba():
    import numba

    return numba


_KERNELS = {}


def kernels():
    """Compile (once) and return the numba kernels."""
    if _KERNELS:
        return _KERNELS
    # Module globals, not closure cells: numba's cache keys a kernel by the pickled
    # contents of its closure, and a compiled kernel pickles differently in every
    # process, so a kernel that called another through a closure was compiled again
    # in every process (seconds per command).
    global trace_back, word_viterbi, path_score, add_counts, same_path, scratch, viterbi_batch, \
        perceptron_add, perceptron_epoch
    nb_ = _numba()
    njit = nb_.njit(cache=True, nogil=True)

    @njit
    def trace_back(delta, bp, cn, T, out, lo):
        """The end of a second-order Viterbi over positions 0, 1 (START), 2 .. T + 1 (the
        word) and T + 2 (END, one candidate): the best last candidate, then the
        back-pointers bp[j, q, p]; writes the word's candidate indices (0 .. cn[j] - 1)
        into out[lo:lo + T] and returns the best score."""
        best = -np.inf
        p = 0
        for pp in range(cn[T + 1]):
            if delta[T + 2, 0, pp] > best:
                best = delta[T + 2, 0, pp]
                p = pp
        q = 0
        for j in range(T + 2, 2, -1):
            o = bp[j, q, p]
            out[lo + j - 3] = p
            q = p
            p = o
        return best

    @njit
    def word_viterbi(K, first, count, pair_label, inputs, lo, hi, gold_labels, lossw,
                     delta, bp, cf, cn, out):
        """Best padded path of one word (inputs[lo:hi]); Hamming augmentation lossw per
        position whose bi-symbol's label differs from gold_labels (lossw = 0: plain
        Viterbi). Writes bi-symbol ids into out[lo:hi]; returns the path's score + loss.
        delta[j, q, p] is the best score of a prefix ending in candidates p at j - 1 and q
        at j (stored current-first so the inner loop over o reads contiguous memory)."""
        T = hi - lo
        cf[0] = 0
        cn[0] = 1
        cf[1] = 0
        cn[1] = 1
        for j in range(2, T + 2):
            x = inputs[lo + j - 2]
            cf[j] = first[x]
            cn[j] = count[x]
        cf[T + 2] = 1
        cn[T + 2] = 1
        delta[1, 0, 0] = 0.0
        for j in range(2, T + 3):
            fo, no = cf[j - 2], cn[j - 2]
            fp, np_ = cf[j - 1], cn[j - 1]
            fq, nq = cf[j], cn[j]
            for p in range(np_):
                a = fp + p
                for q in range(nq):
                    v = fq + q
                    best = -np.inf
                    arg = 0
                    for o in range(no):
                        s = delta[j - 1, p, o] + K[a, v, fo + o]
                        if s > best:
                            best = s
                            arg = o
                    if lossw != 0.0 and j < T + 2:
                        if pair_label[v] != gold_labels[lo + j - 2]:
                            best += lossw
                    delta[j, q, p] = best
                    bp[j, q, p] = arg
        best = trace_back(delta, bp, cn, T, out, lo)
        for j in range(T):
            out[lo + j] += cf[j + 2]
        return best

    @njit
    def path_score(K, inputs_path, lo, hi):
        """Sum of the padded trigram scores of bi-symbol path inputs_path[lo:hi]."""
        s = 0.0
        u, a = 0, 0
        for i in range(lo, hi + 1):
            v = inputs_path[i] if i < hi else 1
            s += K[a, v, u]
            u, a = a, v
        return s

    @njit
    def add_counts(G, nb, path, lo, hi, sign):
        """G[(u, a), v] += sign for every padded trigram of bi-symbol path[lo:hi]."""
        u, a = 0, 0
        for i in range(lo, hi + 1):
            v = path[i] if i < hi else 1
            G[u * nb + a, v] += sign
            u, a = a, v

    @njit
    def same_path(a, b, lo, hi):
        for i in range(lo, hi):
            if a[i] != b[i]:
                return False
        return True

    @njit
    def scratch(count, max_len):
        """word_viterbi's work arrays for words of up to max_len letters: the trellis
        (scores, back-pointers) over the largest bi-symbol set, the per-position sets."""
        kmax = 1
        for x in range(len(count)):
            kmax = max(kmax, count[x])
        return (np.empty((max_len + 3, kmax, kmax)),
                np.empty((max_len + 3, kmax, kmax), dtype=np.int32),
                np.empty(max_len + 3, dtype=np.int64), np.empty(max_len + 3, dtype=np.int64))

    @njit
    def viterbi_batch(K, first, count, pair_label, inputs, offsets, max_len, gold_labels,
                      lossw, out):
        delta, bp, cf, cn = scratch(count, max_len)
        total = 0.0
        for w in range(len(offsets) - 1):
            total += word_viterbi(K, first, count, pair_label, inputs, offsets[w],
                                  offsets[w + 1], gold_labels, lossw, delta, bp, cf, cn, out)
        return total

    @njit
    def hinge_subgradient(K, nb, first, count, pair_label, inputs, offsets, max_len,
                          gold_labels, gold, G, work):
        """Sum over words of the Viterbi-hinge loss L_2 (Hamming task loss) at K, and its
        subgradient phi(loss-augmented argmax) - phi(gold) added into G (rows (u, a))."""
        delta, bp, cf, cn = scratch(count, max_len)
        loss = 0.0
        errors = 0
        for w in range(len(offsets) - 1):
            lo, hi = offsets[w], offsets[w + 1]
            aug = word_viterbi(K, first, count, pair_label, inputs, lo, hi, gold_labels, 1.0,
                               delta, bp, cf, cn, work)
            if same_path(work, gold, lo, hi):
                continue
            errors += 1
            loss += aug - path_score(K, gold, lo, hi)
            add_counts(G, nb, work, lo, hi, 1.0)
            add_counts(G, nb, gold, lo, hi, -1.0)
        return loss, errors

    @njit
    def perceptron_add(W, U, step, path, lo, hi, sign, mode):
        """W += sign * E(phi(path)) (U += step * that), phi the counts of the factors that
        boundary convention `mode` (index in BOUNDARIES) scores, W in kernel layout."""
        u, a = 0, 0
        for i in range(lo, hi + 1):
            v = path[i] if i < hi else 1
            if mode == 0:
                W[a, v, u] += sign
                U[a, v, u] += sign * step
            elif a >= 2 and v >= 2:
                if u >= 2:
                    W[a, v, u] += sign
                    U[a, v, u] += sign * step
                if mode == 2:                     # the bigram a v: every row (u', a)
                    for w in range(W.shape[2]):
                        if w != 1:
                            W[a, v, w] += sign
                            U[a, v, w] += sign * step
            u, a = a, v

    @njit
    def perceptron_epoch(W, U, nb, step, first, count, pair_label, inputs, offsets, max_len,
                         gold, order, work, mode):
        """One averaged-perceptron epoch (Collins 2002) over words in `order`, on the
        factors of boundary convention `mode`: W += E(phi(gold) - phi(prediction)) when
        they differ; U accumulates step * update so that the average is W - U / step.
        Returns (mistakes, step)."""
        delta, bp, cf, cn = scratch(count, max_len)
        mistakes = 0
        # W is kept in the kernel layout W[a, v, u]; updates touch single entries
        for w in order:
            lo, hi = offsets[w], offsets[w + 1]
            word_viterbi(W, first, count, pair_label, inputs, lo, hi, inputs, 0.0,
                         delta, bp, cf, cn, work)
            if not same_path(work, gold, lo, hi):
                mistakes += 1
                perceptron_add(W, U, step, gold, lo, hi, 1.0, mode)
                perceptron_add(W, U, step, work, lo, hi, -1.0, mode)
            step += 1.0
        return mistakes, step

    _KERNELS.update(trace_back=trace_back, viterbi_batch=viterbi_batch, hinge_subgradient=hinge_subgradient,
                    perceptron_epoch=perceptron_epoch, path_score=path_score)
    return _KERNELS


def viterbi(H, bis, batch, gold_labels=None, lossw=0.0, boundary="padded"):
    """Bi-symbol ids (flat, per position) of the best path of every word of `batch` under
    table H (rows (u, a)) and convention `boundary`; with gold_labels and lossw,
    Hamming-loss augmented. Returns (paths, total score)."""
    nb = bis.nb
    K = kernel_layout(effective_table(H, nb, boundary), nb)
    out = np.zeros(len(batch.inputs), dtype=np.int64)
    gl = gold_labels if gold_labels is not None else np.zeros(len(batch.inputs), np.int64)
    total = kernels()["viterbi_batch"](K, bis.first, bis.count, bis.pair_label, batch.inputs,
                                       batch.offsets, batch.max_len, gl, float(lossw), out)
    return out, total


def hinge_subgradient(H, bis, batch, boundary="padded", K=None, G=None):
    """(sum of Viterbi-hinge losses, words in error, subgradient G with H's layout) under
    convention `boundary`. K: the kernel layout of E(H) when the caller keeps it (FOBOS
    updates it row by row; laying out the whole table anew costs as much as the step).
    G: an all-zero table to add the counts into (padded only; FOBOS reuses one, zeroing
    the rows it hit, where a new table per step cost about a fifth of a step)."""
    nb = bis.nb
    if K is None:
        K = kernel_layout(effective_table(H, nb, boundary), nb)
    if G is None or boundary != "padded":
        G = np.zeros((nb * nb, nb))
    work = np.zeros(len(batch.inputs), dtype=np.int64)
    loss, errors = kernels()["hinge_subgradient"](
        K, nb, bis.first, bis.count, bis.pair_label, batch.inputs, batch.offsets,
        batch.max_len, batch.labels, batch.gold, G, work)
    return loss, errors, table_gradient(G, nb, boundary)


def path_scores(H, bis, batch, paths, boundary="padded"):
    """Per-word score of flat bi-symbol `paths` under convention `boundary`."""
    K = kernel_layout(effective_table(H, bis.nb, boundary), bis.nb)
    f = kernels()["path_score"]
    return np.array([f(K, paths, batch.offsets[w], batch.offsets[w + 1])
                     for w in range(len(batch))])


# --- what every model over bi-symbols shares (HKZ, max-margin, perceptron) -----------------

class BiSymbolModel:
    """Mixin for rhmmtk.models.Model families whose input is a codes archive of single
    input symbols (NETtalk letters: `make-obs --context 0`) and whose outputs are restricted
    to the bi-symbols seen in training. Subclasses set model_type; have .labels,
    .observations (SymbolTables), .bis (BiSymbols), .info."""

    input_kinds = ("codes",)

    def check_input(self, archive):
        self.check_observations(archive, "made with another table or --context")

    def input_sequence(self, archive, key, x):
        if x.ndim != 1 or len(x) == 0 or x.min() < 0 or x.max() >= len(self.observations):
            raise InputError("observation ids out of range, empty or of the wrong shape",
                             archive.path, key)
        unseen = self.bis.count[x] == 0
        if unseen.any():
            i = int(np.argmax(unseen))
            raise InputError(f"symbol {self.observations.symbols[x[i]]!r} at position {i + 1} "
                             "was never seen in training: no (input, output) pair to choose "
                             "from", archive.path, key)
        return x.astype(np.int64)

    def _describe_common(self):
        import json

        attrs = getattr(self, "attrs", {})
        return {
            "kind": "model", "model_type": self.model_type,
            "created_by": attrs.get("created_by"), "created": attrs.get("created"),
            "options": json.loads(attrs.get("options", "{}")),
            "num_labels": len(self.labels), "num_observations": len(self.observations),
            "bisymbols": self.bis.nb - PAD,
            "outputs_per_input": [int(self.bis.count.min()), int(self.bis.count.max())],
        }

    def _save(self, path, provenance, datasets, compress=()):
        """The model file: the shared header, the bi-symbol table, then `datasets`."""
        from ..io.model_file import write_model

        datasets = {"bisymbols/input": self.bis.pair_input[PAD:],
                    "bisymbols/label": self.bis.pair_label[PAD:], **datasets}
        write_model(path, self.model_type, self.labels, self.observations, self.info,
                    provenance, datasets, compress)

    @classmethod
    def _load(cls, path, model_type, names):
        """(labels, observations, BiSymbols, info, attrs, [arrays of `names`])."""
        from ..io.model_file import ModelFile

        with ModelFile(path, model_type) as mf:
            bis = BiSymbols(mf.array("bisymbols/input"), mf.array("bisymbols/label"),
                            len(mf.observations))
            arrays = [mf.array(n) for n in names]
            return mf.labels, mf.observations, bis, mf.info, mf.attrs, arrays


def read_training(obs_path, ali_path):
    """(Corpus, BiSymbols, Batch with gold) of a training set; InputError if it is empty."""
    from ..training_data import read_corpus

    corpus = read_corpus(obs_path, ali_path)
    if len(corpus) == 0 or corpus.num_positions == 0:
        raise InputError("empty training set: no words with letters", ali_path)
    bis = BiSymbols.from_corpus(corpus.obs, corpus.labels, len(corpus.obs_table))
    return corpus, bis, Batch(bis, corpus.obs, corpus.labels, obs_path, corpus.keys)


def read_dev(obs_path, ali_path, model_like):
    """A dev set for model selection: (Batch, gold label ids with -1 for unknown labels)."""
    from ..training_data import read_corpus

    corpus = read_corpus(obs_path, ali_path, model_like.labels, strict=False)
    if corpus.obs_table != model_like.observations:
        raise InputError("observation symbol table differs from the training data's", obs_path)
    batch = Batch(model_like.bis, corpus.obs, None, obs_path, corpus.keys)
    return batch, np.concatenate(corpus.labels)
