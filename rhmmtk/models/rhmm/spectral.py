"""The spectral estimator of figure 4, using every position of every sequence.

Per label a (docs/RHMM.md, "Spectral estimator"):
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
    p(x|a) E[d | a] by lam_x = sqrt(N_ax) / (C_e + sqrt(N_ax)); `emission_floor`
    adds eps p(x) E[d | a] to every d^a_x, so no observation is impossible.
 5. Operators C^{b|a}(v) = D^{b|a}(v) Sigma^-1, C^{*|a}(v) = D^{*|a}(v) Sigma^-1,
    c^a_x = d^a_x Lambda^-1.

Accumulate, then estimate (the gmm-acc-stats / gmm-est pattern). Every expectation is
a sum over positions divided by a count, so the estimator is four functions, and the
projections of step 2 need all the data, hence two passes:

  pass 1   OmegaStats.from_block   per label: N_a, the raw feature ids seen with a per
                                   view and their counts, Omega1/Omega2 co-occurrence
                                   counts (sparse, int64, keyed by raw ids: shards merge
                                   by id, exactly)
  svd      projections(omega)      sum -> scaled Omega -> top-m SVD -> Projections
                                   (per-label m_a, ids, projection rows, singular values)
  pass 2   MomentStats.add_block   per label with those projections: sums of f1 p^T,
                                   r d^T, r, d, f1 at first positions, [X=x] d, counts
                                   N_a, N_ab, N_ax, and per label pair sum f2 (x) p (x) r
                                   and sum f2 p^T (the smoothing backoff)
  estimate operators(moments, ...) divide by the counts, smooth, invert (guarded)

`estimate()` (one process, all data in memory) and `rhmmtk train-spectral` (one
process, streaming the archive twice) are these functions composed; `rhmmtk
acc-spectral`, `svd-spectral` and `est-spectral` run them as separate steps over any
number of shards. Sums of integer counts are exact; float sums differ from one
process's only in summation order.

Step 2's SVD is rhmmtk.models.rhmm.spectral_svd; reading and writing the shards' files
(the commands' side) is rhmmtk.models.rhmm.spectral_files. What is left here (~620
lines) stays whole on purpose: the options, the two passes' statistics and the operators
are the one estimator of figure 4, whose steps are checked against each other (the
counts pass 1 keeps are the ones pass 2 and the smoothing divide by), so they are read
together; the separable parts (the SVD, the files) already live apart.
"""
import dataclasses

import click
import numpy as np
import scipy.sparse as sp

from ...errors import InputError
from .operators import EmissionFloor, Operators, observation_prior
from ...options import option, shared
from ...click_types import Real
from ...progress import log, progress
from .spectral_svd import PAIRS, _pack1, _unpack1, projections
from .templates import VIEWS

CHUNK = 16384                   # rows per block when forming p (x) r products
BLOCK_POSITIONS = 1 << 18       # positions per block when streaming an archive


@dataclasses.dataclass
class SvdOptions:
    """The projections (steps 1-2): train-spectral and svd-spectral."""

    m: int = shared("states", default=24,
                    help="Hidden states per label (capped per label by the rank the data "
                         "supports).")
    kappa: float = option("--kappa", default=5.0, type=Real(0),
                          help="Feature scaling sqrt(N_a / (count_a(f) + kappa)).")
    feature_scaling: bool = option("--feature-scaling/--no-feature-scaling", default=True,
                                   help="Scale indicator columns before the SVD (the L-PCFG "
                                        "practice).")
    rank_tol: float = option("--rank-tol", default=1e-6, type=Real(0, 1, max_open=True),
                             help="Numerical rank: singular values above rank-tol * the "
                                  "largest.")
    mean_direction: bool = option(
        "--mean-direction/--no-mean-direction", default=False,
        help="Make each view's first projection the constant 1 and take the other m-1 from "
             "the centred Omega (Omega - E[phi] E[psi]^T): m = 1 is then exactly the "
             "counting HMM.")
    seed: int = shared("seed",
                       help="Seed of the sparse SVD's start vector.")
    workers: int = option("--workers", default=1, type=click.IntRange(1),
                          help="Processes sharing the labels' SVDs (the result does not "
                               "depend on it).")

    @property
    def scaling(self):
        """kappa, or None without feature scaling (what `projections` takes)."""
        return self.kappa if self.feature_scaling else None


@dataclasses.dataclass
class EstimateOptions:
    """The operators from the moments (steps 4-5): train-spectral and est-spectral."""

    smooth: float = option("--smooth", default=30.0, type=Real(0),
                           help="Smoothing constant C: lam = sqrt(N_ab) / (C + sqrt(N_ab)); "
                                "0 = none.")
    smooth_emission: float = option("--smooth-emission", default=0.0, type=Real(0),
                                    help="Emission smoothing constant C_e: d^a_x backs off to "
                                         "p(x|a) E[d|a]; 0 = none.")
    emission_floor: float = shared("emission_floor", default=1e-3,
                                   help="Add eps p(x) E[d|a] to every d^a_x, p(x) the "
                                        "observation's training frequency: no "
                                        "label-observation pair is impossible.")
    max_cond: float = option("--max-cond", default=1e10, type=Real(1),
                             help="Pseudo-invert Sigma/Lambda blocks with a larger condition "
                                  "number.")
    ridge: float = option("--ridge", default=0.0, type=Real(0, 1),
                          help="Regularise the inverses of Sigma/Lambda: each singular value "
                               "s becomes s / (s^2 + (r s_1)^2), s_1 the largest (Tikhonov), "
                               "which replaces the --max-cond guard; 0 = the plain inverse of "
                               "the paper.")


def _guarded_inverse(S, max_cond, ridge=0.0):
    """Inverse of a small square matrix; pseudo-inverse when ill-conditioned. Returns
    (inverse, condition number, whether the guard was used).

    With ridge r > 0, the Tikhonov-regularised inverse S^T (S S^T + t^2 I)^-1 with
    t = r s_1 (s_1 the largest singular value): singular value s is inverted as
    s / (s^2 + t^2) <= 1 / (2 t), so max_cond is not needed. Weak directions of Sigma and
    Lambda (small singular values: noise, or structure a model of this m cannot fit),
    which the plain inverse multiplies by 1 / s, are shrunk instead
    (docs/SPECTRAL_DIAGNOSIS.md, section 15). Scaled by s_1 it does not depend on the
    scale of the features; it is not zero as the data grow, so the estimate is consistent
    only with r = 0."""
    if ridge > 0:
        u, sv, vt = np.linalg.svd(S)
        cond = sv[0] / sv[-1] if sv[-1] > 0 else np.inf
        if not sv[0] > 0:
            return np.zeros_like(S.T), cond, True
        t = ridge * sv[0]
        return (vt.T * (sv / (sv * sv + t * t))) @ u.T, cond, False
    cond = np.linalg.cond(S)
    if not np.isfinite(cond) or cond > max_cond:
        return np.linalg.pinv(S, rcond=1.0 / max_cond), cond, True
    return np.linalg.inv(S), cond, False


def _label_groups(lab, l):
    """(order, bounds): rows of label a are order[bounds[a]:bounds[a+1]], in input order."""
    order = np.argsort(lab, kind="stable")
    return order, np.searchsorted(lab[order], np.arange(l + 1))


def _check_block(F, slices, l, n):
    lab, obs = F[:, 0], F[:, 1]
    if len(F) and (lab.min() < 0 or lab.max() >= l or obs.min() < 0 or obs.max() >= n):
        raise InputError("label or observation ids out of range of the symbol tables")
    width = max(hi for _, hi in slices.values())
    if F.shape[1] < width:
        raise InputError(f"featurized rows have {F.shape[1]} columns, the templates need {width}")


def sequence_blocks(F, lengths, block_positions=None):
    """Split an in-memory featurized matrix into blocks of whole sequences:
    yields (F_block, lengths_block), about `block_positions` positions each."""
    block_positions = block_positions or BLOCK_POSITIONS
    lengths = np.asarray(lengths, dtype=np.int64)
    ends = np.cumsum(lengths)
    i = start = 0
    while i < len(lengths):
        j = int(np.searchsorted(ends, start + block_positions, side="left")) + 1
        j = min(max(j, i + 1), len(lengths))
        yield F[start: ends[j - 1]], lengths[i:j]
        start, i = int(ends[j - 1]), j


# ------------------------------------------------------------------------------------------
# pass 1: Omega counts

class OmegaStats:
    """Pass-1 sums per label a (all int64, so shards add exactly):
      n[a]                 positions labelled a
      ids[a][v]            sorted raw feature ids of view v seen with a
      counts[a][v]         how often each (count_a(f), for the feature scaling)
      omega[a][name]       co-occurrence counts, CSR over (ids of the row view, ids of the
                           column view): omega1 future x past, omega2 present x destiny
    """

    def __init__(self, l):
        self.l = l
        self.n = np.zeros(l, dtype=np.int64)
        self.ids = [None] * l
        self.counts = [None] * l
        self.omega = [None] * l

    def nnz(self):
        return int(sum(sum(o[name].nnz for name, _, _ in PAIRS) for o in self.omega
                       if o is not None))

    @classmethod
    def from_block(cls, F, slices, l):
        """Counts of one block of featurized positions (any positions: no sequence context)."""
        out = cls(l)
        lab = F[:, 0]
        order, bounds = _label_groups(lab, l)
        for a in range(l):
            rows = order[bounds[a]: bounds[a + 1]]
            if rows.size == 0:
                continue
            Na = rows.size
            ind, ids, counts = {}, {}, {}
            for v in VIEWS:
                lo, hi = slices[v]
                uniq, inv = np.unique(F[rows, lo:hi], return_inverse=True)
                inv = inv.reshape(-1)
                t = hi - lo
                ids[v] = uniq.astype(np.int64)
                counts[v] = np.bincount(inv, minlength=len(uniq)).astype(np.int64)
                ind[v] = sp.csr_matrix((np.ones(Na * t, dtype=np.int64), inv,
                                        np.arange(0, Na * t + 1, t)), shape=(Na, len(uniq)))
            out.n[a] = Na
            out.ids[a], out.counts[a] = ids, counts
            out.omega[a] = {name: (ind[u].T @ ind[w]).tocsr() for name, u, w in PAIRS}
        return out

    @classmethod
    def total(cls, parts):
        """The sum of several OmegaStats (feature ids merged by value)."""
        parts = list(parts)
        out = cls(parts[0].l)
        for p in parts:
            if p.l != out.l:
                raise ValueError("OmegaStats over different label sets")
            out.n += p.n
        for a in range(out.l):
            have = [p for p in parts if p.n[a] > 0]
            if not have:
                continue
            if len(have) == 1:
                out.ids[a], out.counts[a], out.omega[a] = have[0].ids[a], have[0].counts[a], \
                    have[0].omega[a]
                continue
            ids, counts, maps = {}, {}, {}
            for v in VIEWS:
                ids[v] = np.unique(np.concatenate([p.ids[a][v] for p in have]))
                maps[v] = [np.searchsorted(ids[v], p.ids[a][v]) for p in have]
                c = np.zeros(len(ids[v]), dtype=np.int64)
                for mp, p in zip(maps[v], have):
                    c[mp] += p.counts[a][v]            # ids are unique within a part
                counts[v] = c
            omega = {}
            for name, u, w in PAIRS:
                rows, cols, vals = [], [], []
                for i, p in enumerate(have):
                    coo = p.omega[a][name].tocoo()
                    rows.append(maps[u][i][coo.row])
                    cols.append(maps[w][i][coo.col])
                    vals.append(coo.data)
                omega[name] = sp.csr_matrix(
                    (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                    shape=(len(ids[u]), len(ids[w])))
                omega[name].sum_duplicates()
            out.ids[a], out.counts[a], out.omega[a] = ids, counts, omega
        return out

    # --- statistics files: packed, one dataset per quantity over all labels ------------
    def to_data(self):
        data = {"n": self.n}
        for v in VIEWS:
            data[f"ids/{v}"], data[f"ids_len/{v}"] = _pack1(
                [self.ids[a][v] if self.n[a] else np.zeros(0, np.int64) for a in range(self.l)])
            data[f"counts/{v}"], _ = _pack1(
                [self.counts[a][v] if self.n[a] else np.zeros(0, np.int64) for a in range(self.l)])
        for name, _, _ in PAIRS:
            empty = sp.coo_matrix((0, 0), dtype=np.int64)
            coos = [self.omega[a][name].tocoo() if self.n[a] else empty for a in range(self.l)]
            data[f"{name}/row"], data[f"{name}/nnz"] = _pack1([c.row.astype(np.int32)
                                                                for c in coos])
            data[f"{name}/col"], _ = _pack1([c.col.astype(np.int32) for c in coos])
            data[f"{name}/val"], _ = _pack1([c.data.astype(np.int64) for c in coos])
        return data

    @classmethod
    def from_file(cls, sf, l):
        out = cls(l)
        out.n = sf["n"].astype(np.int64)
        if len(out.n) != l:
            raise InputError(f"statistics for {len(out.n)} labels, the symbol table has {l}",
                             sf.path)
        ids = {v: _unpack1(sf[f"ids/{v}"], sf[f"ids_len/{v}"]) for v in VIEWS}
        counts = {v: _unpack1(sf[f"counts/{v}"], sf[f"ids_len/{v}"]) for v in VIEWS}
        coo = {name: [_unpack1(sf[f"{name}/{part}"], sf[f"{name}/nnz"])
                      for part in ("row", "col", "val")] for name, _, _ in PAIRS}
        for a in range(l):
            if not out.n[a]:
                continue
            out.ids[a] = {v: ids[v][a] for v in VIEWS}
            out.counts[a] = {v: counts[v][a] for v in VIEWS}
            out.omega[a] = {}
            for name, u, w in PAIRS:
                r, c, val = (coo[name][i][a] for i in range(3))
                out.omega[a][name] = sp.csr_matrix(
                    (val, (r, c)), shape=(len(out.ids[a][u]), len(out.ids[a][w])))
        return out


class OmegaAccumulator:
    """Adds OmegaStats block by block; merges in batches so the work stays near-linear."""

    def __init__(self, l):
        self.l = l
        self.done = None
        self.pending = []

    def add(self, stats):
        self.pending.append(stats)
        pending_nnz = sum(p.nnz() for p in self.pending)
        if pending_nnz > max(4_000_000, self.done.nnz() if self.done is not None else 0):
            self._merge()

    def _merge(self):
        parts = ([self.done] if self.done is not None else []) + self.pending
        self.done = OmegaStats.total(parts) if parts else OmegaStats(self.l)
        self.pending = []

    def result(self):
        self._merge()
        return self.done


# ------------------------------------------------------------------------------------------
# pass 2: moments

class MomentStats:
    """Pass-2 sums per label a (k = m_a), with the projections of one svd step:
      n[a], nab[a, b] (b = l: the sequence ends), nx[a, x], nseq
      sigma[a] = sum f1 p^T, lam[a] = sum r d^T, rsum[a] = sum r, dsum[a] = sum d,
      init[a] = sum of f1 over first positions, dx[a] = sum [X = x] d (n, k)
      D[(a, b)] = sum f2 (x) p (x) r (m_b, k, k), B[(a, b)] = sum f2 p^T (m_b, k);
      for b = l (end of sequence) f2 = 1, m_b = 1.
    """

    def __init__(self, m, n):
        self.m = np.asarray(m, dtype=np.int64)
        l = self.l = len(self.m)
        self.num_obs = n
        self.n = np.zeros(l, dtype=np.int64)
        self.nab = np.zeros((l, l + 1), dtype=np.int64)
        self.nx = np.zeros((l, n), dtype=np.int64)
        self.nseq = 0
        self.sigma = [np.zeros((k, k)) for k in self.m]
        self.lam = [np.zeros((k, k)) for k in self.m]
        self.rsum = [np.zeros(k) for k in self.m]
        self.dsum = [np.zeros(k) for k in self.m]
        self.init = [np.zeros(k) for k in self.m]
        self.dx = [np.zeros((n, k)) for k in self.m]
        self.D, self.B = {}, {}

    def _mb(self, b):
        return 1 if b == self.l else int(self.m[b])

    def add_block(self, F, lengths, slices, proj):
        """Add the moments of a block of whole sequences (F rows in sequence order)."""
        l, n, m = self.l, self.num_obs, self.m
        lab = F[:, 0].astype(np.int64)
        obs = F[:, 1].astype(np.int64)
        lengths = np.asarray(lengths, dtype=np.int64)
        ends = np.cumsum(lengths) - 1
        starts = ends - lengths + 1
        nxt = np.full(len(lab), l, dtype=np.int64)
        nxt[:-1] = lab[1:]
        nxt[ends] = l
        first = np.zeros(len(lab), dtype=bool)
        first[starts] = True
        self.nseq += len(lengths)
        order, bounds = _label_groups(lab, l)
        # step 3: project every position with its label's projections (zero-padded to m_max)
        mm = proj.m_max
        P = {v: np.zeros((len(lab), mm)) for v in VIEWS}
        for a in range(l):
            rows = order[bounds[a]: bounds[a + 1]]
            if rows.size == 0:
                continue
            k = m[a]
            for v in VIEWS:
                lo, hi = slices[v]
                cols = F[rows, lo:hi]
                ids = proj.ids[a][v]
                idx = np.minimum(np.searchsorted(ids, cols), len(ids) - 1)
                if not np.array_equal(ids[idx], cols):
                    raise InputError(f"{v} features of label {a} that the projections never saw: "
                                     "the data of this pass are not those the projections "
                                     "were computed from")
                acc = proj.rows[a][v][idx[:, 0]]
                for t in range(1, hi - lo):
                    acc += proj.rows[a][v][idx[:, t]]
                P[v][rows, :k] = acc
        f1, p, r, d = P["future"], P["past"], P["present"], P["destiny"]
        # step 4: the sums
        for a in range(l):
            rows = order[bounds[a]: bounds[a + 1]]
            if rows.size == 0:
                continue
            k = m[a]
            f1a, pa, ra, da = f1[rows, :k], p[rows, :k], r[rows, :k], d[rows, :k]
            self.n[a] += rows.size
            self.sigma[a] += f1a.T @ pa
            self.lam[a] += ra.T @ da
            self.rsum[a] += ra.sum(axis=0)
            self.dsum[a] += da.sum(axis=0)
            self.init[a] += f1a[first[rows]].sum(axis=0)
            onehot = sp.csr_matrix((np.ones(rows.size), (obs[rows], np.arange(rows.size))),
                                   shape=(n, rows.size))
            self.dx[a] += onehot @ da
            self.nx[a] += np.bincount(obs[rows], minlength=n)
            nb = nxt[rows]
            gorder = np.argsort(nb, kind="stable")
            gb = nb[gorder]
            cuts = np.searchsorted(gb, np.arange(l + 2))
            for b in np.flatnonzero(np.diff(cuts)):
                grp = rows[gorder[cuts[b]: cuts[b + 1]]]
                pg, rg = p[grp, :k], r[grp, :k]
                f2 = np.ones((grp.size, 1)) if b == l else f1[grp + 1, : m[b]]
                self.nab[a, b] += grp.size
                D = _outer_moment(f2, pg, rg)
                B = f2.T @ pg
                if (a, b) in self.D:
                    self.D[(a, b)] += D
                    self.B[(a, b)] += B
                else:
                    self.D[(a, b)], self.B[(a, b)] = D, B
        return self

    def add(self, other):
        """Add another MomentStats (same projections)."""
        if not np.array_equal(self.m, other.m) or self.num_obs != other.num_obs:
            raise ValueError("MomentStats of different projections")
        self.n += other.n
        self.nab += other.nab
        self.nx += other.nx
        self.nseq += other.nseq
        for a in range(self.l):
            for name in ("sigma", "lam", "rsum", "dsum", "init", "dx"):
                getattr(self, name)[a] += getattr(other, name)[a]
        for key, D in other.D.items():
            if key in self.D:
                self.D[key] += D
                self.B[key] += other.B[key]
            else:
                self.D[key], self.B[key] = D.copy(), other.B[key].copy()
        return self

    # --- statistics files ----------------------------------------------------------------
    def to_data(self):
        keys = sorted(self.D)
        seen = [np.flatnonzero(self.nx[a]) for a in range(self.l)]
        data = {"m": self.m, "n": self.n, "nab": self.nab, "nseq": np.int64(self.nseq),
                "pairs": np.array(keys, dtype=np.int64).reshape(-1, 2)}
        for name in ("sigma", "lam", "rsum", "dsum", "init"):
            data[name], _ = _pack1([x.reshape(-1) for x in getattr(self, name)])
        # emissions: only the rows of observations a label was seen with
        data["dx_obs"], data["dx_len"] = _pack1(seen)
        data["nx"], _ = _pack1([self.nx[a, s] for a, s in enumerate(seen)])
        data["dx"], _ = _pack1([self.dx[a][s].reshape(-1) for a, s in enumerate(seen)])
        data["D"], _ = _pack1([self.D[k].reshape(-1) for k in keys])
        data["B"], _ = _pack1([self.B[k].reshape(-1) for k in keys])
        return data

    @classmethod
    def from_file(cls, sf, n):
        m = sf["m"].astype(np.int64)
        out = cls(m, n)
        l = out.l
        out.n = sf["n"].astype(np.int64)
        out.nab = sf["nab"].astype(np.int64)
        out.nseq = int(sf["nseq"])
        k2 = m * m
        for name, sizes, shape in (("sigma", k2, lambda k: (k, k)), ("lam", k2, lambda k: (k, k)),
                                   ("rsum", m, lambda k: (k,)), ("dsum", m, lambda k: (k,)),
                                   ("init", m, lambda k: (k,))):
            parts = _unpack1(sf[name], sizes)
            setattr(out, name, [x.reshape(shape(k)).copy() for x, k in zip(parts, m)])
        lens = sf["dx_len"]
        obs_ids = _unpack1(sf["dx_obs"], lens)
        nx = _unpack1(sf["nx"], lens)
        dx = _unpack1(sf["dx"], lens * m)
        for a in range(l):
            if obs_ids[a].size and obs_ids[a].max() >= n:
                raise InputError("observation ids out of range of the symbol table", sf.path)
            out.nx[a, obs_ids[a]] = nx[a]
            out.dx[a][obs_ids[a]] = dx[a].reshape(-1, m[a])
        pairs = sf["pairs"].reshape(-1, 2)
        mb = np.array([1 if b == l else m[b] for b in pairs[:, 1]], dtype=np.int64)
        ma = m[pairs[:, 0]] if len(pairs) else np.zeros(0, np.int64)
        Ds = _unpack1(sf["D"], mb * ma * ma)
        Bs = _unpack1(sf["B"], mb * ma)
        for (a, b), D, B, x, y in zip(pairs.tolist(), Ds, Bs, mb, ma):
            out.D[(a, b)] = D.reshape(x, y, y).copy()
            out.B[(a, b)] = B.reshape(x, y).copy()
        return out


def _outer_moment(f2, p, r):
    """sum_i f2_i (x) p_i (x) r_i as an (m_b, m_a, m_a) array, in row blocks (one GEMM each)."""
    mb, ma = f2.shape[1], p.shape[1]
    out = np.zeros((mb, ma * ma))
    for lo in range(0, len(p), CHUNK):
        hi = lo + CHUNK
        pr = (p[lo:hi, :, None] * r[lo:hi, None, :]).reshape(-1, ma * ma)
        out += f2[lo:hi].T @ pr
    return out.reshape(mb, ma, ma)


# ------------------------------------------------------------------------------------------
# estimation

def operators(moments, proj, label_table, obs_table, smooth=EstimateOptions.smooth,
              max_cond=EstimateOptions.max_cond, smooth_emission=EstimateOptions.smooth_emission,
              emission_floor=EstimateOptions.emission_floor, ridge=EstimateOptions.ridge):
    """Step 5 from summed pass-2 moments: expectations, smoothing, guarded (with ridge > 0:
    regularised) inverses."""
    l, ma = moments.l, moments.m
    if not np.array_equal(moments.n, np.asarray(proj.info["label_counts"])):
        had = int(np.sum(proj.info["label_counts"]))
        raise InputError(f"the moments cover {int(moments.n.sum())} positions but the "
                         f"projections were computed from {had}"
                         " (per label counts differ): statistics of other data, or a shard "
                         "missing or given twice")
    nseq = moments.nseq
    px = observation_prior(moments.nx.sum(axis=0), moments.n.sum())
    scale = emission_floor * px
    init, emit, stop, trans, g = [], [], [], {}, []
    conds, ill = [], 0
    for a in progress(range(l), desc="operators", unit="label"):
        Na, k = int(moments.n[a]), ma[a]
        Sigma = moments.sigma[a] / Na
        Lam = moments.lam[a] / Na
        Sinv, c1, bad1 = _guarded_inverse(Sigma, max_cond, ridge)
        Linv, c2, bad2 = _guarded_inverse(Lam, max_cond, ridge)
        conds.append([c1, c2])
        ill += bad1 + bad2
        rbar = moments.rsum[a] / Na
        dbar = moments.dsum[a] / Na
        # c^1_a = E[[A1 = a] f1 | B = 1]
        init.append(moments.init[a] / nseq)
        # d^a_x = E[[X = x] d^T | a]  ->  c^a_x = d^a_x Lambda^-1
        dx = moments.dx[a] / Na
        if smooth_emission > 0:
            # back off towards p(x|a) E[d|a] (x independent of the hidden state) for rare x
            nx = moments.nx[a].astype(float)
            lam_x = np.sqrt(nx) / (smooth_emission + np.sqrt(nx))
            dx = lam_x[:, None] * dx + ((1 - lam_x) * nx / Na)[:, None] * dbar
        c = dx @ Linv
        if emission_floor > 0:
            # every label may emit every observation, weakly (p(x) E[d|a]): an observation
            # never seen with the labels its neighbours allow must not kill a whole sequence.
            # Added after the smoothing (which would scale it away for unseen x) and after
            # Lambda^-1, as scale[x] g_a, so that the rows of unseen pairs are exactly that
            # (the decoder's cheap rank-one path, EmissionFloor)
            g.append(dbar @ Linv)
            c += np.outer(scale, g[-1])
        emit.append(c)
        # D^{b|a} and D^{*|a}, smoothed towards E[[A2=b] f2 p^T | a] (x) E[r | a]
        for b in [l] + list(range(l)):
            if (a, b) not in moments.D:
                continue
            Nab = int(moments.nab[a, b])
            D = moments.D[(a, b)] / Na
            backoff = (moments.B[(a, b)] / Na)[:, :, None] * rbar[None, None, :]
            lam = np.sqrt(Nab) / (smooth + np.sqrt(Nab)) if smooth > 0 else 1.0
            D = lam * D + (1 - lam) * backoff
            C = np.einsum("hjk,jJ->hJk", D, Sinv)
            if b == l:
                stop.append(C[0])
            else:
                trans[(a, b)] = C
        if len(stop) < a + 1:       # label never ends a sequence: C^{*|a} = 0
            stop.append(np.zeros((k, k)))
    if ill:
        log.warning("%d of %d Sigma/Lambda blocks were ill-conditioned (cond > %g): "
                    "pseudo-inverse used", ill, 2 * l, max_cond)
    info = {
        "estimator": "spectral", "m_requested": proj.info["m_requested"],
        "label_counts": moments.n.tolist(), "singular_values": proj.info["singular_values"],
        "condition_numbers": conds, "ill_conditioned": ill,
    }
    floor = EmissionFloor(scale, g, moments.nx > 0) if emission_floor > 0 else None
    return Operators(label_table, obs_table, "general", init, emit, trans, stop, info,
                     floor=floor)


def estimate(corpus, F, slices, m, smooth=EstimateOptions.smooth, kappa=SvdOptions.kappa,
             rank_tol=SvdOptions.rank_tol, max_cond=EstimateOptions.max_cond,
             seed=SvdOptions.seed, smooth_emission=EstimateOptions.smooth_emission,
             emission_floor=EstimateOptions.emission_floor, block_positions=None,
             workers=SvdOptions.workers, mean_direction=SvdOptions.mean_direction,
             ridge=EstimateOptions.ridge):
    """Spectral estimate of the operators from a featurized corpus, in one process.

    corpus: Corpus (labels, observations, tables); F: (positions, 2+T) featurized
    matrix of all positions in corpus order; slices: view -> (first, last) column.
    Returns Operators in the general form; their .info records per-label m,
    counts, singular values and conditioning. The composition of the accumulation
    and estimation steps (OmegaStats, projections, MomentStats, operators).
    """
    l, n = len(corpus.label_table), len(corpus.obs_table)
    lengths = [len(x) for x in corpus.obs]
    _check_block(F, slices, l, n)
    acc = OmegaAccumulator(l)
    for Fb, _ in sequence_blocks(F, lengths, block_positions):
        acc.add(OmegaStats.from_block(Fb, slices, l))
    proj = projections(acc.result(), m, kappa, rank_tol, seed, corpus.label_table, workers,
                       mean_direction)
    mom = MomentStats(proj.m, n)
    for Fb, lb in sequence_blocks(F, lengths, block_positions):
        mom.add_block(Fb, lb, slices, proj)
    return operators(mom, proj, corpus.label_table, corpus.obs_table, smooth, max_cond,
                     smooth_emission, emission_floor, ridge)


def recorded_options(svd, est):
    """What a one-process spectral model records of its options (train-spectral, the
    Python API): svd SvdOptions, est EstimateOptions."""
    return dict(m=svd.m, smooth=est.smooth, smooth_emission=est.smooth_emission,
                emission_floor=est.emission_floor, kappa=svd.scaling,
                rank_tol=svd.rank_tol, max_cond=est.max_cond, seed=svd.seed,
                mean_direction=svd.mean_direction, ridge=est.ridge)
