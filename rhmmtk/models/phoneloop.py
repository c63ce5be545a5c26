"""Dynamic programming over a phone loop of left-to-right phone HMMs (numba kernels).

The graph: P phones, each with S emitting states j = 0..S-1, entered at state 0.
From state j a path may stay (log `loop[p, j]`), advance to j+1 (log `nxt[p, j]`,
j < S-1) or leave the phone (log `ext[p, j]`). Exits from every state, not only the
last, let a phone last fewer frames than it has states: TIMIT's frame alignments hold
one- and two-frame phones, and a reference labelling the decoder cannot produce would
make the large-margin objective's F(x, y_i, w) minus infinity. Leaving phone q and
entering phone p adds `bigram[q, p]` (the caller folds LM scale and insertion penalty
in); the first phone adds `init[p]`, the last `final[q]`. Global state s = p * S + j.

Emission scores come in as a (T, P*S) matrix E of log-scores; minus infinity masks a
state out, which is how forced alignment to a frame labelling is done (only the
reference phone's states are finite at each frame) and how the loss-augmented search
is done (E plus the Hamming loss of each state's phone). A phone whose states are all
masked at a frame is skipped, so masked searches cost O(S) per frame, open ones
O(P*S + P^2).

All kernels work on one utterance and are compiled with numba (cache=True).
"""
import numpy as np
from numba import njit

NEG = -np.inf


@njit(cache=True)
def _lse(a, b):
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    if a > b:
        return a + np.log1p(np.exp(b - a))
    return b + np.log1p(np.exp(a - b))


@njit(cache=True)
def _shifted_exp(logv, out):
    """out = exp(logv - max(logv)) (0 where logv is -inf); returns the max. Sums of
    products with out, then log + max, are log-sum-exps with one exp per entry."""
    mx = -np.inf
    for i in range(logv.size):
        mx = max(mx, logv[i])
    for i in range(logv.size):
        out[i] = np.exp(logv[i] - mx) if logv[i] > -np.inf else 0.0
    return mx


@njit(cache=True)
def _exact_sum(a, b):
    """log sum_q exp(a[q] + b[q]) term by term. The forward-backward's shifted product
    loses a phone's only predecessors when they lie > 745 nats below the frame's best
    exit: in a chain (sequence_chain's bigram is -inf but for l-1 -> l) that left no
    path although one exists (seen in NCO-S training after a large bundle step)."""
    out = -np.inf
    for q in range(a.size):
        if a[q] > -np.inf and b[q] > -np.inf:
            out = _lse(out, a[q] + b[q])
    return out


@njit(cache=True)
def _active(E, t, P, S):
    act = np.zeros(P, dtype=np.bool_)
    for p in range(P):
        for j in range(S):
            if E[t, p * S + j] != -np.inf:
                act[p] = True
                break
    return act


@njit(cache=True)
def viterbi(E, loop, nxt, ext, init, bigram, final):
    """Best path. Returns (score, states (T,) int64, entered (T,) bool: whether the
    state at t was entered from a phone exit, i.e. a new phone starts at t); score -inf
    if no path exists. Ties prefer staying, then the lower state index."""
    T = E.shape[0]
    P, S = loop.shape
    n = P * S
    delta = np.full((T, n), -np.inf)
    bp = np.full((T, n), -1, dtype=np.int64)
    bpe = np.zeros((T, n), dtype=np.bool_)
    act = _active(E, 0, P, S)
    for p in range(P):
        if act[p]:
            delta[0, p * S] = E[0, p * S] + init[p]
    exitbest = np.empty(P)
    exitarg = np.empty(P, dtype=np.int64)
    bT = np.ascontiguousarray(bigram.T)
    for t in range(1, T):
        prev_act = act
        act = _active(E, t, P, S)
        # best exit of each phone active at t-1
        for q in range(P):
            exitbest[q] = -np.inf
            exitarg[q] = -1
            if prev_act[q]:
                for j in range(S):
                    v = delta[t - 1, q * S + j] + ext[q, j]
                    if v > exitbest[q]:
                        exitbest[q] = v
                        exitarg[q] = q * S + j
        for p in range(P):
            if not act[p]:
                continue
            base = p * S
            # entry into state 0 of p
            # the O(P^2) part: contiguous in q (bigram transposed once); a phone with no
            # exit has exitbest -inf and never wins
            best = -np.inf
            qbest = -1
            for q in range(P):
                v = exitbest[q] + bT[p, q]
                if v > best:
                    best = v
                    qbest = q
            arg = exitarg[qbest] if qbest >= 0 else -1
            entered = True
            if prev_act[p]:
                v = delta[t - 1, base] + loop[p, 0]
                if v >= best and v > -np.inf:
                    best = v
                    arg = base
                    entered = False
            if arg >= 0 and E[t, base] != -np.inf:
                delta[t, base] = best + E[t, base]
                bp[t, base] = arg
                bpe[t, base] = entered
            if prev_act[p]:
                for j in range(1, S):
                    s = base + j
                    if E[t, s] == -np.inf:
                        continue
                    a = delta[t - 1, s] + loop[p, j]
                    b = delta[t - 1, s - 1] + nxt[p, j - 1]
                    if a >= b:
                        if a > -np.inf:
                            delta[t, s] = a + E[t, s]
                            bp[t, s] = s
                    else:
                        delta[t, s] = b + E[t, s]
                        bp[t, s] = s - 1
    best = -np.inf
    arg = -1
    for p in range(P):
        for j in range(S):
            v = delta[T - 1, p * S + j] + ext[p, j] + final[p]
            if v > best:
                best = v
                arg = p * S + j
    path = np.full(T, -1, dtype=np.int64)
    ent = np.zeros(T, dtype=np.bool_)
    if arg < 0:
        return best, path, ent
    path[T - 1] = arg
    ent[0] = True
    for t in range(T - 1, 0, -1):
        ent[t] = bpe[t, path[t]]
        path[t - 1] = bp[t, path[t]]
    return best, path, ent


@njit(cache=True)
def forward_backward(E, loop, nxt, ext, init, bigram, final):
    """Sum over paths. Returns (log total, gamma (T, P*S) state posteriors,
    counts (P, S, 3) expected numbers of stay / advance / exit transitions, the final
    exit at T-1 included)."""
    return _forward_backward(E, loop, nxt, ext, init, bigram, final, np.zeros((0, 0)))


@njit(cache=True)
def forward_backward_pairs(E, loop, nxt, ext, init, bigram, final):
    """forward_backward's (log total, gamma, counts) and pairs (P, P): the expected
    number of moves from phone q to phone p, pairs[q, p] (the gradient of the log total
    in bigram; the one in init and final is read off gamma at the first and last frame)."""
    P = loop.shape[0]
    pairs = np.zeros((P, P))
    total, gamma, counts = _forward_backward(E, loop, nxt, ext, init, bigram, final, pairs)
    return total, gamma, counts, pairs


@njit(cache=True)
def _forward_backward(E, loop, nxt, ext, init, bigram, final, pairs):
    """forward_backward; with a (P, P) `pairs` (not (0, 0)), the expected phone-to-phone
    moves are added to it, at O(P^2) per frame like the forward's own phone sums."""
    T = E.shape[0]
    P, S = loop.shape
    n = P * S
    alpha = np.full((T, n), -np.inf)
    beta = np.full((T, n), -np.inf)
    actv = np.zeros((T, P), dtype=np.bool_)
    for t in range(T):
        actv[t] = _active(E, t, P, S)
    for p in range(P):
        if actv[0, p]:
            alpha[0, p * S] = E[0, p * S] + init[p]
    # the phone-to-phone sums are O(P^2) per frame: done as products with exp(bigram)
    # after shifting by the largest term (one exp per phone, not per pair)
    B = np.exp(bigram)
    exitsum = np.empty(P)
    ex = np.empty(P)
    for t in range(1, T):
        for q in range(P):
            exitsum[q] = -np.inf
            if actv[t - 1, q]:
                for j in range(S):
                    exitsum[q] = _lse(exitsum[q], alpha[t - 1, q * S + j] + ext[q, j])
        mx = _shifted_exp(exitsum, ex)
        for p in range(P):
            if not actv[t, p]:
                continue
            base = p * S
            ent = -np.inf
            if mx > -np.inf:
                acc = 0.0
                for q in range(P):
                    acc += ex[q] * B[q, p]
                if acc > 0.0:
                    ent = mx + np.log(acc)
                else:   # every predecessor of p underflowed against the shift
                    ent = _exact_sum(exitsum, bigram[:, p])
            if E[t, base] != -np.inf:
                alpha[t, base] = _lse(ent, alpha[t - 1, base] + loop[p, 0]) + E[t, base]
            for j in range(1, S):
                s = base + j
                if E[t, s] == -np.inf:
                    continue
                alpha[t, s] = _lse(alpha[t - 1, s] + loop[p, j],
                                   alpha[t - 1, s - 1] + nxt[p, j - 1]) + E[t, s]
    total = -np.inf
    for p in range(P):
        for j in range(S):
            beta[T - 1, p * S + j] = ext[p, j] + final[p]
            total = _lse(total, alpha[T - 1, p * S + j] + beta[T - 1, p * S + j])
    gamma = np.zeros((T, n))
    counts = np.zeros((P, S, 3))
    if total == -np.inf:
        return total, gamma, counts
    # beta_t(s) = sum over continuations from s at t (emission at t excluded)
    entb = np.empty(P)  # entb[p] = E[t+1, p0] + beta[t+1, p0]: mass of entering p at t+1
    eb = np.empty(P)
    leaves = np.full((T, P), -np.inf)   # leaves[t, q]: mass of leaving q after t
    for t in range(T - 2, -1, -1):
        for p in range(P):
            entb[p] = -np.inf
            if actv[t + 1, p] and E[t + 1, p * S] != -np.inf:
                entb[p] = E[t + 1, p * S] + beta[t + 1, p * S]
        mx = _shifted_exp(entb, eb)
        for q in range(P):
            if not actv[t, q]:
                continue
            # leaving q at t: sum over p of bigram[q, p] + entb[p]
            leave = -np.inf
            if mx > -np.inf:
                acc = 0.0
                for p in range(P):
                    acc += B[q, p] * eb[p]
                if acc > 0.0:
                    leave = mx + np.log(acc)
                else:
                    leave = _exact_sum(entb, bigram[q])
            leaves[t, q] = leave
            if pairs.shape[0] > 0 and leave > -np.inf:
                _add_pairs(pairs, q, alpha[t, q * S:(q + 1) * S], ext[q], mx - total, B, eb)
            for j in range(S):
                s = q * S + j
                if alpha[t, s] == -np.inf:
                    continue
                b = ext[q, j] + leave
                if E[t + 1, s] != -np.inf:
                    b = _lse(b, loop[q, j] + E[t + 1, s] + beta[t + 1, s])
                if j < S - 1 and E[t + 1, s + 1] != -np.inf:
                    b = _lse(b, nxt[q, j] + E[t + 1, s + 1] + beta[t + 1, s + 1])
                beta[t, s] = b
    for t in range(T):
        for s in range(n):
            if alpha[t, s] > -np.inf and beta[t, s] > -np.inf:
                gamma[t, s] = np.exp(alpha[t, s] + beta[t, s] - total)
    # expected transition counts
    for t in range(T - 1):
        for p in range(P):
            if not actv[t, p]:
                continue
            leave = leaves[t, p]
            for j in range(S):
                s = p * S + j
                a = alpha[t, s]
                if a == -np.inf:
                    continue
                if E[t + 1, s] != -np.inf:
                    counts[p, j, 0] += np.exp(a + loop[p, j] + E[t + 1, s] + beta[t + 1, s] - total)
                if j < S - 1 and E[t + 1, s + 1] != -np.inf:
                    counts[p, j, 1] += np.exp(a + nxt[p, j] + E[t + 1, s + 1]
                                              + beta[t + 1, s + 1] - total)
                if leave > -np.inf:
                    counts[p, j, 2] += np.exp(a + ext[p, j] + leave - total)
    for p in range(P):
        for j in range(S):
            s = p * S + j
            if alpha[T - 1, s] > -np.inf:
                counts[p, j, 2] += np.exp(alpha[T - 1, s] + ext[p, j] + final[p] - total)
    return total, gamma, counts


@njit(cache=True)
def _add_pairs(pairs, q, alpha_q, ext_q, shift, B, eb):
    """pairs[q, p] += exp(leaving q at t + bigram[q, p] + entering p at t+1 - total),
    with the entering mass as exp(shift) * eb (eb: shifted, total subtracted in shift)."""
    out = -np.inf
    for j in range(alpha_q.shape[0]):
        out = _lse(out, alpha_q[j] + ext_q[j])
    if out == -np.inf:
        return
    c = np.exp(out + shift)
    for p in range(pairs.shape[1]):
        pairs[q, p] += c * B[q, p] * eb[p]


@njit(cache=True)
def path_transitions(path, entered, S, P):
    """Counts (P, S, 3) of stay / advance / exit transitions along a state path with
    its phone-entry flags (viterbi's), the final exit included, and the phone sequence's
    entries: (K, 2) (from, to) phone pairs, from = -1 for the first phone."""
    T = path.shape[0]
    counts = np.zeros((P, S, 3))
    pairs = np.empty((T, 2), dtype=np.int64)
    k = 0
    pairs[0, 0] = -1
    pairs[0, 1] = path[0] // S
    k = 1
    for t in range(1, T):
        a, b = path[t - 1], path[t]
        pa, ja = a // S, a % S
        if not entered[t] and b == a:
            counts[pa, ja, 0] += 1
        elif not entered[t]:
            counts[pa, ja, 1] += 1
        else:
            counts[pa, ja, 2] += 1
            pairs[k, 0] = pa
            pairs[k, 1] = b // S
            k += 1
    last = path[T - 1]
    counts[last // S, last % S, 2] += 1
    return counts, pairs[:k]
