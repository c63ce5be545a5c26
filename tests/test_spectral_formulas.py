"""The settings users train with, checked against numbers worked out by hand.

The spectral estimator's last step (`spectral.operators`) turns summed moments into
operators with three user-facing settings that the consistency tests cannot see when
they are off (and barely see when they are on):

- tensor smoothing (--smooth C): D^{b|a} is pulled towards E[[A2=b] f2 p^T | a] (x) E[r|a]
  with weight lam = sqrt(N_ab) / (C + sqrt(N_ab)) on the raw moment;
- the emission floor (--emission-floor eps): d^a_x + eps * p(x) * E[d | a], p(x) the
  observation's share of all training positions (every label);
- emission smoothing (--smooth-emission C_e): lam_x = sqrt(N_ax) / (C_e + sqrt(N_ax)),
  d^a_x -> lam_x d^a_x + (1 - lam_x) (N_ax / N_a) E[d | a];

and `spectral_svd.projections` scales the indicator columns of Omega by
sqrt(N_a / (count_a(f) + kappa)) (--kappa) before the SVD.

Here the statistics are written by hand (MomentStats and OmegaStats filled directly),
so each expected operator is a short calculation in a comment (m = 1), or a plain loop
over indices (m > 1) that names every index instead of reusing the estimator's einsum.
"""
import numpy as np
import pytest
import scipy.sparse as sp

from rhmmtk.models.rhmm.spectral import MomentStats, OmegaStats, operators
from rhmmtk.models.rhmm.spectral_svd import projections
from rhmmtk.symbols import SymbolTable
from rhmmtk.models.rhmm.templates import VIEWS


class _Proj:
    """The part of Projections that `operators` reads."""

    def __init__(self, moments):
        self.info = {"label_counts": moments.n.tolist(), "m_requested": int(moments.m.max()),
                     "singular_values": {"omega1": [], "omega2": []}}


def _tables(l, n):
    return SymbolTable([f"a{i}" for i in range(l)]), SymbolTable([f"x{i}" for i in range(n)])


def hand_moments_m1(num_obs=2):
    """Two labels, two observations, m = 1, numbers chosen so the arithmetic is exact.

    label 0: N=16, Sigma = 8/16 = 0.5, Lambda = 4/16 = 0.25, E[r] = 8/16 = 0.5,
             E[d] = 16/16 = 1, init sum 3, d_x sums (4, 12), N_ax = (4, 12),
             pairs: ->0 N=9, D=4, B=4;  ->1 N=4, D=2, B=8;  ->end N=3, D=6, B=16
    label 1: N=4,  Sigma = 2/4 = 0.5, Lambda = 1/4 = 0.25, E[r] = 2/4 = 0.5,
             E[d] = 4/4 = 1, init sum 2, d_x sums (4, 0), N_ax = (4, 0),
             pairs: ->0 N=1, D=1, B=2;  ->end N=3, D=2, B=4
    nseq = 5, so p(x) = (4+4, 12+0) / 20 = (0.4, 0.6).
    """
    mo = MomentStats([1, 1], num_obs)      # observations beyond the second: never seen
    mo.n[:] = [16, 4]
    mo.nseq = 5
    mo.nab[:] = [[9, 4, 3], [1, 0, 3]]
    mo.nx[:, :2] = [[4, 12], [4, 0]]
    for a, (sig, lam, r, d, ini, dx) in enumerate([(8, 4, 8, 16, 3, [4, 12]),
                                                   (2, 1, 2, 4, 2, [4, 0])]):
        mo.sigma[a][:] = sig
        mo.lam[a][:] = lam
        mo.rsum[a][:] = r
        mo.dsum[a][:] = d
        mo.init[a][:] = ini
        mo.dx[a][:2, 0] = dx
    for (a, b), D, B in [((0, 0), 4, 4), ((0, 1), 2, 8), ((0, 2), 6, 16),
                         ((1, 0), 1, 2), ((1, 2), 2, 4)]:
        mo.D[(a, b)] = np.full((1, 1, 1), float(D))
        mo.B[(a, b)] = np.full((1, 1), float(B))
    return mo


def _est(mo, **kw):
    """The operators with no emission floor unless a test asks for one (the library's
    default floor, rhmmtk.models.rhmm.spectral.EstimateOptions, is tested on its own below)."""
    kw.setdefault("emission_floor", 0.0)
    return operators(mo, _Proj(mo), *_tables(mo.l, mo.num_obs), **kw)


def test_unsmoothed_operators_by_hand():
    op = _est(hand_moments_m1(), smooth=0)
    # c^1_a = init sum / nseq
    assert op.init[0][0] == pytest.approx(3 / 5) and op.init[1][0] == pytest.approx(2 / 5)
    # C^{b|a} = (D / N_a) / Sigma: 0->0 (4/16)/0.5, 0->1 (2/16)/0.5, 1->0 (1/4)/0.5
    assert op.trans[(0, 0)][0, 0, 0] == pytest.approx(0.5)
    assert op.trans[(0, 1)][0, 0, 0] == pytest.approx(0.25)
    assert op.trans[(1, 0)][0, 0, 0] == pytest.approx(0.5)
    assert (1, 1) not in op.trans
    # C^{*|a}: (6/16)/0.5, (2/4)/0.5
    assert op.stop[0][0, 0] == pytest.approx(0.75) and op.stop[1][0, 0] == pytest.approx(1.0)
    # c^a_x = (d_x / N_a) / Lambda: label 0 (0.25, 0.75)/0.25, label 1 (1, 0)/0.25
    np.testing.assert_allclose(op.emit[0][:, 0], [1.0, 3.0])
    np.testing.assert_allclose(op.emit[1][:, 0], [4.0, 0.0])


def test_tensor_smoothing_weight_by_hand():
    """smooth C = 3: lam = sqrt(N_ab) / (3 + sqrt(N_ab)); the backoff is (B/N_a) E[r|a]."""
    op = _est(hand_moments_m1(), smooth=3.0)
    # 0->0: N=9, lam = 3/6 = 1/2; D/N = 0.25, backoff (4/16)(0.5) = 0.125
    #       smoothed 0.5*0.25 + 0.5*0.125 = 0.1875, / Sigma 0.5 = 0.375
    assert op.trans[(0, 0)][0, 0, 0] == pytest.approx(0.375, rel=1e-12)
    # 0->1: N=4, lam = 2/5; D/N = 0.125, backoff (8/16)(0.5) = 0.25
    #       0.4*0.125 + 0.6*0.25 = 0.2, / 0.5 = 0.4
    assert op.trans[(0, 1)][0, 0, 0] == pytest.approx(0.4, rel=1e-12)
    # 0->end: N=3, lam = sqrt3/(3+sqrt3); D/N = 0.375, backoff (16/16)(0.5) = 0.5
    lam = np.sqrt(3) / (3 + np.sqrt(3))
    assert op.stop[0][0, 0] == pytest.approx((lam * 0.375 + (1 - lam) * 0.5) / 0.5, rel=1e-12)
    # 1->0: N=1, lam = 1/4; D/N = 0.25, backoff (2/4)(0.5) = 0.25 -> 0.25 / 0.5 = 0.5
    assert op.trans[(1, 0)][0, 0, 0] == pytest.approx(0.5, rel=1e-12)
    # 1->end: N=3, lam as above; D/N = 0.5, backoff (4/4)(0.5) = 0.5 -> 1.0
    assert op.stop[1][0, 0] == pytest.approx(1.0, rel=1e-12)
    # smoothing leaves emissions and init alone
    np.testing.assert_allclose(op.emit[0][:, 0], [1.0, 3.0])
    assert op.init[0][0] == pytest.approx(0.6)


def test_emission_floor_by_hand():
    """eps = 0.1: d^a_x / N_a + eps p(x) E[d | a], p(x) over all labels = (0.4, 0.6)."""
    op = _est(hand_moments_m1(), smooth=0, emission_floor=0.1)
    # label 0: (0.25 + 0.04, 0.75 + 0.06) / 0.25 = (1.16, 3.24)
    np.testing.assert_allclose(op.emit[0][:, 0], [1.16, 3.24], rtol=1e-12)
    # label 1: (1 + 0.04, 0 + 0.06) / 0.25 = (4.16, 0.24): x1, never seen with label 1,
    # is now possible, with p(x) of all labels, not p(x | label 1) = 0
    np.testing.assert_allclose(op.emit[1][:, 0], [4.16, 0.24], rtol=1e-12)
    # the floor touches nothing else
    assert op.trans[(0, 0)][0, 0, 0] == pytest.approx(0.5)


def test_emission_floor_reaches_codes_never_seen_in_training():
    """A code no training position has (a codebook learnt on other frames) gets the floor
    of a code seen once, p(x) = 1/20 here, and the seen codes' emissions do not change:
    without it every sequence containing the code would have p(x) = 0."""
    op = _est(hand_moments_m1(num_obs=3), smooth=0, emission_floor=0.1)
    # label 0: (0.25 + 0.04, 0.75 + 0.06, 0 + 0.1 / 20) / 0.25
    np.testing.assert_allclose(op.emit[0][:, 0], [1.16, 3.24, 0.02], rtol=1e-12)
    np.testing.assert_allclose(op.emit[1][:, 0], [4.16, 0.24, 0.02], rtol=1e-12)
    assert (_est(hand_moments_m1(num_obs=3), smooth=0).emit[0][2] == 0).all()


def test_emission_floor_survives_emission_smoothing_and_is_kept_apart():
    """C_e = 2 with eps = 0.1: the smoothing acts on d^a_x alone and the floor is added
    after it. (Before, the floor was added first and the smoothing's lam_x = 0 for a pair
    never seen in training scaled it away: label 1 could not emit x1 again.) The rows of
    unseen pairs are exactly scale[x] g_a, as the model's EmissionFloor says."""
    op = _est(hand_moments_m1(num_obs=3), smooth=0, smooth_emission=2.0, emission_floor=0.1)
    # label 0: smoothed (1, 3) as in the test below, plus 0.1 p(x) E[d|0] / Lambda
    #          = (0.04, 0.06, 0.005) / 0.25
    np.testing.assert_allclose(op.emit[0][:, 0], [1.16, 3.24, 0.02], rtol=1e-12)
    # label 1, x0: N=4, lam = 1/2: 0.5 * 1 + 0.5 * (4/4) * 1 = 1 -> 4, plus the floor
    np.testing.assert_allclose(op.emit[1][:, 0], [4.16, 0.24, 0.02], rtol=1e-12)
    fl = op.floor
    np.testing.assert_array_equal(fl.seen, [[True, True, False], [True, False, False]])
    np.testing.assert_allclose(fl.scale, [0.04, 0.06, 0.005], rtol=1e-12)
    np.testing.assert_allclose([fl.g[0][0], fl.g[1][0]], [4.0, 4.0], rtol=1e-12)
    for a in range(2):
        rows = ~fl.seen[a]
        np.testing.assert_array_equal(op.emit[a][rows], fl.scale[rows, None] * fl.g[a])
    assert _est(hand_moments_m1(), smooth=0).floor is None


def test_emission_smoothing_by_hand():
    """C_e = 2: lam_x = sqrt(N_ax) / (2 + sqrt(N_ax)), backoff (N_ax / N_a) E[d | a]."""
    op = _est(hand_moments_m1(), smooth=0, smooth_emission=2.0)
    # label 0, x0: N=4, lam = 1/2: 0.5*0.25 + 0.5*(4/16)*1 = 0.25 -> /0.25 = 1
    #          x1: N=12, lam = sqrt12/(2+sqrt12): d/N = 0.75 = backoff (12/16) -> 3
    # (with m = 1 the backoff equals the moment when E[d|a] = 1: choose label 1's d instead)
    np.testing.assert_allclose(op.emit[0][:, 0], [1.0, 3.0], rtol=1e-12)
    mo = hand_moments_m1()
    mo.dsum[0][:] = 8                         # E[d | 0] = 0.5
    op = _est(mo, smooth=0, smooth_emission=2.0)
    # x0: 0.5*0.25 + 0.5*(4/16)(0.5) = 0.1875 -> 0.75
    # x1: lam = sqrt12/(2+sqrt12): lam*0.75 + (1-lam)(12/16)(0.5)
    lam = np.sqrt(12) / (2 + np.sqrt(12))
    np.testing.assert_allclose(op.emit[0][:, 0], [0.75, (lam * 0.75 + (1 - lam) * 0.375) / 0.25],
                               rtol=1e-12)


def random_moments(ms, n, rng, counts):
    """Asymmetric random sums for m > 1 (so every transposed index shows)."""
    mo = MomentStats(list(ms), n)
    l = len(ms)
    mo.n[:] = [sum(c.values()) for c in counts]
    mo.nseq = int(rng.integers(3, 10))
    for a, k in enumerate(ms):
        Na = mo.n[a]
        mo.sigma[a] = Na * (np.eye(k) + 0.3 * rng.normal(size=(k, k)))
        mo.lam[a] = Na * (np.eye(k) + 0.3 * rng.normal(size=(k, k)))
        mo.rsum[a] = Na * rng.normal(size=k)
        mo.dsum[a] = Na * rng.normal(size=k)
        mo.init[a] = rng.normal(size=k)
        mo.nx[a] = rng.multinomial(Na, np.ones(n) / n)
        mo.dx[a] = rng.normal(size=(n, k)) * (mo.nx[a] > 0)[:, None]
        for b, nab in counts[a].items():
            mb = 1 if b == l else ms[b]
            mo.nab[a, b] = nab
            mo.D[(a, b)] = nab * rng.normal(size=(mb, k, k))
            mo.B[(a, b)] = nab * rng.normal(size=(mb, k))
    return mo


def test_smoothed_tensor_operators_index_by_index(rng):
    """m = (2, 3): every index of C^{b|a}[h, J, k] written out; the smoothing weight and
    the backoff E[f2 p^T](h, j) E[r](k) in the roles the estimator documents."""
    ms, n, C = (2, 3), 3, 4.0
    counts = [{0: 7, 1: 20, 2: 5}, {0: 3, 1: 50, 2: 9}]
    mo = random_moments(ms, n, rng, counts)
    op = _est(mo, smooth=C)
    for (a, b) in [(0, 0), (0, 1), (1, 0), (1, 1), (0, 2), (1, 2)]:
        Na, Nab, k = mo.n[a], mo.nab[a, b], ms[a]
        mb = 1 if b == 2 else ms[b]
        lam = np.sqrt(Nab) / (C + np.sqrt(Nab))
        Sinv = np.linalg.inv(mo.sigma[a] / Na)
        want = np.zeros((mb, k, k))
        for h in range(mb):
            for J in range(k):
                for kk in range(k):
                    for j in range(k):
                        raw = mo.D[(a, b)][h, j, kk] / Na
                        back = (mo.B[(a, b)][h, j] / Na) * (mo.rsum[a][kk] / Na)
                        want[h, J, kk] += (lam * raw + (1 - lam) * back) * Sinv[j, J]
        got = op.stop[a][None] if b == 2 else op.trans[(a, b)]
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=f"{a}->{b}")
    # emissions with the floor, element by element: (d_x / N_a + eps p(x) E[d]) Lambda^-1
    eps = 0.01
    op = _est(mo, smooth=C, emission_floor=eps)
    px = mo.nx.sum(axis=0) / mo.n.sum()
    for a, k in enumerate(ms):
        Na = mo.n[a]
        Linv = np.linalg.inv(mo.lam[a] / Na)
        for x in range(n):
            for J in range(k):
                want = sum((mo.dx[a][x, j] / Na + eps * px[x] * mo.dsum[a][j] / Na) * Linv[j, J]
                           for j in range(k))
                assert op.emit[a][x, J] == pytest.approx(want, rel=1e-10, abs=1e-12)
        np.testing.assert_allclose(op.init[a], mo.init[a] / mo.nseq, rtol=1e-12)


def test_smoothing_changes_operators_by_the_stated_amount(rng):
    """Smoothing off and on differ exactly by (1 - lam) (backoff - raw) Sigma^-1 per pair:
    a wrong weight (N/(C+N), C/(C+sqrt N), ...) fails even where both pulls are similar."""
    ms, C = (2, 2), 30.0
    counts = [{0: 100, 1: 4, 2: 900}, {0: 1, 1: 16, 2: 25}]
    mo = random_moments(ms, 2, rng, counts)
    raw, smooth = _est(mo, smooth=0), _est(mo, smooth=C)
    for (a, b), T in raw.trans.items():
        Na, Nab = mo.n[a], mo.nab[a, b]
        lam = np.sqrt(Nab) / (C + np.sqrt(Nab))
        back = np.einsum("hj,k->hjk", mo.B[(a, b)] / Na, mo.rsum[a] / Na)
        back = np.einsum("hjk,jJ->hJk", back, np.linalg.inv(mo.sigma[a] / Na))
        np.testing.assert_allclose(smooth.trans[(a, b)], lam * T + (1 - lam) * back,
                                   rtol=1e-10, atol=1e-12)


# --- feature scaling ----------------------------------------------------------------------

def hand_omega():
    """One label, N_a = 10 positions, two or three features per view, one template each.

    future ids (10, 11, 12) seen (6, 3, 1) times; past (20, 21) (8, 2);
    present (30, 31) (7, 3); destiny (40, 41, 42) (2, 4, 4): with kappa = 5 no count is
    N_a - kappa = 5, so every view's weights differ from 1 (past (5, 5) once hid a past
    projection without its weights). Omega1's row and column sums are the future and
    past counts, Omega2's the present and destiny counts."""
    om = OmegaStats(1)
    om.n[:] = [10]
    om.ids[0] = {"future": np.array([10, 11, 12]), "past": np.array([20, 21]),
                 "present": np.array([30, 31]), "destiny": np.array([40, 41, 42])}
    om.counts[0] = {"future": np.array([6, 3, 1]), "past": np.array([8, 2]),
                    "present": np.array([7, 3]), "destiny": np.array([2, 4, 4])}
    om.omega[0] = {"omega1": sp.csr_matrix(np.array([[5, 1], [2, 1], [1, 0]], dtype=np.int64)),
                   "omega2": sp.csr_matrix(np.array([[2, 1, 4], [0, 3, 0]], dtype=np.int64))}
    return om


def hand_weights(kappa):
    """sqrt(N_a / (count_a(f) + kappa)) per view, worked out for kappa = 5, N_a = 10."""
    if kappa is None:
        return {"future": np.ones(3), "past": np.ones(2), "present": np.ones(2),
                "destiny": np.ones(3)}
    assert kappa == 5.0
    return {"future": np.sqrt([10 / 11, 10 / 8, 10 / 6]), "past": np.sqrt([10 / 13, 10 / 7]),
            "present": np.sqrt([10 / 12, 10 / 8]),
            "destiny": np.sqrt([10 / 7, 10 / 9, 10 / 9])}


def test_hand_weights_differ_from_one_in_every_view():
    """The check below can only see a view's weights where they are not 1: a view whose
    weights were all 1 could lose them (in the SVD or in its projection) unnoticed."""
    w = hand_weights(5.0)
    assert sorted(w) == sorted(VIEWS)          # a new view needs its hand-worked weights
    om = hand_omega()
    for v in VIEWS:
        np.testing.assert_allclose(w[v], np.sqrt(10 / (om.counts[0][v] + 5.0)), rtol=1e-15)
        assert np.all(np.abs(w[v] - 1) > 0.04), v      # nearest: sqrt(10/11)


@pytest.mark.parametrize("mean_direction", [False, True])
@pytest.mark.parametrize("kappa", [5.0, None])
def test_feature_scaling_by_hand(kappa, mean_direction):
    """Omega is scaled column by column with sqrt(N_a / (count_a(f) + kappa)) on both sides
    (kappa None: no scaling), divided by N_a; the projections are the top singular vectors
    with the same weights folded back in; the recorded singular values are the scaled
    Omega's. With the mean direction, the scaled Omega is centred with the scaled means
    (w_u * count_u / N_a)(w_v * count_v / N_a)^T first, the first projection of every view
    is the constant 1/T (T = 1 template here) and the SVD gives the other m - 1."""
    om = hand_omega()
    w = hand_weights(kappa)
    lead = 1 if mean_direction else 0
    proj = projections(om, 2, kappa=kappa, mean_direction=mean_direction)
    assert proj.m.tolist() == [2]
    for name, u, v in (("omega1", "future", "past"), ("omega2", "present", "destiny")):
        scaled = np.array(om.omega[0][name].toarray(), dtype=float)
        for i in range(scaled.shape[0]):
            for j in range(scaled.shape[1]):
                scaled[i, j] *= w[u][i] * w[v][j] / 10
                if mean_direction:
                    scaled[i, j] -= (w[u][i] * om.counts[0][u][i] / 10
                                     * w[v][j] * om.counts[0][v][j] / 10)
        U, s, Vt = np.linalg.svd(scaled)
        k = 2 - lead
        np.testing.assert_allclose(proj.info["singular_values"][name][0], s[:k], rtol=1e-10)
        for view, vecs in ((u, U[:, :k]), (v, Vt[:k].T)):
            rows = proj.rows[0][view]
            if mean_direction:
                np.testing.assert_array_equal(rows[:, 0], 1.0)
                rows = rows[:, 1:]
            got = rows / w[view][:, None]
            # singular vectors are defined up to sign (distinct singular values here)
            signs = np.sign(np.sum(got * vecs, axis=0))
            assert (signs != 0).all()
            np.testing.assert_allclose(got, vecs * signs, rtol=1e-9, atol=1e-12,
                                       err_msg=f"{name} {view}")


def test_feature_counts_are_per_label_counts():
    """count_a(f), the count the scaling uses, is how often f occurs with label a (not
    overall): two labels share feature ids with different counts."""
    from rhmmtk.models.rhmm.templates import Templates

    tpl = Templates("future x[0]\npast a[-1]\npresent x[0]\ndestiny a[+1]\n")
    labels = [np.array([0, 0, 1, 0]), np.array([1, 1])]
    obs = [np.array([0, 1, 0, 0]), np.array([0, 0])]
    F = np.concatenate(tpl.featurize_many(labels, obs, 2, 2))
    om = OmegaStats.from_block(F, tpl.view_slices(), 2)
    assert om.n.tolist() == [3, 3]
    # label 0 sees x = 0, 1, 0 (future id = x); label 1 sees x = 0, 0, 0
    assert om.ids[0]["future"].tolist() == [0, 1] and om.counts[0]["future"].tolist() == [2, 1]
    assert om.ids[1]["future"].tolist() == [0] and om.counts[1]["future"].tolist() == [3]
    # omega1 of label 0: future x past (a[-1]: boundary 2, 0, 1) co-occurrence counts
    dense = om.omega[0]["omega1"].toarray()
    want = {(0, 2): 1, (1, 0): 1, (0, 1): 1}
    past = om.ids[0]["past"].tolist()
    assert past == [0, 1, 2]
    for i, f in enumerate([0, 1]):
        for j, p in enumerate(past):
            assert dense[i, j] == want.get((f, p), 0), (f, p)
