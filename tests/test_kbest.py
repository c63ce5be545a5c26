"""k-best list Viterbi (rhmmtk.kbest) against brute-force enumeration of every sequence."""
import itertools

import numpy as np
import pytest

from rhmmtk.kbest import kbest_viterbi


def brute_force(emit, trans):
    T, L = emit.shape
    scored = []
    for ys in itertools.product(range(L), repeat=T):
        s = emit[0, ys[0]] + sum(emit[t, ys[t]] + trans[ys[t - 1], ys[t]] for t in range(1, T))
        if s > -np.inf:
            scored.append((s, list(ys)))
    return sorted(scored, key=lambda p: -p[0])


@pytest.mark.parametrize("T, L, k", [(1, 3, 2), (2, 3, 5), (3, 4, 10), (4, 3, 81), (5, 2, 7)])
def test_kbest_is_the_top_of_the_enumeration(rng, T, L, k):
    for _ in range(5):
        emit, trans = rng.normal(size=(T, L)), rng.normal(size=(L, L))
        got = kbest_viterbi(emit, trans, k)
        want = brute_force(emit, trans)[:k]
        assert [ys for _, ys in got] == [ys for _, ys in want]
        np.testing.assert_allclose([s for s, _ in got], [s for s, _ in want], rtol=1e-12)


def test_forbidden_labels_and_fewer_sequences_than_k(rng):
    emit, trans = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    emit[1, 0] = -np.inf                 # label 0 impossible at position 2
    trans[2, 1] = -np.inf                # 2 -> 1 forbidden
    got = kbest_viterbi(emit, trans, 100)
    want = brute_force(emit, trans)
    assert len(got) == len(want) < 27
    assert [ys for _, ys in got] == [ys for _, ys in want]
