"""Forward-backward of every class's hidden-state lattice over every segment (compiled).

A segment x_1..x_L is scored under class c by the sum over hidden-state paths s_1..s_L
of class c of exp(prior_c + entry_c[s_1] + sum_t E[t, s_t, c] + sum_t trans_c[s_t, s_t+1]
+ exit_c[s_L]); log Z[b, c] is its log, and the class posterior is softmax_c log Z[b, c].
E (frames, N, C) holds the log emission scores (one matrix product, rhmmtk.models.hcrf.
model). The kernel adds the paths in probability space, rescaling every frame per class
(the scaled forward-backward), so it neither under- nor overflows however far apart the
classes' scores are. Every array has the class as its last axis: the classes share the
states' move pattern (the pairs src -> dst that exist in some class), so the inner loops
run over the classes, contiguous in memory, and vectorise.

With gradients, it also returns the derivatives of sum_b log p(y_b | x_b) with respect
to E (G, frames x N x C: (1[c = y_b] - p(c | x_b)) times the state posterior within
class c), the move, entry and exit weights and the class weights: the observed minus
the expected feature counts.
"""
import numpy as np
from numba import njit

from ..phoneloop import _lse

_FM = {"reassoc", "contract"}
# A state that paths reach but whose incoming scaled forward mass falls below this sends
# the segment to the log-space pass: the mass keeps too few digits (or none) for paths
# that may dominate later frames (a badly fitting HMM state in the middle of the best
# path, say). A single badly fitting Gaussian does not: its siblings feed the same
# successors.
TINY = 1e-300


@njit(cache=True, fastmath=_FM)
def move_pairs(A):
    """(src, dst) of the moves m -> n that exist in some class (A: (C, N, N), 0 = none)."""
    C, N = A.shape[0], A.shape[1]
    src, dst = [], []
    for m in range(N):
        for n in range(N):
            for c in range(C):
                if A[c, m, n] != 0.0:
                    src.append(m)
                    dst.append(n)
                    break
    return np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64)


@njit(cache=True, fastmath=_FM)
def _forward(E, lo, L, Ap, src, dst, entry, ex, alpha, lsc, total, tmp, fragile):
    """Scaled forward pass of every class over frames lo..lo+L-1; total[c] gets log Z
    without prior and exit (-inf: no path). fragile[c] is set when a state that paths of
    class c reach gets an incoming forward mass below TINY (see TINY)."""
    N, C = ex.shape[1], ex.shape[2]
    mx = np.empty(C)
    reach, nreach = np.zeros((N, C), np.bool_), np.zeros((N, C), np.bool_)
    total[:] = 0.0
    fragile[:] = False
    for t in range(L):
        if t == 0:
            tmp[:] = entry
            for n in range(N):
                for c in range(C):
                    reach[n, c] = entry[n, c] > 0.0
        else:
            tmp[:] = 0.0
            nreach[:] = False
            for p in range(src.size):
                a, d = src[p], dst[p]
                for c in range(C):
                    tmp[d, c] += alpha[t - 1, a, c] * Ap[p, c]
                    nreach[d, c] |= reach[a, c] and Ap[p, c] > 0.0
            reach[:] = nreach
        # a state some path reaches whose incoming forward mass has (nearly) underflowed:
        # its paths' digits are lost, and they may dominate later frames
        for n in range(N):
            for c in range(C):
                if reach[n, c] and tmp[n, c] < TINY:
                    fragile[c] = True
        # the frame's scale: the best score among the states a path reaches (a state no
        # path reaches may score far higher; shifting by it would underflow the others)
        mx[:] = -np.inf
        for n in range(N):
            for c in range(C):
                if tmp[n, c] > 0.0:
                    mx[c] = max(mx[c], E[lo + t, n, c])
        s = lsc[t]
        s[:] = 0.0
        for n in range(N):
            for c in range(C):
                e = np.exp(E[lo + t, n, c] - mx[c]) if tmp[n, c] > 0.0 else 0.0
                ex[t, n, c] = e
                v = tmp[n, c] * e
                alpha[t, n, c] = v
                s[c] += v
        for c in range(C):
            if s[c] > 0.0:
                total[c] += np.log(s[c]) + mx[c]
            else:               # no path: keep zeros, finish with -inf
                total[c] = -np.inf
                s[c] = 1.0
        for n in range(N):
            for c in range(C):
                alpha[t, n, c] /= s[c]


@njit(cache=True, fastmath=_FM)
def _backward(lo, L, k, Ap, src, dst, exitw, ex, alpha, lsc, beta, eb, G, dAp, dEntry,
              dExit):
    """Scaled backward pass of every class; adds k[c] times class c's expected counts
    (k = weight / final sum)."""
    N, C = ex.shape[1], ex.shape[2]
    beta[L - 1] = exitw
    for t in range(L - 2, -1, -1):
        for n in range(N):
            for c in range(C):
                eb[n, c] = ex[t + 1, n, c] * beta[t + 1, n, c] / lsc[t + 1, c]
                beta[t, n, c] = 0.0
        for p in range(src.size):
            a, d = src[p], dst[p]
            for c in range(C):
                v = Ap[p, c] * eb[d, c]
                beta[t, a, c] += v
                if k[c] != 0.0:     # (a class left to the log pass may hold inf here)
                    dAp[p, c] += k[c] * alpha[t, a, c] * v
        # a state no path reaches at t (alpha 0: HMM states 2, 3, ... at t = 0) has no
        # posterior, so its beta is never needed; left alone it can overflow (its scale
        # factors are the reachable states') and turn 0 * inf into NaN
        for n in range(N):
            for c in range(C):
                if alpha[t, n, c] == 0.0:
                    beta[t, n, c] = 0.0
    for t in range(L):
        for n in range(N):
            for c in range(C):
                if k[c] != 0.0:
                    G[lo + t, n, c] += k[c] * alpha[t, n, c] * beta[t, n, c]
    for n in range(N):
        for c in range(C):
            if k[c] != 0.0:
                dEntry[n, c] += k[c] * alpha[0, n, c] * beta[0, n, c]
                dExit[n, c] += k[c] * alpha[L - 1, n, c] * exitw[n, c]


@njit(cache=True, fastmath=_FM)
def segment_lattice(E, off, y, prior, Ap, src, dst, entry, exitw, want_grad):
    """log Z (B, C) of every segment b (frames off[b]..off[b+1]-1 of E (T, N, C)) under
    every class. Ap (pairs, C), entry and exitw (N, C) are exp of the weights (0 where a
    move does not exist). With `want_grad`: also sum_b log p(y_b | x_b) and its gradients
    (G (T, N, C), dAp, dEntry, dExit, dPrior); segments with y[b] < 0 are only scored."""
    B = off.size - 1
    N, C = entry.shape
    P = src.size
    logZ = np.empty((B, C))
    G = np.zeros((E.shape[0] if want_grad else 0, N, C))
    dAp, dEntry, dExit = np.zeros((P, C)), np.zeros((N, C)), np.zeros((N, C))
    dPrior = np.zeros(C)
    Lmax = 1
    for b in range(B):
        Lmax = max(Lmax, off[b + 1] - off[b])
    ex = np.empty((Lmax, N, C))
    alpha = np.empty((Lmax, N, C))
    beta = np.empty((Lmax, N, C))
    lsc = np.empty((Lmax, C))
    tmp, eb = np.empty((N, C)), np.empty((N, C))
    total, fin, k = np.empty(C), np.empty(C), np.empty(C)
    ll = 0.0
    la, lb = np.empty((Lmax, N)), np.empty((Lmax, N))
    lAp, lentry, lexit = _log(Ap), _log(entry), _log(exitw)
    fragile = np.zeros(C, np.bool_)
    for b in range(B):
        lo, L = off[b], off[b + 1] - off[b]
        _forward(E, lo, L, Ap, src, dst, entry, ex, alpha, lsc, total, tmp, fragile)
        fin[:] = 0.0
        for n in range(N):
            for c in range(C):
                fin[c] += alpha[L - 1, n, c] * exitw[n, c]
        for c in range(C):
            if fragile[c]:      # exact, in log space
                logZ[b, c] = _log_forward(E, lo, L, c, lAp, src, dst, lentry, lexit, la) + prior[c]
            else:
                ok = fin[c] > 0.0 and total[c] > -np.inf
                logZ[b, c] = total[c] + np.log(fin[c]) + prior[c] if ok else -np.inf
        if not want_grad or y[b] < 0:
            continue
        top = logZ[b].max()
        s = 0.0
        for c in range(C):
            k[c] = np.exp(logZ[b, c] - top)
            s += k[c]
        ll += logZ[b, y[b]] - top - np.log(s)
        for c in range(C):
            w = (1.0 if c == y[b] else 0.0) - k[c] / s
            dPrior[c] += w
            k[c] = w / fin[c] if logZ[b, c] > -np.inf and not fragile[c] else 0.0
            if fragile[c] and w != 0.0 and logZ[b, c] > -np.inf:
                _log_forward(E, lo, L, c, lAp, src, dst, lentry, lexit, la)
                _log_backward(E, lo, L, c, w, logZ[b, c] - prior[c], lAp, src, dst, lexit, la,
                              lb, G, dAp, dEntry, dExit)
        _backward(lo, L, k, Ap, src, dst, exitw, ex, alpha, lsc, beta, eb, G, dAp, dEntry,
                  dExit)
    return logZ, ll, G, dAp, dEntry, dExit, dPrior


@njit(cache=True)
def _log(a):
    out = np.empty(a.shape)
    for i in np.ndindex(a.shape):
        out[i] = np.log(a[i]) if a[i] > 0.0 else -np.inf
    return out


@njit(cache=True)
def _log_forward(E, lo, L, c, lAp, src, dst, lentry, lexit, la):
    """Class c's forward pass over one segment in log space (exact whatever the range of
    the scores; slower): fills la (L, N), returns log Z without the prior."""
    N = lentry.shape[0]
    for n in range(N):
        la[0, n] = lentry[n, c] + E[lo, n, c]
    for t in range(1, L):
        la[t] = -np.inf
        for p in range(src.size):
            la[t, dst[p]] = _lse(la[t, dst[p]], la[t - 1, src[p]] + lAp[p, c])
        for n in range(N):
            la[t, n] += E[lo + t, n, c]
    z = -np.inf
    for n in range(N):
        z = _lse(z, la[L - 1, n] + lexit[n, c])
    return z


@njit(cache=True)
def _log_backward(E, lo, L, c, w, lz, lAp, src, dst, lexit, la, lb, G, dAp, dEntry, dExit):
    """Class c's backward pass in log space (after _log_forward filled la); adds w times
    its expected counts (lz: its log Z without the prior)."""
    N = lexit.shape[0]
    lb[L - 1] = lexit[:, c]
    for t in range(L - 2, -1, -1):
        lb[t] = -np.inf
        for p in range(src.size):
            v = lAp[p, c] + E[lo + t + 1, dst[p], c] + lb[t + 1, dst[p]]
            lb[t, src[p]] = _lse(lb[t, src[p]], v)
    for t in range(L):
        for n in range(N):
            G[lo + t, n, c] += w * np.exp(la[t, n] + lb[t, n] - lz)
    for t in range(L - 1):
        for p in range(src.size):
            v = la[t, src[p]] + lAp[p, c] + E[lo + t + 1, dst[p], c] + lb[t + 1, dst[p]]
            dAp[p, c] += w * np.exp(v - lz)
    for n in range(N):
        dEntry[n, c] += w * np.exp(la[0, n] + lb[0, n] - lz)
        dExit[n, c] += w * np.exp(la[L - 1, n] + lexit[n, c] - lz)
