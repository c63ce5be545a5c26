"""The spectral estimator: consistency on data sampled from an R-HMM meeting conditions
6.1-6.2, invariance of its marginals to the SVD's sign/rotation ambiguity, and the cap of
m at the rank the data supports."""
import logging
import time

import numpy as np
import pytest

import rhmmtk.spectral as spectral
from rhmmtk.corpus import Corpus
from rhmmtk.forward_backward import Decoder, decode
from rhmmtk.rhmm import random_rhmm
from rhmmtk.spectral import estimate
from rhmmtk.symbols import SymbolTable
from rhmmtk.templates import Templates

# Informative of the hidden state and within each view's rules (docs/RHMM.md):
# x_i and x_{i+1}, a_{i+1} depend on h_i in the future; a_{i-1}, x_{i-1} on h_i in the past.
TEMPLATES = """
future   x[0]
future   a[+1]
future   x[+1]
past     a[-1]
past     x[-1]
present  x[0]
destiny  a[-1]
destiny  a[+1]
destiny  x[-1]
destiny  x[+1]
"""


def featurized(model, samples, tpl=None):
    """(Corpus, F, slices) as `rhmmtk featurize` + `train-spectral` build them."""
    l, _, n = model.shape
    tpl = tpl or Templates(TEMPLATES)
    corpus = Corpus([f"u{i}" for i in range(len(samples))], [s[0] for s in samples],
                    [s[1] for s in samples], SymbolTable([f"a{i}" for i in range(l)]),
                    SymbolTable([f"x{i}" for i in range(n)]))
    F = np.concatenate(tpl.featurize_many(corpus.labels, corpus.obs, l, n))
    return corpus, F, tpl.view_slices()


def normalised_marginals(op, seqs):
    mus, _ = Decoder(op).marginals(seqs)
    return np.concatenate([mu / mu.sum(1, keepdims=True) for mu in mus])


def true_model(rng, l=3, m=2, n=8):
    """A random R-HMM meeting conditions 6.1-6.2: every label bigram allowed (sparsity 0),
    peaked emissions (Dirichlet 0.3) that differ between the hidden states of a label, and
    every hidden state reachable (pi, t Dirichlet(1) draws are positive)."""
    while True:
        model = random_rhmm(l, m, n, rng, stop=0.15, sparsity=0.0, concentration=0.3)
        # emissions of any two states of a label differ clearly (K^a has rank m)
        tv = [0.5 * np.abs(model.o[a, :, h] - model.o[a, :, k]).sum()
              for a in range(l) for h in range(m) for k in range(h)]
        if min(tv) > 0.3 and (model.pi > 1e-3).all() and (model.t > 0).all():
            return model


def test_consistency(rng, seed):
    S = 2000
    t0 = time.perf_counter()
    model = true_model(rng)
    l, m, n = model.shape
    train = model.sample(10 * S, rng)
    test = model.sample(2000, rng)
    X = [s[1] for s in test]
    ref = np.concatenate([s[0] for s in test])
    truth = normalised_marginals(model.operators(), X)
    acc_true = float(np.mean(truth.argmax(1) == ref))
    results = {}
    for size in (S, 10 * S):
        corpus, F, slices = featurized(model, train[:size])
        op = estimate(corpus, F, slices, m=m, smooth=0, kappa=None)
        assert op.m.tolist() == [m] * l
        got = normalised_marginals(op, X)
        mae = float(np.abs(got - truth).mean())
        acc = float(np.mean(got.argmax(1) == ref))
        results[size] = (mae, acc)
        print(f"[consistency] seed {seed}: {size:6d} train sequences ({corpus.num_positions} "
              f"positions): marginal MAE {mae:.5f}, accuracy {100 * acc:.2f}% "
              f"(true model {100 * acc_true:.2f}%, gap {100 * (acc_true - acc):+.2f} points)")
    (mae1, acc1), (mae10, acc10) = results[S], results[10 * S]
    gap1, gap10 = acc_true - acc1, acc_true - acc10
    print(f"[consistency] MAE ratio 10x/1x {mae10 / mae1:.3f} (1/sqrt(10) = 0.316); "
          f"{time.perf_counter() - t0:.1f} s")
    # the error shrinks clearly with 10x data (at the 1/sqrt(N) rate it would be 0.32x)
    assert mae10 < 0.6 * mae1
    assert mae10 < 0.015
    # accuracy approaches the true model's: the gap does not grow, and ends within a point
    assert abs(gap10) <= abs(gap1) + 0.003
    assert abs(gap10) < 0.01


def _sample_setup(rng, count=1500):
    model = true_model(rng)
    train = model.sample(count, rng)
    test = [s[1] for s in model.sample(300, rng)]
    return model, featurized(model, train), test


def test_seed_does_not_change_decoding(rng, monkeypatch):
    """Different `seed`s (the ARPACK start vector), and ARPACK against the dense SVD: the
    singular vectors may come out with other signs, but decoded labels and normalised
    marginals must not change."""
    model, (corpus, F, slices), test = _sample_setup(rng)
    dense = estimate(corpus, F, slices, m=2, smooth=0, kappa=None)
    dense_s = estimate(corpus, F, slices, m=2, seed=3)                 # smoothing + scaling
    monkeypatch.setattr(spectral, "DENSE_SVD_ENTRIES", 0)              # force ARPACK
    monkeypatch.setattr(spectral, "GRAM_LIMIT", 0)
    arpack = [estimate(corpus, F, slices, m=2, smooth=0, kappa=None, seed=s) for s in (0, 1, 7)]
    arpack_s = [estimate(corpus, F, slices, m=2, seed=s) for s in (4, 5)]
    for base, ops in ((dense, arpack), (dense_s, arpack_s)):
        base_lab, _, _ = decode(base, test)
        base_mu = normalised_marginals(base, test)
        flipped = 0
        for op in ops:
            flipped += sum(not np.allclose(e, b) for e, b in zip(op.emit, base.emit))
            lab, _, _ = decode(op, test)
            assert all((a == b).all() for a, b in zip(lab, base_lab))
            np.testing.assert_allclose(normalised_marginals(op, test), base_mu, atol=1e-7)
        print(f"emission blocks that differ from the dense SVD's (sign flips): {flipped}")


def test_sign_and_rotation_of_singular_vectors_do_not_matter(rng, monkeypatch):
    """Any orthogonal mix of the top-m singular vectors (signs, rotations) is a valid
    choice of projections: the marginals must be the same (theorem 4.1)."""
    model, (corpus, F, slices), test = _sample_setup(rng)
    base = estimate(corpus, F, slices, m=2, smooth=0, kappa=None)
    base_lab, _, _ = decode(base, test)
    base_mu = normalised_marginals(base, test)
    real_top_svd = spectral.top_svd
    mix = np.random.default_rng(rng.integers(2**31))

    def rotated_top_svd(omega, k, r):
        U, s, Vt = real_top_svd(omega, k, r)
        Q, _ = np.linalg.qr(mix.standard_normal((len(s), len(s))))
        Q = Q * mix.choice([-1.0, 1.0], size=len(s))        # random signs too
        return U @ Q, s, Q.T @ Vt

    monkeypatch.setattr(spectral, "top_svd", rotated_top_svd)
    for _ in range(2):
        op = estimate(corpus, F, slices, m=2, smooth=0, kappa=None)
        # the operators really did change ...
        assert not np.allclose(op.emit[0], base.emit[0])
        # ... but not what they compute
        lab, _, _ = decode(op, test)
        assert all((a == b).all() for a, b in zip(lab, base_lab))
        np.testing.assert_allclose(normalised_marginals(op, test), base_mu, atol=1e-8)


class _Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def _omega_ranks(corpus, F, slices, a, tol):
    """Numerical ranks of Omega1^a, Omega2^a computed densely from the indicator columns."""
    rows = np.flatnonzero(F[:, 0] == a)

    def indicators(view):
        lo, hi = slices[view]
        blocks = []
        for c in range(lo, hi):
            _, inv = np.unique(F[rows, c], return_inverse=True)
            blocks.append(np.eye(inv.max() + 1)[inv.ravel()])
        return np.hstack(blocks)

    ranks = []
    for u, v in (("future", "past"), ("present", "destiny")):
        om = indicators(u).T @ indicators(v) / len(rows)
        s = np.linalg.svd(om, compute_uv=False)
        ranks.append(int(np.sum(s > tol * s[0])))
    return ranks


def test_m_is_capped_at_the_rank_the_data_supports(rng):
    """With present = x[0] and n = 3, Omega2^a has at most 3 rows: m = 8 must be capped."""
    model = random_rhmm(3, 2, 3, rng, stop=0.2, concentration=0.5)
    corpus, F, slices = featurized(model, model.sample(400, rng))
    log = logging.getLogger("rhmmtk")
    handler = _Capture()
    log.addHandler(handler)
    try:
        op = estimate(corpus, F, slices, m=8, smooth=0, kappa=None)
    finally:
        log.removeHandler(handler)
    print("per-label m:", op.m.tolist())
    assert any("capped" in msg for msg in handler.messages), handler.messages
    assert op.info["m_requested"] == 8
    for a in range(3):
        r1, r2 = _omega_ranks(corpus, F, slices, a, 1e-6)
        assert r2 <= 3
        assert op.m[a] == min(8, r1, r2), (a, op.m[a], r1, r2)
    assert (op.m <= 3).all()
    # the capped model decodes (shapes are consistent, no nan)
    labels, stats, mus = decode(op, corpus.obs[:50])
    assert all(np.isfinite(mu).all() for mu in mus)


def test_no_warning_when_m_is_supported(rng):
    model, (corpus, F, slices), _ = _sample_setup(rng, count=500)
    log = logging.getLogger("rhmmtk")
    handler = _Capture()
    log.addHandler(handler)
    try:
        op = estimate(corpus, F, slices, m=2, smooth=0, kappa=None)
    finally:
        log.removeHandler(handler)
    assert op.m.tolist() == [2, 2, 2]
    assert not any("capped" in msg for msg in handler.messages), handler.messages
