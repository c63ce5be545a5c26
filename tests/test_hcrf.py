"""HCRFs (rhmmtk.models.hcrf): the spline basis, the lattice against brute force, the
gradient against finite differences, the exact conversion from an ML CDHMM, DC = MC,
sums over blocks and shards, training on data sampled from a known HMM, and the files."""
import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from cdhmm_data import sample, true_model
from rhmmtk.models.hcrf import spline
from rhmmtk.models.hcrf.data import SegmentData
from rhmmtk.models.hcrf.model import HCRF, MASKED, WEIGHTS, moment_features
from rhmmtk.models.hcrf.train import (HcrfOptions, RpropOptions, block_features, gradient,
                                      total_gradient, train_hcrf)
from rhmmtk.symbols import SymbolTable


# --- the spline basis ------------------------------------------------------------
@pytest.mark.parametrize("K", [2, 3, 5, 8])
def test_spline_basis(rng, K):
    lo, hi = -1.3, 2.1
    f = rng.uniform(-4, 5, size=200)       # inside and beyond the knots
    a = spline.basis(f, lo, hi, K)
    knots = np.linspace(lo, hi, K)
    assert np.allclose(a.sum(-1), 1.0, atol=1e-12)                       # partition of unity
    assert np.allclose(spline.basis(knots, lo, hi, K), np.eye(K), atol=1e-12)  # interpolates
    alpha, beta = rng.normal(size=2)
    assert np.allclose(a @ (alpha + beta * knots), alpha + beta * f, atol=1e-10)  # linear exact
    # the natural spline through the data: second derivative 0 at the end knots
    vals = rng.normal(size=K)
    h = 1e-3
    for end in (lo, hi):
        x = np.array([end - h, end, end + h]) if K > 2 else np.array([end] * 3)
        y = spline.basis(x, lo, hi, K) @ vals
        assert abs(y[0] - 2 * y[1] + y[2]) / h ** 2 < 1e-2
    if K >= 4:   # not a B-spline basis: the first basis function reaches the last interval
        assert abs(spline.basis(hi - (hi - lo) / (2 * (K - 1)), lo, hi, K)[0]) > 1e-4


# --- tiny random models ------------------------------------------------------------
def random_model(rng, C=2, N=3, D=2, constraints="moment", K=3):
    labels = SymbolTable([f"c{i}" for i in range(C)])
    F = 2 * D * (K if constraints == "distribution" else 1)
    masks = {"entry_ok": rng.random((C, N)) < 0.7, "trans_ok": rng.random((C, N, N)) < 0.7,
             "exit_ok": rng.random((C, N)) < 0.7}
    masks["entry_ok"][:, 0] = masks["exit_ok"][:, 0] = masks["trans_ok"][:, 0, 0] = True
    w = {"prior": rng.normal(size=C), "entry": rng.normal(size=(C, N)),
         "trans": rng.normal(size=(C, N, N)), "exit": rng.normal(size=(C, N)),
         "W": 0.5 * rng.normal(size=(C, N, F)), "bias": rng.normal(size=(C, N))}
    for k, m in MASKED.items():
        w[k] = np.where(masks[m], w[k], 0.0)
    kr = (np.full(2 * D, -1.0), np.full(2 * D, 1.5)) if constraints == "distribution" else None
    return HCRF(labels, w, masks, rng.normal(size=2 * D), rng.uniform(0.5, 2, size=2 * D),
                constraints, K if kr else None, kr)


def brute_log_z(model, psi):
    """log Z of one segment under every class by enumerating every state path."""
    E = model.emissions(psi)
    w, mk = model.w, model.masks
    out = []
    for c in range(model.num_classes):
        scores = []
        for path in itertools.product(range(model.num_states), repeat=len(psi)):
            ok = mk["entry_ok"][c, path[0]] and mk["exit_ok"][c, path[-1]] and all(
                mk["trans_ok"][c, a, b] for a, b in zip(path, path[1:]))
            if ok:
                scores.append(w["prior"][c] + w["entry"][c, path[0]] + w["exit"][c, path[-1]]
                              + sum(E[t, s, c] for t, s in enumerate(path))
                              + sum(w["trans"][c, a, b] for a, b in zip(path, path[1:])))
        out.append(logsumexp(scores) if scores else -np.inf)
    return np.array(out)


def random_segments(rng, model, lens):
    """Features of random 2-d frames in segments of the given lengths, and the offsets."""
    X = rng.normal(size=(sum(lens), 2))
    return model.features(X), np.concatenate([[0], np.cumsum(lens)])


@pytest.mark.parametrize("constraints", ["moment", "distribution"])
def test_lattice_brute_force(rng, constraints):
    model = random_model(rng, C=3, N=3, constraints=constraints)
    lens = [1, 2, 3, 4, 5]
    psi, off = random_segments(rng, model, lens)
    logZ = model.log_partitions(psi, off)
    for b in range(len(lens)):
        assert np.allclose(logZ[b], brute_log_z(model, psi[off[b]:off[b + 1]]), atol=1e-10)
    post = model.posteriors(psi, off)
    assert np.allclose(post.sum(1), 1.0, atol=1e-12) and np.all(post >= 0)


def test_lattice_far_apart_scores(rng):
    """Classes thousands of nats apart: no underflow, log Z still exact."""
    model = random_model(rng, C=2, N=2)
    model.w["bias"][1] -= 500.0
    X = rng.normal(size=(6, 2))
    off = np.array([0, 6])
    psi = model.features(X)
    assert np.allclose(model.log_partitions(psi, off)[0], brute_log_z(model, psi), atol=1e-9)


@pytest.mark.parametrize("constraints", ["moment", "distribution"])
def test_gradient_finite_differences(rng, constraints):
    model = random_model(rng, C=3, N=3, constraints=constraints)
    lens = [1, 3, 4, 2, 5]
    psi, off = random_segments(rng, model, lens)
    y = rng.integers(0, 3, size=len(lens))
    ll, g = gradient(model, psi, off, y)
    # the objective itself, from brute force
    brute = sum(z[y[b]] - logsumexp(z) for b, z in
                enumerate(brute_log_z(model, psi[off[b]:off[b + 1]]) for b in range(len(lens))))
    assert np.isclose(ll, brute, atol=1e-10)
    h = 1e-5
    for k in WEIGHTS:
        flat = model.w[k].reshape(-1)
        ok = (model.masks[MASKED[k]].reshape(-1) if k in MASKED else np.ones(flat.size, bool))
        for i in rng.choice(np.flatnonzero(ok), size=min(6, ok.sum()), replace=False):
            vals = []
            for d in (h, -h):
                w = {kk: v.copy() for kk, v in model.w.items()}
                w[k].reshape(-1)[i] += d
                vals.append(gradient(model.with_weights(w), psi, off, y)[0])
            assert np.isclose(g[k].reshape(-1)[i], (vals[0] - vals[1]) / (2 * h),
                              rtol=1e-6, atol=1e-7), (k, i)
        if k in MASKED:   # absent moves have no gradient
            assert np.all(g[k].reshape(-1)[~ok] == 0)


# --- the HMM -> HCRF conversion ------------------------------------------------------
def hmm_log_likelihood(hmm, x, p):
    """log p(x | phone p) by a log-space forward pass over the HMM's states, with the
    densities computed from the means and variances (not the natural parameters)."""
    g = hmm.gaussians
    mu, var, lw = g["means"][p], g["variances"][p], g["logw"][p]       # (S, M, D)
    dens = logsumexp(lw[None] - 0.5 * (np.log(2 * np.pi * var)[None]
                                       + (x[:, None, None] - mu[None]) ** 2 / var[None]).sum(-1),
                     axis=2)                                              # (L, S)
    S = mu.shape[0]
    a = np.full(S, -np.inf)
    a[0] = dens[0, 0]
    for t in range(1, len(x)):
        stay = a + hmm.trans[p, :, 0]
        adv = np.concatenate([[-np.inf], a[:-1] + hmm.trans[p, :-1, 1]])
        a = np.logaddexp(stay, adv) + dens[t]
    return logsumexp(a + hmm.trans[p, :, 2])


@pytest.mark.parametrize("normalize", ["variance", "range"])
def test_conversion_reproduces_hmm_posteriors(rng, normalize):
    hmm = true_model(rng, P=3, S=3, M=2, D=3, sep=1.5)
    feats, _ = sample(hmm, rng, n_utts=4)
    X = np.concatenate(feats).astype(np.float64)
    lens = rng.integers(1, 12, size=15)
    off = np.concatenate([[0], np.cumsum(lens)])
    counts = np.array([5.0, 2.0, 9.0])
    model = HCRF.from_cdhmm(hmm, counts, moment_features(X), normalize)
    post = model.posteriors(model.features(X[:off[-1]]), off)
    for b in range(len(lens)):
        z = np.array([hmm_log_likelihood(hmm, X[off[b]:off[b + 1]], p) for p in range(3)])
        z += np.log(counts / counts.sum())
        assert np.allclose(post[b], np.exp(z - logsumexp(z)), atol=1e-8, rtol=0)
    assert np.min(np.abs(post - 1 / 3).max(1)) > 1e-3    # the posteriors are not trivial
    # DC built from MC: equal posteriors before training
    z = (moment_features(X) - model.shift) / model.scale
    dc = model.to_distribution(4, z)
    assert dc.w["W"].shape[2] == 4 * model.w["W"].shape[2]
    assert np.allclose(dc.posteriors(dc.features(X[:off[-1]]), off), post, atol=1e-10)


def test_dc_constant_knot_weights_equal_mc(rng):
    mc = random_model(rng, C=2, N=3)
    dc = mc.to_distribution(5, rng.normal(size=(50, 4)) * 2)
    X = rng.normal(size=(20, 2)) * 3            # some frames beyond the knots
    off = np.array([0, 7, 20])
    assert np.allclose(dc.log_partitions(dc.features(X), off),
                       mc.log_partitions(mc.features(X), off), atol=1e-10)
    # and non-constant knot weights give another model
    w = dict(dc.w, W=dc.w["W"] + rng.normal(size=dc.w["W"].shape))
    assert not np.allclose(dc.with_weights(w).log_partitions(dc.features(X), off),
                           mc.log_partitions(mc.features(X), off))


# --- sums over blocks, training on sampled data ---------------------------------------
def sampled_segments(rng, hmm, n_utts):
    feats, labels = sample(hmm, rng, n_utts=n_utts)
    X = np.concatenate(feats).astype(np.float64)
    y = np.concatenate(labels)
    cut = np.flatnonzero(np.diff(y)) + 1
    off = np.concatenate([[0], cut, [len(y)]]).astype(np.int64)
    ys = y[off[:-1]]
    return SegmentData(X, off, ys, [], [hmm.labels.symbols[i] for i in ys])


def test_blocks_sum_to_the_whole(rng):
    hmm = true_model(rng, P=3, S=2, M=2, D=3)
    data = sampled_segments(rng, hmm, 6)
    model = train_hcrf(hmm, data, HcrfOptions(iters=0, constraints="distribution", knots=3))
    whole = total_gradient(model, block_features(model, data, size=10 ** 9))
    parts = total_gradient(model, block_features(model, data, size=25))
    assert len(block_features(model, data, size=25)) > 2
    assert np.isclose(whole[0], parts[0], rtol=1e-12)
    for k in WEIGHTS:
        assert np.allclose(whole[1][k], parts[1][k], rtol=1e-10, atol=1e-10)


def test_training_on_sampled_data(rng):
    """From a badly fitting start (the true HMM with one Gaussian's mean moved), RPROP
    raises the conditional likelihood, and dev selection keeps the best iteration."""
    hmm = true_model(rng, P=3, S=2, M=1, D=3, sep=1.0)
    train, dev = sampled_segments(rng, hmm, 20), sampled_segments(rng, hmm, 10)
    from rhmmtk.models.hcrf.train import dev_scorer

    for c in ("moment", "distribution"):
        m = train_hcrf(hmm, train, HcrfOptions(iters=8, constraints=c, knots=3),
                       dev_scorer(dev, hmm.labels), RpropOptions(step=0.01))
        h = m.info["history"]
        assert h[-1]["loglik"] > h[0]["loglik"] + 1e-3, c
        best = max(r["dev_acc"] for r in h)
        assert m.info["best_iteration"] == [r["dev_acc"] for r in h].index(best)


def chain(model):
    """`model` with a left-to-right topology (enter state 0, stay or advance, leave from
    anywhere: the HMM's)."""
    N = model.num_states
    mk = model.masks
    mk["entry_ok"][:] = np.arange(N) == 0
    mk["trans_ok"][:] = (np.eye(N) + np.eye(N, k=1)).astype(bool)
    mk["exit_ok"][:] = True
    for k, m in MASKED.items():
        model.w[k] = np.where(mk[m], model.w[k], 0.0)
    return model


def test_unreachable_states_do_not_poison_the_gradient(rng):
    """A state no path reaches yet (the last of a left-to-right chain, in the first
    frames) scoring far above the reachable ones: its backward value overflowed (the
    frames' scale factors are the reachable states') and 0 * inf gave NaN."""
    N = 5
    model = chain(random_model(rng, C=2, N=N))
    model.w["bias"][:, N - 1] += 300.0
    X = rng.normal(size=(7, 2))
    off = np.array([0, 7])
    psi = model.features(X)
    ll, g = gradient(model, psi, off, np.array([1]))
    assert all(np.all(np.isfinite(v)) for v in g.values())
    z = brute_log_z(model, psi)
    assert np.isclose(ll, z[1] - logsumexp(z), atol=1e-9)


def test_unreachable_state_scoring_far_above(rng):
    """A state no path reaches yet scoring 1000 nats above the reachable ones: the
    frame's scale must come from the reachable states, or every class underflows."""
    N = 3
    model = chain(random_model(rng, C=2, N=N))
    model.w["bias"][:, N - 1] += 1000.0
    X = rng.normal(size=(4, 2))
    psi = model.features(X)
    ll, g = gradient(model, psi, np.array([0, 4]), np.array([0]))
    z = brute_log_z(model, psi)
    assert np.all(np.isfinite(z)) and np.isclose(ll, z[0] - logsumexp(z), atol=1e-9)
    assert all(np.all(np.isfinite(v)) for v in g.values())


def test_best_path_through_a_badly_fitting_state(rng):
    """The best path crosses a state scoring 800 nats below the others for one frame and
    then gains more: its scaled forward value underflows, so the segment goes through the
    log-space pass, which must agree with brute force and finite differences."""
    N = 3
    model = chain(random_model(rng, C=2, N=N))
    model.w["bias"][:, 1] -= 800.0
    model.w["bias"][:, 2] += 170.0
    X = rng.normal(size=(8, 2))
    off, y = np.array([0, 8]), np.array([1])
    psi = model.features(X)
    ll, g = gradient(model, psi, off, y)
    z = brute_log_z(model, psi)
    assert z.max() > 200          # the paths through state 2 dominate
    assert np.isclose(ll, z[1] - logsumexp(z), atol=1e-9)
    assert np.allclose(model.log_partitions(psi, off)[0], z, rtol=1e-12)
    h = 1e-5
    for k in ("W", "bias", "trans"):
        i = np.flatnonzero(g[k].reshape(-1) != 0)[:3]
        for j in i:
            vals = []
            for d in (h, -h):
                w = {kk: v.copy() for kk, v in model.w.items()}
                w[k].reshape(-1)[j] += d
                vals.append(gradient(model.with_weights(w), psi, off, y)[0])
            assert np.isclose(g[k].reshape(-1)[j], (vals[0] - vals[1]) / (2 * h), rtol=1e-5,
                              atol=1e-7), (k, j)


def test_patience_stops_rprop_where_the_full_run_had_its_best(rng):
    """train-hcrf --patience: a scripted dev score (best at iteration 2, then no gain)
    stops the loop after iteration 4 with P = 2; the kept weights are the full run's
    iteration-2 weights, bitwise."""
    hmm = true_model(rng, P=3, S=2, M=1, D=3, sep=1.0)
    train = sampled_segments(rng, hmm, 20)
    script = [0.1, 0.2, 0.5, 0.4, 0.5, 0.9, 0.9]

    def scorer():
        values = iter(script)
        return lambda model: next(values)

    opts = dict(constraints="moment", knots=3)
    full = train_hcrf(hmm, train, HcrfOptions(iters=6, **opts), scorer(), RpropOptions(step=0.01))
    two = train_hcrf(hmm, train, HcrfOptions(iters=2, **opts), None, RpropOptions(step=0.01))
    short = train_hcrf(hmm, train, HcrfOptions(iters=6, patience=2, **opts), scorer(),
                       RpropOptions(step=0.01))
    assert full.info["best_iteration"] == 5
    assert [r["iter"] for r in short.info["history"]] == [0, 1, 2, 3, 4]
    assert short.info["best_iteration"] == 2
    for k in two.w:
        assert np.array_equal(short.w[k], two.w[k]), k
