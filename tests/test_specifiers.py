"""Every command that writes features, codes or alignments, with every output form: the
output is correct (read back by kaldiio, by hand from Kaldi's format, or by rhmmtk's HTK
and MLF readers and compared with the plain-path output) or refused before any work; no
file named after a specifier is ever created."""
import gzip
import os
import subprocess
import sys

import kaldiio
import numpy as np
import pytest
import soundfile as sf

from cli_helpers import fails, run
from synthetic import corpus_dir
from rhmmtk.io.archive import Archive
from rhmmtk.io.features import open_features
from rhmmtk.io.labels import read_mlf

SR = 16000

# (name, form) -- {d} is the test's directory; each form's meaning per kind below
FORMS = {
    "ark": "ark:{d}/o.ark",
    "ark,t": "ark,t:{d}/o.txt",
    "ark,scp": "ark,scp:{d}/o.ark,{d}/o.scp",
    "scp,ark": "scp,ark:{d}/o.scp,{d}/o.ark",
    "ark:-": "ark:-",
    "ark,t:-": "ark,t:-",
    "ark:|": "ark:| gzip -c > {d}/o.gz",
    "ark,t:|": "ark,t:| gzip -c > {d}/o.gz",
    "htk": "htk:{d}/htkdir",
    "mlf": "mlf:{d}/o.mlf",
    "scp": "scp:{d}/o.scp",
    "ark:cmd|": "ark:cat |",
    "empty": "ark:",
    "ark,cs": "ark,cs:{d}/o.ark",
}
OK = {
    "features": {"ark", "ark,t", "ark,scp", "scp,ark", "ark:-", "ark,t:-", "ark:|", "ark,t:|",
                 "htk"},
    "codes": {"ark", "ark,t", "ark,scp", "scp,ark", "ark:-", "ark,t:-", "ark:|", "ark,t:|"},
    "alignment": {"ark,t", "ark,t:-", "ark,t:|", "mlf"},
}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d, p = corpus_dir(tmp_path_factory, "specifiers", sizes=(60, 10, 10))
    rng = np.random.default_rng(5)
    lines = []
    for i, secs in enumerate((0.31, 0.52)):
        wav = d / f"u{i}.wav"
        sf.write(str(wav), (rng.standard_normal(int(secs * SR)) * 3000).astype(np.int16), SR)
        lines.append(f"u{i} {wav}\n")
    (d / "wav.scp").write_text("".join(lines))
    f = {"d": d, "wav.scp": d / "wav.scp", "feats": d / "feats.h5", "book": d / "book.h5",
         "codes": d / "codes.h5", "obs": d / "test.obs.h5", "model": d / "uni.h5",
         "hyp": d / "test.hyp"}
    run("feats", f["wav.scp"], f["feats"])
    run("quantize", "learn", "--codes", "3", f["feats"], f["book"])
    run("quantize", "apply", f["book"], f["feats"], f["codes"])
    run("make-obs", "--write-symbols", d / "obs.syms", p["train_txt"], d / "train.obs.h5")
    run("make-obs", "--symbols", d / "obs.syms", p["test_txt"], f["obs"])
    run("train-unigram", d / "train.obs.h5", p["train_ali"], f["model"])
    run("decode", f["model"], f["obs"], f["hyp"])
    return f


def commands(f, kind, out):
    if kind == "features":
        return [["feats", f["wav.scp"], out], ["copy-feats", f["feats"], out],
                ["decode", "--posteriors", out, f["model"], f["obs"], os.devnull]]
    if kind == "codes":
        return [["quantize", "apply", f["book"], f["feats"], out]]
    return [["decode", f["model"], f["obs"], out]]


def expected(f, kind, argv):
    """What the plain-path output holds: {utt: array or list of symbols}."""
    if kind == "alignment":
        return {k: v.split() for k, _, v in
                (line.partition(" ") for line in f["hyp"].read_text().splitlines())}
    if argv[0] == "decode":
        path = f["d"] / "post.h5"
        if not path.exists():
            run("decode", "--posteriors", path, f["model"], f["obs"], os.devnull)
        with Archive(path) as ar:
            return {k: np.asarray(x, np.float32) for k, x in ar.items()}
    src = f["codes"] if kind == "codes" else f["feats"]
    with Archive(src) as ar:
        return dict(ar.items())


def read_kaldi(kind, form, d, stdout):
    """The Kaldi output read back: kaldiio for matrices and binary integer vectors; by
    hand for text integer vectors and text alignments (`utt v v ...` lines)."""
    if form in ("ark:|", "ark,t:|"):
        data = gzip.decompress((d / "o.gz").read_bytes())
    elif form in ("ark:-", "ark,t:-"):
        data = stdout
    elif form == "ark,t":
        data = (d / "o.txt").read_bytes()
    else:
        data = (d / "o.ark").read_bytes()
    text = form in ("ark,t", "ark,t:-", "ark,t:|")
    if text and kind != "features":
        rows = [line.split() for line in data.decode().splitlines()]
        return {r[0]: (r[1:] if kind == "alignment" else np.array(r[1:], int)) for r in rows}
    import io

    out = dict(kaldiio.load_ark(io.BytesIO(data)))
    if form in ("ark,scp", "scp,ark"):         # the script file's offsets, read by kaldiio
        scp = kaldiio.load_scp(str(d / "o.scp"))
        assert list(scp) == list(out)
        for k in out:
            assert np.array_equal(scp[k], out[k])
    return out


def same(kind, got, want):
    assert list(got) == list(want)
    for k in want:
        if kind == "alignment":
            assert got[k] == want[k], k
        elif kind == "codes":
            assert np.array_equal(np.asarray(got[k]), want[k]), k
        else:
            g, w = np.asarray(got[k]), np.asarray(want[k], np.float32)
            assert g.dtype == np.float32 and g.shape == w.shape, (k, g.shape, w.shape)
            assert g.tobytes() == w.tobytes(), k


def invoke_bytes(argv, cwd):
    """A real process, for binary standard output."""
    return subprocess.run([sys.executable, "-m", "rhmmtk", *map(str, argv)], cwd=cwd,
                          capture_output=True)


@pytest.mark.parametrize("kind", ["features", "codes", "alignment"])
@pytest.mark.parametrize("form", list(FORMS))
def test_every_output_form_is_right_or_refused(data, tmp_path, monkeypatch, kind, form):
    monkeypatch.chdir(tmp_path)
    for argv in commands(data, kind, FORMS[form].format(d=tmp_path)):
        for p in tmp_path.iterdir():
            p.unlink() if p.is_file() else __import__("shutil").rmtree(p)
        if form not in OK[kind]:
            err = fails(*argv)
            # one error line naming the specifier and the forms the command accepts
            line, = [l for l in err.splitlines() if "rror" in l]
            assert FORMS[form].format(d=tmp_path).strip() in line, line
            assert f"{kind} outputs are" in line, line
            assert not list(tmp_path.iterdir()), "a refused output wrote something"
            continue
        if form.endswith(":-"):
            p = invoke_bytes(argv, tmp_path)
            assert p.returncode == 0, p.stderr
            stdout = p.stdout
        else:
            run(*argv)
            stdout = None
        want = expected(data, kind, argv)
        if form == "htk":
            with open_features(f"htk:{tmp_path}/htkdir") as r:
                got = dict(r.items())
        elif form == "mlf":
            got = read_mlf(tmp_path / "o.mlf")
        else:
            got = read_kaldi(kind, form, tmp_path, stdout)
        same(kind, got, want)
        names = [p.name for p in tmp_path.rglob("*")]
        assert not [n for n in names if ":" in n or n.startswith(".")], names


@pytest.mark.parametrize("argv", [
    ["make-obs", "{train}", "ark:-"], ["train-unigram", "{obs}", "{ali}", "ark:m.ark"],
    ["quantize", "learn", "{feats}", "ark:book.ark"], ["featurize", "--templates", "{t}",
                                                       "{obs}", "{ali}", "ark,t:-"]])
def test_hdf5_only_outputs_refuse_specifiers(data, tmp_path, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    d = data["d"]
    argv = [a.format(train=d / "train.txt", obs=d / "train.obs.h5", ali=d / "train.ali",
                     feats=data["feats"], t=d / "templates.conf") for a in argv]
    err = fails(*argv)
    assert "specifier" in err, err
    assert not list(tmp_path.iterdir())


# --- inputs: wave archives, integer alignments; bad input ---------------------------------

def test_wav_scp_entries_into_a_wave_archive(data, tmp_path):
    """`utt wav.ark:OFFSET` (kaldiio writes the archive and its scp, as Kaldi's wav-copy
    does): the same features as the wave files themselves."""
    import soundfile

    rates = {}
    for line in data["wav.scp"].read_text().splitlines():
        utt, path = line.split()
        x, sr = soundfile.read(path, dtype="int16")
        rates[utt] = (sr, x)
    kaldiio.save_ark(str(tmp_path / "wav.ark"), rates, scp=str(tmp_path / "wav.scp"))
    assert ":" in (tmp_path / "wav.scp").read_text().split()[1]
    run("feats", tmp_path / "wav.scp", tmp_path / "f.h5")
    with Archive(tmp_path / "f.h5") as a, Archive(data["feats"]) as b:
        same("features", dict(a.items()), dict(b.items()))
    # an offset past the archive's end: one line naming the entry and the utterance
    size = (tmp_path / "wav.ark").stat().st_size
    (tmp_path / "bad.scp").write_text(f"u0 {tmp_path}/wav.ark:{size + 10}\n")
    err = fails("feats", tmp_path / "bad.scp", tmp_path / "g.h5")
    assert f"wav.ark:{size + 10}: utterance u0" in err and "past the end" in err, err
    assert not (tmp_path / "g.h5").exists()


PHONES = "<eps> 0\nsil 1\naa_B 2\naa_E 3\nb_S 4\n"
ALI = {"u1": [1, 1, 2, 3, 1], "u2": [4, 4, 1]}
TEXT = "u1 sil sil aa aa sil\nu2 b b sil\n"


@pytest.mark.parametrize("form", ["binary", "text", "gzip-command", "scp", "stdin"])
def test_integer_alignment_archives(tmp_path, form):
    """ali-to-phones' output, binary (its default) or text, from a file, a command, a
    script file or standard input, with phones.txt."""
    from rhmmtk.io.specifiers import int_vector_bytes

    (tmp_path / "phones.txt").write_text(PHONES)
    binary = b"".join(k.encode() + b" " + int_vector_bytes(v) for k, v in ALI.items())
    text = "".join(f"{k} {' '.join(map(str, v))}\n" for k, v in ALI.items())
    ark = tmp_path / "ali.ark"
    ark.write_bytes(binary if form != "text" else text.encode())
    spec, stdin = f"ark:{ark}", None
    if form == "gzip-command":
        (tmp_path / "ali.gz").write_bytes(gzip.compress(binary))
        spec = f"ark:gunzip -c {tmp_path}/ali.gz |"
    elif form == "scp":
        kaldiio.save_ark(str(ark), {k: np.array(v, np.int32) for k, v in ALI.items()},
                         scp=str(tmp_path / "ali.scp"))
        spec = f"scp:{tmp_path}/ali.scp"
    elif form == "stdin":
        spec = "ark,t:-"
        stdin = text
    run("convert-ali", "--from", "int", "--symbols", tmp_path / "phones.txt",
        "--strip-word-position", spec, tmp_path / "out.ali", input=stdin)
    assert (tmp_path / "out.ali").read_text() == TEXT


def test_bad_kaldi_input_is_one_line(data, tmp_path):
    from rhmmtk.io.specifiers import int_vector_bytes

    (tmp_path / "phones.txt").write_text(PHONES)
    conv = ["convert-ali", "--from", "int", "--symbols", tmp_path / "phones.txt"]
    out = tmp_path / "out.ali"
    # an id outside phones.txt: the specifier and the utterance
    (tmp_path / "a.ark").write_bytes(b"u1 " + int_vector_bytes([1, 9]))
    err = fails(*conv, f"ark:{tmp_path}/a.ark", out)
    assert f"ark:{tmp_path}/a.ark: utterance u1" in err and "'9' is not an id" in err, err
    # a truncated binary archive
    good = b"u1 " + int_vector_bytes([1, 2]) + b"u2 " + int_vector_bytes([4, 4, 1])
    (tmp_path / "t.ark").write_bytes(good[:-3])
    err = fails(*conv, f"ark:{tmp_path}/t.ark", out)
    assert "truncated" in err and "after utterance u1" in err and "t.ark" in err, err
    # a command that fails
    err = fails(*conv, "ark:gunzip -c /nonexistent.gz |", out)
    assert "command failed" in err and "ark:gunzip -c /nonexistent.gz |" in err, err
    # an unknown option word, on input and on output
    err = fails("quantize", "apply", data["book"], f"ark,x:{tmp_path}/a.ark", out)
    assert "x is not a Kaldi read option" in err, err
    err = fails("copy-feats", data["feats"], f"ark,x:{tmp_path}/o.ark")
    assert "ark,x:" in err and "features outputs are" in err, err
    # a truncated feature archive: the utterance after which it breaks
    kaldiio.save_ark(str(tmp_path / "f.ark"), {"a": np.ones((3, 2), np.float32),
                                               "b": np.ones((4, 2), np.float32)})
    raw = (tmp_path / "f.ark").read_bytes()
    (tmp_path / "f.ark").write_bytes(raw[:-5])
    err = fails("copy-feats", f"ark:{tmp_path}/f.ark", tmp_path / "f.h5")
    assert "after utterance a" in err, err
    # a failing output command: one line, named
    err = fails("copy-feats", data["feats"], "ark:| exit 3")
    assert "ark:| exit 3" in err and "exit status 3" in err, err
    assert not out.exists() and not (tmp_path / "f.h5").exists()


# --- a closed standard output -------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["decode", "{model}", "{obs}", "-"], ["decode", "{model}", "{obs}", "ark,t:-"],
    ["copy-feats", "{feats}", "ark:-"], ["copy-feats", "{feats}", "ark,t:-"],
    ["quantize", "apply", "{book}", "{feats}", "ark,t:-"], ["feats", "{wav}", "ark:-"],
    ["convert-ali", "{hyp}", "-"], ["info", "{model}"], ["score", "{hyp}", "{hyp}"]])
def test_closed_stdout_exits_141_quietly(data, tmp_path, argv):
    """`rhmmtk ... | head`: the reader has gone; exit 128 + SIGPIPE, nothing on stderr but
    the log, no other output written (--posteriors stays absent)."""
    argv = [a.format(model=data["model"], obs=data["obs"], feats=data["feats"],
                     book=data["book"], wav=data["wav.scp"], hyp=data["hyp"]) for a in argv]
    if argv[0] == "decode":
        argv[1:1] = ["--posteriors", str(tmp_path / "post.h5")]
    p = subprocess.Popen([sys.executable, "-m", "rhmmtk", *argv], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    p.stdout.close()                  # the reader is gone before the first write
    err = p.stderr.read().decode()
    assert p.wait() == 141, err
    assert "rror" not in err and "Traceback" not in err and "Exception" not in err, err
    assert not list(tmp_path.iterdir())


def test_bench_specifiers_smoke():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = subprocess.run([sys.executable, os.path.join(repo, "bench", "bench_specifiers.py"),
                        "--smoke"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "resolver ark:F / copy-feats' former writer:" in p.stdout, p.stdout


def test_two_outputs_to_stdout_are_refused(data):
    err = fails("decode", "--posteriors", "ark:-", data["model"], data["obs"], "-")
    assert "two outputs to standard output" in err and "- and ark:-" in err, err


@pytest.mark.parametrize("form", ["htk:{d}/new/htk", "ark,scp:{d}/o.ark,{d}/o.scp",
                                  "ark,t:{d}/o.txt", "{d}/o.h5"])
def test_failure_mid_copy_leaves_nothing(tmp_path, form):
    """The second utterance is bad (another dimension): no file, no directory made."""
    kaldiio.save_ark(str(tmp_path / "in.ark"), {"a": np.ones((3, 2), np.float32),
                                                "b": np.ones((4, 5), np.float32)})
    before = sorted(tmp_path.iterdir())
    err = fails("copy-feats", f"ark:{tmp_path}/in.ark", form.format(d=tmp_path))
    assert "utterance b" in err, err
    assert sorted(tmp_path.iterdir()) == before
