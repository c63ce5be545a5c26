"""Plain numpy references the compiled loops are tested against (tests/test_kernels.py):
the implementations before the kernels, kept here because only the tests run them."""
import numpy as np
import scipy.sparse as sp

from rhmmtk.models.rhmm.em import Stats
from rhmmtk.scoring import DEL_PENALTY, INS_PENALTY, SUB_PENALTY, SegmentCounts

_BIG = np.iinfo(np.int64).max // 4


def _scatter_matrices(bk, support):
    """Sparse matrices that add a bucket's per-position posteriors into the emission
    rows (a * n + x) and the pair transitions."""
    K = int(bk.valid.sum())
    emit_scatter = sp.csr_matrix(
        (np.ones(K), ((bk.A * support.n + bk.X)[bk.valid], np.arange(K))),
        shape=(support.l * support.n, K))
    Kt = int(bk.trans_valid.sum())
    trans_scatter = sp.csr_matrix(
        (np.ones(Kt), (bk.pair[bk.trans_valid], np.arange(Kt))),
        shape=(len(support.pairs), Kt))
    return emit_scatter, trans_scatter


def e_step_reference(model, tp, buckets, support, bar=None):
    """The E-step in plain numpy, vectorised over a bucket's sequences one time step at a
    time (the implementation before the compiled kernel
    rhmmtk.models.rhmm.kernels_em.em_forward_backward, kept to test it against)."""
    l, m, n = model.shape
    stats = Stats(l, n, len(support.pairs), m)
    for bk in buckets:
        emit_scatter, trans_scatter = _scatter_matrices(bk, support)
        B, T = bk.B, bk.T
        em = model.o[bk.A, bk.X] * bk.valid[:, :, None]          # (B, T, m)
        Tm = tp[bk.pair]                                          # (B, T-1, m, m)
        alpha = np.zeros((B, T, m))
        c = np.ones((B, T))
        a0 = model.pi[bk.A[:, 0]] * em[:, 0]
        c[:, 0] = a0.sum(1)
        alpha[:, 0] = a0 / c[:, :1]
        for t in range(1, T):
            act = bk.valid[:, t]
            v = np.einsum("bij,bj->bi", Tm[:, t - 1], alpha[:, t - 1]) * em[:, t]
            s = v.sum(1)
            c[:, t] = np.where(act, s, 1.0)
            alpha[:, t] = np.where(act[:, None], v / c[:, t, None], 0.0)
        fl = model.f[bk.last]                                     # (B, m)
        aL = alpha[np.arange(B), bk.L - 1]
        z_end = (aL * fl).sum(1)
        stats.loglik += float(np.log(c).sum() + np.log(z_end).sum())
        beta = np.zeros((B, T, m))
        for t in range(T - 1, -1, -1):
            ends = bk.L - 1 == t
            if t < T - 1:
                v = np.einsum("bi,bij->bj", beta[:, t + 1] * em[:, t + 1], Tm[:, t]) / c[:, t + 1, None]
                beta[:, t] = np.where(bk.trans_valid[:, t, None], v, 0.0)
            beta[ends, t] = fl[ends] / z_end[ends, None]
        gamma = alpha * beta                                      # (B, T, m), rows sum to 1
        stats.pi += np.asarray(sp.csr_matrix((np.ones(B), (bk.A[:, 0], np.arange(B))),
                                             shape=(l, B)) @ gamma[:, 0])
        stats.o += emit_scatter @ gamma[bk.valid]
        if T > 1:
            xi = (beta[:, 1:, :, None] * em[:, 1:, :, None] * Tm * alpha[:, :-1, None, :]
                  / c[:, 1:, None, None])                         # (B, T-1, m2, m)
            stats.t += (trans_scatter @ xi[bk.trans_valid].reshape(-1, m * m)).reshape(-1, m, m)
        stats.f += np.asarray(sp.csr_matrix((np.ones(B), (bk.last, np.arange(B))),
                                            shape=(l, B)) @ gamma[np.arange(B), bk.L - 1])
        stats.positions += int(bk.valid.sum())
        if bar is not None:
            bar.update(B)
    return stats


def edit_counts_reference(ref, hyp, sub=SUB_PENALTY, dele=DEL_PENALTY, ins=INS_PENALTY):
    """Align two label strings by minimum weighted edit cost; return SegmentCounts.

    Dynamic programme over the (len(ref)+1) x (len(hyp)+1) grid, one reference
    label per numpy step. Within a row, the insertion (horizontal) moves form a
    running minimum: row[j] = min_k best[k] + (j - k) * ins, where best is the
    cheapest way into a cell by a hit/substitution or a deletion. Each cell
    carries the hit and substitution counts of the path that reached it;
    D and I follow from the lengths (N = H + S + D, len(hyp) = H + S + I).
    Ties go as in HResults: diagonal if no worse than both others, else
    insertion if strictly cheaper than deletion, else deletion.
    """
    ref, hyp = np.asarray(ref), np.asarray(hyp)
    n, m = len(ref), len(hyp)
    cols = np.arange(m + 1, dtype=np.int64)
    score = cols * ins  # row 0: j insertions
    hits = np.zeros(m + 1, dtype=np.int64)
    subs = np.zeros(m + 1, dtype=np.int64)
    big = np.array([_BIG], dtype=np.int64)
    for i in range(n):
        match = hyp == ref[i]
        diag = score[:-1] + np.where(match, 0, sub)  # into cells 1..m
        vert = score + dele  # into cells 0..m
        best = vert.copy()
        np.minimum(diag, vert[1:], out=best[1:])
        row = np.minimum.accumulate(best - cols * ins) + cols * ins
        horiz = np.concatenate((big, row[:-1] + ins))
        is_diag = np.concatenate(([False], (diag <= horiz[1:]) & (diag <= vert[1:])))
        is_ins = ~is_diag & (horiz < vert)
        # counts of cells entered diagonally or vertically, then insertions copy
        # the counts of the last such cell to their left in the same row
        new_hits, new_subs = hits.copy(), subs.copy()
        new_hits[1:] = np.where(is_diag[1:], hits[:-1] + match, hits[1:])
        new_subs[1:] = np.where(is_diag[1:], subs[:-1] + ~match, subs[1:])
        src = np.maximum.accumulate(np.where(is_ins, 0, cols))
        hits, subs, score = new_hits[src], new_subs[src], row
    H, S = int(hits[m]), int(subs[m])
    return SegmentCounts(H=H, D=n - H - S, S=S, I=m - H - S, N=n)
