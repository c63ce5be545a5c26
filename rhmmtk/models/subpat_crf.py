"""The log-linear (CRF) loss of the sub-pattern trigram tagger (rhmmtk.models.subpat):
paper 002's CRF peer, `train-subpat --loss crf`.

p(y | x) = exp(score(x, y)) / Z(x), score the tagger's (the hashed weights of the
labelling's features, END's included), Z the sum over every labelling that the candidate
sets allow (the labels seen with each letter, as Viterbi's). The objective is
    sum_words -log p(y_gold | x) + l2 / 2 |w|^2,
its gradient E_p[phi] - phi(gold) per word plus l2 w. Z and the expectations come from an
exact second-order forward-backward in log space over the same factor tables Viterbi
maximises (subpat.word_factors): the state at position jj is the candidate pair
(q at jj, p at jj - 1), so a trigram factor links consecutive states.

Training: stochastic gradient descent, one word a step, epochs in a seeded random word
order; the step of the t-th word (of N a pass) is eta_t = rate / (1 + rate l2 t / N) (the
decay of Bottou's SGD, as CRFsuite's l2sgd), the L2 shrink applied lazily by keeping
w = scale * v (a step costs the word's features, not the 2^B slots). After each epoch the
weights are scored on dev and the best epoch kept, as the perceptron's.

Averaging (`--average`, Polyak-Ruppert): the point scored and kept is the mean of the
iterates w_1 .. w_t after every word since the start, kept lazily as the perceptron's:
with a = s_1 + .. + s_t (the scales after each step) and u += a_before * (the step's change
of v) at the step's slots, sum_i w_i = a v - u, so the mean is (a v - u) / t; folding the
scale into v divides a by it.
"""
import numpy as np

from ..errors import InputError
from .subpat import kernels as subpat_kernels

_KERNELS = {}
RESCALE_BELOW = 1e-9        # fold scale into v below this, before v's entries grow too large


def kernels():
    """Compile (once) and return the CRF kernels."""
    if _KERNELS:
        return _KERNELS
    # Module globals, not closure cells, so numba's disk cache hits (trigram.kernels says why).
    global candidates, word_factors, scratch, add_path, path_score, forward_backward, \
        triple_marginals, add_factor, add_expected, word_gradient, gradient_batch, crf_epoch
    import numba

    from . import subpat

    subpat_kernels()
    candidates, word_factors, scratch = subpat.candidates, subpat.word_factors, subpat.scratch
    add_path, path_score, slot = subpat.add_path, subpat.path_score, subpat.slot
    njit = numba.njit(cache=True, nogil=True)

    @njit
    def forward_backward(pair, triple, cn, T, alpha, beta):
        """Log-space forward-backward of a word of T letters over word_factors' tables:
        alpha[jj, q, p] = log of the summed exp-scores of the prefixes ending in candidate
        p at jj - 1 and q at jj; beta[jj, q, p] the same of the suffixes after them.
        Positions 0, 1: START; T + 2: END (one candidate). Returns log Z."""
        alpha[1, 0, 0] = 0.0
        for jj in range(2, T + 3):
            for q in range(cn[jj]):
                for p in range(cn[jj - 1]):
                    m = -np.inf
                    for o in range(cn[jj - 2]):
                        m = max(m, alpha[jj - 1, p, o] + triple[jj, q, p, o])
                    s = 0.0
                    for o in range(cn[jj - 2]):
                        s += np.exp(alpha[jj - 1, p, o] + triple[jj, q, p, o] - m)
                    alpha[jj, q, p] = pair[jj, q, p] + m + np.log(s)
        m = -np.inf
        for p in range(cn[T + 1]):
            m = max(m, alpha[T + 2, 0, p])
            beta[T + 2, 0, p] = 0.0
        s = 0.0
        for p in range(cn[T + 1]):
            s += np.exp(alpha[T + 2, 0, p] - m)
        for jj in range(T + 2, 2, -1):
            for p in range(cn[jj - 1]):
                for o in range(cn[jj - 2]):
                    mm = -np.inf
                    for q in range(cn[jj]):
                        mm = max(mm, pair[jj, q, p] + triple[jj, q, p, o] + beta[jj, q, p])
                    ss = 0.0
                    for q in range(cn[jj]):
                        ss += np.exp(pair[jj, q, p] + triple[jj, q, p, o] + beta[jj, q, p] - mm)
                    beta[jj - 1, p, o] = mm + np.log(ss)
        return m + np.log(s)

    @njit
    def triple_marginals(pair, triple, cn, T, alpha, beta, log_z, mu):
        """mu[jj, q, p, o] = p(candidates o, p, q at jj - 2, jj - 1, jj | x), jj = 2 .. T + 2."""
        for jj in range(2, T + 3):
            for q in range(cn[jj]):
                for p in range(cn[jj - 1]):
                    b = pair[jj, q, p] + beta[jj, q, p] - log_z
                    for o in range(cn[jj - 2]):
                        mu[jj, q, p, o] = np.exp(alpha[jj - 1, p, o] + triple[jj, q, p, o] + b)

    @njit
    def add_factor(g, step, u, ratio, mask, keys, row, bounds, tlen, last, order, y, yp, yo):
        """g += step (and u += ratio * step unless u is None) at the slots of the
        templates of `order` at one position: the features whose weights subpat.factor
        sums. u None is a type of its own to numba, so the test is compiled away where
        averaging is off (a run-time test here cost a plain epoch 1.25x)."""
        for t in range(bounds[order - 1], bounds[order]):
            if last and (tlen[t] != 0 or order == 1):
                continue
            key = 0 if last else keys[row, t]
            i = slot(key, t, y + 1, yp + 1 if order >= 2 else 0, yo + 1 if order == 3 else 0,
                     mask)
            g[i] += step
            if u is not None:
                u[i] += ratio * step

    @njit
    def add_expected(g, step, u, ratio, mask, keys, bounds, tlen, row0, clab, cn, T, mu):
        """g += step * E[phi(x, y)] (and u += ratio times that, u not None) under mu:
        each template at the order of the labels it reads (the pair and single marginals
        summed out of mu)."""
        for jj in range(2, T + 3):
            last = jj == T + 2
            row = row0 + jj - 2
            for q in range(cn[jj]):
                y = clab[jj, q]
                mq = 0.0
                for p in range(cn[jj - 1]):
                    yp = clab[jj - 1, p]
                    mqp = 0.0
                    for o in range(cn[jj - 2]):
                        mqp += mu[jj, q, p, o]
                        if bounds[3] > bounds[2]:
                            add_factor(g, step * mu[jj, q, p, o], u, ratio, mask, keys, row,
                                       bounds, tlen, last, 3, y, yp, clab[jj - 2, o])
                    add_factor(g, step * mqp, u, ratio, mask, keys, row, bounds, tlen, last, 2,
                               y, yp, 0)
                    mq += mqp
                if not last:
                    add_factor(g, step * mq, u, ratio, mask, keys, row, bounds, tlen, last, 1,
                               y, 0, 0)

    @njit
    def word_gradient(w, scale, g, step, u, ratio, mask, keys, bounds, tlen, inputs, lo, hi,
                      first, count, pair_label, L, gold, work):
        """-log p(gold | x) of word inputs[lo:hi] under weights scale * w; adds
        step * (E[phi] - phi(gold)) to g (g may be w: the factors are read first) and,
        unless u is None, ratio times that to u. `work`: crf_scratch's arrays."""
        alpha, beta, mu, clab, cn, pair, triple = work
        T = hi - lo
        candidates(inputs, lo, hi, first, count, pair_label, L, clab, cn)
        m = cn[:T + 3]
        word_factors(w, mask, keys, bounds, tlen, lo, clab, m, pair, triple)
        if scale != 1.0:
            pair[2:T + 3] *= scale
            triple[2:T + 3] *= scale
        log_z = forward_backward(pair, triple, cn, T, alpha, beta)
        nll = log_z - scale * path_score(w, mask, keys, bounds, tlen, gold, lo, hi, L)
        triple_marginals(pair, triple, cn, T, alpha, beta, log_z, mu)
        add_expected(g, step, u, ratio, mask, keys, bounds, tlen, lo, clab, cn, T, mu)
        add_path(g, mask, keys, bounds, tlen, gold, lo, hi, L, -step)
        if u is not None:
            add_path(u, mask, keys, bounds, tlen, gold, lo, hi, L, -ratio * step)
        return nll

    @njit
    def crf_scratch(count, max_len):
        """word_gradient's arrays: alpha, beta, mu and scratch's candidates and factors."""
        _, _, clab, cn, pair, triple = scratch(count, max_len)
        return (np.full(pair.shape, -np.inf), np.full(pair.shape, -np.inf),
                np.zeros(triple.shape), clab, cn, pair, triple)

    @njit
    def gradient_batch(w, g, mask, keys, bounds, tlen, inputs, offsets, max_len, first, count,
                       pair_label, L, gold):
        """Sum over the words of -log p(gold | x); g += the gradient of that sum."""
        work = crf_scratch(count, max_len)
        total = 0.0
        for k in range(len(offsets) - 1):
            total += word_gradient(w, 1.0, g, 1.0, None, 0.0, mask, keys, bounds, tlen, inputs,
                                   offsets[k], offsets[k + 1], first, count, pair_label, L,
                                   gold, work)
        return total

    @njit
    def crf_epoch(v, scale, t, rate, l2, mask, keys, bounds, tlen, inputs, offsets, max_len,
                  first, count, pair_label, L, gold, order, u, a, rescale_below):
        """One SGD epoch over words in `order` on the objective sum_k NLL_k + l2/2 |w|^2,
        w = scale * v: word k (the t-th step) moves w to (1 - eta l2 / N) w - eta
        grad NLL_k, eta = rate / (1 + rate l2 t / N). Averaging (u not None; a the
        summed scales so far): u += a * (the step's change of v), then a += the new scale,
        so that a v - u is the sum of the iterates (the module docstring). The scale is
        folded into v when it falls below rescale_below. Returns (summed NLL of the words
        at their steps, scale, t, the last eta, a)."""
        work = crf_scratch(count, max_len)
        N = len(offsets) - 1
        average = u is not None
        nll = 0.0
        eta = rate
        for k in order:
            eta = rate / (1.0 + rate * l2 * t / N)
            new_scale = scale * (1.0 - eta * l2 / N)
            nll += word_gradient(v, scale, v, -eta / new_scale, u, a if average else 0.0, mask,
                                 keys, bounds, tlen, inputs, offsets[k], offsets[k + 1], first,
                                 count, pair_label, L, gold, work)
            scale = new_scale
            if average:
                a += scale
            if scale < rescale_below:
                v *= scale
                a /= scale
                scale = 1.0
            t += 1.0
        return nll, scale, t, eta, a

    _KERNELS.update(forward_backward=forward_backward, triple_marginals=triple_marginals,
                    crf_scratch=crf_scratch, gradient_batch=gradient_batch, crf_epoch=crf_epoch)
    return _KERNELS


def _arguments(model, batch):
    """The kernels' arguments about the model and the words of `batch`, in their order."""
    keys, bounds, tlen = model.arrays(batch)
    bis = model.bis
    return (model.mask, keys, bounds, tlen, batch.inputs, batch.offsets, batch.max_len,
            bis.first, bis.count, bis.pair_label, len(model.labels))


def objective(model, batch, l2=0.0):
    """The CRF objective of model.weights on a labelled batch, sum_words -log p(gold | x) +
    l2 / 2 |w|^2, and its gradient (an array like the weights)."""
    w = model.weights
    g = l2 * w
    mask, keys, bounds, tlen, inputs, offsets, max_len, first, count, pair_label, L = \
        _arguments(model, batch)
    nll = kernels()["gradient_batch"](w, g, mask, keys, bounds, tlen, inputs, offsets, max_len,
                                      first, count, pair_label, L, batch.labels)
    return nll + 0.5 * l2 * float(w @ w), g


def word_marginals(model, x):
    """log Z of word x (label ids' letters) and its trigram marginals: (log Z, {(jj, y_o,
    y_p, y_q): probability}), jj = letter index + 2 (0, 1: START; len(x) + 2: END; label
    L for START, L + 1 for END). For tests and inspection, one word at a time."""
    from . import subpat
    from .trigram import Batch

    k = kernels()
    batch = Batch(model.bis, [np.asarray(x)])
    mask, keys, bounds, tlen, inputs, offsets, max_len, first, count, pair_label, L = \
        _arguments(model, batch)
    alpha, beta, mu, clab, cn, pair, triple = k["crf_scratch"](count, max_len)
    T = len(x)
    subpat.candidates(inputs, 0, T, first, count, pair_label, L, clab, cn)
    subpat.word_factors(model.weights, mask, keys, bounds, tlen, 0, clab, cn[:T + 3], pair,
                        triple)
    log_z = k["forward_backward"](pair, triple, cn, T, alpha, beta)
    k["triple_marginals"](pair, triple, cn, T, alpha, beta, log_z, mu)
    out = {}
    for jj in range(2, T + 3):
        for q in range(cn[jj]):
            for p in range(cn[jj - 1]):
                for o in range(cn[jj - 2]):
                    out[(jj, int(clab[jj - 2, o]), int(clab[jj - 1, p]),
                         int(clab[jj, q]))] = float(mu[jj, q, p, o])
    return float(log_z), out


def crf_sgd(model, batch, iters, seed, l2, rate, evaluate=None, on_epoch=None, patience=0,
            average=False):
    """Train model.weights (from zero) by SGD on the CRF objective: `iters` epochs in a
    seeded random word order; after each, the weights (with `average`, the mean of the
    iterates so far) are scored by `evaluate` (dev accuracy; without it the last epoch is
    kept) and the best kept. The records' loss is the last iterate's. Returns the
    records."""
    from .maxmargin import KeepBest

    args = _arguments(model, batch)
    v = np.zeros_like(model.weights)
    u = np.zeros_like(v) if average else None
    scale, t, a = 1.0, 0.0, 0.0
    rng = np.random.default_rng(seed)
    keep = KeepBest(evaluate, on_epoch, patience=patience)
    for epoch in range(1, iters + 1):
        order = rng.permutation(len(batch)).astype(np.int64)
        nll, scale, t, eta, a = kernels()["crf_epoch"](v, scale, t, rate, l2, *args,
                                                        batch.labels, order, u, a,
                                                        RESCALE_BELOW)
        w = scale * v
        point = (a * v - u) / t if average else w
        if not np.all(np.isfinite(point)):
            raise InputError(f"CRF training diverged at epoch {epoch}: lower --rate "
                             f"(got {rate})")
        keep(epoch, {"iter": epoch, "loss": float(nll + 0.5 * l2 * (w @ w)), "eta": float(eta)},
             point)
        if keep.stalled:
            break
    model.weights = keep.best
    return keep.records
