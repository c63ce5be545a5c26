"""Smoke runs of the TIMIT recipe (recipes/timit/run.sh), as test_recipes.py runs NETtalk's:
stages 0-15 on a small TIMIT root of links (timit_subset), --synthetic-size at a tiny size,
and the error for a missing corpus. A file of its own so that the two long recipe smokes
go to different workers under `--dist loadfile` (scripts/setup_and_test.sh)."""
import os
import re
import subprocess

import pytest

from conftest import REPO, shared_dir
from test_recipes import (ABLATIONS, _check_results, _run, _table, _tree, assert_all_through_cmd,
                          cmd_guard)


def _by_sex(speakers, n):
    """n speakers, half of them female (TIMIT speaker ids start with the speaker's sex):
    a subset of one sex tests on voices the models never heard (dev 65% and test 44% frame
    accuracy when the first speaker of each region, all female, was kept)."""
    f = [s for s in speakers if s.startswith("F")]
    m = [s for s in speakers if s.startswith("M")]
    return f[:(n + 1) // 2] + m[:n // 2]


def timit_subset(corpus, dest, test_speakers=4, dev_speakers=4):
    """A TIMIT root at `dest` of links to some speaker folders of `corpus` (8 SX/SI
    utterances each): one training speaker per dialect region, female and male in turn;
    `test_speakers` core test and `dev_speakers` dev speakers of the recipe's lists, half
    of them female."""
    conf = REPO / "recipes" / "timit" / "conf"
    keep = set(_by_sex((conf / "core_test_spk.txt").read_text().split(), test_speakers))
    keep |= set(_by_sex((conf / "dev_spk.txt").read_text().split(), dev_speakers))
    for i, region in enumerate(sorted((corpus / "TRAIN").iterdir())):
        keep.add(_by_sex(sorted(s.name for s in region.iterdir()), 2)[i % 2])
    for spk in corpus.glob("*/DR*/*"):
        if spk.name in keep:
            link = dest / spk.relative_to(corpus)
            link.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(spk, link)
    return dest


def test_timit_recipe_smoke(tmp_path):
    """Stages 0-15 on 64 training, 32 dev and 32 core test utterances of festival-timit
    (timit_subset): every stage runs as on the whole corpus, in 228 s of CPU (294 s on
    the whole corpus; the rest is process start-ups)."""
    corpus = shared_dir() / "data" / "festival-timit"
    if not corpus.is_dir():
        pytest.skip(f"festival-timit not found at {corpus}")
    root = timit_subset(corpus, tmp_path / "timit")
    recipe = _tree(tmp_path, "timit")
    exp = tmp_path / "exp"
    env, runner, outside, inside = cmd_guard(tmp_path)
    _run(recipe, "--timit-root", root, "--exp", exp, "--codes", "200", "--kmeans-iters", "3",
         "--m-list", "1 2", "--smooth-list", "30", "--em-iters", "2",
         "--emission-floor-list", "0.001 2",
         "--cdhmm-states-list", "1", "--cdhmm-mix-list", "1", "--cdhmm-lm-iters", "2",
         "--cdhmm-lm-scales", "4", "--cdhmm-penalties", "-10", "--cdhmm-lambdas", "10000",
         "--cdhmm-lambda-down", "0", "--cdhmm-lm-restarts", "1",
         "--hcrf-mix-list", "1", "--hcrf-knots-list", "2", "--hcrf-iters", "2",
         "--hcrf-tagger-iters", "1", "--hcrf-tagger-mix-list", "1",
         "--ablations", " ".join(ABLATIONS), "--stop-stage", "15", "--cmd", runner, env=env)
    assert_all_through_cmd(outside, inside)
    rows = _check_results(exp, ["CDHMM-ML(s1)", "CDHMM-NCOH(s1)", "CDHMM-NCOS(s1)",
                                "HMM-MAXMARG(s3)", "HCRF-TAG(s3)", "HCRF-TAG-VIT(s3)"])
    hcrf = _table(exp / "hcrf_results.tsv")
    assert [r["system"] for r in hcrf] == ["HCRF-ML", "HCRF-MC", "HCRF-DC"]
    assert all(0 < float(r["test_err"]) < 100 for r in hcrf)
    assert (exp / "compare_hcrf_DC_ML.txt").read_text().count("p=") >= 1
    tag = _table(exp / "hcrf_tagger_results.tsv")
    assert [r["system"] for r in tag] == ["HMM-MAXMARG(s3)", "HCRF-TAG(s3)", "HCRF-TAG-VIT(s3)"]
    assert all(0 < float(r["test_per"]) < 100 and float(r["train_s"]) > 0 for r in tag)
    per = _table(exp / "cdhmm_per.tsv")
    assert len(per) == 1 and 0 < float(per[0]["ml_test_per"]) < 100
    assert 0 < float(per[0]["lm_test_per"]) < 100 and 0 < float(per[0]["ncos_test_per"]) < 100
    assert per[0]["lm_lambda"] == "10000" and 0 < float(per[0]["lm_vs_ml_p"]) <= 1
    for d in ("lm_s1_m1", "lms_s1_m1"):      # --cdhmm-lm-restarts reaches the trainer
        log = (exp / d / "lambda_10000" / "log" / "train.log").read_text()
        assert "--restarts 1 " in log.splitlines()[0]
    _check_cdhmm_parallel(recipe, exp, env)
    assert (exp / "compare_spectral_em.txt").read_text().count("p=") >= 1
    stages = _table(exp / "log" / "stages.tsv")
    assert len(stages) >= 8
    by = {r["system"]: float(r["test_acc"]) for r in rows}
    assert by["HMM"] > by["UNIGRAM"]
    # stage 4 chose the emission backoff on dev with the HMM; EM and SPECTRAL use it
    from rhmmtk.models import load_model

    choice = _table(exp / "log" / "emission_floor.tsv")
    eps = (exp / "emission_floor").read_text().strip()
    assert eps == max(choice, key=lambda r: float(r["dev_acc"]))["emission_floor"]
    hmm = [r for r in _table(exp / "dev_grid.tsv") if r["system"] == "HMM"]
    assert [r["config"] for r in hmm] == ["hmm_m1_e0.001", "hmm_m1_e2"]
    assert load_model(exp / "em_m2" / "final.h5").backoff[0] == float(eps)
    spectral = load_model(exp / "spectral_m2_c30" / "final.h5")
    assert spectral.info["options"]["emission_floor"] == float(eps)


def _check_cdhmm_parallel(recipe, exp, env):
    """local/run_cdhmm.sh --parallel 2 over two cells (M = 1, 2, NCO-H): both cells are
    made, and the cell the smoke trained one at a time is the same, run for run."""
    par = exp.parent / "exp_parallel"
    _run(recipe, "--data", recipe / "data", "--exp", par, "--stage", "9", "--stop-stage", "10",
         "--states-list", "1", "--mix-list", "1 2", "--systems", "nco-h", "--lm-iters", "2",
         "--lm-scales", "4", "--penalties", "-10", "--lambdas", "10000", "--lambda-down", "0",
         "--lm-restarts", "1", "--parallel", "2", script="local/run_cdhmm.sh", env=env)
    for f in ("cdhmm_s1_m1/history.tsv", "cdhmm_s1_m1/dev_grid.tsv",
              "lm_s1_m1/lambda_10000/history.tsv", "lm_s1_m1/dev_grid.tsv"):
        assert (par / f).read_text() == (exp / f).read_text(), f
    assert _table(par / "lm_s1_m2" / "dev_grid.tsv")[0]["mixtures"] == "2"
    assert (par / "lm_s1_m2" / "lambda").read_text().strip() == "10000"


def test_timit_recipe_synthetic_size_smoke(tmp_path):
    """--synthetic-size (paper 000 at TIMIT's size, RESULTS_timitsize) at a tiny size:
    stage 0 draws train, dev and test in TIMIT's proportions through $cmd (stamped, so a
    rerun reuses it), stages 1-2 (MFCCs, k-means) are skipped, stage 3 featurizes."""
    recipe = _tree(tmp_path, "timit")
    data, exp = tmp_path / "data", tmp_path / "exp"
    env, runner, outside, inside = cmd_guard(tmp_path)
    args = ("--synthetic-size", "7392", "--data", data, "--exp", exp, "--stop-stage", "3",
            "--cmd", runner)
    _run(recipe, *args, env=env)
    assert not outside.exists(), "run outside $cmd:\n" + outside.read_text()
    assert "make_synthetic.py --recipe-layout --frames 7392 --dev-frames 800 " \
        "--dev-utterances 0 --test-frames 384 --seed 7 --context 0.5" in inside.read_text()
    frames = {s: sum(len(line.split()) - 1 for line in (data / s / "ali.48").open())
              for s in ("train", "dev", "test")}
    # the generator draws whole utterances (200-420 frames) until the ask is reached
    for s, asked in (("train", 7392), ("dev", 800), ("test", 384)):
        assert asked <= frames[s] < asked + 420, frames
    assert (data / "train" / "feats.tpl.h5").is_file() and (data / "test" / "obs.h5").is_file()
    assert [r["stage"] for r in _table(exp / "log" / "stages.tsv")] == ["0", "3"]
    jobs = len(inside.read_text().splitlines())
    _run(recipe, *args, env=env)                        # all current: no job runs again
    assert len(inside.read_text().splitlines()) == jobs
    p = subprocess.run(["bash", "run.sh", "--synthetic-size", "big"], cwd=recipe,
                       capture_output=True, text=True, env=env)
    assert p.returncode != 0 and p.stderr.count("\n") == 1 and "--synthetic-size" in p.stderr
    # --dev-size N: the first N utterances of the same draw (paper 000's 200 at timit)
    _run(recipe, "--synthetic-size", "7392", "--dev-size", "1", "--data", tmp_path / "d1",
         "--exp", tmp_path / "e1", "--stop-stage", "0", env=env)
    dev = (tmp_path / "d1" / "dev" / "ali.48").read_text().splitlines()
    assert len(dev) == 1 and dev[0] == (data / "dev" / "ali.48").read_text().splitlines()[0]
    assert (tmp_path / "d1" / "test" / "ali.48").read_text() == \
        (data / "test" / "ali.48").read_text()


def test_timit_recipe_refuses_a_missing_corpus(tmp_path):
    recipe = _tree(tmp_path, "timit")
    p = subprocess.run(["bash", "run.sh", "--timit-root", tmp_path / "nope"], cwd=recipe,
                       capture_output=True, text=True)
    assert p.returncode != 0 and "TIMIT" in p.stderr
    # the stand-in it recommends is named by a path that works from anywhere
    hint = re.search(r"^  (\S+) for the synthesized stand-in", p.stderr, re.M).group(1)
    assert os.path.isabs(hint) and hint.endswith("/shared/data/festival-timit")
