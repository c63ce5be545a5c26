"""TIMIT preparation on the shared TIMIT-layout corpus, on lower-case copies, and its errors."""
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO
from rhmmtk.frontend.acoustic import MfccConfig, audio_info, mfcc, num_frames, read_audio
from rhmmtk.errors import InputError
from rhmmtk.io.text import read_alignment, read_scp, read_table
from rhmmtk.corpora.timit import PhoneMap, frame_labels, prepare

CONF = REPO / "recipes" / "timit" / "conf"
SCRIPT = REPO / "recipes" / "timit" / "local" / "prepare_timit.py"


def speakers(name):
    return (CONF / name).read_text().split()


@pytest.fixture
def timit(shared):
    root = shared / "data" / "festival-timit"
    if not root.is_dir():
        pytest.skip(f"{root} not found")
    return root


@pytest.fixture(scope="module")
def phone_map():
    return PhoneMap.read(CONF / "phones.60-48-39.map")


def test_phone_map(phone_map):
    assert len(phone_map.to48) + len(phone_map.deleted) == 61
    assert len(phone_map.set48) == 48 and len(phone_map.set39) == 39
    assert phone_map.deleted == {"q"}
    folds = {"ao": "aa", "ax": "ah", "ax-h": "ah", "axr": "er", "hv": "hh", "ix": "ih", "el": "l",
             "em": "m", "en": "n", "nx": "n", "eng": "ng", "zh": "sh", "ux": "uw", "pcl": "sil",
             "tcl": "sil", "kcl": "sil", "bcl": "sil", "dcl": "sil", "gcl": "sil", "h#": "sil",
             "pau": "sil", "epi": "sil", "iy": "iy"}
    for p, p39 in folds.items():
        assert phone_map.to39[p] == p39, p
        assert phone_map.fold48to39[phone_map.to48[p]] == p39, p


def test_standard_splits(timit, tmp_path, phone_map):
    summary = prepare(timit, tmp_path, CONF)
    assert {k: v[0] for k, v in summary.items()} == {"train": 256, "dev": 199, "test": 192}
    core, dev = set(speakers("core_test_spk.txt")), set(speakers("dev_spk.txt"))
    for name in ("train", "dev", "test"):
        d = tmp_path / name
        wavs, u2s = read_scp(d / "wav.scp"), read_scp(d / "utt2spk")
        ali48, ali39 = read_alignment(d / "ali.48"), read_alignment(d / "ali.39")
        spk2utt = read_table(d / "spk2utt")
        assert list(wavs) == sorted(wavs) == list(u2s) == list(ali48) == list(ali39)
        assert sorted(u for us in spk2utt.values() for u in us) == list(wavs)
        spks = set(u2s.values())
        assert spks == set(spk2utt)
        for utt, spk in u2s.items():
            assert utt.startswith(spk + "_") and utt.split("_")[1][:2] in ("SX", "SI")
        for utt, path in wavs.items():
            n = num_frames(audio_info(path, 16000))
            assert len(ali48[utt]) == len(ali39[utt]) == n, utt  # every frame labelled
            assert set(ali48[utt]) <= set(phone_map.set48)
            assert ali39[utt] == [phone_map.fold48to39[p] for p in ali48[utt]]
        check_segments(d, ali48, phone_map)
        if name == "test":
            assert spks == core
        elif name == "dev":
            assert spks <= dev and len(spks) == 25
        else:
            assert not spks & (core | dev) and len(spks) == 32
    # frame counts are those of the features
    wavs = read_scp(tmp_path / "test" / "wav.scp")
    ali = read_alignment(tmp_path / "test" / "ali.48")
    for utt in list(wavs)[:3]:
        assert len(mfcc(read_audio(wavs[utt]), MfccConfig())) == len(ali[utt])


def check_segments(d, ali48, phone_map):
    """phone_segments tile every utterance's frames in order, each a run of one 48-set label
    (runs of one label may hold several segments: one per PHN line); seg.48 and seg.39
    list their labels."""
    from rhmmtk.io.segments import read_segments

    segs = read_segments(d / "phone_segments")
    seg48, seg39 = read_alignment(d / "seg.48"), read_alignment(d / "seg.39")
    assert list(segs) == list(ali48) == list(seg48) == list(seg39)
    for utt, sg in segs.items():
        assert sg.starts[0] == 0 and sg.ends[-1] == len(ali48[utt])
        assert np.all(sg.starts[1:] == sg.ends[:-1])
        for s, e, lab in zip(sg.starts, sg.ends, sg.labels):
            assert set(ali48[utt][s:e]) == {lab}
        changes = sum(a != b for a, b in zip(ali48[utt], ali48[utt][1:]))
        assert len(sg.labels) >= changes + 1
        assert seg48[utt] == sg.labels
        assert seg39[utt] == [phone_map.fold48to39[p] for p in sg.labels]


def test_dev_subset(timit, tmp_path):
    a = prepare(timit, tmp_path / "a", CONF, dev_size=50)
    b = prepare(timit, tmp_path / "b", CONF, dev_size=50)
    c = prepare(timit, tmp_path / "c", CONF, dev_size=50, seed=1)
    assert a["dev"][0] == 50
    dev = lambda d: read_scp(d / "dev" / "utt2spk")
    assert dev(tmp_path / "a") == dev(tmp_path / "b") != dev(tmp_path / "c")
    per_speaker = np.unique(list(dev(tmp_path / "a").values()), return_counts=True)[1]
    assert len(per_speaker) == 25 and set(per_speaker) == {2}
    assert (tmp_path / "a" / "train" / "ali.48").read_text() == \
        (tmp_path / "c" / "train" / "ali.48").read_text()


def lower_copy(timit, dest, spks):
    """Copy some speakers' WAV and PHN files with every name in lower case."""
    for part, dr, spk in spks:
        src = timit / part / dr / spk
        out = dest / part.lower() / dr.lower() / spk.lower()
        out.mkdir(parents=True)
        for f in src.iterdir():
            if f.suffix in (".WAV", ".PHN"):
                shutil.copy(f, out / f.name.lower())


SOME = [("TRAIN", "DR1", "FESZ1"), ("TRAIN", "DR1", "FMLP0"), ("TEST", "DR1", "FELC0"),
        ("TEST", "DR1", "FAKS0")]


def test_lower_case_copy(timit, tmp_path):
    lower_copy(timit, tmp_path / "corpus" / "timit", SOME)  # found through corpus/timit/
    summary = prepare(tmp_path / "corpus", tmp_path / "low", CONF)
    assert {k: v[0] for k, v in summary.items()} == {"train": 16, "dev": 8, "test": 8}
    prepare(timit, tmp_path / "up", CONF)
    for name in ("train", "dev", "test"):
        low = read_alignment(tmp_path / "low" / name / "ali.48")
        up = read_alignment(tmp_path / "up" / name / "ali.48")
        assert low and all(low[k] == up[k] for k in low)
        paths = read_scp(tmp_path / "low" / name / "wav.scp").values()
        assert all(p.endswith(".wav") for p in paths)


def test_q_is_deleted_and_coverage(phone_map):
    starts, ends = np.array([0, 800, 1200, 2000]), np.array([800, 1200, 2000, 3000])
    labels = frame_labels(starts, ends, ["h#", "q", "iy", "h#"], 3000, phone_map)
    centres = np.arange(num_frames(3000)) * 160 + 200
    # q's frames (centres 840, 1000, 1160) join the preceding phone
    want = ["iy" if 1200 <= c < 2000 else "sil" for c in centres]
    assert labels == want and len(labels) == 18
    assert frame_labels(np.array([0, 300]), np.array([300, 3000]), ["q", "ax-h"], 3000,
                        phone_map)[0] == "ax"  # leading q joins the following phone
    # frames in the zero-padded tail take the last phone; a PHN ending short is an error
    assert frame_labels(np.array([0]), np.array([2700]), ["aa"], 3000, phone_map)[-1] == "aa"
    with pytest.raises(InputError, match="does not cover the audio"):
        frame_labels(np.array([0]), np.array([2500]), ["aa"], 3000, phone_map)
    with pytest.raises(InputError, match="unknown phone 'xx'"):
        frame_labels(np.array([0]), np.array([3000]), ["xx"], 3000, phone_map)


def script_fails(*args):
    p = subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True,
                       text=True)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    errors = [l for l in p.stderr.splitlines() if "error:" in l]
    assert len(errors) == 1, p.stderr
    return errors[0]


def test_errors(timit, tmp_path):
    err = script_fails(tmp_path / "nowhere", tmp_path / "data")
    assert "TIMIT folder not found" in err and "LDC93S1" in err and "nowhere" in err
    (tmp_path / "empty" / "TRAIN").mkdir(parents=True)
    err = script_fails(tmp_path / "empty", tmp_path / "data")
    assert "no TEST folder" in err

    corpus = tmp_path / "c"
    lower_copy(timit, corpus, SOME)
    phn = corpus / "train" / "dr1" / "fesz1" / "sx215.phn"
    good = phn.read_text()
    phn.write_text(good.replace(" dh\n", " dh2\n"))
    err = script_fails(corpus, tmp_path / "data")
    assert "unknown phone 'dh2'" in err and "sx215.phn" in err and "FESZ1_SX215" in err
    assert not (tmp_path / "data").exists()  # every file is checked before any is written
    lines = good.splitlines()
    phn.write_text("\n".join(lines[: len(lines) // 2]) + "\n")
    err = script_fails(corpus, tmp_path / "data")
    assert "does not cover the audio" in err and "sx215.phn" in err
    phn.write_text("0 10 h#\nfoo\n")
    with pytest.raises(InputError, match="line 2: expected 'start_sample end_sample phone'"):
        prepare(corpus, tmp_path / "data", CONF)
    phn.write_text(good)
    (corpus / "train" / "dr1" / "fesz1" / "sx221.phn").unlink()
    with pytest.raises(InputError, match="SX221.WAV has no SX221.PHN"):
        prepare(corpus, tmp_path / "data", CONF)
