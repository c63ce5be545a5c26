"""The spectral estimator of figure 4, using every position of every sequence.

Per label a (ALGORITHM.md, "Estimation"):
 1. Omega1^a = E[phi(F1) psi(P)^T | a], Omega2^a = E[xi(R) upsilon(D)^T | a], as
    sparse products of sparse indicator matrices (optionally column-scaled by
    sqrt(N_a / (count_a(f) + kappa)), the L-PCFG work's feature scaling).
 2. Top singular vectors give the projections Phi^a, Psi^a, Xi^a, Upsilon^a.
    m_a = min(m, numerical rank of Omega1^a, numerical rank of Omega2^a): beyond
    that rank condition 6.1 fails and Sigma^a or Lambda^a is singular.
 3. Project every position: f1, p, r, d; the skip-future f2 at i is f1 at i+1.
 4. Observable blocks Sigma, Lambda, D^{b|a}, D^{*|a}, d^a_x, c^1_a, with the
    tensors smoothed towards E[[A2=b] f2 p^T | a] (x) E[r | a] by
    lam = sqrt(N_ab) / (C + sqrt(N_ab)), and optionally d^a_x towards
    p(x|a) E[d | a] by lam_x = sqrt(N_ax) / (C_e + sqrt(N_ax)).
 5. Operators C^{b|a}(v) = D^{b|a}(v) Sigma^-1, C^{*|a}(v) = D^{*|a}(v) Sigma^-1,
    c^a_x = d^a_x Lambda^-1.
"""
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .errors import InputError
from .operators import Operators
from .progress import log, progress
from .templates import VIEWS

DENSE_SVD_ENTRIES = 4_000_000   # densify for an exact LAPACK SVD up to this many entries
GRAM_LIMIT = 2000               # thin matrices: eigen-decompose the small Gram matrix
CHUNK = 16384            # rows per block when forming p (x) r products


class Projection:
    """One label's sparse indicator matrix of one view, and its scaled form."""

    def __init__(self, colidx, kappa):
        n, t = colidx.shape
        self.uniq, inv = np.unique(colidx, return_inverse=True)
        inv = inv.reshape(-1)
        counts = np.bincount(inv, minlength=len(self.uniq))
        w = np.sqrt(n / (counts + kappa)) if kappa is not None else np.ones(len(self.uniq))
        self.weights = w
        self.matrix = sp.csr_matrix((w[inv], inv, np.arange(0, n * t + 1, t)),
                                    shape=(n, len(self.uniq)))


def top_svd(omega, k, rng):
    """Top-k singular triplets of a sparse matrix, largest first, deterministically.

    Small matrices: dense LAPACK SVD (gesdd, falling back to the slower but more
    robust gesvd when gesdd does not converge). Thin ones (one side at most
    GRAM_LIMIT) too big to densify: eigen-decomposition of the small Gram matrix.
    Otherwise ARPACK (svds) from a seeded start vector.
    """
    import scipy.linalg

    small = min(omega.shape)
    k = min(k, small)
    if omega.shape[0] * omega.shape[1] <= DENSE_SVD_ENTRIES:
        dense = omega.toarray()
        try:
            U, s, Vt = scipy.linalg.svd(dense, full_matrices=False, lapack_driver="gesdd")
        except np.linalg.LinAlgError:
            U, s, Vt = scipy.linalg.svd(dense, full_matrices=False, lapack_driver="gesvd")
        return U[:, :k], s[:k], Vt[:k]
    if small <= GRAM_LIMIT or k >= small - 1:
        tall = omega.shape[0] > omega.shape[1]
        A = omega.T.tocsr() if tall else omega
        w, U = np.linalg.eigh((A @ A.T).toarray())
        order = np.argsort(-w)[:k]
        s = np.sqrt(np.clip(w[order], 0, None))
        U = U[:, order]
        keep = s > 0
        V = np.zeros((A.shape[1], k))
        V[:, keep] = (A.T @ U[:, keep]) / s[keep]
        return (V, s, U.T) if tall else (U, s, V.T)
    v0 = rng.standard_normal(small)
    U, s, Vt = spla.svds(omega, k=k, v0=v0, solver="arpack")
    order = np.argsort(-s)
    return U[:, order], s[order], Vt[order]


def numerical_rank(s, tol):
    return int(np.sum(s > tol * s[0])) if s.size and s[0] > 0 else 0


def _guarded_inverse(S, max_cond):
    """Inverse of a small square matrix; pseudo-inverse when ill-conditioned."""
    cond = np.linalg.cond(S)
    if not np.isfinite(cond) or cond > max_cond:
        return np.linalg.pinv(S, rcond=1.0 / max_cond), cond, True
    return np.linalg.inv(S), cond, False


def _view_columns(F, slices):
    """Per view, feature ids renumbered 0..d-1 over the whole corpus."""
    out = {}
    for v in VIEWS:
        lo, hi = slices[v]
        _, inv = np.unique(F[:, lo:hi], return_inverse=True)
        out[v] = inv.reshape(len(F), hi - lo)
    return out


def estimate(corpus, F, slices, m, smooth=30.0, kappa=5.0, rank_tol=1e-6, max_cond=1e10,
             seed=0, smooth_emission=0.0):
    """Spectral estimate of the operators from a featurized corpus.

    corpus: Corpus (labels, observations, tables); F: (positions, 2+T) featurized
    matrix of all positions in corpus order; slices: view -> (first, last) column.
    Returns Operators in the general form; their .info records per-label m,
    counts, singular values and conditioning.
    """
    rng = np.random.default_rng(seed)
    l, n = len(corpus.label_table), len(corpus.obs_table)
    lab = F[:, 0].astype(np.int64)
    obs = F[:, 1].astype(np.int64)
    lengths = np.array([len(x) for x in corpus.obs])
    ends = np.cumsum(lengths) - 1
    starts = ends - lengths + 1
    nxt = np.full(len(lab), -1, dtype=np.int64)
    nxt[:-1] = lab[1:]
    nxt[ends] = -1
    cols = _view_columns(F, slices)
    order = np.argsort(lab, kind="stable")
    bounds = np.searchsorted(lab[order], np.arange(l + 1))

    # --- steps 1-3: SVD and projections, label by label -----------------------------
    proj = {v: np.zeros((len(lab), m)) for v in VIEWS}
    ma = np.zeros(l, dtype=np.int64)
    sv = {"omega1": [], "omega2": []}
    for a in progress(range(l), desc="svd", unit="label"):
        rows = order[bounds[a]: bounds[a + 1]]
        if rows.size == 0:
            raise InputError(f"label {corpus.label_table.symbols[a]!r} has no training positions "
                             "(a --labels table given to featurize with labels the data never uses)")
        P = {v: Projection(cols[v][rows], kappa) for v in VIEWS}
        Na = rows.size
        om1 = (P["future"].matrix.T @ P["past"].matrix) / Na
        om2 = (P["present"].matrix.T @ P["destiny"].matrix) / Na
        U1, s1, V1 = top_svd(om1.tocsr(), m, rng)
        U2, s2, V2 = top_svd(om2.tocsr(), m, rng)
        sv["omega1"].append(s1.tolist())
        sv["omega2"].append(s2.tolist())
        k = max(1, min(m, numerical_rank(s1, rank_tol), numerical_rank(s2, rank_tol)))
        ma[a] = k
        proj["future"][rows, :k] = P["future"].matrix @ U1[:, :k]
        proj["past"][rows, :k] = P["past"].matrix @ V1[:k].T
        proj["present"][rows, :k] = P["present"].matrix @ U2[:, :k]
        proj["destiny"][rows, :k] = P["destiny"].matrix @ V2[:k].T
    f1, p, r, d = proj["future"], proj["past"], proj["present"], proj["destiny"]

    # --- steps 4-5: moments and operators -------------------------------------------
    nseq = len(lengths)
    init, emit, stop, trans = [], [], [], {}
    conds, ill = [], 0
    first = np.zeros(len(lab), dtype=bool)
    first[starts] = True
    for a in progress(range(l), desc="moments", unit="label"):
        rows = order[bounds[a]: bounds[a + 1]]
        Na, k = rows.size, ma[a]
        f1a, pa, ra, da = f1[rows, :k], p[rows, :k], r[rows, :k], d[rows, :k]
        Sigma = f1a.T @ pa / Na
        Lam = ra.T @ da / Na
        Sinv, c1, bad1 = _guarded_inverse(Sigma, max_cond)
        Linv, c2, bad2 = _guarded_inverse(Lam, max_cond)
        conds.append([c1, c2])
        ill += bad1 + bad2
        rbar = ra.mean(axis=0)
        # c^1_a = E[[A1 = a] f1 | B = 1]
        init.append(f1a[first[rows]].sum(axis=0) / nseq)
        # d^a_x = E[[X = x] d^T | a]  ->  c^a_x = d^a_x Lambda^-1
        onehot = sp.csr_matrix((np.ones(Na), (obs[rows], np.arange(Na))), shape=(n, Na))
        dx = np.asarray(onehot @ da) / Na
        if smooth_emission > 0:
            # back off towards p(x|a) E[d|a] (x independent of the hidden state) for rare x
            nx = np.bincount(obs[rows], minlength=n).astype(float)
            lam_x = np.sqrt(nx) / (smooth_emission + np.sqrt(nx))
            dx = lam_x[:, None] * dx + ((1 - lam_x) * nx / Na)[:, None] * da.mean(axis=0)
        emit.append(dx @ Linv)
        # D^{b|a} and D^{*|a}, grouped by the next label
        nb = nxt[rows]
        gorder = np.argsort(nb, kind="stable")
        gb = nb[gorder]
        for b in np.unique(gb):
            grp = rows[gorder[gb == b]]
            Nab = grp.size
            pg, rg = p[grp, :k], r[grp, :k]
            if b < 0:
                f2 = np.ones((Nab, 1))
            else:
                f2 = f1[grp + 1, : ma[b]]
            D = _outer_moment(f2, pg, rg) / Na
            backoff = (f2.T @ pg / Na)[:, :, None] * rbar[None, None, :]
            lam = np.sqrt(Nab) / (smooth + np.sqrt(Nab)) if smooth > 0 else 1.0
            D = lam * D + (1 - lam) * backoff
            C = np.einsum("hjk,jJ->hJk", D, Sinv)
            if b < 0:
                stop.append(C[0])
            else:
                trans[(a, int(b))] = C
        if len(stop) < a + 1:       # label never ends a sequence: C^{*|a} = 0
            stop.append(np.zeros((k, k)))
    if ill:
        log.warning("%d of %d Sigma/Lambda blocks were ill-conditioned (cond > %g): "
                    "pseudo-inverse used", ill, 2 * l, max_cond)
    counts = np.diff(bounds)
    info = {
        "estimator": "spectral", "m_requested": m, "m": ma.tolist(),
        "label_counts": counts.tolist(), "singular_values": sv,
        "condition_numbers": conds, "ill_conditioned": ill,
    }
    capped = [corpus.label_table.symbols[a] for a in range(l) if ma[a] < m]
    if capped:
        log.warning("m = %d is more than the data supports for %d of %d labels: capped at the "
                    "numerical rank of Omega1/Omega2 (mean m_a %.1f; per label in the model)",
                    m, len(capped), l, ma.mean())
    return Operators(corpus.label_table, corpus.obs_table, "general", init, emit, trans, stop,
                     info)


def _outer_moment(f2, p, r):
    """sum_i f2_i (x) p_i (x) r_i as an (m_b, m_a, m_a) array, in row blocks (one GEMM each)."""
    mb, ma = f2.shape[1], p.shape[1]
    out = np.zeros((mb, ma * ma))
    for lo in range(0, len(p), CHUNK):
        hi = lo + CHUNK
        pr = (p[lo:hi, :, None] * r[lo:hi, None, :]).reshape(-1, ma * ma)
        out += f2[lo:hi].T @ pr
    return out.reshape(mb, ma, ma)
