"""k-best list Viterbi: the k highest-scoring label sequences of a first-order chain (the
CRF) and of a second-order one (the sub-pattern tagger), compiled (numba).

First order: a sequence y_1..y_T scores sum_t emit[t, y_t] + sum_{t>1} trans[y_{t-1}, y_t]
(log domain: a CRF's potentials, an HMM's log-probabilities). The list Viterbi keeps, for
every position and label, the k best prefixes ending there (score, previous label, rank
of that prefix in the previous label's list); the k best of the last position's lists,
traced back, are the answer, best first. Exact: the top k prefixes ending in y at t
extend only top-k prefixes at t - 1 (any other one has k better ones to swap in).

Second order: the same over states that are label pairs (the label at j - 1, the label at
j), as subpat's exact Viterbi: position j's candidate q after p at j - 1 and o at j - 2
adds pair[j, q, p] + triple[j, q, p, o]; positions 0 and 1 are START, the last END, one
candidate each. A state (q, p) keeps its k best prefixes over the (o, rank) extensions.

Ties go to the lower flat candidate index (rank-major: rank * width + previous), the
order of numpy's stable sort, so the first of the list is plain Viterbi's path.
"""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def top_k(cand, n, k, score, arg):
    """score[:k], arg[:k] <- the k largest of cand[:n], best first (ties: the lower
    index first; -inf never chosen; -inf and -1 past those found). Returns how many
    were found. Insertion into a sorted list of k: k is small."""
    found = 0
    for i in range(n):
        s = cand[i]
        if s == -np.inf or (found == k and s <= score[k - 1]):
            continue
        j = min(found, k - 1)
        while j > 0 and score[j - 1] < s:
            score[j] = score[j - 1]
            arg[j] = arg[j - 1]
            j -= 1
        score[j] = s
        arg[j] = i
        found = min(found + 1, k)
    for j in range(found, k):
        score[j] = -np.inf
        arg[j] = -1
    return found

@njit(cache=True, nogil=True)
def first_order(emit, trans, k, scores, paths):
    """The k best sequences of a first-order chain into scores[:n], paths[:n, :T];
    returns n. score[t, r, y]: the r-th best prefix ending in y at t; back[t, r, y]
    its predecessor as the flat index rank * L + label."""
    T, L = emit.shape
    score = np.full((T, k, L), -np.inf)
    back = np.zeros((T, k, L), dtype=np.int64)
    score[0, 0] = emit[0]
    cand = np.empty(k * L)
    s = np.empty(k)
    a = np.empty(k, dtype=np.int64)
    for t in range(1, T):
        for y in range(L):
            for r in range(k):
                for p in range(L):
                    cand[r * L + p] = score[t - 1, r, p] + trans[p, y]
            top_k(cand, k * L, k, s, a)
            for r in range(k):
                score[t, r, y] = s[r] + emit[t, y]
                back[t, r, y] = a[r]
    n = top_k(score[T - 1].ravel(), k * L, k, s, a)
    for i in range(n):
        scores[i] = s[i]
        r, y = divmod(a[i], L)
        for t in range(T - 1, -1, -1):
            paths[i, t] = y
            r, y = divmod(back[t, r, y], L)
    return n

@njit(cache=True, nogil=True)
def second_order(pair, triple, cn, k, scores, paths):
    """The k best paths of a second-order trellis (module docstring; cn[j] candidates
    at position j, J = len(cn) positions, START START ... END) into scores[:n] and
    paths[:n, :J - 3] (candidate indices of positions 2 .. J - 2); returns n.
    delta[j, q, p, r]: the r-th best prefix ending in p at j - 1 and q at j; back its
    predecessor as rank * cn[j - 2] + o. The sum is taken as subpat's Viterbi takes
    it ((prefix + pair) + triple), so that the first path is that Viterbi's."""
    J = len(cn)
    width = pair.shape[1]
    delta = np.full((J, width, width, k), -np.inf)
    back = np.zeros((J, width, width, k), dtype=np.int64)
    delta[1, 0, 0, 0] = 0.0
    cand = np.empty(width * k)
    s = np.empty(k)
    a = np.empty(k, dtype=np.int64)
    for j in range(2, J):
        no = cn[j - 2]
        for q in range(cn[j]):
            for p in range(cn[j - 1]):
                b = pair[j, q, p]
                for r in range(k):
                    for o in range(no):
                        cand[r * no + o] = delta[j - 1, p, o, r] + b + triple[j, q, p, o]
                top_k(cand, k * no, k, s, a)
                delta[j, q, p] = s
                back[j, q, p] = a
    last = cn[J - 2]
    for r in range(k):
        for p in range(last):
            cand[r * last + p] = delta[J - 1, 0, p, r]
    n = top_k(cand, k * last, k, s, a)
    for i in range(n):
        scores[i] = s[i]
        r, p = divmod(a[i], last)
        q = 0
        for j in range(J - 1, 2, -1):
            r, o = divmod(back[j, q, p, r], cn[j - 2])
            paths[i, j - 3] = p
            q, p = p, o
    return n


def as_list(n, scores, paths):
    """[(score, labels)] of a kernel's first n results."""
    return [(float(scores[i]), paths[i].tolist()) for i in range(n)]


def chain_log_partition(emit, trans):
    """log of the sum over every label sequence of exp(its first-order chain score):
    the forward recursion in log space (T steps of an L x L logsumexp; words are short)."""
    from scipy.special import logsumexp

    alpha = emit[0]
    for t in range(1, len(emit)):
        alpha = logsumexp(alpha[:, None] + trans, axis=0) + emit[t]
    return float(logsumexp(alpha)) if len(emit) else 0.0


def kbest_viterbi(emit, trans, k):
    """[(score, labels)] of the k best sequences of a first-order chain (fewer when fewer
    exist), best first. emit (T, L), trans (L, L); -inf forbids."""
    emit = np.ascontiguousarray(emit, dtype=np.float64)
    trans = np.ascontiguousarray(trans, dtype=np.float64)
    T = len(emit)
    if T == 0:
        return [(0.0, [])]
    scores, paths = np.empty(k), np.empty((k, T), dtype=np.int64)
    return as_list(first_order(emit, trans, k, scores, paths), scores, paths)
