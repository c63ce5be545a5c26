"""Checks every comparison of marginals makes first, so that a dead decoder cannot pass.

`np.testing.assert_allclose` treats NaN as equal to NaN: a decoder returning all-zero
marginals (every normalised row 0/0 = NaN) would "agree" with another dead one, or with
itself under a transform. These helpers assert finiteness before anything is compared.
"""
import numpy as np


def normalised(mu):
    """Rows of mu divided by their sums, after checking they can be: the marginals are
    finite, every row sums to a nonzero number, and the normalised rows are finite and
    sum to one."""
    mu = np.asarray(mu, dtype=float)
    assert mu.ndim == 2 and mu.shape[0] > 0, mu.shape
    assert np.isfinite(mu).all(), "non-finite marginals"
    z = mu.sum(axis=1, keepdims=True)
    assert (z != 0).all(), f"rows of marginals summing to 0 at positions {np.flatnonzero(z == 0)}"
    out = mu / z
    assert np.isfinite(out).all(), "non-finite normalised marginals"
    err = np.abs(out.sum(axis=1) - 1.0).max()
    assert err <= 1e-9, f"normalised rows sum to 1 +- {err}"
    return out


def checked(mus, ll, probabilistic=True):
    """Normalised marginals of a whole batch, after asserting they and (for a model whose
    p(x) is positive) every log-likelihood are finite. Returns a list of arrays."""
    ll = np.asarray(ll, dtype=float)
    assert len(mus) == len(ll) > 0
    if probabilistic:
        assert np.isfinite(ll).all(), f"non-finite log-likelihoods: {ll}"
    assert all(len(mu) > 0 for mu in mus)
    flat = normalised(np.concatenate(mus))         # one vectorised check for the batch
    return np.split(flat, np.cumsum([len(mu) for mu in mus])[:-1])


def assert_same_marginals(got, want, atol, rtol=0.0):
    """assert_allclose with NaN treated as a failure on both sides (equal_nan=False)."""
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert np.isfinite(got).all() and np.isfinite(want).all(), "non-finite values compared"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=False)
