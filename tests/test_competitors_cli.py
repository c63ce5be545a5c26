"""train-hkz, train-maxmargin, train-crf through the command line: trained, decoded by the
one `rhmmtk decode`, scored and compared like every model; and their bad input."""
import json
import os

import pytest

from cli_helpers import run
from synthetic import corpus_dir, h5_attrs, read_table, write_table
from test_bad_input import refused



@pytest.fixture(scope="module")
def comp(tmp_path_factory):
    d, p = corpus_dir(tmp_path_factory, "comp", sizes=(150, 30, 30))
    f = {"d": d, "p": p}
    for k in ("syms", "train", "dev", "test"):
        f[k] = d / f"{k}.h5"
    run("make-obs", "--write-symbols", d / "obs.syms", p["train_txt"], f["train"])
    run("make-obs", "--symbols", d / "obs.syms", p["dev_txt"], f["dev"])
    run("make-obs", "--symbols", d / "obs.syms", p["test_txt"], f["test"])
    f["syms"] = d / "obs.syms"
    f["hkz"], f["mm"], f["pc"], f["crf"] = (d / n for n in ("hkz.h5", "mm.h5", "pc.h5", "crf.h5"))
    run("train-hkz", "-m", "3", f["train"], p["train_ali"], f["hkz"])
    run("train-maxmargin", "--reg", "nuclear", "--tau", "0.01", "--rate", "5", "--iters", "5",
        "--dev-obs", f["dev"], "--dev-ali", p["dev_ali"], "--history", d / "mm.hist",
        f["train"], p["train_ali"], f["mm"])
    run("train-maxmargin", "--update", "perceptron", "--iters", "3", f["train"],
        p["train_ali"], f["pc"])
    run("train-crf", "--iters", "20", f["train"], p["train_ali"], f["crf"])
    return f


MODELS = {"hkz": "hkz", "mm": "maxmargin", "pc": "maxmargin", "crf": "crf"}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_decode_score_info(comp, name, tmp_path):
    hyp = tmp_path / "test.hyp"
    run("decode", comp[name], comp["test"], hyp)
    got, ref = read_table(hyp), read_table(comp["p"]["test_ali"])
    assert list(got) == list(ref)                           # every utterance, input order
    assert all(len(got[k]) == len(ref[k]) for k in ref)
    acc = json.loads(run("score", "--json", comp["p"]["test_ali"], hyp).stdout)
    assert acc["position_accuracy"] > 40                    # far above chance on 3 labels
    info = json.loads(run("info", "--json", comp[name]).stdout)
    assert info["model_type"] == MODELS[name]
    attrs = h5_attrs(comp[name])
    assert attrs["model_type"] == MODELS[name] and "created_by" in attrs
    assert "label_fingerprint" in attrs and "observation_fingerprint" in attrs


def test_compare_two_competitors(comp, tmp_path):
    a, b = tmp_path / "a.hyp", tmp_path / "b.hyp"
    run("decode", comp["mm"], comp["test"], a)
    run("decode", comp["crf"], comp["test"], b)
    out = run("compare", comp["p"]["test_ali"], a, b).stdout
    assert "a.hyp" in out or "b.hyp" in out or out.strip()


def test_hkz_decoders_and_history(comp, tmp_path):
    for how in ("maxmarginal", "viterbi"):
        run("decode", "--hkz-decode", how, comp["hkz"], comp["test"], tmp_path / f"{how}.hyp")
    rows = (comp["d"] / "mm.hist").read_text().splitlines()
    assert rows[0].split("\t")[0] == "iter" and len(rows) == 6
    info = json.loads(run("info", "--json", comp["mm"]).stdout)
    assert 1 <= info["best_iteration"] <= 5 and "dev_accuracy" in info


def test_states_compression(comp, tmp_path):
    out = tmp_path / "c.h5"
    r = run("train-maxmargin", "--reg", "nuclear", "--tau", "0.01", "--rate", "5", "--iters",
            "3", "--states", "200", comp["train"], comp["p"]["train_ali"], out)
    info = json.loads(run("info", "--json", out).stdout)
    assert info["states"] == 200 and "IO-OOM with 200 states" in r.stderr
    run("decode", out, comp["test"], tmp_path / "c.hyp")


def test_boundary_and_budget_kept_for_decoding(comp, tmp_path):
    """A model trained under --boundary paper-all with a --steps budget decodes its dev set
    to the dev accuracy it was selected by (decode reads the convention from the model)."""
    out, hyp = tmp_path / "b.h5", tmp_path / "dev.hyp"
    run("train-maxmargin", "--boundary", "paper-all", "--steps", "6", "--batch-words", "40",
        "--iters", "3", "--reg", "none", "--rate", "5", "--dev-obs", comp["dev"], "--dev-ali",
        comp["p"]["dev_ali"], comp["train"], comp["p"]["train_ali"], out)
    info = json.loads(run("info", "--json", out).stdout)
    assert info["boundary"] == "paper-all" and info["steps"] == 6
    run("decode", out, comp["dev"], hyp)
    acc = json.loads(run("score", "--json", comp["p"]["dev_ali"], hyp).stdout)
    assert acc["position_accuracy"] == pytest.approx(info["dev_accuracy"], abs=1e-6)


# --- bad input ---------------------------------------------------------------------------

def test_unseen_symbol_at_decode(comp, tmp_path):
    """A letter the training words never had: no (letter, label) pair to choose from."""
    p, d = comp["p"], tmp_path
    ali, txt = read_table(p["train_ali"]), read_table(p["train_txt"])
    sym = txt[next(iter(txt))][0]
    keep = [k for k in txt if sym not in txt[k]]
    write_table(d / "sub.txt", {k: txt[k] for k in keep})
    write_table(d / "sub.ali", {k: ali[k] for k in keep})
    run("make-obs", "--symbols", comp["syms"], d / "sub.txt", d / "sub.h5")
    for cmd in (["train-hkz", "-m", "2"], ["train-maxmargin", "--iters", "1"]):
        run(*cmd, d / "sub.h5", d / "sub.ali", d / "model.h5")
        line = refused(d, "decode", d / "model.h5", comp["test"], d / "hyp.ali",
                       mention=("test.h5",))
        assert "never seen in training" in line and sym in line
        os.unlink(d / "model.h5")


def test_empty_training_set(comp, tmp_path):
    from rhmmtk.io.archive import ArchiveWriter
    from rhmmtk.provenance import record
    from rhmmtk.symbols import SymbolTable

    table = SymbolTable.read(comp["syms"])
    with ArchiveWriter(tmp_path / "empty.h5", "codes", record(), {"observations": table},
                       {"observation_fingerprint": table.fingerprint()}):
        pass
    (tmp_path / "empty.ali").write_text("")
    for cmd in ("train-hkz", "train-maxmargin", "train-crf"):
        line = refused(tmp_path, cmd, tmp_path / "empty.h5", tmp_path / "empty.ali",
                       tmp_path / "model.h5", mention=("empty.ali",))
        assert "no utterances" in line or "empty training set" in line


@pytest.mark.parametrize("args,what", [
    (["--reg", "nuclear", "--tau", "0"], "--tau"),
    (["--reg", "l2", "--tau", "-1"], "--tau"),
    (["--rate", "0"], "--rate"),
    (["--rate", "-2"], "--rate"),
])
def test_tau_and_rate_must_be_positive(comp, tmp_path, args, what):
    line = refused(tmp_path, "train-maxmargin", *args, comp["train"], comp["p"]["train_ali"],
                   tmp_path / "model.h5")
    assert what in line and "positive" in line


def test_patience_needs_a_dev_set(comp, tmp_path):
    line = refused(tmp_path, "train-maxmargin", "--patience", "2", comp["train"],
                   comp["p"]["train_ali"], tmp_path / "model.h5")
    assert "--patience needs a dev set" in line


def test_average_decay_needs_average(comp, tmp_path):
    line = refused(tmp_path, "train-maxmargin", "--average-decay", "3", comp["train"],
                   comp["p"]["train_ali"], tmp_path / "model.h5")
    assert "--average-decay" in line and "--average" in line


def test_model_of_another_kind(comp, tmp_path):
    """An HKZ / max-margin / CRF model where an R-HMM (EM) model is needed."""
    for name in ("hkz", "mm", "crf"):
        line = refused(tmp_path, "acc-em", "--model", comp[name], comp["train"],
                       comp["p"]["train_ali"], tmp_path / "stats.acc", mention=(comp[name].name,))
        assert MODELS[name] in line


def test_decode_archive_of_another_table(comp, tmp_path):
    p = comp["p"]
    run("make-obs", "--context", "1", "--write-symbols", tmp_path / "c1.syms", p["test_txt"],
        tmp_path / "c1.h5")
    for name in ("hkz", "mm", "crf"):
        refused(tmp_path, "decode", comp[name], tmp_path / "c1.h5", tmp_path / "hyp.ali",
                mention=("c1.h5",))
