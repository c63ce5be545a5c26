"""Bad input through the command line: one clear error line naming the file (and the
utterance), nonzero exit, no traceback, and no output file or temporary file left behind."""
import os

import numpy as np
import pytest

from cli_helpers import fails, run
from synthetic import corpus_dir, read_table, write_table



@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """Valid inputs made once: text, codes archives, features, models."""
    d, p = corpus_dir(tmp_path_factory, "inputs", sizes=(120, 20, 20))
    f = dict(p)
    f["d"] = d
    f["syms"], f["obs"], f["test_obs"] = d / "obs.syms", d / "train.obs.h5", d / "test.obs.h5"
    f["feats"], f["spectral"] = d / "train.feats.h5", d / "spectral.h5"
    run("make-obs", "--write-symbols", f["syms"], p["train_txt"], f["obs"])
    run("make-obs", "--symbols", f["syms"], p["test_txt"], f["test_obs"])
    run("featurize", "--templates", p["templates"], f["obs"], p["train_ali"], f["feats"])
    run("train-spectral", "-m", "2", f["feats"], f["spectral"])
    return f


def listing(directory):
    """Every file under `directory`, hidden ones included."""
    return sorted(os.path.relpath(os.path.join(r, n), directory)
                  for r, _, names in os.walk(directory) for n in names)


def refused(out_dir, *args, mention=(), input=None):
    """Run a command that must fail; check the error line and that `out_dir` is unchanged.
    Returns the error line."""
    before = listing(out_dir)
    stderr = fails(*args, input=input)
    errors = [line for line in stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1, stderr                       # one clear line ...
    line = errors[0]
    assert line.startswith("rhmmtk") and ": error: " in line, stderr
    for m in mention:                                     # ... naming file / utterance
        assert str(m) in line, f"{m!r} not in {line!r}"
    after = listing(out_dir)
    assert after == before, f"left behind: {sorted(set(after) - set(before))}"
    return line


def first_key(path):
    return next(iter(read_table(path)))


# --- make-obs ---------------------------------------------------------------------------

def test_unknown_observation_symbol(base, tmp_path):
    text = read_table(base["test_txt"])
    key = list(text)[1]
    text[key] = text[key][:2] + ["zz9"] + text[key][2:]
    src = write_table(tmp_path / "bad.txt", text)
    line = refused(tmp_path, "make-obs", "--symbols", base["syms"], src, tmp_path / "out.h5",
                   mention=("bad.txt", f"utterance {key}", "zz9"))
    assert "position 3" in line


def test_unknown_symbol_from_stdin(base, tmp_path):
    refused(tmp_path, "make-obs", "--symbols", base["syms"], "-", tmp_path / "out.h5",
            mention=("utterance u1", "zz9"), input="u1 zz9\n")


def test_empty_utterance_in_text(base, tmp_path):
    src = tmp_path / "obs.txt"
    src.write_text("u0 o1 o2\nutt1\nu2 o3\n")
    refused(tmp_path, "make-obs", "--write-symbols", tmp_path / "o.syms", src, tmp_path / "o.h5",
            mention=("obs.txt", "utterance utt1", "empty"))


def test_empty_utterance_in_alignment(base, tmp_path):
    ali = tmp_path / "a.ali"
    ali.write_text(base["train_ali"].read_text() + "utt1\n")
    refused(tmp_path, "featurize", "--templates", base["templates"], base["obs"], ali,
            tmp_path / "f.h5", mention=("a.ali", "utterance utt1"))


def test_duplicate_utterance(base, tmp_path):
    src = tmp_path / "obs.txt"
    src.write_text("u0 o1 o2\nu0 o3\n")
    refused(tmp_path, "make-obs", "--write-symbols", tmp_path / "o.syms", src, tmp_path / "o.h5",
            mention=("obs.txt", "utterance u0"))


# --- pairing observations with labels --------------------------------------------------

def _ali_with(base, tmp_path, edit):
    ali = read_table(base["train_ali"])
    key = list(ali)[3]
    edit(ali, key)
    return write_table(tmp_path / "edited.ali", ali), key


@pytest.mark.parametrize("command", ["featurize", "train-em", "train-unigram"])
def test_label_count_differs(base, tmp_path, command):
    ali, key = _ali_with(base, tmp_path, lambda a, k: a.__setitem__(k, a[k][:-1]))
    args = (["--templates", base["templates"]] if command == "featurize" else [])
    refused(tmp_path, command, *args, base["obs"], ali, tmp_path / "out.h5",
            mention=("edited.ali", f"utterance {key}", "labels"))


@pytest.mark.parametrize("command", ["featurize", "train-em"])
def test_utterance_missing_from_archive(base, tmp_path, command):
    ali, _ = _ali_with(base, tmp_path, lambda a, k: a.__setitem__("extra-utt", ["sil", "k"]))
    args = (["--templates", base["templates"]] if command == "featurize" else [])
    refused(tmp_path, command, *args, base["obs"], ali, tmp_path / "out.h5",
            mention=("edited.ali", "utterance extra-utt"))


@pytest.mark.parametrize("command", ["featurize", "train-em"])
def test_utterance_missing_from_alignment(base, tmp_path, command):
    ali, key = _ali_with(base, tmp_path, lambda a, k: a.pop(k))
    args = (["--templates", base["templates"]] if command == "featurize" else [])
    refused(tmp_path, command, *args, base["obs"], ali, tmp_path / "out.h5",
            mention=(base["obs"].name, f"utterance {key}"))


def test_unknown_label_with_label_table(base, tmp_path):
    labels = tmp_path / "labels.txt"
    labels.write_text("ah 0\nk 1\n")                       # no `sil`
    refused(tmp_path, "featurize", "--templates", base["templates"], "--labels", labels,
            base["obs"], base["train_ali"], tmp_path / "f.h5", mention=("sil",))


# --- missing and corrupt files ---------------------------------------------------------

@pytest.mark.parametrize("which", ["text", "obs", "ali", "model", "templates", "info",
                                   "symbols"])
def test_missing_file(base, tmp_path, which):
    gone = tmp_path / "does-not-exist.h5"
    out = tmp_path / "out.h5"
    args = {
        "text": ["make-obs", "--write-symbols", tmp_path / "o.syms", gone, out],
        "symbols": ["make-obs", "--symbols", gone, base["test_txt"], out],
        "obs": ["featurize", "--templates", base["templates"], gone, base["train_ali"], out],
        "ali": ["train-em", base["obs"], gone, out],
        "model": ["decode", gone, base["test_obs"], out],
        "templates": ["featurize", "--templates", gone, base["obs"], base["train_ali"], out],
        "info": ["info", gone],
    }[which]
    refused(tmp_path, *args, mention=(gone.name,))


def _garbage(path, rng):
    path.write_bytes(rng.integers(0, 256, size=4096, dtype=np.uint8).tobytes())
    return path


def _truncated(src, path, fraction=0.6):
    data = src.read_bytes()
    path.write_bytes(data[: int(len(data) * fraction)])
    return path


@pytest.fixture(params=["garbage", "truncated"])
def corrupt(request, base, tmp_path, rng):
    """(corrupt codes archive, corrupt model), in a directory of their own."""
    d = tmp_path / "corrupt"
    d.mkdir()
    if request.param == "garbage":
        return _garbage(d / "obs.h5", rng), _garbage(d / "model.h5", rng)
    return _truncated(base["obs"], d / "obs.h5"), _truncated(base["spectral"], d / "model.h5")


def test_corrupt_archive(base, tmp_path, corrupt):
    obs, _ = corrupt
    out = tmp_path / "out"
    out.mkdir()
    refused(out, "featurize", "--templates", base["templates"], obs, base["train_ali"],
            out / "f.h5", mention=(obs.name,))
    refused(out, "train-em", obs, base["train_ali"], out / "m.h5", mention=(obs.name,))
    refused(out, "decode", base["spectral"], obs, out / "hyp.ali", mention=(obs.name,))
    refused(out, "info", obs, mention=(obs.name,))


def test_corrupt_model(base, tmp_path, corrupt):
    _, model = corrupt
    out = tmp_path / "out"
    out.mkdir()
    refused(out, "decode", model, base["test_obs"], out / "hyp.ali", mention=(model.name,))
    refused(out, "info", model, mention=(model.name,))


def test_truncated_archive_at_several_lengths(base, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    for fraction in (0.05, 0.3, 0.9, 0.99):
        bad = _truncated(base["test_obs"], tmp_path / f"cut{int(fraction * 100)}.h5", fraction)
        refused(out, "decode", base["spectral"], bad, out / "hyp.ali", mention=(bad.name,))
        bad = _truncated(base["spectral"], tmp_path / f"mcut{int(fraction * 100)}.h5", fraction)
        refused(out, "decode", bad, base["test_obs"], out / "hyp.ali", mention=(bad.name,))


def test_foreign_hdf5(base, tmp_path):
    import h5py

    foreign = tmp_path / "foreign.h5"
    with h5py.File(foreign, "w") as f:
        f.create_dataset("data", data=np.arange(10))
        f.attrs["something"] = "else"
    out = tmp_path / "out"
    out.mkdir()
    refused(out, "decode", foreign, base["test_obs"], out / "hyp.ali",
            mention=("foreign.h5", "not written by rhmmtk"))
    refused(out, "decode", base["spectral"], foreign, out / "hyp.ali",
            mention=("foreign.h5", "not written by rhmmtk"))
    refused(out, "train-em", foreign, base["train_ali"], out / "m.h5", mention=("foreign.h5",))
    refused(out, "info", foreign, mention=("foreign.h5",))


def test_wrong_kind_of_rhmmtk_file(base, tmp_path):
    """A model where an archive is expected and vice versa."""
    refused(tmp_path, "decode", base["obs"], base["test_obs"], tmp_path / "hyp.ali",
            mention=(base["obs"].name,))
    refused(tmp_path, "decode", base["spectral"], base["spectral"], tmp_path / "hyp.ali",
            mention=(base["spectral"].name,))
    refused(tmp_path, "train-spectral", base["obs"], tmp_path / "m.h5", mention=(base["obs"].name,))


# --- mismatched inputs -----------------------------------------------------------------

@pytest.fixture(scope="module")
def context1(base):
    """A model and codes made with --context 1 (another observation table)."""
    d = base["d"]
    f = {"syms": d / "ctx1.syms", "obs": d / "train.ctx1.h5", "test_obs": d / "test.ctx1.h5",
         "model": d / "unigram.ctx1.h5"}
    run("make-obs", "--context", "1", "--write-symbols", f["syms"], base["train_txt"], f["obs"])
    run("make-obs", "--symbols", f["syms"], base["test_txt"], f["test_obs"])
    run("train-unigram", f["obs"], base["train_ali"], f["model"])
    return f


def test_decode_with_model_of_another_observation_table(base, context1, tmp_path):
    line = refused(tmp_path, "decode", context1["model"], base["test_obs"], tmp_path / "hyp.ali",
                   mention=(base["test_obs"].name, "observation symbol table"))
    assert "model" in line
    refused(tmp_path, "decode", base["spectral"], context1["test_obs"], tmp_path / "hyp.ali",
            mention=(context1["test_obs"].name, "observation symbol table"))
    # the same model decodes its own kind of observations
    run("decode", context1["model"], context1["test_obs"], tmp_path / "ok.ali")
    assert len(read_table(tmp_path / "ok.ali")) == len(read_table(base["test_txt"]))


def test_train_em_dev_with_another_observation_table(base, context1, tmp_path):
    refused(tmp_path, "train-em", "--iters", "1", "--dev-obs", context1["test_obs"],
            "--dev-ali", base["test_ali"], base["obs"], base["train_ali"], tmp_path / "m.h5",
            mention=(context1["test_obs"].name, "observation symbol table"))


def test_decode_featurized_with_other_templates(base, tmp_path):
    other = tmp_path / "other" / "feats.h5"
    other.parent.mkdir()
    run("featurize", "--templates", base["other_templates"], base["obs"], base["train_ali"], other)
    refused(tmp_path, "decode", base["spectral"], other, tmp_path / "hyp.ali",
            mention=("feats.h5", "template"))


def test_invalid_templates(base, tmp_path):
    conf = tmp_path / "bad.conf"
    conf.write_text(base["templates"].read_text() + "past     x[0]\n")
    out = tmp_path / "out"
    out.mkdir()
    line = refused(out, "featurize", "--templates", conf, base["obs"], base["train_ali"],
                   out / "f.h5", mention=("bad.conf", "x[0]", "past"))
    assert f"line {len(base['templates'].read_text().splitlines()) + 1}:" in line
    conf.write_text("future x[0]\npast a[-1]\npresent x[0]\nfuture bogus\n")
    refused(out, "featurize", "--templates", conf, base["obs"], base["train_ali"], out / "f.h5",
            mention=("bad.conf", "bogus"))
    conf.write_text("future x[0]\npast a[-1]\npresent x[0]\n")           # no destiny template
    refused(out, "featurize", "--templates", conf, base["obs"], base["train_ali"], out / "f.h5",
            mention=("bad.conf", "destiny"))


def test_invalid_symbol_table(base, tmp_path):
    syms = tmp_path / "bad.syms"
    syms.write_text("o0 0\no1 2\n")
    refused(tmp_path, "make-obs", "--symbols", syms, base["test_txt"], tmp_path / "o.h5",
            mention=("bad.syms", "line 2"))


# --- m beyond what the data supports -----------------------------------------------------

def test_train_spectral_caps_m(base, tmp_path):
    import json

    import h5py

    model = tmp_path / "big.h5"
    p = run("train-spectral", "-m", "20", base["feats"], model)
    assert "capped" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr
    with h5py.File(model, "r") as f:
        m = f["m"][()]
        info = json.loads(f.attrs["info"])
    assert (m < 20).all() and info["m_requested"] == 20
    # present = x[0] with 6 observation symbols: Omega2^a has at most 6 rows
    assert (m <= 6).all()
    run("decode", model, base["test_obs"], tmp_path / "hyp.ali")


# --- commands with several outputs, and other fixed bugs ----------------------------------------

def test_make_obs_symbols_in_missing_directory(base, tmp_path):
    refused(tmp_path, "make-obs", "--write-symbols", tmp_path / "nodir" / "o.syms",
            base["train_txt"], tmp_path / "o.h5", mention=("o.syms",))


def test_decode_posteriors_in_missing_directory(base, tmp_path):
    refused(tmp_path, "decode", "--posteriors", tmp_path / "nodir" / "p.h5", base["spectral"],
            base["test_obs"], tmp_path / "hyp.ali", mention=("p.h5",))


def test_train_em_model_in_missing_directory(base, tmp_path):
    refused(tmp_path, "train-em", "--iters", "1", "--history", tmp_path / "h.tsv", base["obs"],
            base["train_ali"], tmp_path / "nodir" / "m.h5", mention=("m.h5",))


def test_make_obs_empty_text(tmp_path):
    src = tmp_path / "empty.txt"
    src.write_text("\n")
    refused(tmp_path, "make-obs", "--write-symbols", tmp_path / "o.syms", src, tmp_path / "o.h5",
            mention=("empty.txt",))


def test_train_spectral_label_without_positions(base, tmp_path):
    labels = tmp_path / "labels.txt"
    labels.write_text("ah 0\nk 1\nsil 2\nzz 3\n")
    feats = tmp_path / "in" / "f.h5"
    feats.parent.mkdir()
    run("featurize", "--templates", base["templates"], "--labels", labels, base["obs"],
        base["train_ali"], feats)
    out = tmp_path / "out"
    out.mkdir()
    refused(out, "train-spectral", "-m", "2", feats, out / "m.h5", mention=("zz",))


def test_make_obs_refuses_tokens_with_the_window_separator(tmp_path):
    """Tokens containing '|' would collide with window symbols (the context of a table
    is read back from its symbols), so they are refused with a clear error."""
    src = tmp_path / "t.txt"
    src.write_text("u1 x|y|z q\nu2 x y z\n")
    refused(tmp_path, "make-obs", "--write-symbols", tmp_path / "o.syms", src, tmp_path / "a.h5",
            mention=("u1",))
