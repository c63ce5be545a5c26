"""The continuous-density and HCRF families from Python (MlCdhmm, LargeMarginCdhmm,
HcrfClassifier, HcrfFrameTagger): the command's model on the same data and options (every
array of the two files equal), predictions equal to `rhmmtk decode`'s, scikit-learn
conventions, hyperparameters restored by load, bad frames refused naming the sequence."""
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from cdhmm_data import sample, true_model
from cli_helpers import fails, run
from test_api import assert_same_model
from test_estimator import run_applicable_checks
from rhmmtk import HcrfClassifier, HcrfFrameTagger, LargeMarginCdhmm, MlCdhmm, accuracy_scorer
from rhmmtk.io.archive import ArchiveWriter
from rhmmtk.provenance import record

ML = dict(states=2, mixtures=2, iters=2)
ML_CLI = ["--states", 2, "--mixtures", 2, "--iters", 2]


def _write(d, name, X, y, segments=False):
    """The command's inputs, keyed as the API keys them (the sequence index)."""
    with ArchiveWriter(d / f"{name}.h5", "features", record({}),
                       attrs={"dim": X[0].shape[1]}) as w:
        for i, x in enumerate(X):
            w.add(str(i), x.astype(np.float32))
    with open(d / f"{name}.ali", "w") as f:
        for i, (x, lab) in enumerate(zip(X, y)):
            f.write(f"{i} 0 {len(x)} {lab}\n" if segments else f"{i} {' '.join(lab)}\n")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(20131)
    truth = true_model(rng, P=3, S=2, M=2, D=3, sep=1.5)
    d = tmp_path_factory.mktemp("frames")
    syms = truth.labels.symbols
    out = {"dir": d}
    for name, n in (("train", 10), ("dev", 4)):
        X, ids = sample(truth, rng, n)
        y = [[syms[k] for k in lab] for lab in ids]
        out[name] = (X, y)
        _write(d, name, X, y)
        # phone segments: every run of one label, as its own sequence
        segs, labs = [], []
        for x, lab in zip(X, ids):
            cut = np.concatenate([[0], np.flatnonzero(np.diff(lab)) + 1, [len(lab)]])
            segs += [x[s:e] for s, e in zip(cut[:-1], cut[1:])]
            labs += [syms[lab[s]] for s in cut[:-1]]
        out[f"{name}_seg"] = (segs, labs)
        _write(d, f"{name}_seg", segs, labs, segments=True)
    run("train-cdhmm", "-q", *ML_CLI, d / "train.h5", d / "train.ali", d / "ml.h5")
    return out


def test_ml_cdhmm_equals_command(data, tmp_path):
    d = data["dir"]
    est = MlCdhmm(**ML, lm_scale=2.0).fit(*data["train"])
    est.save(tmp_path / "api.h5")
    assert_same_model(d / "ml.h5", tmp_path / "api.h5")
    hyp = run("decode", "-q", "--lm-scale", 2, d / "ml.h5", d / "dev.h5", "-").stdout
    assert est.predict(data["dev"][0]) == [l.split()[1:] for l in hyp.splitlines()]
    assert 0.5 < est.score(*data["dev"]) <= 1
    loaded = MlCdhmm.load(tmp_path / "api.h5")
    assert loaded.get_params() == est.get_params()
    assert MlCdhmm.load(d / "ml.h5").get_params() == {**est.get_params(), "lm_scale": 1.0}


def test_large_margin_equals_command(data, tmp_path):
    d = data["dir"]
    run("train-largemargin", "-q", "--lambda", 10, "--max-iter", 3, "--dev-feats",
        d / "dev.h5", "--dev-ali", d / "dev.ali", d / "ml.h5", d / "train.h5", d / "train.ali",
        tmp_path / "cli.h5")
    est = LargeMarginCdhmm(init=MlCdhmm(**ML), lam=10, max_iter=3)
    est.fit(*data["train"], dev=data["dev"])
    est.save(tmp_path / "api.h5")
    assert_same_model(tmp_path / "cli.h5", tmp_path / "api.h5")
    # the ML model given as a file: the same model
    by_path = LargeMarginCdhmm(init=str(d / "ml.h5"), lam=10, max_iter=3)
    by_path.fit(*data["train"], dev=data["dev"]).save(tmp_path / "path.h5")
    assert_same_model(tmp_path / "cli.h5", tmp_path / "path.h5")
    loaded = LargeMarginCdhmm.load(tmp_path / "api.h5")
    assert loaded.init.get_params() == MlCdhmm(**ML).get_params()
    assert loaded.lam == 10 and loaded.max_iter == 3
    with pytest.raises(ValueError, match="needs a dev set"):
        LargeMarginCdhmm(init=str(d / "ml.h5")).fit(*data["train"])


@pytest.mark.parametrize("constraints", ["moment", "distribution"])
def test_hcrf_classifier_equals_command(data, tmp_path, constraints):
    d = data["dir"]
    run("train-hcrf", "-q", "--constraints", constraints, "--knots", 3, "--iters", 2,
        "--dev-obs", d / "dev_seg.h5", "--dev-ali", d / "dev_seg.ali", d / "ml.h5",
        d / "train_seg.h5", d / "train_seg.ali", tmp_path / "cli.h5")
    est = HcrfClassifier(init=str(d / "ml.h5"), constraints=constraints, knots=3, iters=2)
    est.fit(*data["train_seg"], dev=data["dev_seg"])
    est.save(tmp_path / "api.h5")
    assert_same_model(tmp_path / "cli.h5", tmp_path / "api.h5")
    hyp = run("decode", "-q", "--phone-segments", d / "dev_seg.ali", tmp_path / "cli.h5",
              d / "dev_seg.h5", "-").stdout
    assert est.predict(data["dev_seg"][0]) == [l.split()[1] for l in hyp.splitlines()]
    post = est.predict_marginals(data["dev_seg"][0])
    assert post.shape == (len(data["dev_seg"][0]), len(est.classes_))
    np.testing.assert_allclose(post.sum(1), 1)
    assert [est.classes_[i] for i in post.argmax(1)] == est.predict(data["dev_seg"][0])
    acc = est.score(*data["dev_seg"])
    assert 0.5 < acc <= 1
    assert acc == np.mean(np.array(est.predict(data["dev_seg"][0])) == data["dev_seg"][1])
    assert accuracy_scorer(est, *data["dev_seg"]) == acc


def test_hcrf_frame_tagger_equals_command(data, tmp_path):
    d = data["dir"]
    run("train-hcrf-tagger", "-q", "--iters", 2, d / "ml.h5", d / "train.h5", d / "train.ali",
        tmp_path / "cli.h5")
    est = HcrfFrameTagger(init=MlCdhmm(**ML), iters=2).fit(*data["train"])
    est.save(tmp_path / "api.h5")
    assert_same_model(tmp_path / "cli.h5", tmp_path / "api.h5")
    hyp = run("decode", "-q", tmp_path / "cli.h5", d / "dev.h5", "-").stdout
    assert est.predict(data["dev"][0]) == [l.split()[1:] for l in hyp.splitlines()]
    post = est.predict_marginals(data["dev"][0])
    assert [p.shape for p in post] == [(len(x), 3) for x in data["dev"][0]]


@pytest.mark.parametrize("est", [MlCdhmm(**ML), HcrfFrameTagger(init=MlCdhmm(**ML), iters=1),
                                 LargeMarginCdhmm(init=MlCdhmm(**ML), select="objective",
                                                  max_iter=2)],
                         ids=lambda e: type(e).__name__)
def test_conventions(est, data):
    X, y = data["train"]
    run_applicable_checks(est)
    with pytest.raises(NotFittedError):
        est.predict(X)
    X0 = [x.copy() for x in X]
    fitted = clone(est).fit(X, y)
    assert all(np.array_equal(a, b) for a, b in zip(X, X0))
    first = fitted.predict(data["dev"][0])
    assert clone(est).fit(X, y).predict(data["dev"][0]) == first
    assert pickle.loads(pickle.dumps(fitted)).predict(data["dev"][0]) == first


@pytest.mark.parametrize("make,match", [
    (lambda X, y: ([], []), r"X is empty"),
    (lambda X, y: (np.vstack(X), y), r"not one 2-d array"),
    (lambda X, y: ([X[0], X[1][:, :2]], y[:2]), r"X\[1\]: 2 features per frame, expected 3"),
    (lambda X, y: ([X[0], np.where(np.arange(len(X[1]))[:, None] == 4, np.nan, X[1])], y[:2]),
     r"X\[1\]: NaN or infinity at frame 4"),
    (lambda X, y: ([X[0], X[1][:0]], y[:2]), r"X\[1\]: expected a non-empty"),
    (lambda X, y: (X[:2], [y[0], y[1][:-1]]), r"y\[1\] has .* labels but X\[1\] has"),
    (lambda X, y: (X[:2], y[:1]), r"2 sequences in X but 1 in y"),
    (lambda X, y: ([X[0], [["a", "b"]]], y[:2]), r"X\[1\]: not an array of numbers"),
])
def test_bad_frames(make, match, data):
    with pytest.raises(ValueError, match=match):
        MlCdhmm(**ML).fit(*make(*data["train"]))


def test_bad_segments_and_hyperparameters(data, tmp_path):
    X, y = data["train_seg"]
    with pytest.raises(ValueError, match=r"segments in X but 3 labels"):
        HcrfClassifier(iters=1).fit(X, y[:3])
    with pytest.raises(ValueError, match=r"y\[2\]: a class label"):
        HcrfClassifier(iters=1).fit(X[:3], y[:2] + ["a b"])
    with pytest.raises(ValueError, match="invalid knots") as e:
        HcrfClassifier(knots=1).fit(X, y)
    err = fails("train-hcrf", "--knots", 1, tmp_path / "a", tmp_path / "b", tmp_path / "c",
                tmp_path / "d")
    assert str(e.value).split(": ", 1)[1] in err
    with pytest.raises(ValueError, match="invalid states"):
        MlCdhmm(states=9).fit(*data["train"])
    est = MlCdhmm(**ML).fit(*data["train"])
    with pytest.raises(ValueError, match=r"X\[0\]: 2 features per frame, expected 3"):
        est.predict([data["dev"][0][0][:, :2]])
