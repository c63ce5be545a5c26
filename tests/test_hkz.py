"""The HKZ spectral HMM (rhmmtk.models.hkz): exact moments, invariance, data, decode."""
import itertools

import numpy as np
import pytest

from rhmmtk.models.hkz import HkzModel, moments, operators_from_moments, string_probability
from rhmmtk.models.trigram import Batch
from rhmmtk.symbols import SymbolTable
from test_trigram import random_bisymbols, random_words


def random_hmm(rng, m, n):
    T = rng.random((m, m)) + 0.1
    T /= T.sum(axis=0)                     # T[h', h] = Pr[h' | h]
    O = rng.random((n, m)) + 0.1
    O /= O.sum(axis=0)                     # O[x, h] = Pr[x | h]
    pi = rng.random(m) + 0.1
    return T, O, pi / pi.sum()


def forward_probability(T, O, pi, s):
    """Pr[x_1 .. x_t = s] by the forward algorithm."""
    a = O[s[0]] * pi
    for x in s[1:]:
        a = O[x] * (T @ a)
    return a.sum()


def exact_moments(T, O, pi):
    P1 = O @ pi
    P21 = O @ T @ np.diag(pi) @ O.T
    P3 = np.stack([O @ T @ np.diag(O[x]) @ T @ np.diag(pi) @ O.T for x in range(len(O))])
    return P1, P21, P3


def test_exact_moments_reproduce_the_forward_algorithm(rng):
    m, n = 3, 5
    T, O, pi = random_hmm(rng, m, n)
    b1, binf, B = operators_from_moments(*exact_moments(T, O, pi), m)
    for t in range(1, 5):
        for s in itertools.product(range(n), repeat=t):
            assert string_probability(b1, binf, B, s) == pytest.approx(
                forward_probability(T, O, pi, s), abs=1e-10)


def transformed(b1, binf, B, G):
    Gi = np.linalg.inv(G)
    return G @ b1, Gi.T @ binf, np.einsum("ij,xjk,kl->xil", G, B, Gi)


def small_model(rng, num_inputs=4, num_labels=5, m=3):
    """An HkzModel estimated from random words (so it decodes)."""
    bis = random_bisymbols(rng, num_inputs, num_labels, fewest=2)
    obs, labels = random_words(rng, bis, 200, 6)
    batch = Batch(bis, obs, labels)
    b1, binf, B = operators_from_moments(*moments(bis, batch), m)
    tables = SymbolTable([f"y{i}" for i in range(num_labels)]), \
        SymbolTable([f"x{i}" for i in range(num_inputs)])
    return HkzModel(*tables, bis, b1, binf, B), obs


def test_invariance_under_a_change_of_basis(rng):
    """b_1 -> G b_1, B_x -> G B_x G^-1, b_inf -> G^-T b_inf changes no result."""
    model, obs = small_model(rng)
    G = rng.normal(size=(model.m, model.m)) + 3 * np.eye(model.m)
    other = HkzModel(model.labels, model.observations, model.bis,
                     *transformed(model.b1, model.binf, model.B, G))
    for s in [(2, 3), (5, 2, 7), (4, 4, 4, 6)]:
        assert string_probability(other.b1, other.binf, other.B, s) == pytest.approx(
            string_probability(model.b1, model.binf, model.B, s), rel=1e-9, abs=1e-14)
    np.testing.assert_allclose(other.trigram_table(), model.trigram_table(), rtol=1e-8,
                               atol=1e-14)
    for how in ("maxmarginal", "viterbi"):
        opts = type("O", (), {"hkz_decode": how})()
        a = model.decode(obs, opts).labels
        b = other.decode(obs, opts).labels
        assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_max_marginals_against_enumeration(rng):
    """The decoder's choice is the argmax of the enumerated sign-corrected marginal."""
    model, obs = small_model(rng)
    bis = model.bis
    start, end = model.boundary_operators()
    got = model.decode(obs[:20], type("O", (), {"hkz_decode": "maxmarginal"})()).labels
    for x, labels in zip(obs[:20], got):
        choices = [range(bis.first[a], bis.first[a] + bis.count[a]) for a in x]
        mu = np.zeros((len(x), bis.nb))
        for path in itertools.product(*choices):
            v = start
            for c in path:
                v = model.B[c] @ v
            p = end @ v
            for t, c in enumerate(path):
                mu[t, c] += p
        for t in range(len(x)):
            cands = list(choices[t])
            ratio = mu[t, cands] / mu[t, cands].sum()
            assert bis.pair_label[cands[int(np.argmax(ratio))]] == labels[t]


def test_consistency_on_data_from_an_hmm(rng):
    """Moments counted from a long sample of a known HMM's stationary stream approach the
    exact ones, and the operators' string probabilities approach the true ones."""
    m, n = 2, 4
    T, O, pi = random_hmm(rng, m, n)
    w, v = np.linalg.eig(T)
    stat = np.real(v[:, np.argmax(np.real(w))])
    stat /= stat.sum()
    N = 400_000
    h = np.empty(N, dtype=np.int64)
    h[0] = rng.choice(m, p=stat)
    u = rng.random(N)
    cumT = np.cumsum(T, axis=0)
    for i in range(1, N):                       # a test-time sampler, not library code
        h[i] = np.searchsorted(cumT[:, h[i - 1]], u[i])
    cumO = np.cumsum(O, axis=0)
    x = np.array([np.searchsorted(cumO[:, k], r) for k, r in zip(h, rng.random(N))])
    P1 = np.bincount(x, minlength=n) / N
    P21 = np.bincount(x[1:] * n + x[:-1], minlength=n * n).reshape(n, n) / (N - 1)
    P3 = np.bincount((x[1:-1] * n + x[2:]) * n + x[:-2], minlength=n ** 3).reshape(n, n, n) / (N - 2)
    b1, binf, B = operators_from_moments(P1, P21, P3, m)
    for s in [(0,), (1, 2), (3, 0, 1), (2, 2, 1, 0)]:
        want = forward_probability(T, O, stat, s)
        assert string_probability(b1, binf, B, s) == pytest.approx(want, rel=0.1)
