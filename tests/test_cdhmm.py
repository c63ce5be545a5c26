"""CDHMM phone models: Gaussian scoring, ML training, decoding, bad input."""
import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import multivariate_normal

from cdhmm_data import sample, true_model, write_data
from cli_helpers import fails, run
from rhmmtk.models.cdhmm_train import CdhmmOptions, Gaussians, split_mixtures, train_cdhmm
from rhmmtk.models import load_model
from rhmmtk.models.cdhmm import CDHMM
from rhmmtk.models.phoneloop import forward_backward


def test_gaussian_scores_match_scipy(rng):
    m = true_model(rng, P=2, S=2, M=3, D=4)
    X = rng.normal(size=(7, 4)) * 3
    got = m.gaussian_scores(X).reshape(7, 2, 2, 3)
    g = m.gaussians
    for p in range(2):
        for j in range(2):
            for k in range(3):
                want = g["logw"][p, j, k] + multivariate_normal(
                    g["means"][p, j, k], np.diag(g["variances"][p, j, k])).logpdf(X)
                np.testing.assert_allclose(got[:, p, j, k], want, rtol=1e-10, atol=1e-9)
    states = m.state_scores(X)
    np.testing.assert_allclose(states, logsumexp(got.reshape(7, 4, 3), axis=2), atol=1e-10)


def test_split_keeps_weights_and_moves_means(rng):
    m = true_model(rng, P=2, S=1, M=1, D=2)
    g = Gaussians(m.gaussians["means"].copy(), m.gaussians["variances"].copy(),
                  m.gaussians["logw"].copy(), m.trans)
    s = split_mixtures(g, 3)
    assert s.means.shape[2] == 3
    np.testing.assert_allclose(np.exp(s.logw).sum(axis=2), 1.0)
    sd = np.sqrt(g.variances[:, :, 0])
    np.testing.assert_allclose(s.means[:, :, 1], g.means[:, :, 0] + 0.2 * sd)


@pytest.mark.parametrize("update", ["baum-welch", "viterbi"])
def test_ml_training_never_lowers_likelihood(tmp_path, rng, update):
    truth = true_model(rng)
    f, a = write_data(tmp_path, truth, *sample(truth, rng, 20))
    opts = CdhmmOptions(states=2, mixtures=4, iters=4, update=update)
    model = train_cdhmm(f, a, opts)
    hist = model.info["history"]
    for M in (1, 2, 4):
        ll = [h["loglik_per_frame"] for h in hist if h["mixtures"] == M]
        assert len(ll) == 4
        assert all(b >= a - 1e-9 for a, b in zip(ll, ll[1:])), (M, ll)
    assert model.mixtures == 4 and np.all(np.isfinite(model.nat))


def test_ml_recovers_the_sampling_model(tmp_path, rng):
    """Consistency: on data sampled from a known single-Gaussian CDHMM, ML estimates its
    means and the decoder with the estimate labels frames almost as the true model does."""
    truth = true_model(rng, P=3, S=2, M=1, D=3, sep=5.0)
    f, a = write_data(tmp_path, truth, *sample(truth, rng, 150))
    model = train_cdhmm(f, a, CdhmmOptions(states=2, mixtures=1, iters=8, var_floor=0.0))
    err = np.abs(model.gaussians["means"] - truth.gaussians["means"]).max()
    assert err < 0.35, err
    feats, labels = sample(truth, rng, 30)
    y = np.concatenate(labels)
    acc = {}
    for name, mdl in (("truth", truth), ("ml", model)):
        hyp = np.concatenate(mdl.decode(feats).labels)
        acc[name] = (hyp == y).mean()
    assert acc["truth"] > 0.9 and acc["ml"] > acc["truth"] - 0.02, acc


def test_forced_likelihood_is_the_sum_over_segmentations(rng):
    """The E-step's masked forward pass equals the total over the labelled paths of an
    independent dense computation: the same graph with other phones' states at -inf."""
    m = true_model(rng, P=2, S=2, M=1, D=2)
    feats, labels = sample(m, rng, 1, min_len=6)
    E = m.state_scores(feats[0])
    y = labels[0]
    mask = np.repeat(np.arange(2)[None, :], len(y), 0) != y[:, None]
    Em = np.where(np.repeat(mask, 2, axis=1), -np.inf, E)
    g = m.graph()
    total, gamma, _ = forward_backward(Em, *g)
    assert np.isfinite(total)
    # every frame's state posterior sits on its own phone
    np.testing.assert_allclose(gamma.reshape(len(y), 2, 2).sum(axis=2)[np.arange(len(y)), y], 1)


def test_cli_train_decode_score_and_roundtrip(tmp_path, rng):
    truth = true_model(rng)
    f, a = write_data(tmp_path, truth, *sample(truth, rng, 20))
    model = tmp_path / "m.h5"
    run("train-cdhmm", "--states", 2, "--mixtures", 2, "--iters", 2, "--history",
        tmp_path / "h.tsv", f, a, model)
    m = load_model(model)
    assert isinstance(m, CDHMM) and m.states == 2 and m.mixtures == 2
    assert (tmp_path / "h.tsv").read_text().startswith("mixtures\titer\tloglik_per_frame")
    out = run("decode", "--lm-scale", 2, "--insertion-penalty", -1, model, f, "-").stdout
    assert len(out.splitlines()) == 20
    rep = run("score", a, "-", input=out).stdout
    acc = float(rep.split("POS:  %Acc=")[1].split()[0])
    assert acc > 80
    info = run("info", model).stdout
    assert "cdhmm" in info


def test_bad_input_is_one_clear_line(tmp_path, rng):
    truth = true_model(rng, D=3)
    feats, labels = sample(truth, rng, 10)
    f, a = write_data(tmp_path, truth, feats, labels)
    model = tmp_path / "m.h5"
    run("train-cdhmm", "--states", 1, "--iters", 1, f, a, model)
    # wrong feature dimension at decode time
    f4, _ = write_data(tmp_path, truth, [np.hstack([x, x[:, :1]]) for x in feats], labels, "wide")
    err = fails("decode", model, f4, "-")
    assert "u000" in err and "(frames, 3)" in err
    # a phone the --phones table lacks
    (tmp_path / "phones").write_text("ph0 0\nph1 1\n")
    err = fails("train-cdhmm", "--phones", tmp_path / "phones", f, a, tmp_path / "x.h5")
    assert "ph2" in err and not (tmp_path / "x.h5").exists()
    # a phone with no frames
    (tmp_path / "phones4").write_text("ph0 0\nph1 1\nph2 2\nph3 3\n")
    err = fails("train-cdhmm", "--phones", tmp_path / "phones4", f, a, tmp_path / "x.h5")
    assert "'ph3' has no training frames" in err and not (tmp_path / "x.h5").exists()
    # a variance collapsing to zero: every frame of ph1 identical
    same = [x.copy() for x in feats]
    for x, lab in zip(same, labels):
        x[lab == 1] = 1.5
    fs, a2 = write_data(tmp_path, truth, same, labels, "same")
    err = fails("train-cdhmm", "--var-floor", 0, "--states", 1, fs, a2, tmp_path / "x.h5")
    assert "'ph1'" in err and "variance" in err and not (tmp_path / "x.h5").exists()
    run("train-cdhmm", "--states", 1, "--iters", 1, fs, a2, tmp_path / "x.h5")
    m = load_model(tmp_path / "x.h5")
    assert np.all(np.isfinite(m.nat)) and m.info["floored_variances"] >= 3
    # a label count that differs from the frame count
    lines = a.read_text().splitlines()
    lines[0] = lines[0] + " ph0"
    (tmp_path / "long.ali").write_text("\n".join(lines) + "\n")
    err = fails("train-cdhmm", f, tmp_path / "long.ali", tmp_path / "x2.h5")
    assert "u000" in err and "labels but" in err


def test_sharded_training_equals_one_process(tmp_path, rng):
    """acc-cdhmm over 3 shards + init-cdhmm + est-cdhmm (with a split) give train-cdhmm's
    model; a missing shard is refused."""
    truth = true_model(rng)
    f, a = write_data(tmp_path, truth, *sample(truth, rng, 14))
    want = train_cdhmm(f, a, CdhmmOptions(states=2, mixtures=2, iters=2))
    for k in (1, 2, 3):
        run("acc-cdhmm", "--init", "--states", 2, "--job", f"{k}/3", f, a, tmp_path / f"0.{k}.acc")
    run("init-cdhmm", *[tmp_path / f"0.{k}.acc" for k in (1, 2, 3)], tmp_path / "0.h5")
    for it, split in ((1, None), (2, 2), (3, None), (4, None)):
        for k in (1, 2, 3):
            run("acc-cdhmm", "--model", tmp_path / f"{it - 1}.h5", "--job", f"{k}/3", f, a,
                tmp_path / f"{it}.{k}.acc")
        run("est-cdhmm", *(["--mixtures", split] if split else []), tmp_path / f"{it - 1}.h5",
            *[tmp_path / f"{it}.{k}.acc" for k in (1, 2, 3)], tmp_path / f"{it}.h5")
    got = load_model(tmp_path / "4.h5")
    np.testing.assert_allclose(got.nat, want.nat, rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(got.trans, want.trans, atol=1e-9)
    np.testing.assert_allclose(got.lm_bigram, want.lm_bigram, atol=1e-12)
    assert [h["loglik_per_frame"] for h in got.info["history"]] == pytest.approx(
        [h["loglik_per_frame"] for h in want.info["history"]], rel=1e-9)
    err = fails("est-cdhmm", tmp_path / "3.h5", tmp_path / "4.1.acc", tmp_path / "4.2.acc",
                tmp_path / "x.h5")
    assert "3/3" in err and "missing" in err
    err = fails("est-cdhmm", tmp_path / "0.h5", tmp_path / "4.1.acc", tmp_path / "4.2.acc",
                tmp_path / "4.3.acc", tmp_path / "x.h5")
    assert "model" in err and not (tmp_path / "x.h5").exists()
