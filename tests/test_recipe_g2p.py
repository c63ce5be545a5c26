"""Smoke run of recipes/g2p on a tiny lexicon the test writes (no ../shared needed), as a
user runs it from the repository's root with relative paths: every rhmmtk job (and
Phonetisaurus', when installed) through $cmd, a rerun that reuses what the same options
made and one with another option that redoes what depends on it, --help, and one error
line for a missing lexicon or Phonetisaurus."""
import os
import random
import shutil
import subprocess
import sys

import pytest

from test_recipes import _run, _table, _tree, assert_all_through_cmd, cmd_guard

LETTERS = {"a": "AE", "b": "B", "c": "K", "d": "D", "e": "EH", "f": "F", "g": "G",
           "h": "HH", "o": "AA", "x": "K S"}


def _pronounce(word):
    """A toy English: `ch` is one phoneme, a final `e` is silent and makes the vowel
    before the consonant before it long, `x` is two phonemes."""
    out, i = [], 0
    while i < len(word):
        if word.startswith("ch", i):
            out.append("CH")
            i += 2
            continue
        if word[i] == "e" and i == len(word) - 1:
            break
        long_a = word[i] == "a" and word.endswith("e") and i == len(word) - 3
        out.append("EY" if long_a else LETTERS[word[i]])
        i += 1
    return " ".join(out)


def _lexicon(path, n=300, seed=0):
    rng = random.Random(seed)
    words = set()
    while len(words) < n:
        words.add("".join(rng.choice("abcdefghox") for _ in range(rng.randint(3, 7))))
    path.write_text("".join(f"{w}\t{_pronounce(w)}\n" for w in sorted(words)))


def _env(path=None):
    """This python's rhmmtk first on PATH (then `path`, by default the current PATH)."""
    return dict(os.environ, PATH=os.pathsep.join([os.path.dirname(sys.executable),
                                                  path or os.environ["PATH"]]))


def _run_g2p(top, *args, env=None):
    """run.sh from the repository's root."""
    return _run(top / "recipes" / "g2p", "--lexicon", "lex/tiny.lex", "--exp", "out/exp",
                "--parts", "0.6,0.2", *args, cwd=top, timeout=300, env=env or _env())


def test_g2p_recipe_smoke(tmp_path):
    recipe = _tree(tmp_path, "g2p")
    top = recipe.parent.parent
    (top / "lex").mkdir()
    _lexicon(top / "lex" / "tiny.lex")
    exp = top / "out" / "exp"
    systems = "HMM EM SUBPAT" + (" PHONETISAURUS" if shutil.which("phonetisaurus") else "")
    env, runner, outside, inside = cmd_guard(tmp_path)
    p = _run_g2p(top, "--systems", systems, "--cmd", runner, "--em-states", "2",
                 "--em-opts", "--iters 1", "--subpat-grid", "w2_n2_g1_o2",
                 "--subpat-opts", "--iters 2 --hash-bits 16", env=env)
    assert_all_through_cmd(outside, inside)
    assert not (recipe / "out").exists() and not (recipe / "exp").exists()
    rows = _table(exp / "results.tsv")
    assert [r["system"] for r in rows] == systems.replace("EM", "EM_MM EM_VIT").split()
    hmm = rows[0]
    # the R-HMM's two decodings of one model (its training time in both rows)
    assert [r["config"] for r in rows[1:3]] == ["em2_mm", "em2_vit"]
    assert rows[1]["train_s"] == rows[2]["train_s"]
    for row, how in zip(rows[1:3], ("maxmarginal", "viterbi")):
        log = (exp / row["config"] / "log" / "decode_test.log").read_text()
        assert f"--rhmm-decode\n{how}" in log or f"--rhmm-decode {how}" in log, log[:300]
        assert 0 <= float(row["test_per"]) < 50
    # the toy lexicon is nearly regular: the HMM's +-2 letter windows get most phonemes
    # right (seen: test PER 1.2, letter accuracy 99.0), a broken alignment or decoding does not
    assert 0 <= float(hmm["test_per"]) < 10 and float(hmm["test_letter_acc"]) > 90
    assert [r["config"] for r in _table(exp / "dev_grid.tsv")] == [r["config"] for r in rows]
    # the sub-pattern tagger learns the nearly regular toy lexicon too
    assert rows[3]["config"] == "subpat_w2_n2_g1_o2" and float(rows[3]["test_per"]) < 10
    assert (exp / "hmm" / "log" / "decode_test.log").read_text().startswith("# rhmmtk decode")
    if "PHONETISAURUS" in systems:
        jobs = inside.read_text()
        assert "phonetisaurus train" in jobs and "phonetisaurus predict" in jobs
        assert float(rows[4]["test_per"]) < 10 and rows[4]["test_letter_acc"] == "-"
        assert "p=" in (exp / "compare.txt").read_text() and "Phonetisaurus" in p.stdout
    # a rerun with the same options redoes nothing
    model = exp / "hmm" / "final.h5"
    before = model.stat().st_mtime_ns
    p = _run_g2p(top, "--systems", "HMM")
    assert model.stat().st_mtime_ns == before and "redoing" not in p.stderr
    assert _table(exp / "results.tsv")[0] == hmm
    # ... another HMM window redoes its observations, the model and its decodings
    hyp = exp / "hmm" / "test.hyp"
    hyp_before = hyp.read_text()
    p = _run_g2p(top, "--systems", "HMM", "--hmm-context", "1", "--stage", "1")
    assert model.stat().st_mtime_ns != before
    for f in ("data/train/win.h5", "hmm/final.h5", "hmm/dev.hyp", "hmm/test.hyp"):
        assert f"{exp / f} was made with other options or inputs: redoing it" in p.stderr
    assert "--context\n1\n" in (exp / "data" / "train" / "win.h5.stamp").read_text()
    assert hyp.read_text() != hyp_before       # seen: 2 test words wrong at +-2, 1 at +-1


def test_g2p_recipe_help_and_errors(tmp_path):
    recipe = _tree(tmp_path, "g2p")
    top = recipe.parent.parent
    p = subprocess.run(["bash", "recipes/g2p/run.sh", "--help"], cwd=top, capture_output=True,
                       text=True, env=_env())
    assert p.returncode == 0 and p.stdout.startswith("Usage:") and "--lexicon FILE" in p.stdout
    p = subprocess.run(["bash", "recipes/g2p/run.sh", "--lexicon", "nope.lex", "--systems", "HMM"],
                       cwd=top, capture_output=True, text=True, env=_env())
    assert p.returncode == 1
    assert p.stderr == f"recipes/g2p/run.sh: error: lexicon {top}/nope.lex not found\n"
    # PHONETISAURUS asked for without the command: one line, before any work
    (top / "lex.tsv").write_text("ab\tAE B\n")
    env = _env("/usr/bin:/bin")
    if shutil.which("phonetisaurus", path=env["PATH"]):   # (not a test of this machine's set-up)
        pytest.skip("phonetisaurus is installed beside python or in /usr/bin")
    p = subprocess.run(["bash", "recipes/g2p/run.sh", "--lexicon", "lex.tsv", "--exp", "e"],
                       cwd=top, capture_output=True, text=True, env=env)
    assert p.returncode == 1 and len(p.stderr.splitlines()) == 1
    assert "phonetisaurus not found" in p.stderr and not (top / "e").exists()
    # path.sh's install check
    p = subprocess.run(["bash", "recipes/g2p/run.sh"], cwd=top, capture_output=True, text=True,
                       env=dict(os.environ, PATH="/usr/bin:/bin"))
    assert p.returncode == 1
    assert len(p.stderr.splitlines()) == 1 and "rhmmtk is not installed" in p.stderr
