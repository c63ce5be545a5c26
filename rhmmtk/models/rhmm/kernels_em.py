"""The R-HMM EM's compiled (numba) loops: the E-step's forward-backward over labelled
sequences (several in lockstep), the emission M-step on kept rows, and the prior's sum
of logs.

Each kernel has a plain numpy reference in the tests (tests/test_kernels.py) that it
must match to 1e-10. Compiled once per machine and cached next to this file (numba's
`cache=True`); the first use after an install pays the compile (a few seconds).
"""
import functools
import hashlib
from pathlib import Path

import numpy as np
from numba import njit

from . import kernels_em_steps
from .kernels_em_steps import _FM, UNROLLED_MAX, backward_step, forward_step


# The E-step walks G sequences of a bucket in lockstep (they are sorted by length, so a
# group's lengths mostly agree): each step's recursion for one sequence waits on the
# last one (a short chain of multiply-adds and a division at m = 4), and interleaving G
# independent chains lets the processor overlap them. At m <= EM_UNROLL_MAX the kernel is
# also compiled for that m as a constant (fully unrolled loops: 1.7x at m = 4 on
# NETtalk's letter windows), and its two recursions are the written-out ones of
# kernels_em_steps (one local per state, so partial sums stay in registers: 18-20% faster
# at m = 4); at larger m unrolling made it slower, so one kernel reads m from the arrays.
# Measured in bench/bench_core.py (EM iteration rows).
EM_UNROLL_MAX = UNROLLED_MAX
# numba's disk cache keys a kernel by its own file's time stamp and its closure's
# constants, not by the functions it inlines from kernels_em_steps.py: this hash of that
# file, a constant the E-step kernel reads, makes any edit of it a new cache entry
_STEPS_HASH = int(hashlib.sha256(Path(kernels_em_steps.__file__).read_bytes()).hexdigest()[:15],
                  16)
EM_LANES_UNROLLED, EM_LANES = 16, 8


def em_forward_backward(A, E, starts, lens, pair, pi, o, tp, f, pi_acc, o_acc, xi_acc, f_acc):
    """Forward-backward over the m hidden states of each position of labelled sequences
    (labels A flattened; sequence s at starts[s], length lens[s] >= 1).

    pi (l, m); o (rows, m) emissions, E[k] the row of flat position k's (label,
    observation) pair; tp (P, m, m) [pair, h2, h] transitions; f (l, m).
    pair[k] is the pair id of the transition from flat position k to k + 1.
    Adds the expected counts: pi_acc (l, m) first positions, o_acc (rows, m) emissions
    (row E[k]), xi_acc (P, m, m) transitions, f_acc (l, m) last positions.
    Returns the total log-likelihood."""
    m = pi.shape[1]
    kernel = (_em_kernel(m, EM_LANES_UNROLLED) if m <= EM_UNROLL_MAX
              else _em_kernel(0, EM_LANES))
    return kernel(A, E, starts, lens, pair, pi, o, tp, f, pi_acc, o_acc, xi_acc, f_acc)


@functools.lru_cache(maxsize=None)
def _em_kernel(const_m, lanes):
    """The compiled E-step for m = const_m (0: m read from the arrays), `lanes` sequences
    at a time. numba caches each instance on disk (keyed by the two constants and the
    written-out steps' hash, `_STEPS_HASH`)."""
    steps_hash = _STEPS_HASH
    unrolled = 0 < const_m <= EM_UNROLL_MAX         # the written-out steps exist for m

    @njit(cache=True, fastmath=_FM, error_model="numpy")
    def kernel(A, E, starts, lens, pair, pi, o, tp, f, pi_acc, o_acc, xi_acc, f_acc):
        if steps_hash == 0:                         # read, so that it keys the cache
            return 0.0
        m = const_m if const_m > 0 else pi.shape[1]
        G = lanes
        S = starts.size
        total = 0.0
        if S == 0:
            return total
        Tmax = lens.max()
        alpha = np.empty((Tmax, G, m))
        beta = np.empty((Tmax, G, m))
        c = np.empty((Tmax, G))
        em = np.empty((Tmax, G, m))
        v = np.empty((G, m))
        for s0 in range(0, S, G):
            gn = min(G, S - s0)
            T = 0
            for g in range(gn):
                L = lens[s0 + g]
                T = max(T, L)
                st = starts[s0 + g]
                for t in range(L):
                    row = E[st + t]
                    for h in range(m):
                        em[t, g, h] = o[row, h]
                a0 = A[st]
                s_ = 0.0
                for h in range(m):
                    x = pi[a0, h] * em[0, g, h]
                    alpha[0, g, h] = x
                    s_ += x
                c[0, g] = s_
                r = 1.0 / s_
                for h in range(m):
                    alpha[0, g, h] *= r
            for t in range(1, T):
                for g in range(gn):
                    if t >= lens[s0 + g]:
                        continue
                    P = tp[pair[starts[s0 + g] + t - 1]]
                    if unrolled:
                        c[t, g] = forward_step(const_m, P, alpha[t - 1, g], em[t, g],
                                               alpha[t, g])
                        continue
                    ss = 0.0
                    for i in range(m):
                        acc = 0.0
                        for j in range(m):
                            acc += P[i, j] * alpha[t - 1, g, j]
                        x = acc * em[t, g, i]
                        v[g, i] = x
                        ss += x
                    c[t, g] = ss
                    r = 1.0 / ss
                    for i in range(m):
                        alpha[t, g, i] = v[g, i] * r
            for g in range(gn):
                L = lens[s0 + g]
                aL = A[starts[s0 + g] + L - 1]
                z = 0.0
                for h in range(m):
                    z += alpha[L - 1, g, h] * f[aL, h]
                # log of z * prod_t c[t], with one log per run of factors whose product
                # stays well inside the double range (a log per position costs as much as
                # m = 4's work)
                ll = 0.0
                prod = z
                for t in range(L):
                    prod *= c[t, g]
                    if prod < 1e-250 or prod > 1e250:
                        ll += np.log(prod)
                        prod = 1.0
                total += ll + np.log(prod)
                r = 1.0 / z
                for h in range(m):
                    beta[L - 1, g, h] = f[aL, h] * r
            for t in range(T - 2, -1, -1):
                for g in range(gn):
                    if t >= lens[s0 + g] - 1:
                        continue
                    pid = pair[starts[s0 + g] + t]
                    P = tp[pid]
                    Xi = xi_acc[pid]
                    r = 1.0 / c[t + 1, g]
                    if unrolled:
                        backward_step(const_m, P, Xi, beta[t + 1, g], em[t + 1, g], r,
                                      alpha[t, g], beta[t, g])
                        continue
                    for i in range(m):
                        v[g, i] = beta[t + 1, g, i] * em[t + 1, g, i] * r
                    for j in range(m):
                        beta[t, g, j] = 0.0
                    # one pass over P: beta_t[j] = sum_i v[i] P[i, j], and the expected
                    # transitions xi[i, j] = v[i] P[i, j] alpha_t[j]
                    for i in range(m):
                        vi = v[g, i]
                        for j in range(m):
                            p = vi * P[i, j]
                            beta[t, g, j] += p
                            Xi[i, j] += p * alpha[t, g, j]
            # posteriors gamma = alpha * beta (rows sum to 1) into the counts
            for g in range(gn):
                L = lens[s0 + g]
                st = starts[s0 + g]
                for t in range(L):
                    row = E[st + t]
                    for h in range(m):
                        o_acc[row, h] += alpha[t, g, h] * beta[t, g, h]
                a0 = A[st]
                aL = A[st + L - 1]
                for h in range(m):
                    pi_acc[a0, h] += alpha[0, g, h] * beta[0, g, h]
                    f_acc[aL, h] += alpha[L - 1, g, h] * beta[L - 1, g, h]
        return total

    return kernel


@njit(cache=True)
def normalise_emission_rows(counts, label, allowed, others, floor, values, tot):
    """EM's emission M-step on kept rows (in numpy, the temporaries and the gather of
    each row's total cost 3x more at m = 4).
    values[r] = (counts[r] + floor allowed[r]) / tot[label[r]], where tot[a] sums label
    a's rows plus floor * others[a] (a total of 0 is taken as 1). Fills values and tot."""
    R, m = counts.shape
    for a in range(tot.shape[0]):
        for h in range(m):
            tot[a, h] = floor * others[a]
    for r in range(R):
        add = floor * allowed[r]
        for h in range(m):
            x = counts[r, h] + add
            values[r, h] = x
            tot[label[r], h] += x
    for a in range(tot.shape[0]):
        for h in range(m):
            if tot[a, h] == 0.0:
                tot[a, h] = 1.0
    inv = 1.0 / tot             # one division per (label, state), not per row
    for r in range(R):
        for h in range(m):
            values[r, h] *= inv[label[r], h]


@njit(cache=True)
def support_log_sum(o, support):
    """sum of log o[a, x, h] over every h and every (a, x) with support[a, x].

    The logs are the cost (l n m of them: 33M for NETtalk's letter windows at m = 32,
    over a second a call in numpy), yet after an M-step every unseen (a, x) of a label
    holds the same value per h (floor / its total). So a run of equal values is summed
    as count x one log: exact, and each (a, h) is added up on its own."""
    l, n = support.shape
    m = o.shape[2]
    total = 0.0
    last = np.empty(m)
    run = np.zeros(m)
    for a in range(l):
        part = 0.0
        for h in range(m):
            run[h] = 0.0
        for x in range(n):
            if not support[a, x]:
                continue
            for h in range(m):
                v = o[a, x, h]
                if run[h] > 0.0 and v == last[h]:
                    run[h] += 1.0
                else:
                    if run[h] > 0.0:
                        part += run[h] * np.log(last[h])
                    last[h] = v
                    run[h] = 1.0
        for h in range(m):
            if run[h] > 0.0:
                part += run[h] * np.log(last[h])
        total += part
    return total
