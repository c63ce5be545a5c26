"""k-best list Viterbi of a first-order chain: the k highest-scoring label sequences.

A sequence y_1..y_T scores sum_t emit[t, y_t] + sum_{t>1} trans[y_{t-1}, y_t] (log
domain: a CRF's potentials, an HMM's log-probabilities). The list Viterbi keeps, for
every position and label, the k best prefixes ending there (score, previous label, rank
of that prefix in the previous label's list); the k best of the last position's lists,
traced back, are the answer, best first. Exact: the top k prefixes ending in y at t
extend only top-k prefixes at t - 1 (any other one has k better ones to swap in).
Numpy over the (label, rank) x label candidates of one position at a time.
"""
import numpy as np


def kbest_viterbi(emit, trans, k):
    """[(score, labels)] of the k best sequences (fewer when fewer exist), best first;
    ties in the order of numpy's stable sort. emit (T, L), trans (L, L); -inf forbids."""
    emit = np.asarray(emit, dtype=np.float64)
    trans = np.asarray(trans, dtype=np.float64)
    T, L = emit.shape
    if T == 0:
        return [(0.0, [])]
    # score[r, y]: the r-th best prefix ending in y; back[t][r, y] = (label, rank) before
    score = np.full((k, L), -np.inf)
    score[0] = emit[0]
    back = []
    for t in range(1, T):
        cand = (score[:, :, None] + trans[None, :, :]).reshape(k * L, L)   # (rank, prev) x y
        order = np.argsort(-cand, axis=0, kind="stable")[:k]               # (k, L)
        score = np.take_along_axis(cand, order, axis=0) + emit[t][None, :]
        back.append(order)                 # flat (rank, prev) index: rank * L + prev
    flat = np.argsort(-score, axis=None, kind="stable")[:k]
    out = []
    for f in flat:
        r, y = divmod(int(f), L)
        s = score[r, y]
        if s == -np.inf:
            break
        labels = [y]
        for order in reversed(back):
            r, y = divmod(int(order[r, y]), L)
            labels.append(y)
        out.append((float(s), labels[::-1]))
    return out
