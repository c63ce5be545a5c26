"""convert-ali: Kaldi integer alignments, HTK labels and MLFs, CTM; round trips and errors."""
import numpy as np
import pytest

from cli_helpers import fails, run
from rhmmtk.io.archive import ArchiveWriter
from rhmmtk.io.labels import read_mlf, runs
from rhmmtk.io.text import read_alignment

PHONES = ["<eps>", "sil", "aa_B", "aa_E", "b_I", "b_S", "k"]


@pytest.fixture
def phones(tmp_path):
    p = tmp_path / "phones.txt"
    p.write_text("".join(f"{s} {i}\n" for i, s in enumerate(PHONES)))
    return p


def random_alignment(rng, n_utts=5, labels=("sil", "aa", "b", "k")):
    ali = {}
    for u in range(n_utts):
        syms = []
        while len(syms) < 30:
            syms += [str(rng.choice(labels))] * int(rng.integers(1, 6))
        ali[f"utt{u}"] = syms
    return ali


def write_ali(path, ali):
    path.write_text("".join(f"{k} {' '.join(v)}\n" for k, v in ali.items()))
    return path


def test_kaldi_int_alignments(tmp_path, phones, rng):
    ints = "u1 1 1 2 2 3 1\nu2 4 5 5 6\n"
    (tmp_path / "ali.int").write_text(ints)
    run("convert-ali", "-q", "--from", "int", "--symbols", phones, tmp_path / "ali.int",
        tmp_path / "a.ali")
    assert read_alignment(tmp_path / "a.ali") == {
        "u1": ["sil", "sil", "aa_B", "aa_B", "aa_E", "sil"], "u2": ["b_I", "b_S", "b_S", "k"]}
    p = run("convert-ali", "-q", "--from", "int", "--symbols", phones, "--strip-word-position",
            "-", "-", input=ints)
    assert p.stdout == "u1 sil sil aa aa aa sil\nu2 b b b k\n"
    # and back to integers: exact
    run("convert-ali", "-q", "--to", "int", "--symbols", phones, tmp_path / "a.ali",
        tmp_path / "back.int")
    assert (tmp_path / "back.int").read_text() == ints
    (tmp_path / "bad.int").write_text("u1 1 9\n")
    err = fails("convert-ali", "-q", "--from", "int", "--symbols", phones, tmp_path / "bad.int",
                tmp_path / "x.ali")
    assert "bad.int: utterance u1: '9' is not an id in" in err, err
    err = fails("convert-ali", "-q", "--to", "int", "--symbols", phones, "-", tmp_path / "x",
                input="u1 sil zz\n")
    assert "utterance u1: label zz is not in the symbol table" in err
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("shift", [0.01, 0.0125, 0.003])
def test_mlf_round_trip_exact(tmp_path, rng, shift):
    ali = random_alignment(rng)
    src = write_ali(tmp_path / "a.ali", ali)
    run("convert-ali", "-q", "--to", "mlf", "--frame-shift", shift * 1000, src, tmp_path / "a.mlf")
    text = (tmp_path / "a.mlf").read_text().splitlines()
    assert text[0] == "#!MLF!#" and text[1] == '"*/utt0.rec"'
    # one line per run, times in 100 ns
    a, b, lab = runs(ali["utt0"])[0]
    assert text[2] == f"{round(a * shift * 1e7)} {round(b * shift * 1e7)} {lab}"
    run("convert-ali", "-q", "--from", "mlf", "--frame-shift", shift * 1000, tmp_path / "a.mlf",
        tmp_path / "b.ali")
    assert read_alignment(tmp_path / "b.ali") == ali


MLF = """#!MLF!#
"/data/timit/train/dr1/fcjf0/si1027.lab"
0 300000 sil -12.5 extra
300000 550000 aa
550000 600000 b
600000 1000000 k
///
0 1000000 word
.
"*/two.lab"
0 0.2e0 k
.
"""


def test_mlf_parsing_by_hand(tmp_path, phones):
    (tmp_path / "a.mlf").write_text(MLF.replace("0 0.2e0 k", "0 200000.0 k"))
    dropped = [0]
    ali = read_mlf(tmp_path / "a.mlf", 0.01, dropped=dropped)
    # sil [0, 3); aa [3, round(5.5)=6); b [6, 6) dropped; k [6, 10); second level ignored
    assert ali == {"si1027": ["sil"] * 3 + ["aa"] * 3 + ["k"] * 4, "two": ["k", "k"]}
    assert dropped == [1]


@pytest.mark.parametrize("body, needle", [
    ('"*/u.lab"\n0 100000 sil\n100000 300000 zz\n.\n', "u.lab\" line"),
    ('"*/u.lab"\n0 100000 sil\n200000 300000 k\n.\n', "gap before label k"),
    ('"*/u.lab"\n0 100000 sil\n50000 300000 k\n.\n', "overlap before label k"),
    ('"*/u.lab"\nsil\n.\n', "label sil has no times"),
    ('"*/u.lab"\n0 100000 sil\n', "not ended by a `.` line"),
    ('"*/u.lab" -> /some/dir\n', "search definitions"),
])
def test_bad_mlf(tmp_path, phones, body, needle):
    (tmp_path / "a.mlf").write_text("#!MLF!#\n" + body)
    err = fails("convert-ali", "-q", "--from", "mlf", "--symbols", phones,
                "--strip-word-position", tmp_path / "a.mlf", tmp_path / "o.ali")
    if "zz" in body:
        assert "a.mlf: utterance u: line 4: label zz is not in the symbol table" in err, err
    else:
        assert needle in err, err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "o.ali").exists()
    (tmp_path / "b.mlf").write_text("not an mlf\n")
    assert "#!MLF!#" in fails("convert-ali", "--from", "mlf", tmp_path / "b.mlf", "-")


def test_symbol_check_accepts_table_labels(tmp_path, phones):
    (tmp_path / "a.mlf").write_text('#!MLF!#\n"*/u.lab"\n0 100000 sil\n100000 300000 aa_B\n.\n')
    p = run("convert-ali", "-q", "--from", "mlf", "--symbols", phones, tmp_path / "a.mlf", "-")
    assert p.stdout == "u sil aa_B aa_B\n"


def test_lab_files_and_feature_lengths(tmp_path):
    (tmp_path / "labs").mkdir()
    (tmp_path / "labs" / "u1.lab").write_text("0 200000 sil\n200000 500000 aa\n")
    (tmp_path / "labs" / "u2.lab").write_text("0 250000 k\n")
    (tmp_path / "labs.scp").write_text("labs/u1.lab\nlabs/u2.lab\n")
    with ArchiveWriter(tmp_path / "f.h5", "features", {}, attrs={"frame_shift": 0.005}) as w:
        w.add("u1", np.zeros((11, 2), np.float32))     # labels give 10 frames: pad one
        w.add("u2", np.zeros((4, 2), np.float32))      # labels give 5: cut one
    p = run("convert-ali", "-q", "--from", "lab", "--features", tmp_path / "f.h5",
            tmp_path / "labs.scp", "-")
    assert p.stdout == ("u1 " + " ".join(["sil"] * 4 + ["aa"] * 7) + "\nu2 k k k k\n")
    err = fails("convert-ali", "-q", "--from", "lab", "--features", tmp_path / "f.h5",
                "--tolerance", "0", tmp_path / "labs.scp", "-")
    assert "utterance u1: labels cover 10 frames, the features have 11" in err


def test_ctm(tmp_path):
    ali = {"recA-1": ["sil", "sil", "aa", "k", "k", "k"], "recB-1": ["b", "b"]}
    src = write_ali(tmp_path / "h.ali", ali)
    p = run("convert-ali", "-q", "--to", "ctm", src, "-")
    assert p.stdout == ("recA-1 1 0.00 0.02 sil\nrecA-1 1 0.02 0.01 aa\nrecA-1 1 0.03 0.03 k\n"
                        "recB-1 1 0.00 0.02 b\n")
    (tmp_path / "segments").write_text("recA-1 recA 1.5 1.56\nrecB-1 recB 0.25 0.27\n")
    (tmp_path / "r2fc").write_text("recA sw02001 A\nrecB sw02001 B\n")
    p = run("convert-ali", "-q", "--to", "ctm", "--frame-shift", "12.5", "--segments",
            tmp_path / "segments", "--reco2file-and-channel", tmp_path / "r2fc", src, "-")
    assert p.stdout == ("sw02001 A 1.5000 0.0250 sil\nsw02001 A 1.5250 0.0125 aa\n"
                        "sw02001 A 1.5375 0.0375 k\nsw02001 B 0.2500 0.0250 b\n")


def test_mlf_patterns_that_differ_by_directory(tmp_path):
    """TIMIT's */FESZ1/SA1.lab and */FMLP0/SA1.lab are two utterances (ids FESZ1_SA1 and
    FMLP0_SA1, as an HTK script of FESZ1/SA1.mfc, FMLP0/SA1.mfc names them); with HTK
    features each file takes the longest pattern that fits its path, as HTK looks it up."""
    import numpy as np

    from cli_helpers import run
    from rhmmtk.io.htk import htk_bytes

    mlf = tmp_path / "a.mlf"
    mlf.write_text('#!MLF!#\n"*/FESZ1/SA1.lab"\n0 200000 a\n.\n"*/FMLP0/SA1.lab"\n'
                   '0 100000 b\n100000 200000 c\n.\n"*/SA1.lab"\n0 200000 z\n.\n'
                   '"*/SA2.lab"\n0 200000 d\n.\n')
    assert read_mlf(mlf) == {"FESZ1_SA1": ["a", "a"], "FMLP0_SA1": ["b", "c"], "SA1": ["z", "z"],
                             "SA2": ["d", "d"]}
    lines = []
    for spk in ("FESZ1", "FMLP0", "MABC0"):
        (tmp_path / "timit" / spk).mkdir(parents=True)
        f = tmp_path / "timit" / spk / "SA1.mfc"
        f.write_bytes(htk_bytes(np.zeros((2, 3), np.float32), 100000))
        lines.append(str(f))
    (tmp_path / "feats.scp").write_text("\n".join(lines) + "\n")
    run("convert-ali", "--from", "mlf", "--features", f"htk:{tmp_path}/feats.scp", mlf,
        tmp_path / "out.ali")
    # MABC0/SA1 has no pattern of its own: the longest that fits is */SA1.lab
    assert (tmp_path / "out.ali").read_text() == \
        "FESZ1_SA1 a a\nFMLP0_SA1 b c\nMABC0_SA1 z z\n"
