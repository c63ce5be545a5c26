"""Compiled (numba) inner loops of the decoder, the EM E-step and the edit distance.

These are the loops that run once per position (and per label): in numpy they cost a
Python round trip each, which dominates whenever the batch is small (one long
utterance) or the blocks are tiny (m of 1-8). Each kernel has a plain numpy
reference in the tests (tests/test_kernels.py) that it must match to 1e-10.

Compiled once per machine and cached next to this file (numba's `cache=True`); the
first use after an install pays the compile (a few seconds).
"""
import functools
import hashlib
from pathlib import Path

import numpy as np
from numba import njit

from . import kernels_em_steps
from .kernels_em_steps import UNROLLED_MAX, backward_step, forward_step

# Only reassociation and fused multiply-add: the sums may be added in another order
# (differences of a few ulps), but no NaN/Inf assumptions.
_FM = {"reassoc", "contract"}

# operator modes of the decoder kernels
GENERAL, DIAGONAL, PER_POSITION = 0, 1, 2


# ------------------------------------------------------------------------------ decoder
@njit(cache=True, fastmath=_FM)
def _keep_row(arow, off, enorm_x, beam, keep_row):
    """Labels extended at one position: |alpha_a|_1 |c^a_x|_1 > beam * the best, and the
    best label always (so that no beam in [0, 1], 1 included, prunes every label)."""
    l = off.size - 1
    best = 0.0
    mass = np.empty(l)
    for a in range(l):
        s = 0.0
        for j in range(off[a], off[a + 1]):
            s += abs(arow[j])
        mass[a] = s * enorm_x[a]
        if mass[a] > best:
            best = mass[a]
    for a in range(l):
        keep_row[a] = mass[a] > beam * best or (mass[a] == best and best > 0.0)


@njit(cache=True, fastmath=_FM)
def keep_rows(alpha, off, enorm, x, beam, keep):
    """The matrix-product schedule's `_keep_row` for every sequence of a batch at one
    position: alpha (B, S), observations x (B,), enorm (l, n), keep (B, l) out. (In numpy
    the same rule took 6-10% of a decode of 300 NETtalk words: an abs, a reduceat and a
    strided gather of enorm's columns, each a pass over the batch.)"""
    for i in range(alpha.shape[0]):
        _keep_row(alpha[i], off, enorm[:, x[i]], beam, keep[i])


@njit(cache=True, fastmath=_FM)
def rescale_rows(v, logs):
    """`_rescale_row` of every row of v (B, S); logs[i] += the log of row i's divisor."""
    for i in range(v.shape[0]):
        logs[i] += _rescale_row(v[i])


@njit(cache=True, fastmath=_FM)
def label_sums(u, v, off, out):
    """out[i, a] = sum over label a's states j of u[i, j] v[i, j] (the marginals of one
    position from beta and alpha)."""
    for i in range(u.shape[0]):
        ui, vi, oi = u[i], v[i], out[i]
        for a in range(off.size - 1):
            s = 0.0
            for j in range(off[a], off[a + 1]):
                s += ui[j] * vi[j]
            oi[a] = s


@njit(cache=True, fastmath=_FM)
def _rescale_row(v):
    """Divide by the sum of absolute values; returns log of it (0 for a dead row)."""
    s = 0.0
    for j in range(v.size):
        s += abs(v[j])
    if s == 0.0:
        return 0.0
    for j in range(v.size):
        v[j] /= s
    return np.log(s)


@njit(cache=True, fastmath=_FM)
def _add_row_times_block(z, ka, stk, base, na, out):
    """out[:na] += z[:ka] @ (the ka x na block of stk at base), skipping zero weights
    (pruned states)."""
    for r in range(ka):
        zr = z[r]
        if zr == 0.0:
            continue
        # a row slice: indexed by the loop counter alone, the loop vectorises (with
        # stk[base + r * na + c] numba must check each index for wraparound: 3-7x slower)
        row = stk[base + r * na: base + (r + 1) * na]
        for c in range(na):
            out[c] += zr * row[c]


@njit(cache=True, inline="always")
def _add_runs(dst, src, starts, lens):
    """dst[cols] += src, cols given as runs of consecutive states (run k: lens[k] states
    from starts[k]): run by run the adds are contiguous and vectorise, which a column
    index per state would not."""
    at = 0
    for k in range(starts.size):
        d = dst[starts[k]: starts[k] + lens[k]]
        s = src[at: at + lens[k]]
        for c in range(lens[k]):
            d[c] += s[c]
        at += lens[k]


@njit(cache=True, inline="always")
def _read_runs(src, starts, lens, dst):
    """dst[: sum(lens)] = src[cols], cols as runs (see `_add_runs`)."""
    at = 0
    for k in range(starts.size):
        s = src[starts[k]: starts[k] + lens[k]]
        d = dst[at: at + lens[k]]
        for c in range(lens[k]):
            d[c] = s[c]
        at += lens[k]


@njit(cache=True, fastmath=_FM)
def forward_block(x, t0, t1, T, alpha, keep, off, enorm, E, beam, mode,
                  stk, sptr, wptr, wscale, K, N, rs, rl, rptr):
    """Positions t0 <= t < t1 of one sequence of length T: keep[t] and alpha[t + 1].

    mode GENERAL: z = alpha_a (x) c^a_x (m_a^2) times the stacked C^{b|a} (K_a = m_a^2 rows);
    DIAGONAL: z = alpha_a * c^a_x times the stacked T^{b|a} (K_a = m_a rows);
    PER_POSITION: z = wscale[t - t0, a] alpha_a times W, where wscale W = C^{b|a}(c^a_x)
    was precomputed for this position (wptr[t - t0, a] is W's start in stk; K_a = m_a
    rows; a floor-only emission shares one W = C^{b|a}(g_a) for all positions).
    Successor columns of alpha[t + 1]: N[a] states, in runs of consecutive ones (run k of
    label a, rptr[a] <= k < rptr[a + 1]: rl[k] states from rs[k]). Run by run the adds
    into alpha[t + 1] are contiguous and vectorise; a column index per state could not
    (EM(32), 2,194 NETtalk windows as one sequence: 0.87 s with each label's operator
    widened to all S states to avoid that scatter, 0.71 s by runs without widening)."""
    l = off.size - 1
    z = np.empty(K.max() if K.size else 1)
    acc = np.empty(N.max() if N.size else 1)
    for t in range(t0, t1):
        xt = x[t]
        _keep_row(alpha[t], off, enorm[:, xt], beam, keep[t])
        if t + 1 >= T:
            continue
        nxt = alpha[t + 1]
        for a in range(l):
            na = N[a]
            if not keep[t, a] or na == 0:
                continue
            o, ma = off[a], off[a + 1] - off[a]
            al = alpha[t, o: o + ma]
            ex = E[xt, o: o + ma]
            if mode == GENERAL:
                for j in range(ma):
                    aj = al[j]
                    for k in range(ma):
                        z[j * ma + k] = aj * ex[k]
                base, ka = sptr[a], ma * ma
            elif mode == DIAGONAL:
                for j in range(ma):
                    z[j] = al[j] * ex[j]
                base, ka = sptr[a], ma
            else:
                sc = wscale[t - t0, a]
                for j in range(ma):
                    z[j] = al[j] * sc
                base, ka = wptr[t - t0, a], ma
            if na == nxt.size:
                # dense successor row (every state of alpha[t + 1]): no gather/scatter
                _add_row_times_block(z, ka, stk, base, na, nxt)
                continue
            for c in range(na):
                acc[c] = 0.0
            _add_row_times_block(z, ka, stk, base, na, acc)
            _add_runs(nxt, acc, rs[rptr[a]: rptr[a + 1]], rl[rptr[a]: rptr[a + 1]])
        _rescale_row(nxt)


@njit(cache=True, fastmath=_FM)
def backward_block(x, t0, t1, T, alpha, keep, beta, mu, off, E, mode, general_stop,
                   stop, stptr, stk, sptr, wptr, wscale, K, N, rs, rl, rptr):
    """Positions t1 - 1 down to t0 of one sequence: beta (in: beta at t1, out: at t0, both
    rescaled), mu[t] = per-label sums of beta_t * alpha_t. Returns the sum of log scales.
    Successor columns as `forward_block` takes them."""
    l = off.size - 1
    S = beta.size
    new = np.empty(S)
    y = np.empty(K.max() if K.size else 1)
    g = np.empty(N.max() if N.size else 1)
    logscale = 0.0
    for t in range(t1 - 1, t0 - 1, -1):
        xt = x[t]
        for j in range(S):
            new[j] = 0.0
        for a in range(l):
            if not keep[t, a]:
                continue
            o, ma = off[a], off[a + 1] - off[a]
            if t == T - 1:
                sp = stptr[a]
                if general_stop:
                    for j in range(ma):
                        s = 0.0
                        for k in range(ma):
                            s += stop[sp + j * ma + k] * E[xt, o + k]
                        new[o + j] = s
                else:
                    for j in range(ma):
                        new[o + j] = E[xt, o + j] * stop[sp + j]
                continue
            na = N[a]
            if na == 0:
                continue
            _read_runs(beta, rs[rptr[a]: rptr[a + 1]], rl[rptr[a]: rptr[a + 1]], g)
            if mode == GENERAL:
                base, ka = sptr[a], ma * ma
            elif mode == DIAGONAL:
                base, ka = sptr[a], ma
            else:
                base, ka = wptr[t - t0, a], ma
            for r in range(ka):
                s = 0.0
                row = stk[base + r * na: base + (r + 1) * na]    # a slice: see above
                for c in range(na):
                    s += row[c] * g[c]
                y[r] = s
            ex = E[xt, o: o + ma]
            nw = new[o: o + ma]
            if mode == GENERAL:
                for j in range(ma):
                    s = 0.0
                    for k in range(ma):
                        s += y[j * ma + k] * ex[k]
                    nw[j] = s
            elif mode == DIAGONAL:
                for j in range(ma):
                    nw[j] = y[j] * ex[j]
            else:
                sc = wscale[t - t0, a]
                for j in range(ma):
                    nw[j] = y[j] * sc
        logscale += _rescale_row(new)
        for a in range(l):
            s = 0.0
            for j in range(off[a], off[a + 1]):
                s += new[j] * alpha[t, j]
            mu[t, a] = s
        for j in range(S):
            beta[j] = new[j]
    return logscale


@njit(cache=True)
def extendable(xc, t0, reach, can_emit, succ, sptr, want):
    """The blocked schedule's labels to precompute C(c) for, positions t0 .. t0 + len(want)
    - 1: want[t - t0, a] when label a can emit xc[t] (can_emit (l, u)) and is reachable
    from the labels with forward mass at t0 (reach, l) through such labels (label a's
    successors: succ[sptr[a]: sptr[a + 1]]). A superset of what the forward pass keeps,
    at any beam. (A numpy step per position was a fifth of a 20,000-letter decode.)"""
    l = reach.size
    cur = reach.copy()
    nxt = np.empty(l, dtype=np.bool_)
    for i in range(want.shape[0]):
        x = xc[t0 + i]
        w = want[i]
        nxt[:] = False
        for a in range(l):
            w[a] = cur[a] and can_emit[a, x]
            if w[a]:
                for k in range(sptr[a], sptr[a + 1]):
                    nxt[succ[k]] = True
        cur, nxt = nxt, cur


@njit(cache=True)
def _new_pairs(xc, t0, t1, own, size, stamp, nb):
    """Entries that the C(c) of positions t0 .. t1 - 1 add to block nb: size[a] for each
    label a with own[a, xc[t]] whose (a, xc[t]) the block does not hold yet (stamp[a, x]:
    the last block holding it; set to nb here)."""
    need = 0
    for t in range(t0, t1):
        x = xc[t]
        for a in range(own.shape[0]):
            if own[a, x] and stamp[a, x] != nb:
                stamp[a, x] = nb
                need += size[a]
    return need


@njit(cache=True)
def distinct_blocks(xc, bounds, own, size, cap, ends):
    """Blocks of units for precomputed C(c): unit k is positions bounds[k] .. bounds[k + 1]
    - 1 (the blocked schedule: one position each; the matrix-product schedule's groups:
    one sequence each, all its positions but the last). A unit joins the current block unless the C(c) it adds (see
    `_new_pairs`; a block computes each (label, observation) once) would take the block
    past cap entries; a unit alone always makes a block. Writes block k's end (a unit
    index) into ends[k]; returns (number of blocks, the largest block's entries)."""
    stamp = np.full(own.shape, -1, dtype=np.int64)
    nb = 0
    used = 0
    most = 0
    for k in range(bounds.size - 1):
        need = _new_pairs(xc, bounds[k], bounds[k + 1], own, size, stamp, nb)
        if used > 0 and used + need > cap:
            ends[nb] = k
            nb += 1
            used = 0
            need = _new_pairs(xc, bounds[k], bounds[k + 1], own, size, stamp, nb)
        used += need
        if used > most:
            most = used
    ends[nb] = bounds.size - 1
    return nb + 1, most


@njit(cache=True)
def decode_sequences(X, starts, lens, init, off, enorm, E, beam, mode, general_stop,
                     stop, stptr, stk, sptr, K, N, rs, rl, rptr, mu, loglik):
    """Every sequence (X[starts[s]: starts[s] + lens[s]]) forward then backward; mu rows
    at the same offsets in `mu` (positions, l); loglik[s] as Decoder.batch defines it."""
    S = init.size
    l = off.size - 1
    wptr = np.zeros((1, l), dtype=np.int64)
    wscale = np.ones((1, l))
    for s in range(starts.size):
        T = lens[s]
        x = X[starts[s]: starts[s] + T]
        alpha = np.zeros((T, S))
        alpha[0, :] = init
        keep = np.zeros((T, l), dtype=np.bool_)
        forward_block(x, 0, T, T, alpha, keep, off, enorm, E, beam, mode,
                      stk, sptr, wptr, wscale, K, N, rs, rl, rptr)
        beta = np.zeros(S)
        m = mu[starts[s]: starts[s] + T]
        ls = backward_block(x, 0, T, T, alpha, keep, beta, m, off, E, mode, general_stop,
                            stop, stptr, stk, sptr, wptr, wscale, K, N, rs, rl, rptr)
        total = 0.0
        for a in range(l):
            total += m[0, a]
        loglik[s] = np.log(total) + ls if total > 0 else np.nan


@njit(cache=True)
def scatter_add(out, rows, starts, lens, P):
    """out[rows[i], cols] += P[i]: one label's products into its successors' states, cols
    given as runs of consecutive states (run k: lens[k] states from starts[k]; each
    successor label's states are one run). numpy's out[np.ix_(rows, cols)] += P costs a
    gather, an add and a scatter pass; run by run the adds are contiguous and vectorise
    (1.7x over a column index per state, TIMIT frames at m = 32)."""
    for i in range(rows.size):
        _add_runs(out[rows[i]], P[i], starts, lens)


@njit(cache=True)
def gather(src, rows, starts, lens, out):
    """out[i] = src[rows[i], cols], cols as runs (see scatter_add); out (rows.size,
    sum(lens)), contiguous."""
    for i in range(rows.size):
        _read_runs(src[rows[i]], starts, lens, out[i])


@njit(cache=True)
def c_index_first(src, out, at):
    """out[k, j, at + n] = src[n, j, k]: one successor's C^{b|a} (m_b, m_a, m_a), as the
    model holds it, into label a's operators with the c^a_x index first (m_a, m_a, N_a),
    from column `at` on. (numpy's copy of the transposed stack: 0.15-0.2 s for all
    labels at m = 32 on NETtalk's windows; this, one successor's 260 KB at a time, 0.1 s,
    and no concatenated stack to build first.)"""
    nb, ma = src.shape[0], src.shape[1]
    # j outermost: the nb cache lines src[:, j, k: k + 8] serve 8 values of k in turn
    # (k outermost: 30% slower)
    for j in range(ma):
        for k in range(ma):
            o = out[k, j]
            for n in range(nb):
                o[at + n] = src[n, j, k]


@njit(cache=True, inline="always")
def _label_rows(full, xt, ptr, fptr, a, own, own_at, floor):
    """The rows i marked in full[:, a] that have a matrix (ptr[a, xt[i]] >= 0), split into
    those with their own (own[k], starting at own_at[k]) and those whose emission is the
    floor alone (floor[k]: the matrix at fptr[a], shared). Returns the two counts."""
    no = nf = 0
    for i in range(full.shape[0]):
        if not full[i, a]:
            continue
        p = ptr[a, xt[i]]
        if p < 0:
            continue
        if p == fptr[a]:
            floor[nf] = i
            nf += 1
        else:
            own[no] = i
            own_at[no] = p
            no += 1
    return no, nf


@njit(cache=True, fastmath=_FM)
def cached_forward(cur, nxt, full, xt, ptr, fptr, fscale, buf, off, N, rs, rl, rptr):
    """The matrix-product schedule's forward step with C^{b|a}(c^a_x) precomputed for the
    batch (`Decoder._batch_products`): nxt[i, cols_a] += cur[i, label a's states] times
    the m_a x N_a matrix C at buf[ptr[a, xt[i]]], for every (sequence i, label a) marked
    in full (B, l); ptr -1: nothing to add (c^a_x = 0; a row of full always has a
    matrix, as a kept label can emit its observation and full marks continuing
    positions of labels with successors). A row whose emission is the floor
    alone has C = fscale[xt[i]] C(g_a), C(g_a) at fptr[a] shared by all observations:
    those rows go through one matrix product per label, the others one row at a time
    (each reads its own C). Successor columns as runs (see `forward_block`)."""
    B, l = full.shape
    S = nxt.shape[1]
    acc = np.empty(N.max() if N.size else 1)
    own = np.empty(B, dtype=np.int64)
    own_at = np.empty(B, dtype=np.int64)
    floor = np.empty(B, dtype=np.int64)
    for a in range(l):
        na = N[a]
        if na == 0:
            continue
        o, ma = off[a], off[a + 1] - off[a]
        st, ln = rs[rptr[a]: rptr[a + 1]], rl[rptr[a]: rptr[a + 1]]
        no, nf = _label_rows(full, xt, ptr, fptr, a, own, own_at, floor)
        for r in range(no):
            i, p = own[r], own_at[r]
            if na == S:
                _add_row_times_block(cur[i, o: o + ma], ma, buf, p, na, nxt[i])
                continue
            for c in range(na):
                acc[c] = 0.0
            _add_row_times_block(cur[i, o: o + ma], ma, buf, p, na, acc)
            _add_runs(nxt[i], acc, st, ln)
        if nf == 0:
            continue
        Z = np.empty((nf, ma))
        for r in range(nf):
            i = floor[r]
            sc = fscale[xt[i]]
            for j in range(ma):
                Z[r, j] = cur[i, o + j] * sc
        Y = np.dot(Z, buf[fptr[a]: fptr[a] + ma * na].reshape(ma, na))
        for r in range(nf):
            _add_runs(nxt[floor[r]], Y[r], st, ln)


@njit(cache=True, fastmath=_FM)
def cached_backward(beta, new, full, xt, ptr, fptr, fscale, buf, off, N, rs, rl, rptr):
    """The transpose of `cached_forward`: new[i, label a's states] = C beta[i, cols_a] for
    every (i, a) marked in full (rows with ptr -1 left as they are)."""
    B, l = full.shape
    g = np.empty(N.max() if N.size else 1)
    own = np.empty(B, dtype=np.int64)
    own_at = np.empty(B, dtype=np.int64)
    floor = np.empty(B, dtype=np.int64)
    for a in range(l):
        na = N[a]
        if na == 0:
            continue
        o, ma = off[a], off[a + 1] - off[a]
        st, ln = rs[rptr[a]: rptr[a + 1]], rl[rptr[a]: rptr[a + 1]]
        no, nf = _label_rows(full, xt, ptr, fptr, a, own, own_at, floor)
        for r in range(no):
            i, p = own[r], own_at[r]
            _read_runs(beta[i], st, ln, g)
            nw = new[i, o: o + ma]
            for j in range(ma):
                row = buf[p + j * na: p + (j + 1) * na]    # a slice (`_add_row_times_block`)
                s = 0.0
                for c in range(na):
                    s += row[c] * g[c]
                nw[j] = s
        if nf == 0:
            continue
        G = np.empty((nf, na))
        for r in range(nf):
            _read_runs(beta[floor[r]], st, ln, G[r])
        Y = np.dot(G, buf[fptr[a]: fptr[a] + ma * na].reshape(ma, na).T)
        for r in range(nf):
            i = floor[r]
            sc = fscale[xt[i]]
            for j in range(ma):
                new[i, o + j] = Y[r, j] * sc


# ------------------------------------------------------------------------------ EM
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


# ------------------------------------------------------------------------------ alignment
@njit(cache=True)
def banded_edit_counts(ref, hyp, sub, dele, ins, dlo, dhi):
    """Weighted edit alignment of int sequences restricted to cells dlo <= j - i <= dhi,
    with the tie-breaking of rhmmtk.scoring.edit_counts_reference (diagonal if no worse
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


# ------------------------------------------------------------------- CDHMM mixtures
@njit(cache=True)
def mixture_combine(Z, M, use_sum):
    """(T, G) Gaussian scores, G = states x M components in order -> (state scores (T, G/M):
    log-sum-exp over components if `use_sum` else max, best component (T, G/M): the
    first of equals). One pass over Z, where numpy needs one strided pass per component."""
    T, G = Z.shape
    n = G // M
    out = np.empty((T, n))
    best = np.empty((T, n), dtype=np.int64)
    for t in range(T):
        for s in range(n):
            base = s * M
            top = Z[t, base]
            b = 0
            for m in range(1, M):
                v = Z[t, base + m]
                if v > top:
                    top = v
                    b = m
            best[t, s] = b
            if use_sum and top > -np.inf:
                acc = 0.0
                for m in range(M):
                    acc += np.exp(Z[t, base + m] - top)
                top += np.log(acc)
            out[t, s] = top
    return out, best
