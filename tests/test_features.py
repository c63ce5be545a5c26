"""Feature sources: rhmmtk archives, Kaldi ark/scp (kaldiio), HTK parameter files; copy-feats
round trips bit for bit; quantize reads them all; bad input is one clear line."""
import struct

import kaldiio
import numpy as np
import pytest

from cli_helpers import fails, run
from rhmmtk.io.archive import Archive, ArchiveWriter
from rhmmtk.io.features import open_features

DIM = 6


def write_archive(path, mats, frame_shift=0.01):
    with ArchiveWriter(path, "features", {"created_by": "test"},
                       attrs={"dim": DIM, "frame_shift": frame_shift}) as w:
        for k, x in mats.items():
            w.add(k, x)
    return path


def read_archive(path):
    with Archive(path, expect_kind="features") as ar:
        return dict(ar.items()), dict(ar.attrs)


def htk_file(path, mat, period=100000, kind=9, header=None):
    """An HTK parameter file written independently of rhmmtk: struct, big-endian."""
    n, d = mat.shape
    head = header or struct.pack(">iihh", n, period, 4 * d, kind)
    path.write_bytes(head + mat.astype(">f4").tobytes())
    return path


@pytest.fixture
def mats(rng):
    # values with every float32 bit pattern class: tiny, huge, negative zero
    out = {}
    for i, n in enumerate((7, 1, 23)):
        x = (rng.standard_normal((n, DIM)) * 10.0 ** rng.integers(-30, 30, (n, DIM)))
        out[f"utt{i}"] = x.astype(np.float32)
    out["utt0"][0, 0] = -0.0
    return out


def assert_same(a, b):
    assert list(a) == list(b)
    for k in a:
        assert a[k].dtype == np.float32 and b[k].dtype == np.float32
        assert a[k].tobytes() == b[k].tobytes(), k


def test_kaldi_round_trips_bit_exact(tmp_path, mats):
    src = write_archive(tmp_path / "a.h5", mats)
    run("copy-feats", "-q", src, f"ark,scp:{tmp_path}/a.ark,{tmp_path}/a.scp")
    run("copy-feats", "-q", src, f"ark:{tmp_path}/b.ark")
    run("copy-feats", "-q", src, f"ark,t:{tmp_path}/t.txt")     # text: exact too
    # kaldiio (an independent reader) sees the same matrices, and the scp offsets are right
    assert_same(mats, dict(kaldiio.load_ark(str(tmp_path / "a.ark"))))
    assert_same(mats, {k: v for k, v in kaldiio.load_scp(str(tmp_path / "a.scp")).items()})
    assert (tmp_path / "a.ark").read_bytes() == (tmp_path / "b.ark").read_bytes()
    for spec in (f"ark:{tmp_path}/a.ark", f"scp:{tmp_path}/a.scp",
                 f"ark:cat {tmp_path}/a.ark |", f"ark,s,cs:{tmp_path}/a.ark",
                 f"ark,t:{tmp_path}/t.txt"):
        out = tmp_path / "back.h5"
        run("copy-feats", "-q", spec, out)
        got, attrs = read_archive(out)
        assert_same(mats, got)
        assert int(attrs["dim"]) == DIM
        out.unlink()


def test_stdin_and_stdout(tmp_path, mats):
    import subprocess
    import sys

    src = write_archive(tmp_path / "a.h5", mats)
    a = subprocess.run([sys.executable, "-m", "rhmmtk", "copy-feats", "-q", str(src), "ark:-"],
                       capture_output=True, check=True).stdout
    subprocess.run([sys.executable, "-m", "rhmmtk", "copy-feats", "-q", "ark:-",
                    str(tmp_path / "b.h5")], input=a, check=True)
    assert_same(mats, read_archive(tmp_path / "b.h5")[0])


def test_kaldiio_written_archives(tmp_path, mats):
    """Archives as Kaldi writes them: float, double, compressed (kaldiio writes them)."""
    kaldiio.save_ark(str(tmp_path / "f.ark"), mats)
    d64 = {k: v.astype(np.float64) for k, v in mats.items()}
    kaldiio.save_ark(str(tmp_path / "d.ark"), d64)
    small = {k: (v / np.abs(v).max()).astype(np.float32) for k, v in mats.items()}
    kaldiio.save_ark(str(tmp_path / "c.ark"), small, compression_method=2)
    with open_features(f"ark:{tmp_path}/f.ark") as r:
        assert_same(mats, dict(r.items()))
    with open_features(f"ark:{tmp_path}/d.ark") as r:
        assert_same(mats, dict(r.items()))      # float32 -> float64 -> float32 is exact
    with open_features(f"ark:{tmp_path}/c.ark") as r:
        got = dict(r.items())
    want = dict(kaldiio.load_ark(str(tmp_path / "c.ark")))
    for k in small:
        np.testing.assert_array_equal(got[k], want[k].astype(np.float32))
        np.testing.assert_allclose(got[k], small[k], atol=2 / 255)   # lossy, but close


def htk_list(tmp_path, mats, period=100000):
    d = tmp_path / "htk"
    d.mkdir()
    lines = []
    for k, x in mats.items():
        htk_file(d / f"{k}.mfc", x, period)
        lines.append(f"{d}/{k}.mfc")
    (tmp_path / "list.scp").write_text("\n".join(lines) + "\n")
    return tmp_path / "list.scp"


def test_htk_in_and_out_bit_exact(tmp_path, mats):
    lst = htk_list(tmp_path, mats, period=125000)
    run("copy-feats", "-q", f"htk:{lst}", tmp_path / "h.h5")
    got, attrs = read_archive(tmp_path / "h.h5")
    assert_same(mats, got)
    assert attrs["frame_shift"] == pytest.approx(0.0125) and attrs["htk_parm_kind"] == "USER"
    # and out again: files identical to the independent writer's
    run("copy-feats", "-q", tmp_path / "h.h5", f"htk:{tmp_path}/out")
    for k in mats:
        assert (tmp_path / "out" / f"{k}.htk").read_bytes() == \
            (tmp_path / "htk" / f"{k}.mfc").read_bytes()
    run("copy-feats", "-q", f"htk:{tmp_path}/out", tmp_path / "h2.h5")
    assert_same(mats, read_archive(tmp_path / "h2.h5")[0])


def test_htk_parameter_kind_kept_and_little_endian_read(tmp_path, mats):
    """MFCC_E_D_A in, MFCC_E_D_A out (the values are the same kind); a file written
    little-endian (HTK's NATURALWRITEORDER on a PC) reads as its big-endian twin."""
    kind = 6 | 0o100 | 0o400 | 0o1000
    d = tmp_path / "in"
    d.mkdir()
    lines = []
    for k, x in mats.items():
        htk_file(d / f"{k}.mfc", x, kind=kind)
        lines.append(f"{d}/{k}.mfc")
    (tmp_path / "l.scp").write_text("\n".join(lines) + "\n")
    run("copy-feats", "-q", f"htk:{tmp_path}/l.scp", f"htk:{tmp_path}/out")
    for k in mats:
        assert (tmp_path / "out" / f"{k}.htk").read_bytes() == (d / f"{k}.mfc").read_bytes()
    run("copy-feats", "-q", f"htk:{tmp_path}/l.scp", tmp_path / "a.h5")
    assert read_archive(tmp_path / "a.h5")[1]["htk_parm_kind"] == "MFCC_E_D_A"
    run("copy-feats", "-q", tmp_path / "a.h5", f"htk:{tmp_path}/out2")
    assert (tmp_path / "out2" / "utt1.htk").read_bytes() == (d / "utt1.mfc").read_bytes()
    # little-endian: header and data in the PC's order
    x = mats["utt2"]
    le = tmp_path / "le.mfc"
    le.write_bytes(struct.pack("<iihh", len(x), 100000, 4 * DIM, kind) + x.astype("<f4").tobytes())
    (tmp_path / "le.scp").write_text(f"{le}\n")
    with open_features(f"htk:{tmp_path}/le.scp") as r:
        (_, got), = r.items()
    assert got.tobytes() == x.tobytes()
    # neither order fits: the error says which were tried
    le.write_bytes(le.read_bytes()[:-4])
    err = fails("copy-feats", "-q", f"htk:{tmp_path}/le.scp", tmp_path / "b.h5")
    assert "little-endian" in err and "big-endian" in err, err


def test_htk_script_forms_and_compression(tmp_path, mats, rng):
    x = mats["utt2"]
    htk_file(tmp_path / "f.mfc", x, kind=6 | 0o100 | 0o10000)      # MFCC_E_K
    (tmp_path / "f.mfc").write_bytes((tmp_path / "f.mfc").read_bytes() + b"\x12\x34")  # CRC
    # compressed: A, B then int16 values; x = (q + B) / A
    q = rng.integers(-32767, 32767, (9, 4)).astype(np.int16)
    a = np.array([2.0, 0.5, 10.0, 1.0], np.float32)
    b = np.array([0.0, 3.0, -1.0, 7.0], np.float32)
    head = struct.pack(">iihh", 9 + 4, 100000, 2 * 4, 6 | 0o2000)
    (tmp_path / "c.mfc").write_bytes(head + a.astype(">f4").tobytes() + b.astype(">f4").tobytes()
                                     + q.astype(">i2").tobytes())
    (tmp_path / "l.scp").write_text(f"spk1/first.mfc={tmp_path}/f.mfc\n"
                                    f"part={tmp_path}/f.mfc[2,5]\n")
    with open_features(f"htk:{tmp_path}/l.scp") as r:
        got = dict(r.items())
        assert r.attrs["htk_parm_kind"] == "MFCC_E_K"
    assert list(got) == ["first", "part"]
    np.testing.assert_array_equal(got["first"], x)
    np.testing.assert_array_equal(got["part"], x[2:6])
    (tmp_path / "c.scp").write_text(f"{tmp_path}/c.mfc\n")
    with open_features(f"htk:{tmp_path}/c.scp") as r:
        got = dict(r.items())
    np.testing.assert_allclose(got["c"], (q.astype(np.float64) + b) / a, rtol=1e-6)


@pytest.mark.parametrize("header, needle", [
    (struct.pack(">iihh", 50, 100000, 24, 9), "header promises 1212 bytes"),
    (struct.pack(">iihh", 7, 100000, 23, 9), "sampSize 23"),
    (struct.pack(">iihh", 7, 0, 24, 9), "sampPeriod 0"),
    (struct.pack(">iihh", 3, 100000, 24, 9), "more than the header's 3 frames"),
    (struct.pack(">iihh", 7, 100000, 24, 0), "WAVEFORM data"),
    (struct.pack(">iihh", 7, 100000, 24, 63), "unknown parameter kind"),
    (b"\x00\x01", "the header alone is 12"),
])
def test_bad_htk_header_is_one_line(tmp_path, mats, header, needle):
    x = mats["utt0"]
    p = tmp_path / "bad.mfc"
    p.write_bytes(header + (x.astype(">f4").tobytes() if len(header) == 12 else b""))
    (tmp_path / "l.scp").write_text(f"{p}\n")
    out = tmp_path / "o.h5"
    err = fails("copy-feats", "-q", f"htk:{tmp_path}/l.scp", out)
    assert needle in err and f"{p}: utterance bad:" in err, err
    assert len(err.strip().splitlines()) == 1 and not out.exists()


def test_wrong_dimension_and_bad_archives(tmp_path, mats):
    bad = dict(mats)
    bad["utt1"] = np.ones((4, DIM + 2), np.float32)
    kaldiio.save_ark(str(tmp_path / "bad.ark"), bad, scp=str(tmp_path / "bad.scp"))
    for spec in (f"ark:{tmp_path}/bad.ark", f"scp:{tmp_path}/bad.scp"):
        out = tmp_path / "o.h5"
        err = fails("copy-feats", "-q", spec, out)
        assert "utterance utt1: matrix has 8 columns, earlier utterances have 6" in err, err
        assert not out.exists()
        out = tmp_path / "k"
        err = fails("copy-feats", "-q", spec, f"ark,scp:{out}.ark,{out}.scp")
        assert "utterance utt1" in err and not (tmp_path / "k.ark").exists()
    good = tmp_path / "good.ark"
    kaldiio.save_ark(str(good), mats)
    (tmp_path / "cut.ark").write_bytes(good.read_bytes()[:200])
    err = fails("copy-feats", "-q", f"ark:{tmp_path}/cut.ark", tmp_path / "o.h5")
    assert "cut.ark: unreadable Kaldi archive after utterance utt0" in err, err
    err = fails("copy-feats", "-q", "ark:false |", tmp_path / "o.h5")
    assert "command failed (exit status 1)" in err, err
    err = fails("copy-feats", "-q", f"ark:{tmp_path}/none.ark", tmp_path / "o.h5")
    assert "no such Kaldi archive" in err
    err = fails("copy-feats", "-q", f"ark:{tmp_path}/a.h5 |", tmp_path / "o.h5")
    assert "command failed" in err
    err = fails("quantize", "learn", "-q", good, tmp_path / "cb.h5")
    assert "good.ark: not a readable HDF5 archive" in err and "write ark:PATH" in err, err


def test_quantize_reads_kaldi_and_htk(tmp_path, mats, rng):
    big = {f"u{i}": rng.standard_normal((40, DIM)).astype(np.float32) for i in range(6)}
    src = write_archive(tmp_path / "a.h5", big)
    run("copy-feats", "-q", src, f"ark,scp:{tmp_path}/a.ark,{tmp_path}/a.scp")
    run("copy-feats", "-q", src, f"htk:{tmp_path}/htk")
    books = {}
    for name, spec in (("h5", src), ("ark", f"ark:{tmp_path}/a.ark"),
                       ("scp", f"scp:{tmp_path}/a.scp"), ("htk", f"htk:{tmp_path}/htk"),
                       ("pipe", f"ark:cat {tmp_path}/a.ark |")):
        run("quantize", "learn", "-q", "--codes", "5", "--sample-frames", "150", "--seed", "3",
            spec, tmp_path / f"{name}.cb")
        run("quantize", "apply", "-q", tmp_path / "h5.cb", spec, tmp_path / f"{name}.obs")
        with Archive(tmp_path / f"{name}.obs") as ar:
            books[name] = {k: v for k, v in ar.items()}
        import h5py

        with h5py.File(tmp_path / f"{name}.cb") as f:
            books[name, "cb"] = f["centroids"][()]
    for name in ("ark", "scp", "htk", "pipe"):
        np.testing.assert_array_equal(books[name, "cb"], books["h5", "cb"])
        assert list(books[name]) == list(books["h5"])
        for k in books["h5"]:
            np.testing.assert_array_equal(books[name][k], books["h5"][k])
    run("quantize", "apply", "-q", "--job", "2/3", tmp_path / "h5.cb", f"ark:{tmp_path}/a.ark",
        tmp_path / "j.obs")
    with Archive(tmp_path / "j.obs") as ar:
        assert ar.keys() == ["u2", "u3"]
    # a matrix of the wrong dimension
    kaldiio.save_ark(str(tmp_path / "w.ark"), {"x": np.ones((3, DIM + 1), np.float32)})
    err = fails("quantize", "apply", "-q", tmp_path / "h5.cb", f"ark:{tmp_path}/w.ark",
                tmp_path / "w.obs")
    assert "w.ark: utterance x: matrix has 7 columns but the codebook" in err, err
    assert not (tmp_path / "w.obs").exists()
