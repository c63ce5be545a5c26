"""The spectral estimator with the mean direction (`--mean-direction`): the first
projection of every view is the constant 1, the other m_a - 1 come from the centred Omega.

Checked three ways: the shifted SVD against a dense SVD of the centred matrix in all three
of top_svd's paths (brute force); with m = 1 the estimate is exactly the supervised
HMM's counting estimate (reduction to a known model), and rotating the non-constant
directions does not change the marginals (invariance); on data sampled from a known R-HMM
the estimate approaches the true model (consistency)."""
import numpy as np
import pytest
import scipy.sparse as sp

import rhmmtk.models.rhmm.spectral as spectral
import rhmmtk.models.rhmm.spectral_svd as spectral_svd
from checks import assert_same_marginals, normalised
from rhmmtk.models.rhmm import em
from rhmmtk.models.rhmm.decoder import Decoder, decode
from rhmmtk.models.rhmm.spectral import estimate
from rhmmtk.models.rhmm.spectral_svd import top_svd
from test_spectral import (_sample_setup, consistency_run, featurized, normalised_marginals,
                           rotating, true_model)


@pytest.mark.parametrize("path", ["dense", "gram", "gram_tall", "arpack"])
def test_shifted_svd_is_the_svd_of_the_centred_matrix(rng, monkeypatch, path):
    """top_svd(A, k, rng, (u, v)) = the top-k SVD of the dense A - u v^T, whichever way
    top_svd takes (dense LAPACK, the Gram matrix of the thin side, ARPACK)."""
    shape = (40, 300) if path != "gram_tall" else (300, 40)
    A = sp.random(*shape, density=0.2, random_state=np.random.RandomState(rng.integers(2**31)),
                  format="csr")
    u, v = rng.random(shape[0]), rng.random(shape[1])
    if path != "dense":
        monkeypatch.setattr(spectral_svd, "DENSE_SVD_ENTRIES", 0)
    if path == "arpack":
        monkeypatch.setattr(spectral_svd, "GRAM_LIMIT", 0)
    k = 5
    U, s, Vt = top_svd(A, k, rng, (u, v))
    Ur, sr, Vtr = np.linalg.svd(A.toarray() - np.outer(u, v), full_matrices=False)
    np.testing.assert_allclose(s, sr[:k], rtol=1e-8)
    # the same singular pairs up to sign: U^T Ur and Vt Vtr^T are diagonal +-1
    signs = np.sign(np.sum(U * Ur[:, :k], axis=0))
    np.testing.assert_allclose(U * signs, Ur[:, :k], atol=1e-7)
    np.testing.assert_allclose(Vt * signs[:, None], Vtr[:k], atol=1e-7)
    # without the shift it is A's own SVD (the shift was really applied above)
    s0 = top_svd(A, k, rng)[1]
    assert not np.allclose(s0, s)


def test_m1_is_the_counting_hmm(rng):
    """m = 1 with the mean direction: every projection is 1, so the operators are the
    maximum-likelihood HMM's (EM with m = 1, no iterations, no floor), with or without
    feature scaling and smoothing (at m = 1 the smoothing backoff equals the tensor)."""
    model, (corpus, F, slices), _ = _sample_setup(rng, count=800)
    hmm, *_ = em.train(corpus, 1, 0, floor=0.0)
    ref = hmm.operators(corpus.label_table, corpus.obs_table)
    seqs = corpus.obs[:40]                  # seen data: every event has a nonzero count
    want = normalised_marginals(ref, seqs)
    _, want_ll = Decoder(ref).marginals(seqs)
    for opts in (dict(smooth=0, kappa=None), dict(smooth=30, kappa=5.0)):
        op = estimate(corpus, F, slices, m=1, mean_direction=True, emission_floor=0, **opts)
        assert op.m.tolist() == [1] * len(op.m)
        assert_same_marginals(normalised_marginals(op, seqs), want, atol=1e-10)
        _, ll = Decoder(op).marginals(seqs)
        np.testing.assert_allclose(ll, want_ll, atol=1e-9)       # p(x) itself, not only labels
    # the estimate without the mean direction is a different model at m = 1
    plain = estimate(corpus, F, slices, m=1, emission_floor=0, smooth=0, kappa=None)
    assert np.abs(normalised_marginals(plain, seqs) - want).max() > 1e-4


def test_rotating_the_other_directions_does_not_matter(rng, monkeypatch):
    """Theorem 4.1 with the mean direction: an orthogonal mix (signs, rotations) of the
    centred singular vectors changes the operators but not the marginals."""
    model = true_model(rng, m=3)       # two centred directions: a real rotation
    corpus, F, slices = featurized(model, model.sample(3000, rng))
    test = [s[1] for s in model.sample(300, rng)]
    base = estimate(corpus, F, slices, m=3, smooth=0, kappa=None, mean_direction=True)
    assert base.m.tolist() == [3, 3, 3]
    base_lab, _, _ = decode(base, test)
    base_mu = normalised_marginals(base, test)
    monkeypatch.setattr(spectral_svd, "top_svd", rotating(spectral_svd.top_svd, rng))
    op = estimate(corpus, F, slices, m=3, smooth=0, kappa=None, mean_direction=True)
    assert not np.allclose(op.emit[0], base.emit[0])
    lab, _, _ = decode(op, test)
    assert all((a == b).all() for a, b in zip(lab, base_lab))
    assert_same_marginals(normalised_marginals(op, test), base_mu, atol=1e-8)


def test_consistency_with_the_mean_direction(rng, seed):
    """Smoothing, scaling and floor off: consistent as without the mean direction (the
    constant plus the centred directions span the same space under the model)."""
    S = 2000
    res, acc_true, *_ = consistency_run(rng, f"seed {seed}, mean direction", (S, 10 * S),
                                        dict(smooth=0, kappa=None, emission_floor=0,
                                             mean_direction=True))
    (mae1, _, _, _, _), (mae10, mae0, acc10, llbias, _) = res[S], res[10 * S]
    assert mae10 < 0.6 * mae1
    assert mae10 < 0.015 and mae0 < 0.015
    assert abs(acc_true - acc10) < 0.01
    assert abs(llbias) < 0.03


def test_mean_direction_reaches_the_true_states_on_seen_sequences(rng):
    """m_a = the true m (the constant counts as one direction), and the estimate's
    posteriors at the true m beat those of m = 1 (the hidden states carry information)."""
    model = true_model(rng)
    l, m, n = model.shape
    corpus, F, slices = featurized(model, model.sample(4000, rng))
    test = [s[1] for s in model.sample(300, rng)]
    truth = np.concatenate([normalised(mu) for mu in Decoder(model.operators()).marginals(test)[0]])
    err = {}
    for k in (1, m):
        op = estimate(corpus, F, slices, m=k, smooth=0, kappa=None, mean_direction=True)
        assert op.m.tolist() == [k] * l
        err[k] = np.abs(normalised_marginals(op, test) - truth).mean()
    print("marginal MAE by m:", err)
    assert err[m] < 0.7 * err[1]


def test_command_line_mean_direction_m1_is_train_em_m1(tmp_path, seed):
    """Through the files: acc-spectral, svd-spectral --mean-direction -m 1, acc-spectral,
    est-spectral --emission-floor 0 decode exactly as train-em -m 1 --iters 0 --floor 0
    (the same model), and the option is recorded in the model."""
    from cli_helpers import run
    from rhmmtk.models import load_model
    from synthetic import make_corpus

    p = make_corpus(tmp_path, seed)
    f = {k: tmp_path / k for k in ("syms", "train.h5", "feats.h5", "om.acc", "proj.h5",
                                   "mom.acc", "sp.h5", "hmm.h5")}
    run("make-obs", "--write-symbols", f["syms"], p["train_txt"], f["train.h5"])
    run("featurize", "--templates", p["templates"], f["train.h5"], p["train_ali"], f["feats.h5"])
    run("acc-spectral", f["feats.h5"], f["om.acc"])
    run("svd-spectral", "-m", "1", "--mean-direction", f["om.acc"], f["proj.h5"])
    run("acc-spectral", "--projections", f["proj.h5"], f["feats.h5"], f["mom.acc"])
    run("est-spectral", "--emission-floor", "0", f["proj.h5"], f["mom.acc"], f["sp.h5"])
    run("train-em", "-m", "1", "--iters", "0", "--floor", "0", f["train.h5"], p["train_ali"],
        f["hmm.h5"])
    sp_model, hmm = load_model(f["sp.h5"]), load_model(f["hmm.h5"])
    assert sp_model.info["options"]["mean_direction"] is True
    from rhmmtk.training_data import read_corpus
    seqs = read_corpus(f["train.h5"], p["train_ali"]).obs[:30]
    mu_s, ll_s = Decoder(sp_model).marginals(seqs)
    mu_h, ll_h = Decoder(hmm).marginals(seqs)
    np.testing.assert_allclose(ll_s, ll_h, atol=1e-9)
    for a, b in zip(mu_s, mu_h):
        np.testing.assert_allclose(normalised(a), normalised(b), atol=1e-9)
