"""The natural cubic spline basis of distribution constraints (paper 003, eqs. 11-22).

A weight function lambda(f) given by its values lambda_1..lambda_K at K evenly spaced
knots, interpolated by the natural cubic spline (second derivative 0 at both ends), is
linear in those values: lambda(f) = sum_k a_k(f) lambda_k, where a_k is the natural
spline through the k-th unit vector. So lambda(f) f = sum_k lambda_k [a_k(f) f]: the
expanded features a_k(f) f make the model log-linear again. scipy's CubicSpline builds
the K basis splines at once (it is not a B-spline basis: a_k interpolates, a_k(knot_j)
= [j == k], and a_k is non-zero between all knots).

Outside [first knot, last knot] the natural spline is continued linearly (its second
derivative is 0 at the ends), so that linear weight functions stay exact everywhere.
"""
import functools

import numpy as np


@functools.lru_cache(maxsize=8)
def _unit_splines(K):
    from scipy.interpolate import CubicSpline

    # knots at 0, 1, ..., K-1: every feature is mapped onto this grid first
    return CubicSpline(np.arange(K, dtype=np.float64), np.eye(K), bc_type="natural")


def basis(f, lo, hi, K):
    """a_k(f) for every value of `f` (any shape; `lo`, `hi` broadcast against it): an
    array of shape f.shape + (K,). Knots are lo + (hi - lo) j / (K - 1), j = 0..K-1."""
    if K < 2:
        raise ValueError("a spline needs at least 2 knots")
    f = np.asarray(f, dtype=np.float64)
    u = (f - lo) * ((K - 1) / (np.asarray(hi, dtype=np.float64) - lo))
    cs = _unit_splines(K)
    inside = np.clip(u, 0.0, K - 1.0)
    out = cs(inside)
    # linear continuation beyond the end knots (value + slope * distance)
    below, above = np.minimum(u, 0.0), np.maximum(u - (K - 1), 0.0)
    out += below[..., None] * cs(0.0, 1) + above[..., None] * cs(K - 1.0, 1)
    return out


def expand(z, lo, hi, K):
    """Distribution-constraint features of frames z (T, F): (T, F*K) with column
    i*K + k = a_k(z_i) z_i."""
    return (basis(z, lo, hi, K) * z[..., None]).reshape(len(z), -1)
