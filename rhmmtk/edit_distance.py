"""The compiled (numba) banded edit distance every family's scoring uses
(rhmmtk.scoring.edit_counts): the one compiled loop several families share.

Compiled once per machine and cached next to this file (numba's `cache=True`).
"""
import numpy as np
from numba import njit


@njit(cache=True)
def banded_edit_counts(ref, hyp, sub, dele, ins, dlo, dhi):
    """Weighted edit alignment of int sequences restricted to cells dlo <= j - i <= dhi,
    with the tie-breaking of tests/references.py's edit_counts_reference (diagonal if no worse
    than both others, else insertion if strictly cheaper than deletion, else deletion).
    Each cell carries the hits and substitutions of the path that reached it, packed as
    hits * 2^32 + subs. Returns (cost, hits, subs); the cost is that of a real
    alignment, hence an upper bound on the optimum. Cells outside the band hold `big`
    (far above any real cost, far below overflow), so they never win a comparison."""
    n, m = ref.size, hyp.size
    big = np.int64(1) << 60
    one_hit, one_sub = np.int64(1) << 32, np.int64(1)
    score = np.full(m + 1, big, dtype=np.int64)
    hs = np.zeros(m + 1, dtype=np.int64)
    nscore = np.full(m + 1, big, dtype=np.int64)
    nhs = np.zeros(m + 1, dtype=np.int64)
    for j in range(min(m, dhi) + 1):
        score[j] = j * ins
    for i in range(1, n + 1):
        lo, hi = max(0, i + dlo), min(m, i + dhi)
        if lo > hi:
            continue
        r = ref[i - 1]
        if lo > 0:
            nscore[lo - 1] = big
        j0 = lo
        if lo == 0:
            nscore[0], nhs[0] = score[0] + dele, hs[0]
            j0 = 1
        left, lefths = nscore[j0 - 1], nhs[j0 - 1]
        for j in range(j0, hi + 1):
            vert = score[j] + dele
            horiz = left + ins
            if hyp[j - 1] == r:
                diag, dh = score[j - 1], hs[j - 1] + one_hit
            else:
                diag, dh = score[j - 1] + sub, hs[j - 1] + one_sub
            if diag <= horiz and diag <= vert:
                left, lefths = diag, dh
            elif horiz < vert:
                left = horiz                     # hits and subs: the cell to the left's
            else:
                left, lefths = vert, hs[j]
            nscore[j], nhs[j] = left, lefths
        if hi < m:
            nscore[hi + 1] = big
        score, nscore = nscore, score
        hs, nhs = nhs, hs
    return score[m], hs[m] >> 32, hs[m] & 0xFFFFFFFF
