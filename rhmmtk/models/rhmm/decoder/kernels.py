"""The R-HMM decoder's compiled (numba) inner loops: the per-sequence and blocked
forward-backward, the blocked schedule's reachable labels, the beam's keep rule,
rescaling and marginal sums, the matrix-product schedule's scatter/gather and its steps
with precomputed C^{b|a}(c^a_x), and the blocks and groups that bound their memory.

These are the loops that run once per position (and per label): in numpy they cost a
Python round trip each, which dominates whenever the batch is small (one long
utterance) or the blocks are tiny (m of 1-8). Each kernel has a plain numpy
reference in the tests (tests/test_kernels.py) that it must match to 1e-10.

Compiled once per machine and cached next to this file (numba's `cache=True`); the
first use after an install pays the compile (a few seconds).
"""
import numpy as np
from numba import njit

# Only reassociation and fused multiply-add: the sums may be added in another order
# (differences of a few ulps), but no NaN/Inf assumptions.
_FM = {"reassoc", "contract"}

# operator modes of the decoder kernels
GENERAL, DIAGONAL, PER_POSITION = 0, 1, 2


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
    _cached_step(False, cur, nxt, full, xt, ptr, fptr, fscale, buf, off, N, rs, rl, rptr)


@njit(cache=True, fastmath=_FM)
def cached_backward(beta, new, full, xt, ptr, fptr, fscale, buf, off, N, rs, rl, rptr):
    """The transpose of `cached_forward`: new[i, label a's states] = C beta[i, cols_a] for
    every (i, a) marked in full (rows with ptr -1 left as they are)."""
    _cached_step(True, beta, new, full, xt, ptr, fptr, fscale, buf, off, N, rs, rl, rptr)


@njit(cache=True, fastmath=_FM, inline="always")
def _cached_step(backward, src, dst, full, xt, ptr, fptr, fscale, buf, off, N, rs, rl, rptr):
    """The walk both cached steps share: per label a with successors, its states, its
    successor runs and its rows (`_label_rows`); the products are `_forward_label`'s or,
    backward, `_backward_label`'s. One walk, so that the two stay each other's transpose."""
    B, l = full.shape
    work = np.empty(N.max() if N.size else 1)
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
        rows = (own[:no], own_at[:no], floor[:nf])
        if backward:
            _backward_label(src, dst, xt, fscale, buf, fptr[a], o, ma, na, st, ln, rows, work)
        else:
            _forward_label(src, dst, xt, fscale, buf, fptr[a], o, ma, na, st, ln, rows, work)


@njit(cache=True, fastmath=_FM, inline="always")
def _forward_label(cur, nxt, xt, fscale, buf, fp, o, ma, na, st, ln, rows, acc):
    """Label a's part of `cached_forward` (states o..o+ma, na successor columns as runs
    st, ln; rows: those with their own matrix, where it starts, those of the floor's at
    fp); acc: room for na values."""
    own, own_at, floor = rows
    S = nxt.shape[1]
    for r in range(own.size):
        i, p = own[r], own_at[r]
        if na == S:
            _add_row_times_block(cur[i, o: o + ma], ma, buf, p, na, nxt[i])
            continue
        for c in range(na):
            acc[c] = 0.0
        _add_row_times_block(cur[i, o: o + ma], ma, buf, p, na, acc)
        _add_runs(nxt[i], acc, st, ln)
    nf = floor.size
    if nf == 0:
        return
    Z = np.empty((nf, ma), dtype=buf.dtype)     # np.dot wants one dtype (float32 buf)
    for r in range(nf):
        i = floor[r]
        sc = fscale[xt[i]]
        for j in range(ma):
            Z[r, j] = cur[i, o + j] * sc
    Y = np.dot(Z, buf[fp: fp + ma * na].reshape(ma, na))
    for r in range(nf):
        _add_runs(nxt[floor[r]], Y[r], st, ln)


@njit(cache=True, fastmath=_FM, inline="always")
def _backward_label(beta, new, xt, fscale, buf, fp, o, ma, na, st, ln, rows, g):
    """Label a's part of `cached_backward` (the arguments as `_forward_label`'s; g: room
    for na values)."""
    own, own_at, floor = rows
    for r in range(own.size):
        i, p = own[r], own_at[r]
        _read_runs(beta[i], st, ln, g)
        nw = new[i, o: o + ma]
        for j in range(ma):
            row = buf[p + j * na: p + (j + 1) * na]    # a slice (`_add_row_times_block`)
            s = 0.0
            for c in range(na):
                s += row[c] * g[c]
            nw[j] = s
    nf = floor.size
    if nf == 0:
        return
    G = np.empty((nf, na), dtype=buf.dtype)
    for r in range(nf):
        _read_runs(beta[floor[r]], st, ln, G[r])
    Y = np.dot(G, buf[fp: fp + ma * na].reshape(ma, na).T)
    for r in range(nf):
        i = floor[r]
        sc = fscale[xt[i]]
        for j in range(ma):
            new[i, o + j] = Y[r, j] * sc
