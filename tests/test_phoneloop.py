"""Phone-loop Viterbi and forward-backward against brute-force enumeration of paths."""
import itertools

import numpy as np
import pytest

from rhmmtk.models import phoneloop


def random_graph(rng, P, S, T, mask=None):
    def logp(*shape):
        return np.log(rng.uniform(0.05, 1.0, size=shape))

    loop, nxt, ext = logp(P, S), logp(P, S), logp(P, S)
    nxt[:, S - 1] = -np.inf if S > 0 else 0
    E = rng.normal(size=(T, P * S)) * 2
    if mask is not None:
        E[mask] = -np.inf
    return E, loop, nxt, ext, logp(P), logp(P, P), logp(P)


def enumerate_paths(E, loop, nxt, ext, init, bigram, final):
    """Every (state, entered) sequence the graph allows, with its log-score."""
    T, n = E.shape
    P, S = loop.shape
    out = []
    for states in itertools.product(range(n), repeat=T):
        for flags in itertools.product((False, True), repeat=T - 1):
            s0 = states[0]
            if s0 % S != 0:
                continue
            score = init[s0 // S] + E[0, s0]
            ok = True
            for t in range(1, T):
                a, b, entered = states[t - 1], states[t], flags[t - 1]
                pa, ja, pb, jb = a // S, a % S, b // S, b % S
                if entered:
                    if jb != 0:
                        ok = False
                        break
                    score += ext[pa, ja] + bigram[pa, pb]
                elif b == a:
                    score += loop[pa, ja]
                elif pb == pa and jb == ja + 1:
                    score += nxt[pa, ja]
                else:
                    ok = False
                    break
                score += E[t, b]
            if not ok or not np.isfinite(score):
                continue
            last = states[-1]
            score += ext[last // S, last % S] + final[last // S]
            out.append((score, states, (True,) + flags))
    return out


@pytest.mark.parametrize("P,S,T", [(2, 1, 4), (2, 2, 4), (1, 3, 5), (3, 2, 3)])
def test_viterbi_and_forward_match_brute_force(rng, P, S, T):
    for trial in range(3):
        g = random_graph(rng, P, S, T)
        paths = enumerate_paths(*g)
        scores = np.array([p[0] for p in paths])
        best, path, entered = phoneloop.viterbi(*g)
        assert best == pytest.approx(scores.max(), abs=1e-9)
        # the returned path scores what it claims
        match = [p for p in paths if p[1] == tuple(path) and p[2] == tuple(entered)]
        assert match and match[0][0] == pytest.approx(best, abs=1e-9)
        total, gamma, counts = phoneloop.forward_backward(*g)
        assert total == pytest.approx(np.logaddexp.reduce(scores), abs=1e-9)
        # state posteriors by brute force
        w = np.exp(scores - total)
        want = np.zeros_like(gamma)
        for wi, (_, states, _) in zip(w, paths):
            want[np.arange(T), states] += wi
        np.testing.assert_allclose(gamma, want, atol=1e-9)
        # expected transition counts by brute force
        wantc, wantp = np.zeros_like(counts), np.zeros((P, P))
        for wi, (_, states, flags) in zip(w, paths):
            c, pairs = phoneloop.path_transitions(np.array(states), np.array(flags), S, P)
            wantc += wi * c
            np.add.at(wantp, (pairs[1:, 0], pairs[1:, 1]), wi)
        np.testing.assert_allclose(counts, wantc, atol=1e-9)
        # expected phone-to-phone moves (the bigram's counts) by brute force
        total2, gamma2, counts2, got = phoneloop.forward_backward_pairs(*g)
        assert total2 == total and np.array_equal(gamma2, gamma)
        np.testing.assert_allclose(got, wantp, atol=1e-9)


def test_masked_states_are_never_used(rng):
    P, S, T = 3, 2, 4
    mask = np.zeros((T, P * S), dtype=bool)
    mask[:, 2:] = True          # only phone 0 allowed
    g = random_graph(rng, P, S, T, mask)
    best, path, _ = phoneloop.viterbi(*g)
    assert np.all(path // S == 0)
    total, gamma, _ = phoneloop.forward_backward(*g)
    assert np.all(gamma[:, 2:] == 0)
    assert total == pytest.approx(np.logaddexp.reduce([p[0] for p in enumerate_paths(*g)]))


def test_no_path_gives_minus_infinity(rng):
    g = random_graph(rng, 2, 2, 3, np.ones((3, 4), dtype=bool))
    best, path, _ = phoneloop.viterbi(*g)
    assert best == -np.inf and np.all(path == -1)
    total, gamma, _ = phoneloop.forward_backward(*g)
    assert total == -np.inf and not gamma.any()


@pytest.mark.parametrize("S", [1, 2])
def test_forward_keeps_a_chain_path_far_below_the_best_state(rng, S):
    """A chain (sequence_chain) of 3 phones over 3 frames has one path (each phone one
    frame in its first state); at frame 1 a dead end (phone 0 staying) outscores the
    path's state by 1000 nats. The shifted phone-to-phone product then underflows; the
    forward total and the posteriors must still be the single path's (they were -inf)."""
    from rhmmtk.models.largemargin import sequence_chain

    T = P = 3
    E, *g = random_graph(rng, P, S, T)
    E[1, 0] = 1000.0
    Ec, gc, _ = sequence_chain(E, np.arange(P), g)
    best, path, _ = phoneloop.viterbi(Ec, *gc)
    assert np.isfinite(best)
    total, gamma, counts = phoneloop.forward_backward(Ec, *gc)
    assert total == pytest.approx(best, abs=1e-9)
    assert np.allclose(gamma.sum(axis=1), 1.0)
    assert np.all(gamma[np.arange(T), path] == pytest.approx(1.0))
