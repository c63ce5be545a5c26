"""Boundary conventions of the trigram taggers (rhmmtk.models.trigram.BOUNDARIES): each
one's Viterbi, hinge loss and subgradient, and perceptron against brute force over every
label sequence of short words, scored straight from the convention's definition."""
import itertools

import numpy as np
import pytest

from rhmmtk.models.maxmargin import averaged_perceptron, fobos
from rhmmtk.models.trigram import (BOUNDARIES, END, PAD, START, Batch, hinge_subgradient,
                                   viterbi)
from test_trigram import random_problem


def factors(path, boundary):
    """The (row u, row a, column v) entries of H that score `path` (bi-symbol ids), with
    repetition, straight from the definitions: padded trigrams of START START path END;
    paper 002 rule (4) (k = 2): trigrams t = 3..T; F_[2]: bigrams t = 2..T (row (START, a))
    and trigrams t = 3..T."""
    p = list(path)
    if boundary == "padded":
        q = [START, START] + p + [END]
        return [tuple(q[t - 2:t + 1]) for t in range(2, len(q))]
    tri = [tuple(p[t - 2:t + 1]) for t in range(2, len(p))]
    if boundary == "paper":
        return tri
    return tri + [(START, p[t - 1], p[t]) for t in range(1, len(p))]


def score(H, nb, path, boundary):
    return sum(H[u * nb + a, v] for u, a, v in factors(path, boundary))


def phi(nb, path, boundary):
    out = np.zeros((nb * nb, nb))
    for u, a, v in factors(path, boundary):
        out[u * nb + a, v] += 1
    return out


def paths_of(bis, x):
    return itertools.product(*[range(bis.first[a], bis.first[a] + bis.count[a]) for a in x])


def brute(H, bis, x, boundary, y=None):
    """max over every path of score (+ Hamming loss against labels y)."""
    return max(score(H, bis.nb, p, boundary) +
               (0 if y is None else sum(bis.pair_label[b] != t for b, t in zip(p, y)))
               for p in paths_of(bis, x))


@pytest.mark.parametrize("boundary", BOUNDARIES)
@pytest.mark.parametrize("augmented", [False, True])
def test_viterbi_matches_brute_force(rng, boundary, augmented):
    for _ in range(4):
        bis, obs, labels, H = random_problem(rng, max_len=5)
        batch = Batch(bis, obs, labels)
        paths, total = viterbi(H, bis, batch, batch.labels if augmented else None,
                               1.0 if augmented else 0.0, boundary)
        want = 0.0
        for w, (x, y) in enumerate(zip(obs, labels)):
            best = brute(H, bis, x, boundary, y if augmented else None)
            want += best
            got = paths[batch.offsets[w]:batch.offsets[w + 1]]
            # short words tie under rule (4): compare the found path's score, not the path
            s = score(H, bis.nb, got, boundary)
            if augmented:
                s += sum(bis.pair_label[got] != y)
            assert s == pytest.approx(best, abs=1e-9)
        assert total == pytest.approx(want, abs=1e-9)


@pytest.mark.parametrize("boundary", BOUNDARIES)
def test_hinge_loss_and_subgradient_match_brute_force(rng, boundary):
    bis, obs, labels, H = random_problem(rng, words=5, max_len=5)
    batch = Batch(bis, obs, labels)
    loss, errors, G = hinge_subgradient(H, bis, batch, boundary)

    def hinge(H):
        return sum(brute(H, bis, x, boundary, y) - score(H, bis.nb, bis.index_all(x, y), boundary)
                   for x, y in zip(obs, labels))

    assert loss == pytest.approx(hinge(H), abs=1e-9)
    # L is piecewise linear: a tiny step in a random direction D changes it by <G, D>
    for _ in range(5):
        D = rng.normal(size=H.shape)
        assert (hinge(H + 1e-6 * D) - loss) / 1e-6 == pytest.approx(np.sum(G * D), abs=1e-4)


def unscored(nb, boundary):
    """Mask of the H entries the convention never reads."""
    used = np.zeros((nb, nb, nb), bool)
    used[PAD:, PAD:, PAD:] = True
    if boundary == "paper-all":
        used[START, PAD:, PAD:] = True
    return ~used.reshape(nb * nb, nb)


@pytest.mark.parametrize("boundary", ["paper", "paper-all"])
def test_no_padded_trigram_is_scored(rng, boundary):
    """Rule (4) (and F_[2]) read no trigram holding START or END: changing those entries of
    H changes no decision and no loss, and the subgradient is zero there."""
    bis, obs, labels, H = random_problem(rng, words=6, max_len=5)
    batch = Batch(bis, obs, labels)
    off = unscored(bis.nb, boundary)
    assert off.sum() > 0
    H2 = H + off * rng.normal(scale=100.0, size=H.shape)
    for x in (H, H2):
        assert viterbi(x, bis, batch, boundary=boundary)[1] == \
            pytest.approx(viterbi(H, bis, batch, boundary=boundary)[1], abs=1e-9)
    l1, _, G = hinge_subgradient(H, bis, batch, boundary)
    l2, _, _ = hinge_subgradient(H2, bis, batch, boundary)
    assert l1 == pytest.approx(l2, abs=1e-9) and not G[off].any()
    if boundary == "paper":
        for x in obs:
            for p in paths_of(bis, x):
                assert all(min(f) >= PAD for f in factors(p, boundary))


@pytest.mark.parametrize("boundary", BOUNDARIES)
def test_perceptron_matches_a_reference_on_the_convention_features(rng, boundary):
    """Two epochs of the compiled averaged perceptron equal a plain one over phi."""
    bis, obs, labels, _ = random_problem(rng, words=8, max_len=5)
    batch = Batch(bis, obs, labels)
    H, _ = averaged_perceptron(bis, batch, 2, seed=3, boundary=boundary)
    nb = bis.nb
    W, U, step = np.zeros((nb * nb, nb)), np.zeros((nb * nb, nb)), 1.0
    order_rng = np.random.default_rng(3)
    for _ in range(2):
        for w in order_rng.permutation(len(batch)):
            one = batch.subset(np.array([w]))
            pred, _ = viterbi(W, bis, one, boundary=boundary)
            if not np.array_equal(pred, one.gold):
                d = phi(nb, one.gold, boundary) - phi(nb, pred, boundary)
                W += d
                U += step * d
            step += 1
    np.testing.assert_allclose(H, W - U / step, atol=1e-9)


def test_budget_fixes_the_number_of_steps_whatever_the_size(rng):
    """--steps S: S FOBOS steps over --iters scorings for any number of words; S equal to
    iters passes gives the pass-based run exactly."""
    for words in (6, 13):
        bis, obs, labels, _ = random_problem(rng, words=words)
        batch = Batch(bis, obs, labels)
        _, rec = fobos(bis, batch, "nuclear", 0.1, 0.5, 3, batch_words=4, steps=7)
        assert [r["step"] for r in rec] == [2, 5, 7]
    H1, _ = fobos(bis, batch, "l2", 0.1, 0.5, 3, batch_words=4, seed=2)
    H2, rec = fobos(bis, batch, "l2", 0.1, 0.5, 3, batch_words=4, seed=2, steps=12)
    assert rec[-1]["step"] == 12
    np.testing.assert_array_equal(H1, H2)


def test_dev_convergence_rule_stops_where_it_says(rng):
    """The dev-convergence rule --steps CAP --iters CAP/K --patience P: dev is scored every
    K steps, training stops at the P-th scoring in a row without a gain (or at CAP), and
    the best scoring's point is kept -- the same point the run up to it reaches."""
    bis, obs, labels, _ = random_problem(rng, words=13)
    batch = Batch(bis, obs, labels)
    script = iter([0.2, 0.5, 0.6, 0.6, 0.5, 0.6, 0.9, 0.9])
    points = []

    def evaluate(H):
        points.append(H.copy())
        return next(script)

    best, rec = fobos(bis, batch, "nuclear", 0.1, 0.5, 8, evaluate, batch_words=4,
                      patience=3, steps=24)          # K = 3 steps, P = 3, cap 24 steps
    assert [r["step"] for r in rec] == [3, 6, 9, 12, 15, 18]
    assert np.array_equal(best, points[2])
    assert np.array_equal(best, fobos(bis, batch, "nuclear", 0.1, 0.5, 3, batch_words=4,
                                      steps=9)[0])
    # without a stall the cap ends it
    rising = iter(range(100))
    _, rec = fobos(bis, batch, "nuclear", 0.1, 0.5, 8, lambda H: float(next(rising)),
                   batch_words=4, patience=3, steps=24)
    assert [r["step"] for r in rec] == [3 * t for t in range(1, 9)]
