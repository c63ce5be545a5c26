"""rhmmtk.corpora.synthetic and its command line recipes/timit/local/make_synthetic.py:
the recipe layout and the repeated codes (--repeat) that the spectral diagnosis
(docs/SPECTRAL_DIAGNOSIS.md, section 13) runs the TIMIT recipe on, and the bare layout the
benchmarks use."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rhmmtk.corpora import synthetic
from rhmmtk.training_data import read_corpus, read_observations

SCRIPT = Path(__file__).resolve().parents[1] / "recipes" / "timit" / "local" / "make_synthetic.py"


def _run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)],
                          capture_output=True, text=True)


def _equal_neighbours(codes):
    return np.mean(np.concatenate([x[1:] == x[:-1] for x in codes]))


def test_recipe_layout_writes_what_the_timit_recipe_reads(tmp_path):
    out = tmp_path / "data"
    r = _run("--recipe-layout", "--frames", 6000, "--dev-frames", 3000, "--test-frames", 2000,
             "--seed", 3, out)
    assert r.returncode == 0, r.stderr
    for name, frames in (("train", 6000), ("dev", 3000), ("test", 2000)):
        c = read_corpus(out / name / "obs.h5", out / name / "ali.48")
        n = sum(len(x) for x in c.obs)
        # utterances are cut at phone boundaries near 200-400 frames: within one of them
        assert frames <= n < frames + 420, (name, n)
        assert all(len(a) == len(x) for a, x in zip(c.labels, c.obs, strict=True))
    # three samples of one world, not one sample three times
    first = [read_observations(out / name / "obs.h5")[1][0] for name in ("train", "dev", "test")]
    assert not np.array_equal(first[0][:50], first[1][:50])
    assert not np.array_equal(first[1][:50], first[2][:50])
    assert not (out / "train" / "templates.conf").exists()


def test_dev_utterances_keep_the_first_of_the_same_draw(tmp_path):
    # paper 000's dev set is 200 utterances: the first N of the dev draw, train and test
    # as without the option
    common = ("--recipe-layout", "--frames", 3000, "--dev-frames", 3000, "--test-frames", 2000)
    assert _run(*common, tmp_path / "all").returncode == 0
    r = _run(*common, "--dev-utterances", 4, tmp_path / "four")
    assert r.returncode == 0, r.stderr
    for name in ("train", "dev", "test"):
        keys, obs, _ = read_observations(tmp_path / "all" / name / "obs.h5")
        keys4, obs4, _ = read_observations(tmp_path / "four" / name / "obs.h5")
        n = 4 if name == "dev" else len(keys)
        assert len(keys) > 4 and list(keys4) == list(keys[:n])
        assert all(np.array_equal(a, b) for a, b in zip(obs[:n], obs4, strict=True))
    ali = (tmp_path / "four" / "dev" / "ali.48").read_text().splitlines()
    assert len(ali) == 4
    r = _run(*common, "--dev-utterances", 8, tmp_path / "bad")
    assert r.returncode != 0 and "--dev-utterances must be in [0, --dev-frames / 420 = 7]" in r.stderr


def test_recipe_layout_refuses_a_missing_set(tmp_path):
    r = _run("--recipe-layout", "--frames", 3000, "--dev-frames", 1000, tmp_path / "d")
    assert r.returncode != 0 and "--test-frames must be" in r.stderr


@pytest.mark.parametrize("opt, bad", [("--repeat", -0.1), ("--repeat", 1.0),
                                      ("--states", 0), ("--voices", 0),
                                      ("--voice-change", 1.5), ("--context", -0.5),
                                      ("--codes", 1000), ("--test-frames", 500),
                                      ("--context-parts", "last"), ("--dev-utterances", 1)])
def test_option_values_out_of_range_are_refused(tmp_path, opt, bad):
    # (--test-frames without --recipe-layout, --context-parts without --context)
    r = _run(opt, bad, "--frames", 2000, tmp_path / "d")
    assert r.returncode != 0 and f"{opt} must be" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "d").exists()


def test_repeat_makes_neighbouring_codes_equal_at_about_its_rate():
    rng = np.random.default_rng(5)
    world = synthetic.make_world(10_000, rng)
    _, codes = synthetic.generate(world, 40_000, rng)
    base = _equal_neighbours(codes)
    assert base < 0.03                      # independent given (phone, third): rare
    for rho in (0.2, 0.5):
        rep = synthetic.repeat_codes(codes, rho, np.random.default_rng(1))
        assert [len(x) for x in rep] == [len(x) for x in codes]
        # P(x[t] = x[t-1]) = rho + (1 - rho) base, up to sampling noise (40,000 positions)
        assert abs(_equal_neighbours(rep) - (rho + (1 - rho) * base)) < 0.01
        # each code is one of its utterance's own codes at or before its position, and
        # an utterance's first position is never a copy
        for x, y in zip(codes, rep, strict=True):
            assert y[0] == x[0]
            src = np.flatnonzero(y != np.roll(y, 1))
            assert np.array_equal(y[src[src > 0]], x[src[src > 0]])


# sha256 of the codes (int64, concatenated) and the alignment file that the generator made
# with --frames 3000 --seed 2 before it had any of the options below (commit d41050e)
BEFORE_OPTIONS = "fb47a7d049174bcd56066d7b11a445635396003b6289a1d1834e6704d06cba78"


def test_without_the_options_the_corpus_is_as_before_them(tmp_path):
    import hashlib
    out = tmp_path / "a"
    assert _run("--frames", 3000, "--seed", 2, "--repeat", 0, out).returncode == 0
    _, x, _ = read_observations(out / "obs.h5")
    h = hashlib.sha256(np.concatenate(x).astype(np.int64).tobytes() + (out / "ali").read_bytes())
    assert h.hexdigest() == BEFORE_OPTIONS


def test_voices_move_about_their_share_of_the_codes():
    n = 20_000
    maps = synthetic.code_maps(n, 4, 0.5, np.random.default_rng(3))
    assert maps.shape == (4, n)
    kept = (maps == np.arange(n)).mean(axis=1)
    # moved codes land on themselves with probability 1/n only
    assert np.all(np.abs(kept - 0.5) < 0.02), kept
    assert not np.array_equal(maps[0], maps[1])
    codes = [np.arange(10), np.arange(5, 25)]
    spoken = synthetic.speak(codes, maps, np.random.default_rng(0))
    assert [len(x) for x in spoken] == [10, 20]
    # every utterance through one voice's map
    assert all(any(np.array_equal(y, maps[v][x]) for v in range(4)) for x, y in zip(codes, spoken))


def test_voices_leave_the_phones_as_without_them(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert _run("--frames", 3000, "--seed", 2, a).returncode == 0
    assert _run("--frames", 3000, "--seed", 2, "--voices", 3, b).returncode == 0
    assert (a / "ali").read_text() == (b / "ali").read_text()
    _, xa, _ = read_observations(a / "obs.h5")
    _, xb, _ = read_observations(b / "obs.h5")
    assert not all(np.array_equal(x, y) for x, y in zip(xa, xb))


def test_context_maps_only_the_codes_of_a_phones_first_and_last_part():
    world = synthetic.make_world(5_000, np.random.default_rng(4))
    plain = synthetic.generate(world, 20_000, np.random.default_rng(9))
    world["context"] = np.tile(np.arange(5_000), (len(synthetic.PHONES), 1))      # identity maps
    world["context_parts"] = "both"
    same = synthetic.generate(world, 20_000, np.random.default_rng(9))
    assert all(np.array_equal(x, y) for x, y in zip(plain[1], same[1], strict=True))
    world["context"] = synthetic.code_maps(5_000, len(synthetic.PHONES), 1.0, np.random.default_rng(2))
    moved = synthetic.generate(world, 20_000, np.random.default_rng(9))
    assert all(np.array_equal(a, b) for a, b in zip(plain[0], moved[0]))
    changed = np.mean(np.concatenate([x != y for x, y in zip(plain[1], moved[1])]))
    # every code of the first and last thirds is remapped (but 15% uniform noise), the
    # middle thirds never: about 2/3 x 0.85 of the positions
    assert 0.45 < changed < 0.66, changed


def test_context_parts_split_the_remapped_positions():
    world = synthetic.make_world(5_000, np.random.default_rng(4))
    plain = synthetic.generate(world, 20_000, np.random.default_rng(9))[1]
    world["context"] = synthetic.code_maps(5_000, len(synthetic.PHONES), 1.0, np.random.default_rng(2))
    changed = {}
    for parts in ("both", "first", "last"):
        world["context_parts"] = parts
        moved = synthetic.generate(world, 20_000, np.random.default_rng(9))[1]
        changed[parts] = np.concatenate([x != y for x, y in zip(plain, moved)])
    assert changed["first"].any() and changed["last"].any()
    assert not (changed["first"] & changed["last"]).any()
    assert np.array_equal(changed["first"] | changed["last"], changed["both"])


def _runs_around(labels):
    """Per position of each utterance: the label of the run before its run and of the run
    after it; -1 in the first two and last two runs, where the cuts and the edges
    relabelled sil make the runs differ from the chain's phones."""
    before, after = [], []
    for a in labels:
        starts = np.flatnonzero(np.r_[True, a[1:] != a[:-1]])
        run = np.cumsum(np.r_[True, a[1:] != a[:-1]]) - 1
        run_label = a[starts]
        prev = np.r_[-1, run_label[:-1]]
        nxt = np.r_[run_label[1:], -1]
        edge = (run < 2) | (run > len(starts) - 3)
        before.append(np.where(edge, -1, prev[run]))
        after.append(np.where(edge, -1, nxt[run]))
    return before, after


@pytest.mark.parametrize("parts", ["first", "last"])
def test_context_maps_by_the_right_neighbour(parts):
    world = synthetic.make_world(5_000, np.random.default_rng(4))
    labels, plain = synthetic.generate(world, 20_000, np.random.default_rng(9))
    world["context"] = synthetic.code_maps(5_000, len(synthetic.PHONES), 1.0, np.random.default_rng(2))
    world["context_parts"] = parts
    _, moved = synthetic.generate(world, 20_000, np.random.default_rng(9))
    before, after = _runs_around(labels)
    checked = 0
    for a, x, y, b, n in zip(labels, plain, moved, before, after, strict=True):
        hood = b if parts == "first" else n
        # away from the utterance's edges every changed code went through the map of
        # that neighbour
        at = np.flatnonzero((x != y) & (hood >= 0))
        assert np.array_equal(y[at], world["context"][hood[at], x[at]])
        checked += at.size
    assert checked > 1000


def test_the_bare_layout_is_what_the_benchmarks_read(tmp_path):
    out = tmp_path / "syn"
    lines = synthetic.make_corpus(out, synthetic.SyntheticOptions(frames=3000, dev_frames=1000,
                                                                   seed=2))
    assert len(lines) == 2 and lines[1].startswith(str(out / "dev"))
    for d, frames in ((out, 3000), (out / "dev", 1000)):
        c = read_corpus(d / "obs.h5", d / "ali")
        assert frames <= sum(len(x) for x in c.obs) < frames + 420
        assert (d / "templates.conf").read_text() == synthetic.TEMPLATES


def test_bad_options_are_one_line_from_the_library_too(tmp_path):
    with pytest.raises(synthetic.InputError, match="--states must be >= 1, got 0"):
        synthetic.make_corpus(tmp_path / "d", synthetic.SyntheticOptions(states=0))
    assert not (tmp_path / "d").exists()
