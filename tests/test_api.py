"""The scikit-learn-style API: same models as the command line, decodes the same, files
interchangeable both ways; predictions checked against brute force on a tiny model."""
import itertools
import subprocess
import sys

import numpy as np
import pytest

from cli_helpers import fails, run
from synthetic import h5_datasets, make_corpus, read_table
from rhmmtk import EmRHMM, SpectralRHMM, UnigramTagger
from rhmmtk.errors import InputError
from sklearn.exceptions import NotFittedError


@pytest.fixture
def data(tmp_path, seed):
    return make_corpus(tmp_path, seed, sizes=(120, 30, 30))


def seqs(path):
    t = read_table(path)
    return list(t), list(t.values())


def operator_arrays(path):
    """Every dataset of a model file: init/emit/trans/stop operators, m, symbol tables."""
    return h5_datasets(path)


def assert_same_model(a, b):
    da, db = operator_arrays(a), operator_arrays(b)
    assert sorted(da) == sorted(db)
    for k in da:
        if da[k].dtype.kind in "fiub":
            np.testing.assert_array_equal(da[k], db[k], err_msg=k)
        else:
            assert list(da[k]) == list(db[k]), k


def test_import_is_cheap():
    code = "import sys, rhmmtk; print(sorted(m for m in ('numpy', 'h5py', " \
           "'rhmmtk.models.rhmm.estimators', 'scipy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("context", [0, 1])
def test_spectral_api_equals_cli(tmp_path, data, context):
    _, obs = seqs(data["train_txt"])
    _, ali = seqs(data["train_ali"])
    run("make-obs", "-q", "--context", context, "--min-count", 2, "--write-symbols",
        tmp_path / "obs.syms", data["train_txt"], tmp_path / "train.obs")
    run("featurize", "-q", "--templates", data["templates"], tmp_path / "train.obs",
        data["train_ali"], tmp_path / "train.feats")
    run("train-spectral", "-q", "-m", 2, "--smooth", 7, tmp_path / "train.feats",
        tmp_path / "cli.h5")
    est = SpectralRHMM(m=2, smooth=7, templates=data["templates"], context=context,
                       min_count=2).fit(obs, ali)
    est.save(tmp_path / "api.h5")
    assert_same_model(tmp_path / "cli.h5", tmp_path / "api.h5")
    # the API's predictions are `rhmmtk decode`'s, on the API's model file and the CLI's
    keys, test = seqs(data["test_txt"])
    run("make-obs", "-q", "--symbols", tmp_path / "obs.syms", data["test_txt"],
        tmp_path / "test.obs")
    hyp = run("decode", "-q", tmp_path / "api.h5", tmp_path / "test.obs", "-").stdout
    assert {k: h for k, h in zip(keys, est.predict(test))} == {
        l.split()[0]: l.split()[1:] for l in hyp.splitlines()}
    loaded = SpectralRHMM.load(tmp_path / "cli.h5")
    assert loaded.predict(test) == est.predict(test)
    _, test_ali = seqs(data["test_ali"])
    acc = est.score(test, test_ali)
    sc = run("score", data["test_ali"], "-", input=hyp).stdout
    assert f"{100 * acc:.2f}" in sc, sc


def test_em_api_equals_cli(tmp_path, data):
    _, obs = seqs(data["train_txt"])
    _, ali = seqs(data["train_ali"])
    _, dobs = seqs(data["dev_txt"])
    _, dali = seqs(data["dev_ali"])
    run("make-obs", "-q", "--write-symbols", tmp_path / "obs.syms", data["train_txt"],
        tmp_path / "train.obs")
    run("make-obs", "-q", "--symbols", tmp_path / "obs.syms", data["dev_txt"],
        tmp_path / "dev.obs")
    run("train-em", "-q", "-m", 2, "--iters", 4, "--seed", 5, "--dev-obs", tmp_path / "dev.obs",
        "--dev-ali", data["dev_ali"], tmp_path / "train.obs", data["train_ali"],
        tmp_path / "cli.h5")
    est = EmRHMM(m=2, iters=4, seed=5).fit(obs, ali, dev=(dobs, dali))
    est.save(tmp_path / "api.h5")
    assert_same_model(tmp_path / "cli.h5", tmp_path / "api.h5")
    assert len(est.history_) == 5
    # another seed gives another model: the comparison can fail
    other = EmRHMM(m=2, iters=4, seed=6).fit(obs, ali, dev=(dobs, dali))
    other.save(tmp_path / "other.h5")
    with pytest.raises(AssertionError):
        assert_same_model(tmp_path / "cli.h5", tmp_path / "other.h5")
    # early stopping and sparse dev scoring are the same options in both
    run("train-em", "-q", "-m", 2, "--iters", 6, "--seed", 5, "--dev-every", 2, "--patience", 1,
        "--dev-obs", tmp_path / "dev.obs", "--dev-ali", data["dev_ali"], tmp_path / "train.obs",
        data["train_ali"], tmp_path / "cli_p.h5")
    est = EmRHMM(m=2, iters=6, seed=5, dev_every=2, patience=1).fit(obs, ali, dev=(dobs, dali))
    est.save(tmp_path / "api_p.h5")
    assert_same_model(tmp_path / "cli_p.h5", tmp_path / "api_p.h5")
    with pytest.raises(InputError, match="patience needs a dev set"):
        EmRHMM(m=2, iters=6, patience=1).fit(obs, ali)
    # the emission backoff: the same model file (p(x) included), and predictions survive
    # save/load
    run("train-em", "-q", "-m", 2, "--iters", 3, "--seed", 5, "--emission-floor", 0.5,
        "--dev-obs", tmp_path / "dev.obs", "--dev-ali", data["dev_ali"], tmp_path / "train.obs",
        data["train_ali"], tmp_path / "cli_b.h5")
    est = EmRHMM(m=2, iters=3, seed=5, emission_floor=0.5).fit(obs, ali, dev=(dobs, dali))
    est.save(tmp_path / "api_b.h5")
    assert_same_model(tmp_path / "cli_b.h5", tmp_path / "api_b.h5")
    assert "backoff_px" in operator_arrays(tmp_path / "api_b.h5")
    assert EmRHMM.load(tmp_path / "api_b.h5").predict(dobs) == est.predict(dobs)
    with pytest.raises(InputError, match="emission_floor"):
        EmRHMM(m=2, iters=1, emission_floor=-1).fit(obs, ali)


def test_unigram_api_equals_cli(tmp_path, data):
    _, obs = seqs(data["train_txt"])
    _, ali = seqs(data["train_ali"])
    run("make-obs", "-q", "--write-symbols", tmp_path / "obs.syms", data["train_txt"],
        tmp_path / "train.obs")
    run("train-unigram", "-q", tmp_path / "train.obs", data["train_ali"], tmp_path / "cli.h5")
    UnigramTagger().fit(obs, ali).save(tmp_path / "api.h5")
    assert_same_model(tmp_path / "cli.h5", tmp_path / "api.h5")


def test_ids_strings_and_tables(data):
    _, obs = seqs(data["train_txt"])
    _, ali = seqs(data["train_ali"])
    a = EmRHMM(m=1, iters=0).fit(obs, ali)
    otab = a.model_.observations.symbols
    ltab = a.model_.labels.symbols
    ids = [np.array([otab.index(s) for s in x]) for x in obs]
    lids = [np.array([ltab.index(s) for s in y]) for y in ali]
    b = EmRHMM(m=1, iters=0, observation_symbols=otab, label_symbols=ltab).fit(ids, lids)
    for x, y in zip(a.model_.emit, b.model_.emit):
        np.testing.assert_array_equal(x, y)
    assert a.predict(obs[:5]) == b.predict(ids[:5])
    assert b.score(ids, lids) == a.score(obs, ali)
    assert a.classes_ == ltab
    with pytest.raises(InputError, match="labels but"):
        EmRHMM(m=1, iters=0).fit(obs[:2], [ali[0], ali[1][:-1]])
    with pytest.raises(NotFittedError, match="not fitted"):
        EmRHMM().predict(obs)
    with pytest.raises(InputError, match="unknown symbol"):
        a.predict([["never-seen"]])
    assert "m=1" in repr(a) and a.get_params()["iters"] == 0


def test_marginals_brute_force(tmp_path):
    """predict_marginals against enumerating every label sequence of a tiny HMM (m = 1):
    p(a_i = a | x) by summing the joint over all paths."""
    words = ["ab", "ba", "aab", "bba", "abb", "aa", "b"]
    tags = ["XY", "YX", "XXY", "YYX", "XYY", "XX", "Y"]
    est = EmRHMM(m=1, iters=0).fit(words, tags)
    op = est.model_
    l = len(op.labels)
    pi = np.array([op.init[a][0] for a in range(l)])
    T = np.zeros((l, l))
    for (a, b), C in op.trans.items():
        T[a, b] = C.reshape(-1)[0]
    stop = np.array([op.stop[a].reshape(-1)[0] for a in range(l)])
    for word in ["abba", "bab", "a"]:
        x = [op.observations.index[c] for c in word]
        o = np.array([[op.emit[a][xi, 0] for a in range(l)] for xi in x])
        post = np.zeros((len(x), l))
        for path in itertools.product(range(l), repeat=len(x)):
            p = pi[path[0]] * o[0, path[0]]
            for i in range(1, len(x)):
                p *= T[path[i - 1], path[i]] * o[i, path[i]]
            p *= stop[path[-1]]
            for i, a in enumerate(path):
                post[i, a] += p
        post /= post.sum(axis=1, keepdims=True)
        got = est.predict_marginals([word])[0]
        np.testing.assert_allclose(got, post, rtol=1e-10, atol=1e-12)
        assert est.predict([word])[0] == [op.labels.symbols[a] for a in post.argmax(1)]


def test_notebook_model_decodes_from_shell_and_back(tmp_path, data):
    _, obs = seqs(data["train_txt"])
    _, ali = seqs(data["train_ali"])
    est = SpectralRHMM(m=2, templates=data["templates"]).fit(obs, ali)
    est.save(tmp_path / "nb.h5")
    info = run("info", tmp_path / "nb.h5").stdout
    assert "spectral" in info
    assert "rhmm model is needed" not in info
    err = fails("decode", tmp_path / "nb.h5", tmp_path / "missing.obs", "-")
    assert "missing.obs" in err
