"""The decoder against brute-force enumeration, and invariance under theorem 4.1."""
import itertools

import numpy as np
import pytest

from rhmmtk.forward_backward import Decoder
from rhmmtk.operators import Operators
from rhmmtk.rhmm import random_rhmm
from rhmmtk.symbols import SymbolTable


def brute_force_rhmm(model, x):
    """mu(a, i) by summing p(a, x, h) over every (a, h) sequence."""
    l, m, n = model.shape
    N = len(x)
    mu = np.zeros((N, l))
    for a in itertools.product(range(l), repeat=N):
        for h in itertools.product(range(m), repeat=N):
            p = model.pi[a[0], h[0]] * model.f[a[-1], h[-1]]
            for i in range(N):
                p *= model.o[a[i], x[i], h[i]]
            for i in range(N - 1):
                p *= model.t[a[i], a[i + 1], h[i + 1], h[i]]
            for i in range(N):
                mu[i, a[i]] += p
    return mu


def brute_force_operators(op, x):
    """mu(a, i) by multiplying operators along every label sequence (figure 2 unrolled)."""
    op = op.to_general()
    N, l = len(x), op.num_labels
    mu = np.zeros((N, l))
    for a in itertools.product(range(l), repeat=N):
        v = op.init[a[0]]
        ok = True
        for i in range(N - 1):
            C = op.trans.get((a[i], a[i + 1]))
            if C is None:
                ok = False
                break
            v = np.einsum("hjk,k,j->h", C, op.emit[a[i]][x[i]], v)
        if not ok:
            continue
        p = np.einsum("jk,k,j->", op.stop[a[-1]], op.emit[a[-1]][x[-1]], v)
        for i in range(N):
            mu[i, a[i]] += p
    return mu


def random_general_operators(l, ms, n, rng, drop=0.3):
    """Arbitrary real operators (spectral-style: signed, not probabilities), per-label m."""
    labels = SymbolTable([f"a{i}" for i in range(l)])
    obs = SymbolTable([f"x{i}" for i in range(n)])
    init = [rng.normal(size=ms[a]) for a in range(l)]
    emit = [rng.normal(size=(n, ms[a])) for a in range(l)]
    emit[0][0] = 0  # label 0 cannot emit x0
    trans = {(a, b): rng.normal(size=(ms[b], ms[a], ms[a]))
             for a in range(l) for b in range(l) if rng.random() > drop or a == b}
    stop = [rng.normal(size=(ms[a], ms[a])) for a in range(l)]
    return Operators(labels, obs, "general", init, emit, trans, stop)


def _decode_all(op, seqs):
    mus, ll = Decoder(op).marginals(seqs)
    return mus, ll


@pytest.mark.parametrize("l,m,n", [(2, 2, 2), (3, 2, 3), (2, 3, 3), (3, 1, 2)])
def test_em_style_operators_match_enumeration(l, m, n, rng):
    model = random_rhmm(l, m, n, rng, stop=0.3, sparsity=0.3)
    op = model.operators()
    seqs = [rng.integers(0, n, size=N) for N in (1, 2, 3, 4, 4)]
    mus, ll = _decode_all(op, seqs)
    for x, mu, lp in zip(seqs, mus, ll):
        ref = brute_force_rhmm(model, x)
        # mu is the true marginal divided by a positive per-position constant:
        # normalised rows must agree, and sum_a mu(a, i) must be p(x).
        np.testing.assert_allclose(mu / mu.sum(1, keepdims=True), ref / ref.sum(1, keepdims=True),
                                   rtol=0, atol=1e-10)
        np.testing.assert_allclose(lp, np.log(ref[0].sum()), rtol=0, atol=1e-10)


@pytest.mark.parametrize("l,m,n", [(2, 2, 2), (3, 2, 2)])
def test_diagonal_and_general_forms_agree(l, m, n, rng):
    op = random_rhmm(l, m, n, rng, stop=0.3).operators()
    seqs = [rng.integers(0, n, size=N) for N in (1, 3, 4, 6)]
    a, la = _decode_all(op, seqs)
    b, lb = _decode_all(op.to_general(), seqs)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x / x.sum(1, keepdims=True), y / y.sum(1, keepdims=True),
                                   atol=1e-12)
    np.testing.assert_allclose(la, lb, atol=1e-10)


@pytest.mark.parametrize("l,n", [(2, 2), (3, 3)])
def test_spectral_style_operators_match_enumeration(l, n, rng):
    ms = rng.integers(1, 4, size=l)
    op = random_general_operators(l, ms, n, rng)
    seqs = [rng.integers(0, n, size=N) for N in (1, 2, 3, 4)]
    mus, _ = _decode_all(op, seqs)
    for x, mu in zip(seqs, mus):
        ref = brute_force_operators(op, x)
        # signed marginals: compare up to the per-position positive scale
        for i in range(len(x)):
            scale = np.abs(ref[i]).sum() / np.abs(mu[i]).sum()
            assert scale > 0
            np.testing.assert_allclose(mu[i] * scale, ref[i], rtol=1e-10, atol=1e-12)


def test_marginals_invariant_under_random_transforms(rng):
    """Theorem 4.1: random invertible G^a, H^a leave every marginal unchanged."""
    l, m, n = 3, 3, 4
    model = random_rhmm(l, m, n, rng, stop=0.25)
    op = model.operators()
    G = [rng.normal(size=(m, m)) + 3 * np.eye(m) for _ in range(l)]
    H = [rng.normal(size=(m, m)) + 3 * np.eye(m) for _ in range(l)]
    op2 = op.transformed(G, H)
    seqs = [rng.integers(0, n, size=N) for N in (1, 2, 5, 9, 20)]
    a, la = _decode_all(op, seqs)
    b, lb = _decode_all(op2, seqs)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x / x.sum(1, keepdims=True), y / y.sum(1, keepdims=True),
                                   rtol=0, atol=1e-10)
    np.testing.assert_allclose(la, lb, rtol=0, atol=1e-9)
    # and the transform really changed the operators (the test could otherwise not fail)
    assert not np.allclose(op2.init[0], op.init[0])


def test_long_sequences_do_not_underflow(rng):
    model = random_rhmm(3, 2, 5, rng, stop=0.001)
    op = model.operators()
    x = rng.integers(0, 5, size=3000)
    (mu,), (ll,) = _decode_all(op, [x])
    assert np.all(np.isfinite(mu)) and np.isfinite(ll)
    a = rng.integers(0, 3, size=3000)
    assert ll < 0 and ll > -3000 * 20


def test_batching_does_not_change_results(rng):
    model = random_rhmm(3, 2, 4, rng, stop=0.2)
    dec = Decoder(model.operators())
    seqs = [rng.integers(0, 4, size=int(N)) for N in rng.integers(1, 15, size=40)]
    a, la = dec.marginals(seqs, batch_mb=256)
    b, lb = dec.marginals(seqs, batch_mb=0.001)  # one sequence per batch
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(la, lb, rtol=1e-12)


def test_decode_labels_do_not_depend_on_the_sign_of_the_estimated_likelihood(rng):
    """Spectral estimates can make the estimate of p(x) negative on a sequence; the labels
    are then those of the highest estimated posterior mu / p(x). Negating c^1 negates
    every marginal of every sequence: the decoded labels must not change."""
    from rhmmtk.forward_backward import decode

    model = random_rhmm(3, 2, 4, rng, stop=0.2)
    op = model.operators()
    neg = Operators(op.labels, op.observations, op.form, [-v for v in op.init], op.emit,
                    op.trans, op.stop)
    seqs = [rng.integers(0, 4, size=int(N)) for N in rng.integers(1, 12, size=30)]
    a, sa, _ = decode(op, seqs)
    b, sb, mus = decode(neg, seqs)
    assert sa["negative_sequences"] == 0
    assert sb["negative_sequences"] == sb["positions"] > 0
    assert all(np.all(mu <= 0) for mu in mus)        # the paper's argmax would pick the worst
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
