"""Forward-backward of every class's hidden-state lattice over every segment (compiled).

A segment x_1..x_L of class c is scored by the sum over hidden-state paths s_1..s_L of
class c of exp(prior_c + entry_c[s_1] + sum_t E[t, c, s_t] + sum_t trans_c[s_t, s_t+1]
+ exit_c[s_L]); log Z[b, c] is its log. The class posterior is softmax_c log Z[b, c].
E (frames, C, N) holds the log emission scores (one matrix product, rhmmtk.models.hcrf.
model); the kernel adds the paths in probability space, rescaling every frame per class
(the scaled forward-backward), so it never under- or overflows however far apart the
classes' scores are.

With gradients, it also returns the derivatives of sum_b log p(y_b | x_b) with respect
to E (G, frames x C x N: (1[c = y_b] - p(c | x_b)) times the state posterior within class
c), the transition, entry and exit weights and the priors: the observed minus the
expected feature counts.
"""
import numpy as np
from numba import njit

_FM = {"reassoc", "contract"}


@njit(cache=True, fastmath=_FM)
def _forward(E, lo, L, c, Ap, src, dst, entry, ex, alpha, lsc, tmp):
    """Scaled forward pass of class c over frames lo..lo+L-1 (moves: the pairs src->dst
    with weights Ap[c]); returns log Z without prior and exit (-inf: no path)."""
    N = ex.shape[1]
    total = 0.0
    for t in range(L):
        mx = E[lo + t, c, 0]
        for n in range(1, N):
            if E[lo + t, c, n] > mx:
                mx = E[lo + t, c, n]
        for n in range(N):
            ex[t, n] = np.exp(E[lo + t, c, n] - mx)
        if t == 0:
            for n in range(N):
                tmp[n] = entry[c, n]
        else:
            for n in range(N):
                tmp[n] = 0.0
            for p in range(src.size):
                tmp[dst[p]] += alpha[t - 1, src[p]] * Ap[c, p]
        s = 0.0
        for n in range(N):
            v = tmp[n] * ex[t, n]
            alpha[t, n] = v
            s += v
        if s <= 0.0:
            return -np.inf
        inv = 1.0 / s
        for n in range(N):
            alpha[t, n] *= inv
        lsc[t] = s
        total += np.log(s) + mx
    return total


@njit(cache=True, fastmath=_FM)
def _backward(lo, L, c, w, Ap, src, dst, exitw, ex, alpha, lsc, fin, beta, eb, G, dAp,
              dEntry, dExit):
    """Scaled backward pass of class c; adds w times its expected counts."""
    N = ex.shape[1]
    k = w / fin
    for n in range(N):
        beta[L - 1, n] = exitw[c, n]
    for t in range(L - 2, -1, -1):
        inv = 1.0 / lsc[t + 1]
        for n in range(N):
            eb[n] = ex[t + 1, n] * beta[t + 1, n] * inv
            beta[t, n] = 0.0
        for p in range(src.size):
            a = Ap[c, p] * eb[dst[p]]
            beta[t, src[p]] += a
            dAp[c, p] += k * alpha[t, src[p]] * a
    for t in range(L):
        for n in range(N):
            G[lo + t, c, n] += k * alpha[t, n] * beta[t, n]
    for n in range(N):
        dEntry[c, n] += k * alpha[0, n] * beta[0, n]
        dExit[c, n] += k * alpha[L - 1, n] * exitw[c, n]


@njit(cache=True, fastmath=_FM)
def segment_lattice(E, off, y, prior, A, entry, exitw, want_grad):
    """log Z (B, C) of every segment b (frames off[b]..off[b+1]-1 of E) under every class.
    A, entry, exitw are exp of the weights (0 where a move does not exist).
    With `want_grad`: also sum_b log p(y_b | x_b) and its gradients (see module doc);
    segments with y[b] < 0 are only scored."""
    B = off.size - 1
    C, N = A.shape[0], A.shape[1]
    # the moves that exist in some class, as pairs: the loops skip the others
    P = 0
    for m in range(N):
        for n in range(N):
            for c in range(C):
                if A[c, m, n] != 0.0:
                    P += 1
                    break
    src, dst = np.empty(P, np.int64), np.empty(P, np.int64)
    Ap = np.empty((C, P))
    p = 0
    for m in range(N):
        for n in range(N):
            for c in range(C):
                if A[c, m, n] != 0.0:
                    src[p], dst[p] = m, n
                    for cc in range(C):
                        Ap[cc, p] = A[cc, m, n]
                    p += 1
                    break
    logZ = np.empty((B, C))
    G = np.zeros((E.shape[0] if want_grad else 0, C, N))
    dAp, dEntry, dExit = np.zeros((C, P)), np.zeros((C, N)), np.zeros((C, N))
    dPrior = np.zeros(C)
    Lmax = 1
    for b in range(B):
        Lmax = max(Lmax, off[b + 1] - off[b])
    ex = np.empty((C, Lmax, N))
    alpha = np.empty((C, Lmax, N))
    lsc = np.empty((C, Lmax))
    beta = np.empty((Lmax, N))
    tmp, eb = np.empty(N), np.empty(N)
    fin = np.zeros(C)
    post = np.empty(C)
    ll = 0.0
    for b in range(B):
        lo, L = off[b], off[b + 1] - off[b]
        for c in range(C):
            z = _forward(E, lo, L, c, Ap, src, dst, entry, ex[c], alpha[c], lsc[c], tmp)
            f = 0.0
            if z > -np.inf:
                for n in range(N):
                    f += alpha[c, L - 1, n] * exitw[c, n]
            fin[c] = f
            logZ[b, c] = z + np.log(f) + prior[c] if f > 0.0 else -np.inf
        if not want_grad or y[b] < 0:
            continue
        top = logZ[b, 0]
        for c in range(1, C):
            top = max(top, logZ[b, c])
        s = 0.0
        for c in range(C):
            post[c] = np.exp(logZ[b, c] - top)
            s += post[c]
        ll += logZ[b, y[b]] - top - np.log(s)
        for c in range(C):
            w = (1.0 if c == y[b] else 0.0) - post[c] / s
            if w == 0.0 or fin[c] == 0.0:
                continue
            dPrior[c] += w
            _backward(lo, L, c, w, Ap, src, dst, exitw, ex[c], alpha[c], lsc[c], fin[c], beta,
                      eb, G, dAp, dEntry, dExit)
    dA = np.zeros((C, N, N))
    for c in range(C):
        for p in range(P):
            dA[c, src[p], dst[p]] = dAp[c, p]
    return logZ, ll, G, dA, dEntry, dExit, dPrior
