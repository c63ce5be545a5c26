"""Kaldi data directories: wav.scp commands, segments, channels, utt2spk, validation."""
import shutil

import numpy as np
import pytest
import soundfile as sf

from cli_helpers import fails, run
from rhmmtk.frontend.acoustic import MfccConfig, mfcc
from rhmmtk.io.archive import Archive
from rhmmtk.io.datadir import validate_data_dir

SR = 16000


def signal(rng, seconds):
    t = np.arange(int(seconds * SR)) / SR
    x = 5000 * np.sin(2 * np.pi * (300 + 900 * t) * t) + 400 * rng.standard_normal(len(t))
    return np.clip(np.round(x), -32768, 32767).astype(np.int16)


def archive(path):
    with Archive(path, expect_kind="features") as ar:
        return {k: v for k, v in ar.items()}


@pytest.fixture
def recordings(tmp_path, rng):
    """Two mono recordings and a stereo one (channel B differs from A)."""
    a, b = signal(rng, 1.3), signal(rng, 0.9)
    st = np.stack([signal(rng, 0.7), signal(rng, 0.7)], axis=1)
    sf.write(tmp_path / "recA.wav", a, SR, subtype="PCM_16")
    sf.write(tmp_path / "recB.wav", b, SR, format="NIST", subtype="PCM_16")
    sf.write(tmp_path / "recS.wav", st, SR, subtype="PCM_16")
    return {"recA": a, "recB": b, "recS": st}


def make_dir(d, tmp_path, wav_lines, segments=None, utt2spk=None, r2fc=None):
    d.mkdir()
    (d / "wav.scp").write_text("".join(l + "\n" for l in wav_lines))
    if segments:
        (d / "segments").write_text("".join(l + "\n" for l in segments))
    if utt2spk:
        (d / "utt2spk").write_text("".join(f"{u} {s}\n" for u, s in utt2spk))
        spk = {}
        for u, s in utt2spk:
            spk.setdefault(s, []).append(u)
        (d / "spk2utt").write_text("".join(f"{s} {' '.join(us)}\n" for s, us in spk.items()))
    if r2fc:
        (d / "reco2file_and_channel").write_text("".join(l + "\n" for l in r2fc))
    return d


SEGMENTS = ["s1-recA-000 recA 0.00 0.61", "s1-recA-001 recA 0.55 1.30",
            "s2-recB-000 recB 0.10 0.80"]
UTT2SPK = [("s1-recA-000", "s1"), ("s1-recA-001", "s1"), ("s2-recB-000", "s2")]


def expected(recordings, segs):
    out = {}
    for line in segs:
        utt, reco, start, end = line.split()
        x = recordings[reco][int(round(float(start) * SR)):int(round(float(end) * SR))]
        out[utt] = mfcc(x.astype(np.float64), MfccConfig())
    return out


def test_commands_and_segments_equal_cut_files(tmp_path, recordings):
    """A data dir with `cat ... |` commands (one needing a shell) and segments gives the same
    features as the segments cut out by numpy and read as plain files."""
    d = make_dir(tmp_path / "data", tmp_path,
                 [f"recA cat {tmp_path}/recA.wav |", f"recB cat {tmp_path}/recB.wav | cat |"],
                 SEGMENTS, UTT2SPK)
    run("feats", "-q", d, tmp_path / "dir.h5")
    got = archive(tmp_path / "dir.h5")
    want = expected(recordings, SEGMENTS)
    assert list(got) == list(want)
    for k in want:
        np.testing.assert_array_equal(got[k], want[k])
    # the same through --segments with the wav.scp file, and through plain files
    run("feats", "-q", "--segments", d / "segments", d / "wav.scp", tmp_path / "file.h5")
    cut = tmp_path / "cut.scp"
    lines = []
    for line in SEGMENTS:
        utt, reco, start, end = line.split()
        x = recordings[reco][int(round(float(start) * SR)):int(round(float(end) * SR))]
        sf.write(tmp_path / f"{utt}.wav", x, SR, subtype="PCM_16")
        lines.append(f"{utt} {tmp_path}/{utt}.wav\n")
    cut.write_text("".join(lines))
    run("feats", "-q", cut, tmp_path / "cut.h5")
    for other in ("file.h5", "cut.h5"):
        o = archive(tmp_path / other)
        for k in want:
            np.testing.assert_array_equal(o[k], got[k])


def test_speaker_cmvn_from_data_dir_and_jobs(tmp_path, recordings):
    d = make_dir(tmp_path / "data", tmp_path,
                 [f"recA cat {tmp_path}/recA.wav |", f"recB {tmp_path}/recB.wav"],
                 SEGMENTS, UTT2SPK)
    run("feats", "-q", "--cmvn", "spk", d, tmp_path / "a.h5")
    run("feats", "-q", "--cmvn", "spk", "--utt2spk", d / "utt2spk", "--segments",
        d / "segments", d / "wav.scp", tmp_path / "b.h5")
    a, b = archive(tmp_path / "a.h5"), archive(tmp_path / "b.h5")
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    # per-speaker normalisation: speaker s1's frames have zero mean, unit variance
    s1 = np.vstack([a["s1-recA-000"], a["s1-recA-001"]]).astype(np.float64)
    np.testing.assert_allclose(s1.mean(0), 0, atol=1e-4)
    np.testing.assert_allclose(s1.std(0), 1, atol=1e-3)
    # shards by speaker concatenate to the whole
    run("feats", "-q", "--cmvn", "spk", "--job", "1/2", d, tmp_path / "j1.h5")
    run("feats", "-q", "--cmvn", "spk", "--job", "2/2", d, tmp_path / "j2.h5")
    j = {**archive(tmp_path / "j1.h5"), **archive(tmp_path / "j2.h5")}
    assert list(j) == list(a)
    for k in a:
        np.testing.assert_array_equal(a[k], j[k])


def test_channel_from_reco2file_and_channel(tmp_path, recordings):
    d = make_dir(tmp_path / "data", tmp_path,
                 [f"recS {tmp_path}/recS.wav", f"recT cat {tmp_path}/recS.wav |"],
                 r2fc=["recS recS B", "recT recS 1"])
    run("feats", "-q", d, tmp_path / "s.h5")
    got = archive(tmp_path / "s.h5")
    st = recordings["recS"].astype(np.float64)
    np.testing.assert_array_equal(got["recS"], mfcc(st[:, 1], MfccConfig()))
    np.testing.assert_array_equal(got["recT"], mfcc(st[:, 0], MfccConfig()))
    assert not np.array_equal(got["recS"], got["recT"])
    d2 = make_dir(tmp_path / "d2", tmp_path, [f"recS {tmp_path}/recS.wav"])
    assert "channel" in fails("feats", d2, tmp_path / "x.h5")


def test_streamed_wav_header(tmp_path, recordings):
    """A RIFF header with placeholder lengths (as written to a pipe) is read in full."""
    raw = (tmp_path / "recA.wav").read_bytes()
    off = raw.index(b"data") + 8
    for placeholder in (0xFFFFFFFF, 0x7FFFF000):
        bad = bytearray(raw)
        bad[4:8] = placeholder.to_bytes(4, "little")
        bad[off - 4:off] = placeholder.to_bytes(4, "little")
        (tmp_path / "stream.wav").write_bytes(bytes(bad))
        scp = tmp_path / "w.scp"
        scp.write_text(f"recA cat {tmp_path}/stream.wav |\n")
        run("feats", "-q", scp, tmp_path / "st.h5")
        np.testing.assert_array_equal(archive(tmp_path / "st.h5")["recA"],
                                      mfcc(recordings["recA"].astype(np.float64), MfccConfig()))
    # but a file (not a pipe) whose header promises more than it holds is truncated
    scp.write_text(f"recA {tmp_path}/stream.wav\n")
    assert "truncated" in fails("feats", scp, tmp_path / "st2.h5")


@pytest.mark.skipif(shutil.which("sox") is None, reason="sox not installed")
def test_sox_pipe(tmp_path, recordings):
    scp = tmp_path / "w.scp"
    scp.write_text(f"recA sox {tmp_path}/recA.wav -t wav - |\n")
    run("feats", "-q", scp, tmp_path / "sox.h5")
    np.testing.assert_array_equal(archive(tmp_path / "sox.h5")["recA"],
                                  mfcc(recordings["recA"].astype(np.float64), MfccConfig()))


@pytest.mark.parametrize("entry, needle", [
    ("false |", "failed (exit status 1)"),
    ("true |", "wrote no audio"),
    ("sh -c 'echo broken >&2; exit 3' |", "exit status 3): broken"),
    ("no-such-program-xyz arg |", "command not found: no-such-program-xyz"),
    ("echo notaudio |", "unreadable audio"),
])
def test_bad_commands_name_the_utterance(tmp_path, entry, needle):
    d = make_dir(tmp_path / "data", tmp_path, [f"recA {entry}"])
    out = tmp_path / "x.h5"
    err = fails("feats", "-q", d, out)
    assert needle in err and "utterance recA" in err and "wav.scp" in err, err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_segment_past_the_end(tmp_path, recordings):
    d = make_dir(tmp_path / "data", tmp_path, [f"recB cat {tmp_path}/recB.wav |"],
                 ["u1 recB 0.0 0.5", "u2 recB 0.5 0.95"])
    out = tmp_path / "x.h5"
    err = fails("feats", "-q", d, out)
    assert "segments: utterance u2: segment 0.5-0.95 s reaches past the end of recording " \
           "recB (0.9 s; see --max-overshoot)" in err, err
    # within --max-overshoot the segment is cut at the end of the recording
    run("feats", "-q", "--max-overshoot", "0.05", d, out)
    np.testing.assert_array_equal(archive(out)["u2"], mfcc(
        recordings["recB"][8000:].astype(np.float64), MfccConfig()))
    assert "reaches past" in fails("feats", "-q", "--max-overshoot", "0.04", d, tmp_path / "y")
    out.unlink()
    assert not out.exists()
    assert "segments: utterance u2: segment 0.5-0.95 s" in fails("feats", "-q", "--job", "1/1",
                                                                  d, out)
    (d / "segments").write_text("u1 recB 0.0 0.5\nu2 recX 0.5 0.7\n")
    assert "recording recX is not in" in fails("feats", d, out)
    (d / "segments").write_text("u1 recB 0.6 0.5\n")
    assert "bad segment times" in fails("feats", d, out)


def test_validate_data_dir(tmp_path, recordings):
    d = make_dir(tmp_path / "data", tmp_path,
                 [f"recA cat {tmp_path}/recA.wav |", f"recB {tmp_path}/recB.wav"],
                 SEGMENTS, UTT2SPK, ["recA recA A", "recB recB A"])
    (d / "text").write_text("".join(f"{u} hello\n" for u, _ in UTT2SPK))
    assert validate_data_dir(d) == []
    assert "valid" in run("validate-data-dir", d).stdout

    def problems_after(name, text):
        old = (d / name).read_text()
        (d / name).write_text(text)
        try:
            p = validate_data_dir(d)
            err = fails("validate-data-dir", "-q", d)
            assert len(err.strip().splitlines()) == len(p) >= 1
            return "\n".join(p)
        finally:
            (d / name).write_text(old)

    for problem, name, text in [
            ("not sorted: utterance s1-recA-000 comes after s1-recA-001", "utt2spk",
             "s1-recA-001 s1\ns1-recA-000 s1\ns2-recB-000 s2\n"),
            ("utterance s1-recA-000 appears twice", "utt2spk",
             "s1-recA-000 s1\ns1-recA-000 s1\ns2-recB-000 s2\n"),
            ("not in order when sorted by speaker", "utt2spk",
             "s1-recA-000 zz\ns1-recA-001 s1\ns2-recB-000 s2\n"),
            ("spk2utt: does not match utt2spk", "spk2utt", "s1 s1-recA-000\ns2 s2-recB-000\n"),
            ("1 only in utt2spk (first s2-recB-000)", "text", "s1-recA-000 a\ns1-recA-001 b\n"),
            ("1 recordings not in wav.scp (first recC)", "segments",
             "s1-recA-000 recA 0 0.6\ns1-recA-001 recA 0.5 1.3\ns2-recB-000 recC 0 1\n"),
            ("bad segment times", "segments", "s1-recA-000 recA 0.9 0.6\n"),
            ("reco2file_and_channel: recordings differ", "reco2file_and_channel",
             "recA recA A\n")]:
        assert problem in problems_after(name, text)
    (d / "utt2spk").unlink()
    assert "no utt2spk" in validate_data_dir(d)[0]
