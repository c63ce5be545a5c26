"""Large-margin CDHMM training: loss-augmented search vs brute force, subgradients vs
finite differences, huge lambda, end to end."""
import numpy as np
import pytest

from cdhmm_data import sample, true_model, write_data
from cli_helpers import fails, run
from rhmmtk.models.cdhmm_train import CdhmmOptions, train_cdhmm
from rhmmtk.models.frames import read_frames
from rhmmtk.models import load_model
from rhmmtk.models.largemargin import LargeMarginOptions, Problem, train_largemargin
from rhmmtk.models.cdhmm import frame_features
from rhmmtk.models.phoneloop import path_transitions, viterbi
from test_phoneloop import enumerate_paths, random_graph


@pytest.mark.parametrize("P,S,T", [(2, 1, 4), (2, 2, 4), (3, 1, 3)])
def test_loss_augmented_and_forced_viterbi_match_brute_force(rng, P, S, T):
    for _ in range(3):
        E, *g = random_graph(rng, P, S, T)
        y = rng.integers(P, size=T)
        wrong = np.repeat(np.arange(P), S)[None, :] != y[:, None]
        paths = enumerate_paths(E, *g)
        aug = max(s + np.sum(np.array(st) // S != y) for s, st, _ in paths)
        best, path, _ = viterbi(E + wrong, *g)
        assert best == pytest.approx(aug, abs=1e-9)
        forced = [s for s, st, _ in paths if np.all(np.array(st) // S == y)]
        fbest, fpath, _ = viterbi(np.where(wrong, -np.inf, E), *g)
        assert fbest == pytest.approx(max(forced), abs=1e-9)
        assert np.all(fpath // S == y)
        assert best >= fbest            # the reference is among the searched paths


@pytest.fixture
def small(tmp_path, rng):
    truth = true_model(rng, P=3, S=2, M=2, D=3, sep=2.0)
    f, a = write_data(tmp_path, truth, *sample(truth, rng, 12))
    ml = train_cdhmm(f, a, CdhmmOptions(states=2, mixtures=2, iters=2))
    return ml, f, a


def test_subgradient_matches_finite_differences(small, rng):
    """R is piecewise linear in w: along a random direction, a small step changes it by
    exactly <subgradient, direction> step while the best paths stay the same."""
    ml, f, a = small
    frames = read_frames(f, a, ml.labels, dim=ml.dim)
    prob = Problem(ml, frames, lm_scale=1.0, insertion_penalty=-1.0)
    w = prob.w0 + 0.01 * rng.normal(size=prob.dim)
    R, grad = prob.risk(w)
    assert R > 0
    for _ in range(5):
        d = rng.normal(size=prob.dim)
        d /= np.linalg.norm(d)
        h = 1e-6
        Rp, _ = prob.risk(w + h * d)
        Rm, _ = prob.risk(w - h * d)
        assert (Rp - Rm) / (2 * h) == pytest.approx(grad @ d, rel=1e-4, abs=1e-6)
    # F of the reference alone: the path's features along d
    for i in range(3):
        s0, path, entered, gidx = prob.paths(w, i, False)
        d = rng.normal(size=prob.dim)
        h = 1e-6
        s1 = prob.paths(w + h * d, i, False)[0]
        dn, dt = prob.unpack(d)
        sl = frames.utterance(i)
        lin = np.sum(frame_features(frames.X[sl]) * dn.reshape(-1, dn.shape[-1])[gidx])
        counts, _ = path_transitions(path, entered, prob.S, prob.P)
        lin += np.sum(counts * dt)
        assert (s1 - s0) / h == pytest.approx(lin, rel=1e-4, abs=1e-6)


def test_huge_lambda_returns_the_ml_model(small):
    ml, f, a = small
    m = train_largemargin(ml, f, a, LargeMarginOptions(lam=1e12, max_iter=5, select="objective"))
    np.testing.assert_allclose(m.nat, ml.nat, rtol=0, atol=1e-8)
    np.testing.assert_allclose(m.trans[:, :, [0, 2]], ml.trans[:, :, [0, 2]], atol=1e-8)


def test_training_lowers_the_objective_and_keeps_the_best(small):
    ml, f, a = small
    m = train_largemargin(ml, f, a, LargeMarginOptions(lam=100.0, max_iter=30, tol=1e-4,
                                                       select="objective"))
    hist = m.info["history"]
    best = [h["best_objective"] for h in hist]
    assert all(b <= x + 1e-9 for x, b in zip(best, best[1:]))
    assert best[-1] < hist[0]["objective"]
    assert np.all(np.isfinite(m.nat)) and m.mixture == "max"
    k = m.info["best_iteration"]
    assert hist[k - 1]["objective"] == pytest.approx(best[-1])


def test_cli_end_to_end_and_bad_input(tmp_path, small):
    from rhmmtk.provenance import record

    ml, f, a = small
    mlp = tmp_path / "ml.h5"
    ml.save(mlp, record({}))
    out = tmp_path / "lm.h5"
    run("train-largemargin", "--lambda", 10, "--max-iter", 3, "--dev-feats", f, "--dev-ali", a,
        "--history", tmp_path / "h.tsv", mlp, f, a, out)
    m = load_model(out)
    assert m.info["estimator"] == "largemargin" and 1 <= m.info["best_iteration"] <= 3
    head = (tmp_path / "h.tsv").read_text().splitlines()[0].split("\t")
    assert {"objective", "gap", "dev_acc", "dev_per", "conflict"} <= set(head)
    hyp = run("decode", out, f, "-").stdout
    assert len(hyp.splitlines()) == 12
    err = fails("train-largemargin", mlp, f, a, tmp_path / "x.h5")
    assert "--select accuracy needs a dev set" in err and not (tmp_path / "x.h5").exists()
    (tmp_path / "bad.ali").write_text(a.read_text().replace("ph1", "zz", 1))
    err = fails("train-largemargin", "--select", "objective", mlp, f, tmp_path / "bad.ali",
                tmp_path / "x.h5")
    assert "'zz'" in err and "u0" in err


def _tiny_problem(rng, objective, P=2, S=2, M=2, T=3, utts=2):
    """A random CDHMM and `utts` random frame-labelled utterances of T frames (D = 1)."""
    from rhmmtk.models.frames import Frames

    model = true_model(rng, P=P, S=S, M=M, D=1, sep=1.0)
    X = rng.normal(size=(utts * T, 1))
    y = rng.integers(P, size=utts * T)
    frames = Frames([f"u{i}" for i in range(utts)], X, y, np.arange(0, utts * T + 1, T),
                    model.labels)
    return Problem(model, frames, lm_scale=0.7, insertion_penalty=-0.3, objective=objective)


def _brute_force_risk(prob, w):
    """Each term by enumerating every (state path, component sequence): the log-sum
    (nco-s) or max (nco-h) of score + Hamming loss, minus the same over the paths that
    keep to the reference labels."""
    import itertools

    nat, trans = prob.unpack(w)
    graph = prob._graph(trans)
    total = 0.0
    for i in range(len(prob.frames)):
        sl = prob.frames.utterance(i)
        feat, y = frame_features(prob.frames.X[sl]), prob.frames.y[sl]
        T = len(y)
        Z = feat @ nat.reshape(-1, prob.K).T
        # transition + LM scores of every path: emissions zero
        paths = enumerate_paths(np.zeros((T, prob.P * prob.S)), *graph)
        aug, ref = [], []
        for score, states, _ in paths:
            states = np.array(states)
            loss = np.sum(states // prob.S != y)
            for comps in itertools.product(range(prob.M), repeat=T):
                g = score + Z[np.arange(T), states * prob.M + np.array(comps)].sum()
                aug.append(g + loss)
                if loss == 0:
                    ref.append(g)
        red = np.logaddexp.reduce if prob.objective == "nco-s" else np.max
        total += red(aug) - red(ref)
    return total


@pytest.mark.parametrize("objective", ["nco-h", "nco-s"])
def test_risk_matches_enumeration_over_paths_and_components(rng, objective):
    prob = _tiny_problem(rng, objective)
    for _ in range(3):
        w = prob.w0 + 0.3 * rng.normal(size=prob.dim)
        R, _ = prob.risk(w)
        assert R == pytest.approx(_brute_force_risk(prob, w), abs=1e-9)
        assert R > 0


def test_nco_s_gradient_matches_finite_differences(rng):
    """NCO-S's risk is smooth: central differences along random directions (and along
    single transition and Gaussian coordinates) equal <gradient, direction>."""
    prob = _tiny_problem(rng, "nco-s", T=4, utts=3)
    w = prob.w0 + 0.2 * rng.normal(size=prob.dim)
    R, grad = prob.risk(w)
    h = 1e-5
    dirs = [rng.normal(size=prob.dim) for _ in range(4)]
    for k in (0, prob.K - 1, prob.dim - 1, prob.dim - 3):      # quadratic, constant, exit, stay
        e = np.zeros(prob.dim)
        e[k] = 1.0
        dirs.append(e)
    for d in dirs:
        fd = (prob.risk(w + h * d)[0] - prob.risk(w - h * d)[0]) / (2 * h)
        assert fd == pytest.approx(grad @ d, rel=1e-6, abs=1e-8)
    assert np.linalg.norm(grad) > 1e-3


def test_nco_s_training_lowers_the_objective_and_decodes(small, tmp_path):
    from rhmmtk.provenance import record

    ml, f, a = small
    mlp = tmp_path / "ml.h5"
    ml.save(mlp, record({}))
    out = tmp_path / "lms.h5"
    run("train-largemargin", "--objective", "nco-s", "--lambda", 100, "--max-iter", 10,
        "--tol", 1e-4, "--select", "objective", mlp, f, a, out)
    m = load_model(out)
    hist = m.info["history"]
    assert m.mixture == "sum" and m.info["options"]["objective"] == "nco-s"
    assert hist[-1]["best_objective"] < hist[0]["objective"]
    assert len(run("decode", out, f, "-").stdout.splitlines()) == 12


@pytest.mark.parametrize("objective", ["nco-h", "nco-s"])
def test_shards_sum_to_the_one_process_risk(small, tmp_path, objective):
    """acc-largemargin over 3 shards: the risks and subgradients add up to Problem.risk
    over all the data (at the ML model and at a moved point)."""
    from rhmmtk.io.stats import StatsFile
    from rhmmtk.jobs import Job
    from rhmmtk.models.cdhmm import CdhmmDecodeOptions
    from rhmmtk.models.largemargin import acc_files
    from rhmmtk.provenance import record

    ml, f, a = small
    frames = read_frames(f, a, ml.labels, dim=ml.dim)
    prob = Problem(ml, frames, 2.0, -1.0, objective)
    w = prob.w0 + 0.01 * np.random.default_rng(5).normal(size=prob.dim)
    point = tmp_path / "point.h5"
    prob.model_at(w).save(point, record({}))
    R, grad = prob.risk(w)
    tot_R, tot_g = 0.0, 0.0
    for k in (1, 2, 3):
        out = tmp_path / f"r.{k}.acc"
        acc_files(point, f, a, out, Job(k, 3), LargeMarginOptions(objective=objective),
                  CdhmmDecodeOptions(2.0, -1.0))
        with StatsFile(out) as sf:
            r, g = float(sf["risk"][0]), sf["subgradient"]
            assert sf.utts == 4 and 0 < r < R
        tot_R, tot_g = tot_R + r, tot_g + g
    assert tot_R == pytest.approx(R, rel=1e-12)
    np.testing.assert_allclose(tot_g, grad, rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("restarts", [0, 2])
def test_sharded_steps_equal_train_largemargin(small, tmp_path, restarts):
    """acc-largemargin x 2 shards + est-largemargin, iterated through the commands, takes
    the same bundle steps and keeps the same model as train-largemargin in one process
    (with --restarts: the new models begin at the same iterations)."""
    import json

    from rhmmtk.provenance import record

    ml, f, a = small
    mlp = tmp_path / "ml.h5"
    ml.save(mlp, record({}))
    opts = ["--lambda", 50, "--max-iter", 4 if not restarts else 20,
            "--tol", 1e-6 if not restarts else 0.05, "--restarts", restarts, "--lm-scale", 2,
            "--insertion-penalty", -1]
    run("train-largemargin", *opts, "--dev-feats", f, "--dev-ali", a, mlp, f, a,
        tmp_path / "one.h5")
    one = load_model(tmp_path / "one.h5")
    point, state, t = mlp, None, 0
    while True:
        t += 1
        accs = [tmp_path / f"r{t}.{k}.acc" for k in (1, 2)]
        for k, acc in enumerate(accs, 1):
            run("acc-largemargin", "--job", f"{k}/2", "--lm-scale", 2, "--insertion-penalty",
                -1, point, f, a, acc)
        new_state, nxt, model = (tmp_path / f"{n}{t}.h5" for n in ("b", "next", "lm"))
        out = json.loads(run("est-largemargin", *opts, "--dev-feats", f, "--dev-ali", a,
                             *(["--state-in", state] if state else []), mlp, *accs,
                             new_state, nxt, model).stdout)
        assert out["iter"] == t
        point, state = nxt, new_state
        if out["done"]:
            break
    sharded = load_model(model)
    h1, h2 = one.info["history"], sharded.info["history"]
    assert len(h1) == len(h2) == t
    for e1, e2 in zip(h1, h2):
        assert e2["objective"] == pytest.approx(e1["objective"], rel=1e-9)
        assert e2["dev_acc"] == e1["dev_acc"] and e2["conflict"] == e1["conflict"]
        assert e2["restart"] == e1["restart"]
    assert (h1[-1]["restart"] > 0) == (restarts > 0)
    assert sharded.info["best_iteration"] == one.info["best_iteration"]
    np.testing.assert_allclose(sharded.nat, one.nat, rtol=1e-8, atol=1e-8)
    # a risk file from another point is refused, naming it
    err = fails("est-largemargin", *opts, "--select", "objective", "--state-in", state, mlp,
                tmp_path / "r1.1.acc", tmp_path / "r1.2.acc", tmp_path / "x1.h5",
                tmp_path / "x2.h5", tmp_path / "x3.h5")
    assert "r1.1.acc" in err and "another model" in err and not (tmp_path / "x1.h5").exists()
    # a state made with another --restarts is refused, naming the option
    other = [str(x) for x in opts]
    other[other.index("--restarts") + 1] = str(1 - min(restarts, 1))
    err = fails("est-largemargin", *other, "--select", "objective", "--state-in", state, mlp,
                *accs, tmp_path / "y1.h5", tmp_path / "y2.h5", tmp_path / "y3.h5")
    assert "--restarts" in err and not (tmp_path / "y1.h5").exists()


def test_moment_scale_matches_sampled_moments(small, rng):
    """parameter_scale's "moments": 1/D^2 is E_g[phi^2] of each Gaussian's features
    [x*x, x, 1], checked against samples drawn from the ML Gaussians; transitions 1."""
    from rhmmtk.models.largemargin import parameter_scale

    ml, _, _ = small
    D = ml.dim
    d = parameter_scale(ml, "moments")
    nat = ml.nat.reshape(-1, 2 * D + 1)
    dn = d[:nat.size].reshape(nat.shape)
    assert np.all(d[nat.size:] == 1) and not np.allclose(dn, 1)   # the scaling does act
    for g in rng.choice(len(nat), 4, replace=False):
        var = -0.5 / nat[g, :D]
        x = rng.normal(nat[g, D:2 * D] * var, np.sqrt(var), size=(200000, D))
        m = np.mean(frame_features(x) ** 2, axis=0)
        np.testing.assert_allclose(1 / dn[g] ** 2, m, rtol=0.03)
    assert np.all(parameter_scale(ml, "none") == 1)


@pytest.mark.parametrize("objective", ["nco-h", "nco-s"])
def test_scaled_objective_and_subgradient_match_finite_differences(small, rng, objective):
    """The bundle's objective in scaled coordinates, f(u) = lambda/2 ||u||^2 +
    R(w_ML + D u), and its subgradient lambda u + D a: central differences along random
    directions agree (R is piecewise linear for nco-h, smooth for nco-s)."""
    ml, f, a = small
    frames = read_frames(f, a, ml.labels, dim=ml.dim)
    prob = Problem(ml, frames, 1.0, -1.0, objective, scaling="moments")
    lam = 7.0
    u = 0.01 * rng.normal(size=prob.dim)

    def fobj(v):
        return 0.5 * lam * v @ v + prob.objective_terms(v)[0]

    R, a_u = prob.objective_terms(u)
    assert R > 0
    grad = lam * u + a_u
    Rw, aw = prob.risk(prob.w0 + prob.scale * u)
    np.testing.assert_allclose(a_u, prob.scale * aw)       # the chain rule, literally
    assert not np.allclose(a_u, aw)
    h = 1e-6
    for _ in range(4):
        d = rng.normal(size=prob.dim)
        d /= np.linalg.norm(d)
        fd = (fobj(u + h * d) - fobj(u - h * d)) / (2 * h)
        assert fd == pytest.approx(grad @ d, rel=1e-4, abs=1e-6)


def test_sequence_chain_matches_brute_force_over_segmentations(rng):
    """Hidden segmentation: Viterbi and the forward total over sequence_chain equal the
    max and the log-sum over every phone-loop path whose phone sequence is exactly
    `seq` (every segmentation of it), enumerated."""
    from rhmmtk.models.largemargin import sequence_chain
    from rhmmtk.models.phoneloop import forward_backward

    P, S, T = 3, 2, 4
    for seq in (np.array([0, 2]), np.array([1, 0, 1]), np.array([2])):
        E, *g = random_graph(rng, P, S, T)
        keep = []
        for score, states, flags in enumerate_paths(E, *g):
            phones = [states[t] // S for t in range(T) if flags[t]]   # flags[0] is True
            if phones == list(seq):
                keep.append(score)
        assert keep
        Ec, gc, cols = sequence_chain(E, seq, tuple(g))
        best, path, entered = viterbi(Ec, *gc)
        assert best == pytest.approx(max(keep), abs=1e-9)
        loop_path = cols[path]
        starts = [loop_path[0] // S] + list(loop_path[1:][entered[1:]] // S)
        assert starts == list(seq)
        total = forward_backward(Ec, *gc)[0]
        assert total == pytest.approx(np.logaddexp.reduce(keep), abs=1e-9)
    # the fixed-boundary search is one of these segmentations: never above
    y = np.array([1, 1, 0, 0])
    E, *g = random_graph(rng, P, S, T)
    wrong = np.repeat(np.arange(P), S)[None, :] != y[:, None]
    fixed = viterbi(np.where(wrong, -np.inf, E), *g)[0]
    Ec, gc, _ = sequence_chain(E, np.array([1, 0]), tuple(g))
    hidden = viterbi(Ec, *gc)[0]
    assert hidden >= fixed - 1e-12


@pytest.mark.parametrize("objective", ["nco-h", "nco-s"])
def test_hidden_segmentation_risk_matches_enumeration(rng, objective):
    """Problem with segmentation "hidden": each term is the loss-augmented search minus
    the max (log-sum) over every path and component sequence whose phone sequence is the
    reference's collapsed one, enumerated; and its subgradient matches differences."""
    import itertools

    prob = _tiny_problem(rng, objective)
    prob.hidden = True
    w = prob.w0 + 0.3 * rng.normal(size=prob.dim)
    nat, trans = prob.unpack(w)
    graph = prob._graph(trans)
    red = np.logaddexp.reduce if objective == "nco-s" else np.max
    want = 0.0
    for i in range(len(prob.frames)):
        sl = prob.frames.utterance(i)
        y = prob.frames.y[sl]
        seq = list(y[np.r_[True, y[1:] != y[:-1]]])
        T = len(y)
        Z = frame_features(prob.frames.X[sl]) @ nat.reshape(-1, prob.K).T
        aug, ref = [], []
        for score, states, flags in enumerate_paths(np.zeros((T, prob.P * prob.S)), *graph):
            states = np.array(states)
            phones = [states[t] // prob.S for t in range(T) if flags[t]]
            loss = np.sum(states // prob.S != y)
            for comps in itertools.product(range(prob.M), repeat=T):
                g = score + Z[np.arange(T), states * prob.M + np.array(comps)].sum()
                aug.append(g + loss)
                if phones == seq:
                    ref.append(g)
        want += red(aug) - red(ref)
    R, grad = prob.risk(w)
    assert R == pytest.approx(want, abs=1e-9)
    assert R < _brute_force_risk(prob, w) + 1e-9 or objective == "nco-s"
    h = 1e-6
    for _ in range(3):
        d = rng.normal(size=prob.dim)
        fd = (prob.risk(w + h * d)[0] - prob.risk(w - h * d)[0]) / (2 * h)
        assert fd == pytest.approx(grad @ d, rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("hidden", [False, True])
def test_nco_h_subgradient_is_the_two_paths_features(small, rng, hidden):
    """The nat part of the NCO-H subgradient (summed by a compiled loop) equals the sum of
    the features of the loss-augmented path's Gaussians minus the reference path's, each
    path taken from `paths` (the sums the earlier sparse product did), to 1e-10."""
    ml, f, a = small
    frames = read_frames(f, a, ml.labels, dim=ml.dim)
    prob = Problem(ml, frames, lm_scale=1.0, insertion_penalty=-1.0,
                   segmentation="hidden" if hidden else "fixed")
    w = prob.w0 + 0.05 * rng.normal(size=prob.dim)
    R, grad = prob.risk(w)
    want, total = np.zeros((prob.P * prob.S * prob.M, prob.K)), 0.0
    for i in range(len(frames)):
        feat = frame_features(frames.X[frames.utterance(i)])
        s_aug, _, _, g_aug = prob.paths(w, i, True)
        s_ref, _, _, g_ref = prob.paths(w, i, False)
        np.add.at(want, g_aug, feat)
        np.subtract.at(want, g_ref, feat)
        total += s_aug - s_ref
    assert R == pytest.approx(total, rel=1e-12)
    np.testing.assert_allclose(prob.unpack(grad)[0].reshape(want.shape), want, rtol=0,
                               atol=1e-10)
