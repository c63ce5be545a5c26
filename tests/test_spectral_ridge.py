"""The regularised inverse of the spectral estimator (`est-spectral --ridge`): the
formula against an independent computation, its reduction to the plain inverse, its
invariances (scale of the features, orthogonal changes of basis, so theorem 4.1's
rotation of the projections still leaves the marginals alone), its behaviour on data
sampled from a known R-HMM, and what the model records."""
import numpy as np
import pytest

import rhmmtk.models.rhmm.spectral as spectral
import rhmmtk.models.rhmm.spectral_svd as spectral_svd
from checks import assert_same_marginals
from rhmmtk.models.rhmm.decoder import decode
from rhmmtk.models.rhmm.operators import Operators
from rhmmtk.models.rhmm.spectral import _guarded_inverse, estimate
from synthetic import sample_fast
from test_spectral import (_sample_setup, featurized, normalised_marginals, rotating,
                           true_model)


def _matrices(rng):
    """Square matrices of the kinds Sigma/Lambda come in: well conditioned, nearly
    singular (a direction of noise), non-symmetric, 1 x 1."""
    well = rng.standard_normal((5, 5)) + 5 * np.eye(5)
    U, _, Vt = np.linalg.svd(rng.standard_normal((6, 6)))
    near = U @ np.diag([3.0, 1.0, 0.5, 0.1, 1e-3, 1e-9]) @ Vt
    return [well, near, rng.standard_normal((4, 4)), np.array([[0.7]])]


@pytest.mark.parametrize("r", [0.01, 0.15, 0.6])
def test_ridge_inverse_is_tikhonovs(rng, r):
    """S^T (S S^T + t^2 I)^-1 with t = r s_1, computed by solving the normal equations."""
    for S in _matrices(rng):
        got, cond, guarded = _guarded_inverse(S, 1e10, r)
        t = r * np.linalg.norm(S, 2)
        want = np.linalg.solve(S @ S.T + t * t * np.eye(len(S)), S).T
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
        assert not guarded and cond == pytest.approx(np.linalg.cond(S), rel=1e-6)
        # no direction is amplified by more than 1 / (2 t)
        assert np.linalg.norm(got, 2) <= 1 / (2 * t) * (1 + 1e-9)


def test_ridge_zero_and_tiny_ridge_reduce_to_the_inverse(rng):
    S = _matrices(rng)[0]
    np.testing.assert_array_equal(_guarded_inverse(S, 1e10, 0.0)[0], np.linalg.inv(S))
    np.testing.assert_allclose(_guarded_inverse(S, 1e10, 1e-9)[0], np.linalg.inv(S),
                               rtol=1e-7)
    # the plain path keeps its guard: a singular matrix is pseudo-inverted
    sing = np.diag([1.0, 0.0])
    inv, _, guarded = _guarded_inverse(sing, 1e10, 0.0)
    assert guarded
    np.testing.assert_allclose(inv, np.diag([1.0, 0.0]))
    # with a ridge it is regularised instead: 1 / (1 + r^2), and 0
    np.testing.assert_allclose(_guarded_inverse(sing, 1e10, 0.5)[0], np.diag([0.8, 0.0]))
    # an all-zero block has no inverse of any kind
    z, _, guarded = _guarded_inverse(np.zeros((2, 2)), 1e10, 0.5)
    assert guarded and not z.any()


def test_ridge_inverse_invariances(rng):
    """Scaled by s_1, the ridge does not depend on the scale of the features; and it
    commutes with orthogonal changes of basis on either side."""
    for S in _matrices(rng):
        k = len(S)
        Q, _ = np.linalg.qr(rng.standard_normal((k, k)))
        R, _ = np.linalg.qr(rng.standard_normal((k, k)))
        inv = _guarded_inverse(S, 1e10, 0.2)[0]
        np.testing.assert_allclose(_guarded_inverse(7.5 * S, 1e10, 0.2)[0], inv / 7.5,
                                   rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(_guarded_inverse(Q @ S @ R, 1e10, 0.2)[0],
                                   R.T @ inv @ Q.T, rtol=1e-8, atol=1e-11)


def test_rotation_of_singular_vectors_does_not_matter_with_a_ridge(rng, monkeypatch):
    """Theorem 4.1 with the regularised inverse: an orthogonal mix of the projections
    changes the operators, not the marginals."""
    model, (corpus, F, slices), test = _sample_setup(rng)
    base = estimate(corpus, F, slices, m=2, smooth=0, kappa=None, ridge=0.2)
    base_lab, _, _ = decode(base, test)
    base_mu = normalised_marginals(base, test)
    plain = estimate(corpus, F, slices, m=2, smooth=0, kappa=None)
    # the ridge changed the model (a test of invariance of something else would pass too)
    assert np.abs(normalised_marginals(plain, test) - base_mu).max() > 1e-4
    monkeypatch.setattr(spectral_svd, "top_svd", rotating(spectral_svd.top_svd, rng))
    op = estimate(corpus, F, slices, m=2, smooth=0, kappa=None, ridge=0.2)
    assert not np.allclose(op.emit[0], base.emit[0])
    lab, _, _ = decode(op, test)
    assert all((a == b).all() for a, b in zip(lab, base_lab))
    assert_same_marginals(normalised_marginals(op, test), base_mu, atol=1e-8)


def test_ridge_on_data_from_a_known_rhmm(seed):
    """A small ridge costs little where the plain estimator is right (the data come from
    an R-HMM with the model's m), a large one biases the marginals, and its error
    grows with r: a bias-variance knob, not a free gain."""
    print(f"[seed] ridge on sampled data: {seed}")
    rng = np.random.default_rng(seed)
    model = true_model(rng, l=3, m=2, n=8)
    train = sample_fast(model, 2000, rng)
    test = [s[1] for s in sample_fast(model, 400, rng)]
    truth = normalised_marginals(model.operators(), test)
    corpus, F, slices = featurized(model, train)
    mae = {}
    for r in (0.0, 0.01, 0.1, 0.5):
        op = estimate(corpus, F, slices, m=2, ridge=r)
        mae[r] = float(np.abs(normalised_marginals(op, test) - truth).mean())
    print("marginal MAE by ridge:", {r: round(v, 4) for r, v in mae.items()})
    assert mae[0.0] < 0.06                           # the plain estimate is close
    assert mae[0.01] < mae[0.0] + 0.005              # a small ridge barely moves it
    assert mae[0.0] < mae[0.1] < mae[0.5]            # a large one biases it, increasingly


def test_models_record_the_ridge(tmp_path_factory):
    """train-spectral and est-spectral write the ridge into the model's options; without
    the option it is 0, the paper's estimator."""
    from cli_helpers import run
    from synthetic import corpus_dir

    d, p = corpus_dir(tmp_path_factory, "ridge")
    run("make-obs", "--write-symbols", d / "obs.syms", p["train_txt"], d / "train.obs.h5")
    run("featurize", "--templates", p["templates"], d / "train.obs.h5", p["train_ali"],
        d / "f.h5")
    run("train-spectral", "-m", "2", "--ridge", "0.25", d / "f.h5", d / "r.h5")
    assert Operators.load(d / "r.h5").info["options"]["ridge"] == 0.25
    run("train-spectral", "-m", "2", d / "f.h5", d / "p.h5")
    assert Operators.load(d / "p.h5").info["options"]["ridge"] == 0.0
    # the step-by-step chain: the same model as train-spectral's
    run("acc-spectral", d / "f.h5", d / "o.acc")
    run("svd-spectral", "-m", "2", d / "o.acc", d / "proj.h5")
    run("acc-spectral", "--projections", d / "proj.h5", d / "f.h5", d / "mom.acc")
    run("est-spectral", "--ridge", "0.25", d / "proj.h5", d / "mom.acc", d / "e.h5")
    e, r, plain = (Operators.load(d / f) for f in ("e.h5", "r.h5", "p.h5"))
    assert e.info["options"]["ridge"] == 0.25
    for a, b in zip(_arrays(e), _arrays(r)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    # and not the unregularised one: the emissions (Lambda's inverse) and the transition
    # operators (Sigma's) both differ
    assert not all(np.allclose(a, b) for a, b in zip(e.emit, plain.emit))
    assert not all(np.allclose(e.trans[k], plain.trans[k]) for k in plain.trans)


def _arrays(op):
    """Every parameter array of a general-form model, in a fixed order."""
    return (list(op.emit) + [op.trans[k] for k in sorted(op.trans)] + list(op.stop)
            + list(op.init))


def test_python_api_passes_the_ridge(rng):
    """SpectralRHMM(ridge=r) fits what estimate(..., ridge=r) gives, and records r."""
    from rhmmtk.models.rhmm.estimators import DEFAULT_TEMPLATES, SpectralRHMM

    model, (corpus, F, slices), _ = _sample_setup(rng, count=400)
    names = lambda ids, table: [table.symbols[i] for i in ids]       # noqa: E731
    X = [names(x, corpus.obs_table) for x in corpus.obs]
    Y = [names(a, corpus.label_table) for a in corpus.labels]
    fitted = SpectralRHMM(m=2, ridge=0.3, templates=DEFAULT_TEMPLATES).fit(X, Y).operators_
    assert fitted.info["options"]["ridge"] == 0.3
    plain = SpectralRHMM(m=2, templates=DEFAULT_TEMPLATES).fit(X, Y).operators_
    assert plain.info["options"]["ridge"] == 0.0
    want = estimate(corpus, F, slices, m=2, ridge=0.3)
    # the API builds its own symbol tables: compare through the symbols
    lab = [fitted.labels.index[s] for s in corpus.label_table.symbols]
    obs = [fitted.observations.index[s] for s in corpus.obs_table.symbols]
    for a in range(len(lab)):
        np.testing.assert_allclose(fitted.emit[lab[a]][obs], want.emit[a], rtol=1e-8,
                                   atol=1e-12)
    assert not np.allclose(plain.emit[lab[0]][obs], want.emit[0])
