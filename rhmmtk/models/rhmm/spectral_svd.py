"""The spectral estimator's step 2 (rhmmtk.models.rhmm.spectral): the top singular
vectors of each label's scaled Omega1 and Omega2, the projections Phi, Psi, Xi, Upsilon
and the per-label m_a (`projections`, `Projections`); the SVD itself (`top_svd`: dense
LAPACK, a small Gram matrix or ARPACK by size), run over labels in forked workers.
"""
import hashlib

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ...errors import InputError
from ...progress import log, progress
from .templates import VIEWS

DENSE_SVD_ENTRIES = 4_000_000   # densify for an exact LAPACK SVD up to this many entries
GRAM_LIMIT = 300                # thin matrices: eigen-decompose the small Gram matrix
# (a dense eigh costs small^3 whatever k is: at 1,800 rows it took 30 s where ARPACK's
# few top triplets took 0.14 s, so bigger ones go to ARPACK unless k is a large share)
PAIRS = (("omega1", "future", "past"), ("omega2", "present", "destiny"))


def top_svd(omega, k, rng, shift=None):
    """Top-k singular triplets of a sparse matrix, largest first, deterministically;
    with shift = (u, v), of the matrix omega - u v^T (never formed when omega is big).

    Small matrices whose smaller side is at most GRAM_LIMIT, or k at least a quarter of
    it: dense LAPACK SVD (gesdd, falling back to the slower but more
    robust gesvd when gesdd does not converge). Thin ones (one side at most
    GRAM_LIMIT, or k at least a quarter of it) too big to densify: eigen-decomposition of
    the small Gram matrix (only its top k eigenpairs). Otherwise ARPACK (svds) from a
    seeded start vector.
    """
    import scipy.linalg

    small = min(omega.shape)
    k = min(k, small)
    few = small <= GRAM_LIMIT or 4 * k >= small    # else only a few of many: ARPACK
    if omega.shape[0] * omega.shape[1] <= DENSE_SVD_ENTRIES and few:
        dense = omega.toarray()
        if shift is not None:
            dense -= np.outer(*shift)
        try:
            U, s, Vt = scipy.linalg.svd(dense, full_matrices=False, lapack_driver="gesdd")
        except np.linalg.LinAlgError:
            U, s, Vt = scipy.linalg.svd(dense, full_matrices=False, lapack_driver="gesvd")
        return U[:, :k], s[:k], Vt[:k]
    if few:
        tall = omega.shape[0] > omega.shape[1]
        A = omega.T.tocsr() if tall else omega
        u, v = (shift[::-1] if tall else shift) if shift is not None else (None, None)
        G = _shifted_gram(A, u, v)
        w, U = scipy.linalg.eigh(G, subset_by_index=[len(G) - k, len(G) - 1], driver="evr")
        order = np.argsort(-w)
        s = np.sqrt(np.clip(w[order], 0, None))
        U = U[:, order]
        keep = s > 0
        V = np.zeros((A.shape[1], k))
        AtU = A.T @ U[:, keep]
        if u is not None:
            AtU = AtU - np.outer(v, u @ U[:, keep])
        V[:, keep] = AtU / s[keep]
        return (V, s, U.T) if tall else (U, s, V.T)
    v0 = rng.standard_normal(small)
    A = omega if shift is None else _shifted_operator(omega, *shift)
    U, s, Vt = spla.svds(A, k=k, v0=v0, solver="arpack")
    order = np.argsort(-s)
    return U[:, order], s[order], Vt[order]


def _shifted_gram(A, u, v):
    """(A - u v^T)(A - u v^T)^T as a dense matrix, from the sparse A (u, v may be None)."""
    G = (A @ A.T).toarray()
    if u is not None:
        Av = A @ v
        G += -np.outer(Av, u) - np.outer(u, Av) + (v @ v) * np.outer(u, u)
    return G


def _shifted_operator(A, u, v):
    """A - u v^T as a linear operator (A sparse): the centred Omega stays sparse plus rank 1."""
    At = A.T.tocsr()
    return spla.LinearOperator(
        A.shape, dtype=np.float64,
        matvec=lambda x: A @ x - u * (v @ x), rmatvec=lambda y: At @ y - v * (u @ y),
        matmat=lambda X: A @ X - np.outer(u, v @ X), rmatmat=lambda Y: At @ Y - np.outer(v, u @ Y))


def numerical_rank(s, tol):
    return int(np.sum(s > tol * s[0])) if s.size and s[0] > 0 else 0


def _pack1(arrays):
    lens = np.array([len(x) for x in arrays], dtype=np.int64)
    flat = np.concatenate(arrays) if arrays else np.zeros(0)
    return flat, lens


def _unpack1(flat, lens):
    return np.split(flat, np.cumsum(lens)[:-1])


# ------------------------------------------------------------------------------------------
# svd: projections

class Projections:
    """Per label a: m[a] states; per view v the raw feature ids seen with a (sorted) and
    the (len(ids), m[a]) projection rows, scaling weights folded in, so a position's
    projection is the sum of its template features' rows."""

    def __init__(self, m, ids, rows, info):
        self.m = np.asarray(m, dtype=np.int64)
        self.ids, self.rows, self.info = ids, rows, info
        self.l = len(self.m)

    @property
    def m_max(self):
        return int(self.m.max()) if len(self.m) else 0

    def fingerprint(self):
        h = hashlib.sha1(self.m.tobytes())
        for a in range(self.l):
            for v in VIEWS:
                h.update(np.ascontiguousarray(self.rows[a][v]).tobytes())
        return h.hexdigest()[:16]

    def to_data(self):
        data = {"m": self.m, "label_counts": np.asarray(self.info["label_counts"])}
        for v in VIEWS:
            data[f"ids/{v}"], data[f"ids_len/{v}"] = _pack1([self.ids[a][v] for a in range(self.l)])
            data[f"rows/{v}"], _ = _pack1([self.rows[a][v].reshape(-1) for a in range(self.l)])
        for key in ("omega1", "omega2"):
            flat, lens = _pack1([np.asarray(s, dtype=np.float64)
                                 for s in self.info["singular_values"][key]])
            data[f"singular_values/{key}"], data[f"singular_values_len/{key}"] = flat, lens
        return data

    @classmethod
    def from_file(cls, sf):
        m = sf["m"].astype(np.int64)
        l = len(m)
        ids, rows = [{} for _ in range(l)], [{} for _ in range(l)]
        for v in VIEWS:
            lens = sf[f"ids_len/{v}"]
            for a, (i, r) in enumerate(zip(_unpack1(sf[f"ids/{v}"], lens),
                                           _unpack1(sf[f"rows/{v}"], lens * m))):
                ids[a][v] = i
                rows[a][v] = r.reshape(len(i), m[a])
        sv = {key: [s.tolist() for s in _unpack1(sf[f"singular_values/{key}"],
                                                 sf[f"singular_values_len/{key}"])]
              for key in ("omega1", "omega2")}
        info = {"m": m.tolist(), "label_counts": sf["label_counts"].tolist(),
                "singular_values": sv, "m_requested": sf.meta["m"]}
        return cls(m, ids, rows, info)


_SHARED = {}      # what forked SVD workers read (copy-on-write): the summed Omega counts


def _label_svd(task):
    """Steps 1-2 for one label: weights, the two SVDs, m_a and the projection rows. The
    ARPACK start vector comes from a generator seeded by (seed, label), so the result does
    not depend on which process computes which label.

    With mean_direction, the first projection of every view is the constant 1 (each
    feature's row is 1/T, T the view's templates, every position has T features) and the
    other m_a - 1 are the top singular vectors of the centred, scaled Omega. Under the
    model the centred Omega^a = sum_h p(h|a) (E[phi|h] - E[phi])(E[psi|h] - E[psi])^T has
    rank m_a - 1 in the span of the E[phi|h], so [1, U] spans the same space as the top
    m_a singular vectors (consistency is kept); with m = 1 every projection is 1, and
    Sigma, Lambda, D, d reduce to the counts: the supervised HMM's maximum-likelihood
    estimate whatever the data."""
    a, m, kappa, rank_tol, seed, mean_direction = task
    omega = _SHARED["omega"]
    rng = np.random.default_rng([seed, a])
    Na = int(omega.n[a])
    w = {v: (np.sqrt(Na / (omega.counts[a][v] + kappa)) if kappa is not None
             else np.ones(len(omega.ids[a][v]))) for v in VIEWS}
    lead = 1 if mean_direction else 0
    svd = {}
    for name, u, v in PAIRS:
        C = omega.omega[a][name]
        om = (sp.diags(w[u]) @ C.astype(np.float64) @ sp.diags(w[v])).tocsr() / Na
        shift = ((w[u] * omega.counts[a][u] / Na, w[v] * omega.counts[a][v] / Na)
                 if mean_direction else None)
        svd[name] = top_svd(om, m - lead, rng, shift) if m > lead else _no_svd(om)
    (U1, s1, V1), (U2, s2, V2) = svd["omega1"], svd["omega2"]
    k = max(1, min(m, lead + numerical_rank(s1, rank_tol), lead + numerical_rank(s2, rank_tol)))
    rows = {"future": w["future"][:, None] * U1[:, :k - lead],
            "past": w["past"][:, None] * V1[:k - lead].T,
            "present": w["present"][:, None] * U2[:, :k - lead],
            "destiny": w["destiny"][:, None] * V2[:k - lead].T}
    if mean_direction:
        for v in VIEWS:
            templates = omega.counts[a][v].sum() // Na
            rows[v] = np.hstack([np.full((len(rows[v]), 1), 1.0 / templates), rows[v]])
    return a, k, s1.tolist(), s2.tolist(), rows


def _no_svd(om):
    """No singular triplet (m = 1 with the mean direction: the projection is the constant)."""
    return np.zeros((om.shape[0], 0)), np.zeros(0), np.zeros((0, om.shape[1]))


def projections(omega, m, kappa=5.0, rank_tol=1e-6, seed=0, labels=None, workers=1,
                mean_direction=False):
    """Steps 1-2 from summed pass-1 counts: per label, the scaled Omega1/Omega2, their
    top singular vectors, m_a (capped at both numerical ranks) and the projections.
    Labels are independent: with `workers` > 1 they are shared among that many forked
    processes (largest first); the result is the same for any number of workers."""
    l = omega.l
    for a in range(l):
        if omega.n[a] == 0:
            name = labels.symbols[a] if labels is not None else str(a)
            raise InputError(f"label {name!r} has no training positions (a --labels table "
                             "given to featurize with labels the data never uses)")
    tasks = [(a, m, kappa, rank_tol, seed, mean_direction)
             for a in np.argsort(-omega.n, kind="stable")]
    ma = np.zeros(l, dtype=np.int64)
    sv = {"omega1": [None] * l, "omega2": [None] * l}
    rows = [None] * l
    _SHARED["omega"] = omega
    try:
        if workers > 1 and l > 1:
            import multiprocessing

            with multiprocessing.get_context("fork").Pool(min(workers, l)) as pool:
                results = list(progress(pool.imap_unordered(_label_svd, tasks), total=l,
                                        desc="svd", unit="label"))
                # Let the workers finish their task loop and exit on their own. Leaving
                # them to the context's terminate() sends SIGTERM, and a worker not yet
                # past its start-up after fork (a loaded machine) loses the signal (the
                # interpreter clears pending signals after fork) and waits for a task
                # forever, the parent waiting for it (seen in CI).
                pool.close()
                pool.join()
        else:
            results = [_label_svd(t) for t in progress(tasks, desc="svd", unit="label")]
    finally:
        _SHARED.clear()
    for a, k, s1, s2, r in results:
        ma[a], sv["omega1"][a], sv["omega2"][a], rows[a] = k, s1, s2, r
    info = {"m_requested": m, "m": ma.tolist(), "label_counts": omega.n.tolist(),
            "singular_values": sv}
    if labels is not None:
        capped = [a for a in range(l) if ma[a] < m]
        if capped:
            log.warning("m = %d is more than the data supports for %d of %d labels: capped at "
                        "the numerical rank of Omega1/Omega2 (mean m_a %.1f; per label in the "
                        "model)", m, len(capped), l, ma.mean())
    return Projections(ma, [omega.ids[a] for a in range(l)], rows, info)
