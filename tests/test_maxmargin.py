"""Max-margin IO-OOM training (rhmmtk.models.maxmargin): proximal steps, FOBOS, recovery."""
import numpy as np
import pytest

from rhmmtk.models.maxmargin import (averaged_perceptron, compress, expand, fobos, grow_rows,
                                     prox, recover_iooom, singular_value_threshold)
from rhmmtk.models.trigram import Batch, hinge_subgradient
from test_trigram import random_problem


def nuclear(X):
    return np.linalg.svd(X, compute_uv=False).sum()


@pytest.mark.parametrize("shape", [(12, 4), (30, 6)])
def test_svt_is_the_proximal_point(rng, shape):
    H = rng.normal(size=shape)
    s = np.linalg.svd(H, compute_uv=False)
    t = float(np.median(s))
    X, rank = singular_value_threshold(H, t)
    # closed form through a full SVD
    U, s, Vt = np.linalg.svd(H, full_matrices=False)
    np.testing.assert_allclose(X, (U * np.maximum(s - t, 0)) @ Vt, atol=1e-10)
    assert rank == int(np.sum(s > t))
    # optimality: H - X = t (U_r V_r^T + W), W orthogonal to U_r, V_r and ||W||_2 <= 1
    Ur, Vr = U[:, s > t], Vt[s > t].T
    W = (H - X) / t - Ur @ Vr.T
    assert np.abs(Ur.T @ W).max() < 1e-9 and np.abs(W @ Vr).max() < 1e-9
    assert np.linalg.norm(W, 2) <= 1 + 1e-9
    # and no random perturbation does better on 1/2 ||X - H||^2 + t ||X||_*
    f = lambda Y: 0.5 * np.sum((Y - H) ** 2) + t * nuclear(Y)  # noqa: E731
    for scale in (1e-3, 1e-1, 1.0):
        for _ in range(20):
            assert f(X) <= f(X + rng.normal(scale=scale, size=shape)) + 1e-12


def test_l2_prox_is_the_proximal_point(rng):
    H = rng.normal(size=(8, 3))
    X, _ = prox(H, "l2", 0.5)
    # gradient of 1/2||X - H||^2 + 0.5 * 1/2 ||X||^2 vanishes
    np.testing.assert_allclose((X - H) + 0.5 * X, 0, atol=1e-12)


def test_frobenius_prox_is_the_proximal_point(rng):
    H = rng.normal(size=(8, 3))
    t = 0.5 * np.linalg.norm(H)
    X, _ = prox(H, "frobenius", t)
    # gradient of 1/2||X - H||^2 + t ||X||_F vanishes (X != 0), and no perturbation does better
    np.testing.assert_allclose((X - H) + t * X / np.linalg.norm(X), 0, atol=1e-12)
    f = lambda Y: 0.5 * np.sum((Y - H) ** 2) + t * np.linalg.norm(Y)  # noqa: E731
    assert all(f(X) <= f(X + rng.normal(scale=0.1, size=H.shape)) for _ in range(20))
    assert not prox(H, "frobenius", 2 * np.linalg.norm(H))[0].any()      # beyond: zero


def test_rank_falls_as_tau_grows_and_huge_tau_gives_zero(rng):
    H = rng.normal(size=(40, 8))
    ranks = [singular_value_threshold(H, t)[1] for t in (0.0, 1.0, 3.0, 5.0, 8.0)]
    assert ranks == sorted(ranks, reverse=True) and ranks[0] == 8 and ranks[-1] < 8
    X, r = singular_value_threshold(H, 1e6)
    assert r == 0 and not X.any()


def problem(rng):
    bis, obs, labels, _ = random_problem(rng, words=8)
    return bis, Batch(bis, obs, labels)


def test_tau_zero_equals_plain_subgradient_descent(rng):
    bis, batch = problem(rng)
    H1, _ = fobos(bis, batch, "nuclear", 0.0, 0.5, 6)
    H = np.zeros_like(H1)
    for t in range(1, 7):
        _, _, G = hinge_subgradient(H, bis, batch)
        H = H - 0.5 / np.sqrt(t) * G / len(batch)
    np.testing.assert_allclose(H1, H, atol=1e-10)
    H2, _ = fobos(bis, batch, "none", 123.0, 0.5, 6)
    np.testing.assert_allclose(H2, H, atol=1e-12)


@pytest.mark.parametrize("reg", ["nuclear", "l2", "frobenius"])
def test_steps_on_the_touched_rows_equal_steps_on_the_whole_table(rng, reg):
    """fobos applies each proximal step to the rows some step has touched only; the
    reference steps the whole table (paper 002's algorithm 1 as written)."""
    bis, batch = problem(rng)
    H1, _ = fobos(bis, batch, reg, 0.05, 0.5, 6)
    H = np.zeros_like(H1)
    for t in range(1, 7):
        _, _, G = hinge_subgradient(H, bis, batch)
        H, _ = prox(H - 0.5 / np.sqrt(t) * G / len(batch), reg, 0.5 / np.sqrt(t) * 0.05)
    np.testing.assert_allclose(H1, H, atol=1e-12)
    assert 0 < np.count_nonzero(H1.any(axis=1)) < len(H1)   # the rows skipped exist


def test_grow_rows_keeps_each_row_where_it_now_stands():
    """fobos' compact stores of the touched rows, re-laid when a step touches new rows."""
    Hc = np.array([[1.0, 2.0], [3.0, 4.0]])
    rows, (H2, none) = grow_rows(np.array([1, 4]), np.array([0, 1, 3, 4, 6]), Hc, None)
    assert none is None and list(rows) == [0, 1, 3, 4, 6]
    np.testing.assert_array_equal(H2, [[0, 0], [1, 2], [0, 0], [3, 4], [0, 0]])


def test_huge_tau_drives_h_to_zero_and_rank_falls(rng):
    bis, batch = problem(rng)
    H, rec = fobos(bis, batch, "nuclear", 1e9, 1.0, 3)
    assert not H.any() and rec[-1]["rank"] == 0
    H, rec = fobos(bis, batch, "l2", 1e9, 1.0, 3)
    assert np.abs(H).max() < 1e-6
    ranks = [fobos(bis, batch, "nuclear", tau, 1.0, 5)[1][-1]["rank"]
             for tau in (1e-4, 0.3, 3.0, 30.0)]
    assert ranks == sorted(ranks, reverse=True) and ranks[0] > ranks[-1]


def test_training_fits_separable_data(rng):
    """With no regulariser, FOBOS drives the training hinge loss to zero on a small set, and
    the averaged perceptron makes no mistakes in its last epoch."""
    bis, batch = problem(rng)
    H, rec = fobos(bis, batch, "none", 0.0, 20.0, 200)
    loss, errors, _ = hinge_subgradient(H, bis, batch)
    assert errors == 0 or loss / len(batch) < rec[0]["loss"] / 10
    H, rec = averaged_perceptron(bis, batch, 30, seed=0)
    assert rec[-1]["train_word_errors"] == 0


def random_iooom(rng, nb, n):
    return rng.normal(size=n), rng.normal(size=n), rng.normal(size=(nb, n, n)) / np.sqrt(n)


def F(alpha, beta, A, s):
    v = alpha
    for x in s:
        v = v @ A[x]
    return float(v @ beta)


def test_recover_iooom_from_an_exact_hankel(rng):
    """Paper 002, section 3.1: from the exact Hankel blocks of a random n-state IO-OOM over
    the basis {empty} + single symbols, the recovered model computes the same function."""
    nb, n = 5, 3
    alpha, beta, A = random_iooom(rng, nb, n)
    basis = [()] + [(b,) for b in range(nb)]
    H_eps = np.array([[F(alpha, beta, A, p + s) for s in basis] for p in basis])
    H_sym = {a: np.array([[F(alpha, beta, A, p + (a,) + s) for s in basis] for p in basis])
             for a in range(nb)}
    h_P = np.array([F(alpha, beta, A, p) for p in basis])
    a2, b2, A2 = recover_iooom(H_eps, H_sym, h_P, h_P.copy(), n)
    for s in [(), (1,), (0, 4), (2, 2, 3), (4, 0, 1, 3), (1, 1, 1, 1, 2)]:
        v = a2
        for x in s:
            v = v @ A2[x]
        assert float(v @ b2) == pytest.approx(F(alpha, beta, A, s), abs=1e-9)


def test_compress_reproduces_a_low_rank_trigram_table(rng):
    """H[(u, a), v] = alpha^T A_u A_a A_v beta of a random n-state IO-OOM: compress(H, n)
    gives prefix/suffix vectors and operators reproducing every trigram score."""
    nb, n = 6, 2
    alpha, beta, A = random_iooom(rng, nb, n)
    H = np.array([[F(alpha, beta, A, (u, a, v)) for v in range(nb)]
                  for u in range(nb) for a in range(nb)])
    assert np.linalg.matrix_rank(H, tol=1e-9) <= n
    np.testing.assert_allclose(expand(*compress(H, nb, n)), H, atol=1e-10)
    # fewer states than the rank cannot reproduce it
    assert np.abs(expand(*compress(H, nb, 1)) - H).max() > 1e-3


def test_average_is_the_mean_of_the_iterates(rng):
    bis, batch = problem(rng)
    H1, _ = fobos(bis, batch, "nuclear", 0.1, 0.5, 1)
    H2, _ = fobos(bis, batch, "nuclear", 0.1, 0.5, 2)
    H3, _ = fobos(bis, batch, "nuclear", 0.1, 0.5, 3)
    # without dev scoring the last point is kept: the mean of the three iterates
    avg, _ = fobos(bis, batch, "nuclear", 0.1, 0.5, 3, average=True)
    np.testing.assert_allclose(avg, (H1 + H2 + H3) / 3, atol=1e-12)
    # polynomial-decay averaging with g = 1 weighs iterate i by i, with g = 2 by i (i + 1)
    avg, _ = fobos(bis, batch, "nuclear", 0.1, 0.5, 3, average=True, average_decay=1.0)
    np.testing.assert_allclose(avg, (H1 + 2 * H2 + 3 * H3) / 6, atol=1e-12)
    avg, _ = fobos(bis, batch, "nuclear", 0.1, 0.5, 3, average=True, average_decay=2.0)
    np.testing.assert_allclose(avg, (2 * H1 + 6 * H2 + 12 * H3) / 20, atol=1e-12)


@pytest.mark.parametrize("update", ["fobos", "perceptron"])
def test_patience_stops_at_the_first_stalled_scoring(rng, update):
    """--patience: with a scripted dev score (best at iteration 2, then no gain) P = 2 stops
    after iteration 4 and keeps iteration 2's point, which is the full run's iterate 2."""
    bis, batch = problem(rng)
    script = iter([0.2, 0.5, 0.4, 0.5, 0.9, 0.9])
    points = []

    def evaluate(H):
        points.append(H.copy())
        return next(script)

    if update == "fobos":
        best, rec = fobos(bis, batch, "nuclear", 0.1, 0.5, 6, evaluate, patience=2)
    else:
        best, rec = averaged_perceptron(bis, batch, 6, 0, evaluate, patience=2)
    assert [r["iter"] for r in rec] == [1, 2, 3, 4]
    assert np.array_equal(best, points[1])
    full = fobos(bis, batch, "nuclear", 0.1, 0.5, 2)[0] if update == "fobos" else \
        averaged_perceptron(bis, batch, 2, 0)[0]
    assert np.array_equal(best, full)
