"""The NETtalk competitors from Python (MaxMarginTagger, HkzTagger, CrfTagger): the
command's model on the same data, options and seed (every array of the two files equal),
predictions equal to `rhmmtk decode`'s, scikit-learn conventions, hyperparameters
restored by load, the command's validation."""
import copy
import dataclasses
import inspect
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import KFold, cross_val_score

from cli_helpers import fails, run
from synthetic import make_corpus, read_table
from test_api import assert_same_model
from test_estimator import run_applicable_checks
from rhmmtk import CrfTagger, HkzTagger, MaxMarginTagger, SubpatTagger
from rhmmtk.models.crf import CrfOptions
from rhmmtk.models.hkz import HkzOptions
from rhmmtk.models.maxmargin import MaxMarginOptions
from rhmmtk.models.subpat import SubpatOptions

# (estimator, the same training as command-line options)
CASES = {
    "nuclear": (MaxMarginTagger(reg="nuclear", tau=0.01, rate=5, iters=4, seed=2),
                ["train-maxmargin", "--reg", "nuclear", "--tau", 0.01, "--rate", 5, "--iters",
                 4, "--seed", 2]),
    "l2": (MaxMarginTagger(reg="l2", tau=0.01, rate=5, iters=3),
           ["train-maxmargin", "--reg", "l2", "--tau", 0.01, "--rate", 5, "--iters", 3]),
    "none": (MaxMarginTagger(reg="none", rate=5, iters=3, states=4),
             ["train-maxmargin", "--reg", "none", "--rate", 5, "--iters", 3, "--states", 4]),
    "perceptron": (MaxMarginTagger(update="perceptron", iters=3, seed=1),
                   ["train-maxmargin", "--update", "perceptron", "--iters", 3, "--seed", 1]),
    "hkz": (HkzTagger(m=3, decode="maxmarginal"),
            ["train-hkz", "-m", 3, "--decode", "maxmarginal"]),
    "crf": (CrfTagger(window=2, c2=0.5, iters=15),
            ["train-crf", "--window", 2, "--c2", 0.5, "--iters", 15]),
    "subpat": (SubpatTagger(window=2, ngram=3, iters=3, hash_bits=16, seed=4),
               ["train-subpat", "--window", 2, "--ngram", 3, "--iters", 3, "--hash-bits", 16,
                "--seed", 4]),
    "subpat-crf": (SubpatTagger(features="paper", loss="crf", l2=0.5, average=True, iters=3,
                                hash_bits=16),
                   ["train-subpat", "--features", "paper", "--loss", "crf", "--l2", 0.5,
                    "--average", "--iters", 3, "--hash-bits", 16]),
}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("comp")
    paths = make_corpus(d, 20131, sizes=(90, 20, 20))
    out = {"dir": d}
    for part in ("train", "dev", "test"):
        x, y = read_table(paths[f"{part}_txt"]), read_table(paths[f"{part}_ali"])
        out[part] = ([x[k] for k in x], [y[k] for k in x])
        # the command's inputs, keyed as the API keys them (the sequence index)
        (d / f"{part}.txt").write_text("".join(f"{i} {' '.join(s)}\n"
                                               for i, s in enumerate(out[part][0])))
        (d / f"{part}.ali").write_text("".join(f"{i} {' '.join(s)}\n"
                                               for i, s in enumerate(out[part][1])))
    run("make-obs", "-q", "--write-symbols", d / "syms", d / "train.txt", d / "train.h5")
    for part in ("dev", "test"):
        run("make-obs", "-q", "--symbols", d / "syms", d / f"{part}.txt", d / f"{part}.h5")
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_api_equals_command(case, data, tmp_path):
    est, cli = CASES[case]
    d = data["dir"]
    run(*cli, "-q", d / "train.h5", d / "train.ali", tmp_path / "cli.h5")
    fitted = clone(est).fit(*data["train"])
    fitted.save(tmp_path / "api.h5")
    assert_same_model(tmp_path / "cli.h5", tmp_path / "api.h5")
    hyp = run("decode", "-q", tmp_path / "cli.h5", d / "test.h5", "-").stdout
    want = [l.split()[1:] for l in hyp.splitlines()]
    assert fitted.predict(data["test"][0]) == want
    loaded = type(est).load(tmp_path / "api.h5")
    assert loaded.get_params() == fitted.get_params()
    assert loaded.predict(data["test"][0]) == want
    from_cli = type(est).load(tmp_path / "cli.h5")
    assert from_cli.get_params() == {**fitted.get_params(), "unknown": "error"}


def test_dev_selection_equals_command(data, tmp_path):
    d = data["dir"]
    run("train-maxmargin", "-q", "--reg", "nuclear", "--tau", 0.01, "--rate", 5, "--iters", 4,
        "--dev-obs", d / "dev.h5", "--dev-ali", d / "dev.ali", d / "train.h5", d / "train.ali",
        tmp_path / "cli.h5")
    est = MaxMarginTagger(reg="nuclear", tau=0.01, rate=5, iters=4).fit(*data["train"],
                                                                      dev=data["dev"])
    est.save(tmp_path / "api.h5")
    assert_same_model(tmp_path / "cli.h5", tmp_path / "api.h5")
    assert [r["iter"] for r in est.history_] == [1, 2, 3, 4]
    assert all("dev_acc" in r for r in est.history_)


@pytest.mark.parametrize("case", sorted(CASES))
def test_conventions(case, data):
    est = CASES[case][0]
    X, y = data["train"]
    Xt, yt = data["test"]
    run_applicable_checks(est)
    with pytest.raises(NotFittedError):
        est.predict(Xt)
    X0, y0 = copy.deepcopy(X), copy.deepcopy(y)
    fitted = clone(est).fit(X, y)
    assert (X, y) == (X0, y0)
    first = fitted.predict(Xt)
    assert clone(est).fit(X, y).predict(Xt) == first
    assert pickle.loads(pickle.dumps(fitted)).predict(Xt) == first
    assert 0.3 < fitted.score(Xt, yt) <= 1


@pytest.mark.parametrize("cls,options", [(MaxMarginTagger, MaxMarginOptions),
                                         (HkzTagger, HkzOptions), (CrfTagger, CrfOptions),
                                         (SubpatTagger, SubpatOptions)])
def test_defaults_are_the_commands(cls, options):
    params = inspect.signature(cls.__init__).parameters
    for f in dataclasses.fields(options):
        assert params[f.name].default == f.default, f.name
    assert set(params) == {"self", "unknown", *(f.name for f in dataclasses.fields(options))}


@pytest.mark.parametrize("est,cli", [
    (MaxMarginTagger(reg="tensor"), ["train-maxmargin", "--reg", "tensor"]),
    (MaxMarginTagger(iters=0), ["train-maxmargin", "--iters", "0"]),
    (MaxMarginTagger(tau=float("inf")), ["train-maxmargin", "--tau", "inf"]),
    (HkzTagger(m=0), ["train-hkz", "-m", "0"]),
    (CrfTagger(c2=-1.0), ["train-crf", "--c2", "-1"]),
    (SubpatTagger(hash_bits=40), ["train-subpat", "--hash-bits", "40"]),
])
def test_hyperparameters_refused_as_the_command_refuses_them(est, cli, data, tmp_path):
    with pytest.raises(ValueError, match="invalid ") as e:
        est.fit(*data["train"])
    err = fails(*cli, tmp_path / "a", tmp_path / "b", tmp_path / "c")
    assert str(e.value).split(": ", 1)[1] in err


def test_option_checks_of_the_library_as_value_errors(data):
    with pytest.raises(ValueError, match="--rate must be positive"):
        MaxMarginTagger(rate=0.0).fit(*data["train"])


@pytest.mark.parametrize("X,y,match", [
    ([], [], r"X is empty"),
    ([np.array([0, 1])], [["a", "b"]], r"X\[0\]: give symbols"),
    (["ab", "a b"], ["xy", "xyz"], r"X\[1\]: symbol ' ' is empty or holds white space"),
    (["ab"], [["x", "y z"]], r"y\[0\]: symbol 'y z'"),
    (["ab", "abc"], ["ab", "ab"], r"y\[1\] has 2 labels but X\[1\] has 3 positions"),
])
def test_bad_input(X, y, match):
    with pytest.raises(ValueError, match=match):
        HkzTagger(m=2).fit(X, y)


def test_unseen_symbols_and_cross_validation(data):
    X, y = data["train"]
    est = CrfTagger(iters=10).fit(X, y)
    with pytest.raises(ValueError, match=r"X: sequence 0: unknown symbol 'zz' at position 2"):
        est.predict([[X[0][0], "zz"]])
    est.set_params(unknown="frequent")
    assert est.predict([[X[0][0], "zz"]]) == est.predict([[X[0][0], est.frequent_observation_]])
    scores = cross_val_score(MaxMarginTagger(update="perceptron", iters=2, unknown="frequent"),
                             X, y, cv=KFold(3), error_score="raise")
    assert np.all((0.3 < scores) & (scores <= 1))
