"""The whole command-line chain on a small synthetic corpus, through files and pipes:
make-obs, featurize, train-spectral, train-em, train-unigram, decode, score, info."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from cli_helpers import fails, run
from synthetic import archive_arrays, corpus_dir, h5_attrs, h5_datasets, read_table
from rhmmtk.io.archive import Archive



@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    """Run the training chain once; tests inspect its files."""
    d, p = corpus_dir(tmp_path_factory, "cli")
    f = {k: d / k for k in ("obs.syms", "train.obs.h5", "dev.obs.h5", "test.obs.h5",
                            "train.feats.h5", "spectral.h5", "spectral2.h5", "em.h5", "hmm.h5",
                            "unigram.h5", "history.tsv")}
    f["d"], f["p"] = d, p
    run("make-obs", "--write-symbols", f["obs.syms"], p["train_txt"], f["train.obs.h5"])
    run("make-obs", "--symbols", f["obs.syms"], p["dev_txt"], f["dev.obs.h5"])
    # the test observations through a pipe
    run("make-obs", "--symbols", f["obs.syms"], "-", f["test.obs.h5"],
        input=p["test_txt"].read_text())
    run("featurize", "--templates", p["templates"], f["train.obs.h5"], p["train_ali"],
        f["train.feats.h5"])
    f["spectral_run"] = run("train-spectral", "-m", "2", f["train.feats.h5"], f["spectral.h5"])
    run("train-spectral", "-m", "2", f["train.feats.h5"], f["spectral2.h5"])
    f["em_run"] = run("train-em", "-m", "2", "--iters", "4", "--seed", "3",
                      "--dev-obs", f["dev.obs.h5"], "--dev-ali", p["dev_ali"],
                      "--history", f["history.tsv"], f["train.obs.h5"], p["train_ali"], f["em.h5"])
    # labels through a pipe
    run("train-em", "--states", "1", "--iters", "0", f["train.obs.h5"], "-", f["hmm.h5"],
        input=p["train_ali"].read_text())
    run("train-unigram", f["train.obs.h5"], p["train_ali"], f["unigram.h5"])
    return f


MODELS = ["spectral.h5", "em.h5", "hmm.h5", "unigram.h5"]


def test_make_obs_archive(chain):
    p = chain["p"]
    syms = [line.split() for line in chain["obs.syms"].read_text().splitlines()]
    assert [int(i) for _, i in syms] == list(range(len(syms)))
    table = [s for s, _ in syms]
    for part in ("train", "dev", "test"):
        text = read_table(p[f"{part}_txt"])
        with Archive(chain[f"{part}.obs.h5"]) as ar:
            assert ar.keys() == list(text)            # input order kept
            for k, toks in text.items():
                assert [table[i] for i in ar[k]] == toks
        attrs = h5_attrs(chain[f"{part}.obs.h5"])
        assert attrs["rhmmtk_format"] == "archive" and attrs["kind"] == "codes"
        assert attrs["created_by"].startswith("rhmmtk make-obs")
        assert "context" in json.loads(attrs["options"])


def test_featurized_archive(chain):
    attrs = h5_attrs(chain["train.feats.h5"])
    assert attrs["kind"] == "featurized"
    assert attrs["created_by"].startswith("rhmmtk featurize")
    assert json.loads(attrs["options"])["templates"] == str(chain["p"]["templates"])
    cols = json.loads(attrs["columns"])
    assert len(cols) == 9
    with Archive(chain["train.feats.h5"]) as ar:
        assert ar.keys() == chain["p"]["train_keys"]      # input order kept
        for k in ar.keys():
            assert ar.shape(k)[1] == 2 + len(cols)


@pytest.mark.parametrize("name, estimator, command", [
    ("spectral.h5", "spectral", "train-spectral"), ("em.h5", "em", "train-em"),
    ("hmm.h5", "hmm", "train-em"), ("unigram.h5", "unigram", "train-unigram")])
def test_models_record_provenance(chain, name, estimator, command):
    attrs = h5_attrs(chain[name])
    assert attrs["rhmmtk_format"] == "model"
    assert attrs["created_by"].startswith(f"rhmmtk {command}")
    opts = json.loads(attrs["options"])
    info = json.loads(attrs["info"])
    assert info["estimator"] == estimator
    assert json.loads(attrs["versions"])["rhmmtk"]
    if command == "train-spectral":
        assert opts["m"] == 2 and opts["smooth"] == 30.0
        assert info["template_fingerprint"] and "future" in info["templates"]
    if name == "em.h5":
        assert opts == {"m": 2, "iters": 4, "seed": 3, "floor": 1e-3, "noise": 0.5, "dev_every": 1,
                        "patience": 0, "emission_floor": 0.0}
    if name == "hmm.h5":
        assert opts["m"] == 1 and opts["iters"] == 0


def test_train_em_history_and_dev(chain):
    lines = chain["history.tsv"].read_text().splitlines()
    assert lines[0].split("\t") == ["iter", "loglik", "objective", "dev_acc"]
    rows = [line.split("\t") for line in lines[1:]]
    assert [int(r[0]) for r in rows] == list(range(5))
    obj = [float(r[2]) for r in rows if r[2]]
    assert len(obj) == 4
    assert all(b >= a - 1e-5 for a, b in zip(obj, obj[1:])), obj     # MAP objective (floor)
    acc = [float(r[3]) for r in rows]
    assert all(0 <= a <= 1 for a in acc)
    info = json.loads(h5_attrs(chain["em.h5"])["info"])
    assert acc[info["best_iteration"]] == pytest.approx(max(acc), abs=1e-6)
    assert "best dev accuracy" in chain["em_run"].stderr


def test_train_em_decodes_dev_with_the_decoder_options(chain, tmp_path):
    """train-em --beam: its dev accuracies are those of `decode --beam` with that beam (a
    beam of 1, greedy, decodes this dev set differently from the exact decoder)."""
    p, accs = chain["p"], {}
    for beam in ("1", "0"):
        model, hist = tmp_path / f"em{beam}.h5", tmp_path / f"h{beam}.tsv"
        run("train-em", "-q", "-m", "2", "--iters", "0", "--seed", "3", "--beam", beam,
            "--dev-obs", chain["dev.obs.h5"], "--dev-ali", p["dev_ali"], "--history", hist,
            chain["train.obs.h5"], p["train_ali"], model)
        dev_acc = float(hist.read_text().splitlines()[1].split("\t")[3])
        hyp = tmp_path / f"dev{beam}.hyp"
        run("decode", "-q", "--beam", beam, model, chain["dev.obs.h5"], hyp)
        scored = json.loads(run("score", "-q", "--json", p["dev_ali"], hyp).stdout)
        assert 100 * dev_acc == pytest.approx(scored["position_accuracy"], abs=1e-4), beam
        accs[beam] = dev_acc
    assert accs["1"] != accs["0"]


def test_spectral_rerun_is_identical(chain):
    a, b = h5_datasets(chain["spectral.h5"]), h5_datasets(chain["spectral2.h5"])
    assert sorted(a) == sorted(b)
    assert any(k.startswith("trans/") for k in a)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    ia, ib = h5_attrs(chain["spectral.h5"]), h5_attrs(chain["spectral2.h5"])
    for k in ("info", "options", "form", "rhmmtk_format"):
        assert ia[k] == ib[k], k


@pytest.mark.parametrize("model", MODELS)
def test_decode_to_file(chain, model, tmp_path):
    out = tmp_path / "hyp.ali"
    run("decode", chain[model], chain["test.obs.h5"], out)
    hyp = read_table(out)
    obs = read_table(chain["p"]["test_txt"])
    assert list(hyp) == list(obs)                                     # input order
    labels = set()
    for k in obs:
        assert len(hyp[k]) == len(obs[k]), k                          # one label per position
        labels |= set(hyp[k])
    assert labels <= {"sil", "ah", "k"}
    acc, acc_true, majority = accuracies(chain, hyp)
    print(f"{model}: test accuracy {100 * acc:.2f}% (true model {100 * acc_true:.2f}%, "
          f"majority label {100 * majority:.2f}%)")
    assert acc > 0.4                                  # 3 labels: better than chance (and:)
    if model == "unigram.h5":
        # exactly argmax_a p(a) p(x | a), recomputed from the training files
        assert_unigram_labels(chain, hyp)
    else:
        # the sequence models, trained with the CLI defaults on 200 sequences and scored on
        # ~300 positions: clearly above the majority label, not below the context-free
        # unigram, and near the true model (seeds 20131, 1, 2, 3: 8 to 22 points above the
        # majority, 0.4 to 4.5 above the unigram, 0.6 to 7.5 below the true model)
        uni = accuracies(chain, read_decode(chain, "unigram.h5"))[0]
        assert acc > majority + 0.06
        assert acc > uni - 0.02
        assert acc > acc_true - 0.10
    assert [p for p in os.listdir(tmp_path)] == ["hyp.ali"]          # no temp file left


def read_decode(chain, model):
    """{utt: labels} that `rhmmtk decode MODEL test` writes to stdout."""
    out = run("decode", chain[model], chain["test.obs.h5"], "-").stdout
    return {k: labs for k, *labs in (line.split() for line in out.splitlines())}


def test_train_spectral_defaults_are_the_library_defaults(chain):
    """`train-spectral -m 2` with no other option = spectral.estimate with the options the
    command declares as defaults (tests/test_spectral.cli_defaults, which the consistency
    tests use): the command passes every default through."""
    import json

    from rhmmtk.training_data import read_featurized
    from rhmmtk.models.rhmm.operators import Operators
    from rhmmtk.models.rhmm.spectral import estimate
    from test_spectral import cli_defaults

    corpus, F, attrs = read_featurized(chain["train.feats.h5"])
    slices = {k: tuple(v) for k, v in json.loads(attrs["view_slices"]).items()}
    opts = cli_defaults()
    assert opts["smooth"] > 0 and opts["emission_floor"] > 0 and opts["kappa"] is not None
    op = estimate(corpus, F, slices, m=2, **opts)
    ref = Operators.load(chain["spectral.h5"])
    assert op.m.tolist() == ref.m.tolist() and sorted(op.trans) == sorted(ref.trans)
    for x, y in zip(op.emit + op.init + op.stop + [op.trans[k] for k in sorted(op.trans)],
                    ref.emit + ref.init + ref.stop + [ref.trans[k] for k in sorted(ref.trans)]):
        np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12)
    # and the defaults matter here: without smoothing the operators differ
    raw = estimate(corpus, F, slices, m=2, **{**opts, "smooth": 0})
    assert not all(np.allclose(raw.trans[k], ref.trans[k]) for k in ref.trans)


def accuracies(chain, hyp):
    """(accuracy of hyp, of the true model's decode, of always the most frequent
    training label) on the test set."""
    from collections import Counter

    from synthetic import true_decode

    ref = read_table(chain["p"]["test_ali"])
    truth = true_decode(chain["p"])

    def acc(h):
        return float(np.mean(np.concatenate([np.array(h[k]) == np.array(ref[k]) for k in ref])))

    train = Counter(s for labs in read_table(chain["p"]["train_ali"]).values() for s in labs)
    top = train.most_common(1)[0][0]
    return acc(hyp), acc(truth), acc({k: [top] * len(v) for k, v in ref.items()})


def assert_unigram_labels(chain, hyp):
    """train-unigram decodes to argmax_a p(a) p(x | a) with p(x | a) = (count(a, x) + 1e-3)
    / (count(a) + n 1e-3) (its floor): recomputed from the training text files."""
    from collections import Counter

    ali, txt = read_table(chain["p"]["train_ali"]), read_table(chain["p"]["train_txt"])
    pairs = Counter((a, x) for k in ali for a, x in zip(ali[k], txt[k]))
    count = Counter(a for k in ali for a in ali[k])
    vocab = sorted({x for k in txt for x in txt[k]})
    labels = sorted(count)

    def score(a, x):
        return count[a] * (pairs[(a, x)] + 1e-3) / (count[a] + 1e-3 * len(vocab))

    test = read_table(chain["p"]["test_txt"])
    checked = 0
    for k, xs in test.items():
        for x, got in zip(xs, hyp[k]):
            best = max(score(a, x) for a in labels)
            assert score(got, x) == pytest.approx(best, rel=1e-12), (k, x, got)
            checked += 1
    assert checked == sum(len(v) for v in test.values()) > 0


def test_decode_featurized_equals_codes(chain, tmp_path):
    """A featurized archive (same templates) decodes like the codes it was made from."""
    run("decode", chain["spectral.h5"], chain["train.feats.h5"], tmp_path / "a.ali")
    run("decode", chain["spectral.h5"], chain["train.obs.h5"], tmp_path / "b.ali")
    assert (tmp_path / "a.ali").read_text() == (tmp_path / "b.ali").read_text()


def test_decode_posteriors(chain, tmp_path):
    run("decode", "--posteriors", tmp_path / "post.h5", chain["em.h5"], chain["test.obs.h5"],
        tmp_path / "hyp.ali")
    ds = h5_datasets(tmp_path / "post.h5")
    hyp = read_table(tmp_path / "hyp.ali")
    labels = [s.decode() if isinstance(s, bytes) else s for s in ds["symbols/labels"]]
    arrays = archive_arrays(tmp_path / "post.h5")
    for k, syms in hyp.items():
        post = arrays[k]
        np.testing.assert_allclose(post.sum(1), 1.0, rtol=1e-9)
        assert [labels[i] for i in post.argmax(1)] == syms


@pytest.mark.parametrize("model", ["em.h5", "hmm.h5"])
def test_decode_rhmm_viterbi(chain, model, tmp_path):
    """--rhmm-decode viterbi writes the labels of the library's best refined-state path."""
    from rhmmtk.models import load_model
    from rhmmtk.models.rhmm.viterbi import refined_viterbi

    out = tmp_path / "hyp.ali"
    run("decode", "--rhmm-decode", "viterbi", "--beam", "0", chain[model], chain["test.obs.h5"],
        out)
    hyp = read_table(out)
    arrays = archive_arrays(chain["test.obs.h5"])
    op = load_model(chain[model])
    labels, scores = refined_viterbi(op, [arrays[k] for k in hyp])
    assert np.isfinite(scores).all()
    for k, lab in zip(hyp, labels):
        assert hyp[k] == [op.labels.symbols[i] for i in lab], k


@pytest.mark.parametrize("model", ["em.h5", "spectral.h5"])
def test_decode_change_penalty(chain, model, tmp_path):
    """--change-penalty writes the penalised Viterbi labels of the posteriors it writes
    (tests/test_rhmm_viterbi.py checks that pass against enumeration)."""
    from test_rhmm_viterbi import plain_penalised

    run("decode", "--change-penalty", "0.4", "--posteriors", tmp_path / "post.h5",
        chain[model], chain["test.obs.h5"], tmp_path / "hyp.ali")
    hyp = read_table(tmp_path / "hyp.ali")
    labels = [s.decode() if isinstance(s, bytes) else s
              for s in h5_datasets(tmp_path / "post.h5")["symbols/labels"]]
    arrays = archive_arrays(tmp_path / "post.h5")
    for k, syms in hyp.items():
        assert [labels[i] for i in plain_penalised(arrays[k], 0.4)] == syms, k
    err = fails("decode", "--change-penalty", "0.4", "--rhmm-decode", "viterbi",
                chain["em.h5"], chain["test.obs.h5"], tmp_path / "v.ali")
    assert "change-penalty" in err and not (tmp_path / "v.ali").exists()


def test_decode_rhmm_viterbi_refuses_spectral(chain, tmp_path):
    err = fails("decode", "--rhmm-decode", "viterbi", chain["spectral.h5"],
                chain["test.obs.h5"], tmp_path / "hyp.ali")
    assert "spectral" in err and "spectral.h5" in err
    assert not (tmp_path / "hyp.ali").exists()


def _pipe(first, second):
    """`rhmmtk FIRST | rhmmtk SECOND`: both exit codes and the second's output."""
    cmd = [sys.executable, "-m", "rhmmtk"]
    p1 = subprocess.Popen(cmd + list(map(str, first)), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    p2 = subprocess.Popen(cmd + list(map(str, second)), stdin=p1.stdout, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    p1.stdout.close()
    out2, err2 = p2.communicate()
    _, err1 = p1.communicate()
    return p1.returncode, p2.returncode, out2, err1.decode(), err2


@pytest.mark.parametrize("model", ["spectral.h5", "hmm.h5"])
def test_decode_pipe_into_score(chain, model):
    rc1, rc2, out, err1, err2 = _pipe(["decode", chain[model], chain["test.obs.h5"], "-"],
                                      ["score", chain["p"]["test_ali"], "-"])
    assert rc1 == 0, err1
    assert rc2 == 0, err2
    # the report's numbers are those of the hypothesis decode writes, counted here by hand
    hyp = read_decode(chain, model)
    ref = read_table(chain["p"]["test_ali"])
    H = sum(int(np.sum(np.array(hyp[k]) == np.array(ref[k]))) for k in ref)
    N = sum(len(v) for v in ref.values())
    sent = sum(hyp[k] == ref[k] for k in ref)
    assert f"POS:  %Acc={100 * H / N:.2f} [H={H}, N={N}]" in out, out
    assert (f"SENT: %Correct={100 * sent / len(ref):.2f} [H={sent}, S={len(ref) - sent}, "
            f"N={len(ref)}]") in out, out
    assert 0 < H < N
    # the hypothesis went through stdout only: logs are on stderr
    assert "decode" in err1


def test_decode_to_stdout_matches_file(chain, tmp_path):
    out = run("decode", chain["em.h5"], chain["test.obs.h5"], "-").stdout
    run("decode", chain["em.h5"], chain["test.obs.h5"], tmp_path / "hyp.ali")
    assert out == (tmp_path / "hyp.ali").read_text()


@pytest.mark.parametrize("model", MODELS)
def test_info_model(chain, model):
    text = run("info", chain[model]).stdout
    assert "created_by" in text and "rhmmtk" in text
    js = json.loads(run("info", "--json", chain[model]).stdout)
    assert js["kind"] == "model"
    assert js["num_labels"] == 3 and sorted(js["labels"]) == ["ah", "k", "sil"]
    assert js["created_by"].startswith("rhmmtk train-")
    assert isinstance(js["options"], dict)
    if model == "spectral.h5":
        assert js["estimator"] == "spectral" and js["m_per_label"] == [2, 2, 2]
        assert len(js["singular_values"]["omega1"]) == 3
    if model == "em.h5":
        assert js["m_per_label"] == [2, 2, 2] and "history" in js
    if model in ("hmm.h5", "unigram.h5"):
        assert js["m_per_label"] == [1, 1, 1]


@pytest.mark.parametrize("archive, kind", [("train.obs.h5", "codes"),
                                           ("train.feats.h5", "featurized")])
def test_info_archive(chain, archive, kind):
    js = json.loads(run("info", "--json", chain[archive]).stdout)
    assert js["kind"] == "archive" and js["archive_kind"] == kind
    assert js["num_utts"] == len(chain["p"]["train_keys"])
    assert js["created_by"].startswith("rhmmtk ")
    assert isinstance(js["options"], dict)
    assert run("info", chain[archive]).stdout.strip()


def test_top_level_help():
    out = run("--help").stdout
    for name in ("make-obs", "featurize", "train-spectral", "train-em", "train-unigram",
                 "decode", "info"):
        assert name in out
    assert run("--version").stdout.strip()


@pytest.mark.parametrize("command", ["make-obs", "featurize", "train-spectral", "train-em",
                                     "train-unigram", "decode", "info", "score", "compare"])
def test_subcommand_help(command):
    from rhmmtk.cli import COMMANDS

    # a command removed from (or never added to) the registry fails here, it is not skipped
    assert command in COMMANDS, f"{command} is not registered in rhmmtk.cli.COMMANDS"
    out = run(command, "--help").stdout
    assert f"rhmmtk {command}" in out and "--help" in out
    assert run(command, "-h").stdout == out


def test_hmm_baseline_is_the_counting_estimate(chain, tmp_path):
    """`train-em --states 1 --iters 0 --floor 0` is the supervised HMM: relative frequencies."""
    from rhmmtk.models.rhmm.operators import Operators

    run("train-em", "--states", "1", "--iters", "0", "--floor", "0", chain["train.obs.h5"],
        chain["p"]["train_ali"], tmp_path / "hmm.h5")
    op = Operators.load(tmp_path / "hmm.h5")
    assert op.form == "diagonal" and op.m.tolist() == [1, 1, 1]
    lab, obs = op.labels.index, op.observations.index
    ali, txt = read_table(chain["p"]["train_ali"]), read_table(chain["p"]["train_txt"])
    l, n = len(lab), len(obs)
    first, last, occ = np.zeros(l), np.zeros(l), np.zeros(l)
    emit, big = np.zeros((l, n)), np.zeros((l, l))
    for k, labels in ali.items():
        a = [lab[s] for s in labels]
        x = [obs[s] for s in txt[k]]
        first[a[0]] += 1
        last[a[-1]] += 1
        np.add.at(occ, a, 1)
        np.add.at(emit, (a, x), 1)
        np.add.at(big, (a[:-1], a[1:]), 1)
    for a in range(l):
        np.testing.assert_allclose(op.init[a], [first[a] / len(ali)], rtol=1e-12)
        np.testing.assert_allclose(op.emit[a][:, 0], emit[a] / occ[a], rtol=1e-12)
        np.testing.assert_allclose(op.stop[a], [last[a] / occ[a]], rtol=1e-12)
        for b in range(l):
            want = big[a, b] / occ[a]
            got = op.trans[(a, b)][0, 0] if (a, b) in op.trans else 0.0
            assert got == pytest.approx(want, rel=1e-12, abs=0)


def test_decode_batch_size_does_not_matter(chain):
    """Tiny batches (one sequence each) decode like one big batch, in input order."""
    a = run("decode", "--batch-mb", "0.001", chain["spectral.h5"], chain["test.obs.h5"], "-")
    b = run("decode", chain["spectral.h5"], chain["test.obs.h5"], "-")
    assert a.stdout == b.stdout


def test_the_command_line_limits_blas_threads_even_when_numpy_came_first(monkeypatch):
    """Run in-process (numpy already loaded, so the environment variables come too late)
    a command still runs with RHMMTK_THREADS BLAS threads, as the Python API does: the
    thread count changes a product's last bits, and the CLI and API must agree on them
    (test_api's model comparisons once failed after other tests for this reason)."""
    from threadpoolctl import threadpool_info, threadpool_limits

    import rhmmtk.cli as cli_module

    seen = []

    def record(*args, **kwargs):
        seen.append({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})

    monkeypatch.setattr(cli_module.cli, "main", record)
    monkeypatch.delenv("RHMMTK_THREADS", raising=False)
    with threadpool_limits(2, user_api="blas"):
        assert {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"} == {2}
        cli_module.main(["info", "nothing.h5"])
        monkeypatch.setenv("RHMMTK_THREADS", "2")
        cli_module.main(["info", "nothing.h5"])
    assert seen == [{1}, {2}]
