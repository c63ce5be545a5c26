"""The R-HMM estimators as scikit-learn estimators (rhmmtk.estimator): the parts of
scikit-learn's estimator checks that apply to sequence data, model selection with a
sequence-aware scorer, hyperparameters restored by load, the command line's validation."""
import copy
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.utils import estimator_checks as checks
from sklearn.utils.validation import check_is_fitted

from cli_helpers import fails
from synthetic import make_corpus, read_table
import rhmmtk
from rhmmtk import EmRHMM, SpectralRHMM, UnigramTagger
from rhmmtk.estimator_scorers import (accuracy_scorer, per_position_accuracy, per_scorer,
                                      phone_error_rate)

ESTIMATORS = [SpectralRHMM(m=2, smooth=7), EmRHMM(m=2, iters=2, seed=3), UnigramTagger()]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    paths = make_corpus(tmp_path_factory.mktemp("est"), 20131, sizes=(90, 20, 20))
    out = {}
    for part in ("train", "test"):
        x, y = read_table(paths[f"{part}_txt"]), read_table(paths[f"{part}_ali"])
        out[part] = ([x[k] for k in x], [y[k] for k in x])
    return out


def _name(est):
    return type(est).__name__


# scikit-learn's estimator checks that do not assume numeric 2-d X; the last three are
# newer than scikit-learn 1.3 (scripts/test_oldest.sh runs the first four there)
APPLICABLE_CHECKS = [getattr(checks, name) for name in (
    "check_no_attributes_set_in_init", "check_parameters_default_constructible",
    "check_get_params_invariance", "check_set_params", "check_estimator_repr",
    "check_estimator_cloneable", "check_do_not_raise_errors_in_init_or_set_params")
    if hasattr(checks, name)]


def run_applicable_checks(est):
    for check in APPLICABLE_CHECKS:
        check(_name(est), est)


@pytest.mark.parametrize("est", ESTIMATORS, ids=_name)
@pytest.mark.parametrize("check", APPLICABLE_CHECKS, ids=lambda c: c.__name__)
def test_sklearn_checks(est, check):
    check(_name(est), est)


@pytest.mark.parametrize("est", ESTIMATORS, ids=_name)
def test_conventions(est, data):
    X, y = data["train"]
    Xt, yt = data["test"]
    with pytest.raises(NotFittedError):
        est.predict(Xt)
    with pytest.raises(NotFittedError):
        check_is_fitted(est)
    params = est.get_params()
    assert clone(est).get_params() == params
    assert clone(est).set_params(**params).get_params() == params
    X0, y0 = copy.deepcopy(X), copy.deepcopy(y)
    fitted = clone(est)
    assert fitted.fit(X, y) is fitted
    assert (X, y) == (X0, y0)                       # inputs not mutated
    assert fitted.get_params() == params            # nor the hyperparameters
    check_is_fitted(fitted)
    first = fitted.predict(Xt)
    assert fitted.fit(X, y).predict(Xt) == first    # fit twice: the same model
    again = pickle.loads(pickle.dumps(fitted))
    assert again.predict(Xt) == first
    assert again.get_params() == params
    assert 0.3 < fitted.score(Xt, yt) <= 1


@pytest.mark.parametrize("est", ESTIMATORS, ids=_name)
def test_load_restores_hyperparameters(est, data, tmp_path):
    X, y = data["train"]
    Xt, _ = data["test"]
    fitted = clone(est).set_params(context=1, min_count=2).fit(X, y)
    fitted.save(tmp_path / "m.h5")
    loaded = type(est).load(tmp_path / "m.h5")
    want = {k: v for k, v in fitted.get_params().items() if k != "templates"}
    assert {k: loaded.get_params()[k] for k in want} == want
    assert loaded.predict(Xt) == fitted.predict(Xt)
    # clone of the loaded model trains the same model
    assert clone(loaded).fit(X, y).predict(Xt) == fitted.predict(Xt)


def test_load_of_a_command_file_restores_its_options(data, tmp_path):
    """A model the command wrote: train-em's recorded options become the parameters."""
    from cli_helpers import run

    X, y = data["train"]
    (tmp_path / "x.txt").write_text("".join(f"u{i} {' '.join(s)}\n" for i, s in enumerate(X)))
    (tmp_path / "y.ali").write_text("".join(f"u{i} {' '.join(s)}\n" for i, s in enumerate(y)))
    run("make-obs", "-q", "--write-symbols", tmp_path / "syms", tmp_path / "x.txt",
        tmp_path / "x.h5")
    run("train-em", "-q", "-m", 2, "--iters", 2, "--seed", 3, tmp_path / "x.h5",
        tmp_path / "y.ali", tmp_path / "em.h5")
    loaded = EmRHMM.load(tmp_path / "em.h5")
    assert (loaded.m, loaded.iters, loaded.seed) == (2, 2, 3)
    assert loaded.predict(data["test"][0]) == EmRHMM(m=2, iters=2, seed=3).fit(X, y).predict(
        data["test"][0])


def test_cross_validation_and_grid_search(data):
    X, y = data["train"]
    cv = KFold(3, shuffle=True, random_state=0)
    scores = cross_val_score(EmRHMM(m=1, iters=0, unknown="frequent"), X, y, cv=cv,
                             scoring=accuracy_scorer, error_score="raise")
    assert len(scores) == 3 and np.all((0.3 < scores) & (scores <= 1))
    # the default scorer (est.score) is per-position accuracy too
    assert np.allclose(cross_val_score(EmRHMM(m=1, iters=0, unknown="frequent"), X, y, cv=cv,
                                       error_score="raise"), scores)
    grid = GridSearchCV(SpectralRHMM(smooth=7, unknown="frequent"),
                        {"m": [1, 2], "smooth": [1.0, 30.0]}, cv=cv, scoring=accuracy_scorer,
                        error_score="raise").fit(X, y)
    assert grid.best_params_["m"] in (1, 2)
    assert grid.best_estimator_.score(X, y) > 0.3
    assert -1 <= per_scorer(grid.best_estimator_, X, y) <= 0


def test_metrics_by_hand():
    ref = [list("ab-c"), list("xy")]
    hyp = [list("abcc"), list("xz")]
    assert per_position_accuracy(ref, hyp) == 4 / 6
    # '-' dropped: ref abc vs hyp abcc (one insertion), xy vs xz (one substitution)
    assert phone_error_rate(ref, hyp) == pytest.approx(2 / 5)
    # a classifier's labels are whole strings, not their characters
    assert per_position_accuracy(["ph0", "ph1"], ["ph0", "ph2"]) == 0.5
    with pytest.raises(ValueError, match=r"y\[1\] has 2 labels but the prediction 3"):
        per_position_accuracy(ref, [list("abcc"), list("xyz")])


def test_unseen_symbols(data):
    X, y = data["train"]
    est = EmRHMM(m=1, iters=0).fit(X, y)
    never = [X[0][:1] + ["never-seen"]]
    with pytest.raises(ValueError, match="unknown symbol 'never-seen' at position 2"):
        est.predict(never)
    freq = est.set_params(unknown="frequent")
    assert len(freq.predict(never)[0]) == 2
    common = freq.frequent_observation_
    assert freq.predict(never) == freq.predict([X[0][:1] + [common]])
    with pytest.raises(ValueError, match="invalid unknown"):
        EmRHMM(unknown="skip").fit(X, y)


@pytest.mark.parametrize("cls,params,cli", [
    (SpectralRHMM, {"smooth": float("nan")}, ["--smooth", "nan"]),
    (SpectralRHMM, {"m": 0}, ["-m", "0"]),
    (SpectralRHMM, {"rank_tol": 1.0}, ["--rank-tol", "1"]),
    (EmRHMM, {"m": 0}, ["-m", "0"]),
    (EmRHMM, {"floor": -1.0}, ["--floor", "-1"]),
    (EmRHMM, {"iters": 2.5}, ["--iters", "2.5"]),
    (EmRHMM, {"dev_every": 0}, ["--dev-every", "0"]),
    (EmRHMM, {"beam": 2.0}, ["--beam", "2"]),
    (UnigramTagger, {"context": -1}, None),
])
def test_hyperparameters_refused_as_the_command_refuses_them(cls, params, cli, data, tmp_path):
    X, y = data["train"]
    name, value = next(iter(params.items()))
    with pytest.raises(ValueError, match=f"invalid {name} ") as e:
        cls(**params).fit(X, y)
    message = str(e.value).split(": ", 1)[1]
    if cli:
        command = {SpectralRHMM: "train-spectral", EmRHMM: "train-em"}[cls]
        err = fails(command, *cli, tmp_path / "a", tmp_path / "b", tmp_path / "c")
        assert message in err, (message, err)


@pytest.mark.parametrize("X,y,match", [
    ([], [], r"X is empty"),
    ("abc", ["abc"], r"X must be a list of sequences"),
    (["ab", ""], ["ab", ""], r"X\[1\] is empty"),
    ([["a", 1]], [["x", "y"]], r"X\[0\]: symbols must be strings, found int"),
    (["ab", np.array([0, 1])], ["ab", "ab"], r"X mixes symbol sequences and arrays"),
    (["ab", "abc"], ["ab"], r"2 sequences in X but 1 in y"),
    (["ab", "abc"], ["ab", "ab"], r"y\[1\] has 2 labels but X\[1\] has 3 positions"),
    ([np.zeros((2, 2), int)], ["ab"], r"X\[0\]: expected a 1-d array"),
])
@pytest.mark.parametrize("cls", [SpectralRHMM, EmRHMM, UnigramTagger], ids=lambda c: c.__name__)
def test_bad_input(cls, X, y, match):
    with pytest.raises(ValueError, match=match):
        cls().fit(X, y)


def test_bad_dev_and_predict_input(data):
    X, y = data["train"]
    with pytest.raises(ValueError, match=r"dev y\[0\] has"):
        EmRHMM(m=1, iters=1).fit(X, y, dev=(X[:2], [y[0][:-1], y[1]]))
    est = EmRHMM(m=1, iters=0).fit(X, y)
    with pytest.raises(ValueError, match=r"X\[1\] is empty"):
        est.predict([X[0], []])
    with pytest.raises(ValueError, match=r"y\[0\] has"):
        est.score(X[:1], [y[0][:-1]])


def test_dir_lists_the_estimators():
    names = dir(rhmmtk)
    for name in ("SpectralRHMM", "EmRHMM", "UnigramTagger", "MaxMarginTagger", "HkzTagger",
                 "CrfTagger", "SubpatTagger", "MlCdhmm", "LargeMarginCdhmm", "HcrfClassifier",
                 "HcrfFrameTagger", "accuracy_scorer", "per_scorer"):
        assert name in names
        assert getattr(rhmmtk, name) is not None


def test_pipeline(data):
    """The issue's report: Pipeline failed on the newest scikit-learn; dev passes through as
    the step's fit parameter."""
    from sklearn.pipeline import Pipeline

    X, y = data["train"]
    Xt, _ = data["test"]
    pipe = Pipeline([("tagger", EmRHMM(m=2, iters=2, seed=3))])
    pipe.fit(X[:60], y[:60], tagger__dev=(X[60:], y[60:]))
    direct = EmRHMM(m=2, iters=2, seed=3).fit(X[:60], y[:60], dev=(X[60:], y[60:]))
    assert pipe.predict(Xt) == direct.predict(Xt)
    assert pipe.named_steps["tagger"].history_ == direct.history_
