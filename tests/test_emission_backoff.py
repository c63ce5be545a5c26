"""EM's emission backoff (`train-em --emission-floor eps`): the model is decoded with
(o(x|a,h) + eps p(x)) / (1 + eps), while its file keeps EM's own o for re-estimation.

Checked three ways: the backoff decoder against the same model with the interpolated
emissions written into it (the plain decoder, itself checked by brute force); reduction
to another estimator that implements the interpolation independently (SPECTRAL(1) with
the mean direction and `--emission-floor eps` is the HMM with the backoff); and through
the files, where sharded EM (acc-em/init-em/est-em) equals train-em and a saved model
decodes and re-estimates as the one in memory."""
import numpy as np
import pytest

from cli_helpers import fails, run
from rhmmtk.models.rhmm import em, em_files
from rhmmtk.models.rhmm.decoder import Decoder
from rhmmtk.models.rhmm.operators import Operators, observation_prior
from shards import NJ, rel_diff
from test_spectral import _sample_setup, normalised_marginals


def _baked(op):
    """The same model with the interpolated emissions written in, and no backoff."""
    return Operators(op.labels, op.observations, op.form, op.init, op.decoding_emit,
                     op.trans, op.stop, op.info)


def test_backoff_decodes_as_the_interpolated_emissions(rng):
    """The decoder uses (o + eps p(x)) / (1 + eps): the same marginals and likelihoods as
    the model with those emissions, in the diagonal and the general form; eps = 0 is no
    backoff at all."""
    _, (corpus, _, _), test = _sample_setup(rng, count=400)
    eps = 0.7
    model, *_ = em.train(corpus, 2, 3, seed=1, emission_floor=eps)
    op = model.operators(corpus.label_table, corpus.obs_table)
    assert op.backoff is not None and op.backoff[0] == eps
    counts = np.bincount(np.concatenate(corpus.obs), minlength=len(corpus.obs_table))
    np.testing.assert_allclose(op.backoff[1], np.maximum(counts, 1) / counts.sum(), rtol=1e-15)
    want = (model.o + eps * op.backoff[1][None, :, None]) / (1 + eps)
    np.testing.assert_allclose(np.stack(op.decoding_emit), want, rtol=1e-14)
    mu, ll = Decoder(op).marginals(test)
    for other in (_baked(op), op.to_general()):
        mu2, ll2 = Decoder(other).marginals(test)
        np.testing.assert_allclose(ll2, ll, rtol=1e-12)
        for a, b in zip(mu, mu2):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-300)
    # the backoff changes the decoding (the test above is not vacuous) ...
    raw = Operators(op.labels, op.observations, op.form, op.init, op.emit, op.trans, op.stop)
    assert np.abs(Decoder(raw).marginals(test)[1] - ll).max() > 1e-3
    # ... and eps = 0 is no backoff
    zero, *_ = em.train(corpus, 2, 3, seed=1, emission_floor=0.0)
    assert zero.operators().backoff is None
    np.testing.assert_array_equal(zero.o, model.o)     # EM's own o is not touched


def test_hmm_with_backoff_is_spectral_m1_with_the_same_floor(rng):
    """Reduction: SPECTRAL(1) with the mean direction is the counting HMM, and its
    `emission_floor` adds eps p(x) E[d|a] Lambda^-1 = eps p(x) to p(x|a); the HMM with the
    backoff decodes p(x|a) + eps p(x) over 1 + eps, the same marginals. Two
    implementations of the interpolation (estimation time, decoding time) agree."""
    from rhmmtk.models.rhmm.spectral import estimate

    _, (corpus, F, slices), test = _sample_setup(rng, count=800)
    for eps in (0.05, 2.0):
        hmm, *_ = em.train(corpus, 1, 0, floor=0.0, emission_floor=eps)
        ref = hmm.operators(corpus.label_table, corpus.obs_table)
        op = estimate(corpus, F, slices, m=1, mean_direction=True, emission_floor=eps,
                      smooth=0, kappa=None)
        np.testing.assert_allclose(normalised_marginals(op, test),
                                   normalised_marginals(ref, test), atol=1e-10)
        # p(x) itself differs by the constant (1 + eps) per position
        lens = np.array([len(s) for s in test])
        np.testing.assert_allclose(Decoder(op).marginals(test)[1],
                                   Decoder(ref).marginals(test)[1] + lens * np.log1p(eps),
                                   atol=1e-9)


def test_observation_prior_counts_every_observation_once():
    np.testing.assert_allclose(observation_prior([0, 3, 1], 4), [0.25, 0.75, 0.25])


def test_train_em_backoff_through_the_files(shard_corpus, tmp_path):
    """train-em --emission-floor writes EM's own o with the backoff beside it: dev is
    scored with the backoff (the history's dev accuracy is the saved model's decoding),
    `info` shows it, and sharded EM with init-em --emission-floor makes the same model,
    whose dev scoring and re-estimation match train-em's."""
    from rhmmtk.models import load_model

    obs, ali = shard_corpus["obs"], shard_corpus["train_ali"]
    dev = ["--dev-obs", shard_corpus["dev_obs"], "--dev-ali", shard_corpus["dev_ali"]]
    single = tmp_path / "single.h5"
    run("train-em", "-m", "3", "--iters", "3", "--seed", "5", "--emission-floor", "0.5",
        *dev, obs, ali, single)
    op = load_model(single)
    assert op.backoff[0] == 0.5 and op.info["options"]["emission_floor"] == 0.5
    assert '"emission_floor": 0.5' in run("info", "--json", single).stdout
    # the kept model decodes dev as train-em scored it
    from rhmmtk.training_data import read_corpus
    d = read_corpus(shard_corpus["dev_obs"], shard_corpus["dev_ali"], op.labels, strict=False)
    hyp = op.decode(d.obs).labels
    acc = np.mean(np.concatenate(hyp) == np.concatenate(d.labels))
    best = op.info["best_iteration"]
    assert abs(op.info["history"][best]["dev_acc"] - acc) < 1e-12
    # shards: init-em fixes the backoff, est-em keeps it and re-estimates the raw o
    counts = [tmp_path / f"0.{j}.acc" for j in range(1, NJ + 1)]
    for j, out in enumerate(counts, 1):
        run("acc-em", "--init", "--job", f"{j}/{NJ}", obs, ali, out)
    run("init-em", "-m", "3", "--seed", "5", "--emission-floor", "0.5", *dev, *counts,
        tmp_path / "0.h5")
    for it in (1, 2, 3):
        accs = [tmp_path / f"{it}.{j}.acc" for j in range(1, NJ + 1)]
        for j, out in enumerate(accs, 1):
            run("acc-em", "--model", tmp_path / f"{it - 1}.h5", "--job", f"{j}/{NJ}", obs, ali,
                out)
        run("est-em", *dev, tmp_path / f"{it - 1}.h5", *accs, tmp_path / f"{it}.h5")
    sharded = load_model(tmp_path / f"{best}.h5")
    a, b = em_files.load_model(tmp_path / f"{best}.h5")[0], em_files.load_model(single)[0]
    for name in ("pi", "o", "t", "f"):
        assert rel_diff(getattr(a, name), getattr(b, name)) < 1e-10, name
    np.testing.assert_array_equal(sharded.backoff[1], op.backoff[1])
    dev_sharded = [h["dev_acc"] for h in load_model(tmp_path / "3.h5").info["history"]]
    dev_single = [h["dev_acc"] for h in op.info["history"]]
    np.testing.assert_allclose(dev_sharded, dev_single, atol=1e-12)
    # without the option: the same raw iterations, no backoff
    run("train-em", "-m", "3", "--iters", "3", "--seed", "5", obs, ali, tmp_path / "plain.h5")
    plain = em_files.load_model(tmp_path / "plain.h5")
    assert plain[1].backoff is None
    assert rel_diff(plain[0].o, em_files.load_model(tmp_path / "3.h5")[0].o) < 1e-10


def test_bad_emission_floor_and_bad_backoff_refused(shard_corpus, tmp_path):
    obs, ali = shard_corpus["obs"], shard_corpus["train_ali"]
    err = fails("train-em", "--emission-floor", "-1", obs, ali, tmp_path / "m.h5")
    assert "--emission-floor" in err
    _, (corpus, _, _), _ = _sample_setup(np.random.default_rng(0), count=50)
    model, *_ = em.train(corpus, 1, 0, emission_floor=1.0)
    op = model.operators(corpus.label_table, corpus.obs_table)
    op.backoff[1][0] = np.nan
    with pytest.raises(Exception, match="backoff"):
        op.save(tmp_path / "nan.h5", {})
    assert not (tmp_path / "nan.h5").exists()
    # a negative or non-finite eps is refused, not taken as "no backoff"
    for eps in (-1.0, np.nan):
        with pytest.raises(ValueError, match="backoff"):
            Operators(op.labels, op.observations, "diagonal", op.init, op.emit, op.trans,
                      op.stop, backoff=(eps, np.ones(len(op.observations))))
    with pytest.raises(ValueError, match="diagonal"):
        Operators(op.labels, op.observations, "general", op.init, op.emit,
                  op.to_general().trans, [np.diag(f) for f in op.stop], backoff=(1.0, np.ones(3)))
