"""Whole-word decoding of an R-HMM: the labels of the best path over refined states.

A refined state is a pair (label a, hidden state h); EM's operators (the diagonal form,
proposition 4.1) are the probabilities of a first-order chain over these pairs:

  start (a, h)            c^1_a[h]
  emit x from (a, h)      c^a_x[h]            (with the emission backoff when the model has one)
  (a, h) -> (b, h')       T^{b|a}[h', h]
  stop after (a, h)       C^{*|a}[h]

so the path of highest probability is an ordinary Viterbi search over sum_a m_a states,
done here in the log domain by a compiled loop, and its labels are the output.

This is not the best *label sequence*: that is the max over labels of a sum over hidden
states, which is intractable in general (the hidden states make the label sequence's
probability a sum over exponentially many refined paths; it is NP-hard for HMMs with
latent annotations, as for PCFG-LA parsing). The best refined path is the standard
stand-in, and with one hidden state per label (m = 1) it is exactly the HMM's Viterbi.

Only non-negative operators are decoded: a spectral model's operators are signed
matrices in an arbitrary basis (theorem 4.1), where a path's product has no meaning as a
probability and a log-domain max does not exist; `refined_viterbi` refuses them.

`penalised_labels` is the other Viterbi pass here, over labels only and for every model:
the label sequence maximising the sum of its per-position posteriors minus a penalty
per label change (`decode --change-penalty`). Its gain is the posterior itself, not its
log, so the signed posteriors of a spectral model need no floor, and with penalty 0 it
is the max-marginal labelling. On speech frames it removes the one- to three-frame runs
that per-position decoding puts at phone boundaries where two or three labels share the
posterior (recipes/timit/RESULTS_timitsize).
"""
import numpy as np
from numba import njit

from ...errors import InputError

# positions of emission log-probabilities computed at once (P x states doubles)
CHUNK_POSITIONS = 4096


def check_decodable(op, path=None):
    """InputError unless `op` holds non-negative diagonal-form operators (EM's)."""
    if op.form != "diagonal":
        raise InputError("--rhmm-decode viterbi needs an EM-trained (diagonal-form) R-HMM: a "
                         "spectral model's operators are signed, so a path has no probability "
                         "to maximise (use --rhmm-decode maxmarginal)", path)
    parts = [*op.init, *op.decoding_emit, *op.stop, *op.trans.values()]
    if any((np.asarray(v) < 0).any() for v in parts):
        raise InputError("--rhmm-decode viterbi needs non-negative operators (an EM-trained "
                         "R-HMM); this model has negative entries", path)


def _log(x):
    with np.errstate(divide="ignore"):
        return np.log(x)


def refined_layout(op):
    """(off (l + 1,), log start (S,), log transition (S, S) indexed [to, from], log stop
    (S,), pred_ptr, pred): the chain over refined states, label a owning states
    off[a] .. off[a + 1] - 1, and each label b's predecessor labels (the a with a pair
    (a, b)) pred[pred_ptr[b]:pred_ptr[b + 1]]: NETtalk's 84 labels have 1,169 of 7,056
    pairs, so the search visits only those blocks."""
    m = op.m
    off = np.concatenate([[0], np.cumsum(m)])
    S = int(off[-1])
    trans = np.zeros((S, S))
    for (a, b), T in op.trans.items():
        trans[off[b]:off[b + 1], off[a]:off[a + 1]] = T
    pairs = sorted((b, a) for a, b in op.trans)
    pred = np.array([a for _, a in pairs], dtype=np.int64)
    pred_ptr = np.searchsorted([b for b, _ in pairs], np.arange(op.num_labels + 1))
    return (off.astype(np.int64), _log(np.concatenate(op.init)), _log(trans),
            _log(np.concatenate(op.stop)), pred_ptr.astype(np.int64), pred)


def refined_viterbi(op, seqs, beam=0.0):
    """Best refined-state path of every observation sequence (arrays of observation ids).

    Returns (labels, scores): each sequence's labels along its best path, and the path's
    log probability (-inf, with labels all 0, when no path has nonzero probability).
    beam in [0, 1): at each position only states whose path score is at least beam times
    the best (log(beam) below it) are extended; 0 is exact."""
    off, log_init, log_trans, log_stop, pred_ptr, pred = refined_layout(op)
    state_label = np.repeat(np.arange(op.num_labels), op.m)
    emit = op.decoding_emit
    log_beam = np.log(beam) if beam > 0 else -np.inf
    labels, scores = [], np.zeros(len(seqs))
    i = 0
    while i < len(seqs):          # sequences in chunks of about CHUNK_POSITIONS positions
        j, n = i, 0
        while j < len(seqs) and (j == i or n + len(seqs[j]) <= CHUNK_POSITIONS):
            n += len(seqs[j])
            j += 1
        chunk = [np.asarray(s, dtype=np.int64) for s in seqs[i:j]]
        x = np.concatenate(chunk) if n else np.zeros(0, np.int64)
        log_emit = _log(np.concatenate([e[x] for e in emit], axis=1))
        starts = np.concatenate([[0], np.cumsum([len(s) for s in chunk])]).astype(np.int64)
        path = np.zeros(n, dtype=np.int64)
        _viterbi_sequences(log_init, log_trans, log_stop, log_emit, starts, log_beam, off,
                           pred_ptr, pred, path, scores[i:j])
        labels += np.split(state_label[path], starts[1:-1])
        i = j
    return labels, scores


@njit(cache=True)
def _viterbi_sequences(log_init, log_trans, log_stop, log_emit, starts, log_beam, off,
                       pred_ptr, pred, path, scores):
    """Viterbi over refined states for every sequence starts[k]..starts[k+1] of log_emit
    (positions x states); writes the best path's states to `path` and its log
    probability to `scores`. Only states with nonzero emission at a position are
    scored there, only those within log_beam of the best are extended, and only from
    the predecessor labels of each label (off, pred_ptr, pred: `refined_layout`)."""
    S = log_init.size
    l = off.size - 1
    alive = np.zeros(l, dtype=np.bool_)
    for k in range(starts.size - 1):
        s0, s1 = starts[k], starts[k + 1]
        T = s1 - s0
        if T == 0:
            scores[k] = -np.inf
            continue
        delta = np.full(S, -np.inf)
        back = np.zeros((T, S), dtype=np.int64)
        for s in range(S):
            delta[s] = log_init[s] + log_emit[s0, s]
        for t in range(1, T):
            # states below the beam (or without a path) are not extended
            thr = max(np.max(delta) + log_beam, -np.inf)
            for a in range(l):
                alive[a] = False
                for r in range(off[a], off[a + 1]):
                    if delta[r] > -np.inf and delta[r] >= thr:
                        alive[a] = True
                    else:
                        delta[r] = -np.inf
            new = np.full(S, -np.inf)
            row = log_emit[s0 + t]
            for b in range(l):
                for s in range(off[b], off[b + 1]):
                    if row[s] == -np.inf:
                        continue
                    top, arg = -np.inf, 0
                    lt = log_trans[s]
                    for p in range(pred_ptr[b], pred_ptr[b + 1]):
                        a = pred[p]
                        if not alive[a]:
                            continue
                        for r in range(off[a], off[a + 1]):
                            v = delta[r] + lt[r]
                            if v > top:
                                top, arg = v, r
                    if top > -np.inf:
                        new[s] = top + row[s]
                        back[t, s] = arg
            delta = new
        top, arg = -np.inf, 0
        for s in range(S):
            v = delta[s] + log_stop[s]
            if v > top:
                top, arg = v, s
        scores[k] = top
        path[s1 - 1] = arg
        for t in range(T - 1, 0, -1):
            arg = back[t, arg]
            path[s0 + t - 1] = arg


def penalised_labels(post, penalty):
    """argmax over label sequences a of sum_i post[i, a_i] - penalty * #{i: a_i != a_i+1}
    for one sequence's (N, l) posteriors (any sign); ties keep the label (fewer changes)."""
    post = np.ascontiguousarray(post, dtype=np.float64)
    out = np.zeros(len(post), dtype=np.int64)
    if len(post):
        _penalised_path(post, float(penalty), out)
    return out


@njit(cache=True)
def _penalised_path(g, penalty, out):
    """Viterbi with a flat change penalty: the best predecessor of label a is a itself or
    the best label overall minus the penalty, so each position costs O(l), not O(l^2)."""
    N, L = g.shape
    back = np.empty((N, L), dtype=np.int64)
    d = g[0].copy()
    for i in range(1, N):
        j = np.argmax(d)
        jump = d[j] - penalty
        new = np.empty(L)
        for a in range(L):
            if d[a] >= jump:
                back[i, a] = a
                new[a] = d[a] + g[i, a]
            else:
                back[i, a] = j
                new[a] = jump + g[i, a]
        d = new
    out[N - 1] = np.argmax(d)
    for i in range(N - 1, 0, -1):
        out[i - 1] = back[i, out[i]]
