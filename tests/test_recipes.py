"""Smoke runs of both recipes end to end (small grids, few EM iterations), as a user runs
them: results tables, dev grids, figures (non-trivial PNGs) and per-step logs.

Each recipe is run from a copy of its folder in a temporary tree (with scripts/ linked),
so the runs leave nothing in the repository.
"""
import csv
import os
import pathlib
import re
import shutil
import subprocess

import pytest

from conftest import REPO, shared_dir


def _tree(tmp_path, name):
    root = tmp_path / "repo"
    (root / "recipes").mkdir(parents=True)
    shutil.copytree(REPO / "recipes" / name, root / "recipes" / name,
                    ignore=shutil.ignore_patterns("data", "exp"))
    os.symlink(REPO / "scripts", root / "scripts")
    return root / "recipes" / name


def _run(recipe, *args, timeout=900, script="run.sh"):
    p = subprocess.run(["bash", script, *map(str, args)], cwd=recipe, capture_output=True,
                       text=True, timeout=timeout)
    assert p.returncode == 0, f"run.sh failed ({p.returncode}):\n{p.stdout}\n{p.stderr[-4000:]}"
    return p


def _table(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def _check_png(path):
    data = pathlib.Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    assert len(data) > 10_000, f"{path}: suspiciously small image ({len(data)} bytes)"
    import matplotlib.image

    img = matplotlib.image.imread(str(path))
    assert img.shape[0] > 100 and img.shape[1] > 100
    assert img.std() > 0.01, f"{path}: a blank image"


def _check_results(exp, extra=()):
    rows = _table(exp / "results.tsv")
    assert [r["system"] for r in rows] == ["UNIGRAM", "HMM", "EM", "SPECTRAL", *extra]
    for r in rows:
        assert 0 < float(r["dev_acc"]) <= 100 and 0 < float(r["test_acc"]) <= 100
    grid = _table(exp / "dev_grid.tsv")
    assert {r["system"] for r in grid} == {"UNIGRAM", "HMM", "EM", "SPECTRAL"}
    for fig in ("fig5_dev_vs_m", "fig7_ablation", "em_dev_curve"):
        _check_png(exp / "figures" / f"{fig}.png")
        assert len(_table(exp / "figures" / f"{fig}.tsv")) >= 2
    assert len(_table(exp / "ablation.tsv")) == 3
    logs = list(exp.glob("*/log/*.log"))
    assert logs and all("command:" in p.read_text() for p in logs if "decode" in p.name)
    return rows


def test_nettalk_recipe_smoke(tmp_path, nettalk):
    recipe = _tree(tmp_path, "nettalk")
    exp = tmp_path / "exp"
    p = _run(recipe, "--data", nettalk, "--exp", exp, "--m-list", "1 2", "--smooth-list", "30",
             "--em-iters", "2", "--em-mode", "single")
    rows = _check_results(exp)
    by = {r["system"]: float(r["test_acc"]) for r in rows}
    assert by["HMM"] > by["UNIGRAM"]
    assert "SPECTRAL" in p.stdout
    # the recipe's beam reaches every R-HMM decoding: dev, test, ablation, EM's dev scoring
    beam = re.search(r"^beam=(\S+)", (recipe / "run.sh").read_text(), re.M).group(1)
    runs = [f for f in exp.glob("*/log/*.log") if f.name.startswith("decode.")]
    runs += list(exp.glob("em_m*/log/train.log"))
    assert len(runs) > 10
    for f in runs:
        assert f"--beam {beam}" in f.read_text(), f
    # a finished stage is not redone: a second run of the training stages is quick and
    # leaves the models untouched
    model = exp / "em_m2" / "final.h5"
    before = model.stat().st_mtime_ns
    _run(recipe, "--data", nettalk, "--exp", exp, "--m-list", "1 2", "--smooth-list", "30",
         "--em-iters", "2", "--em-mode", "single", "--stage", "3", "--stop-stage", "4")
    assert model.stat().st_mtime_ns == before
    # --parallel 2 (two trainings, decodings, ablations at once) gives the same tables
    exp2 = tmp_path / "exp2"
    _run(recipe, "--data", nettalk, "--exp", exp2, "--m-list", "1 2", "--smooth-list", "30",
         "--em-iters", "2", "--em-mode", "single", "--stage", "2", "--parallel", "2")
    for name in ("dev_grid.tsv", "results.tsv", "ablation.tsv"):
        assert (exp2 / name).read_text() == (exp / name).read_text(), name
    assert (exp2 / "ablation_templates" / "log" / "reused").is_file()
    p = subprocess.run(["bash", "run.sh", "--parallel", "0"], cwd=recipe, capture_output=True,
                       text=True)
    assert p.returncode != 0 and "--parallel must be a positive integer" in p.stderr


def test_nettalk_recipe_says_where_to_download(tmp_path):
    recipe = _tree(tmp_path, "nettalk")
    p = subprocess.run(["bash", "run.sh", "--data", tmp_path / "missing.data"], cwd=recipe,
                       capture_output=True, text=True)
    assert p.returncode != 0
    assert "UCI" in p.stderr and "--data" in p.stderr


def test_timit_recipe_smoke(tmp_path):
    root = shared_dir() / "data" / "festival-timit"
    if not root.is_dir():
        pytest.skip(f"festival-timit not found at {root}")
    recipe = _tree(tmp_path, "timit")
    exp = tmp_path / "exp"
    _run(recipe, "--timit-root", root, "--exp", exp, "--codes", "200", "--kmeans-iters", "3",
         "--m-list", "1 2", "--smooth-list", "30", "--em-iters", "2",
         "--emission-floor-list", "0.001 2",
         "--cdhmm-states-list", "1", "--cdhmm-mix-list", "1", "--cdhmm-lm-iters", "2",
         "--cdhmm-lm-scales", "4", "--cdhmm-penalties", "-10", "--cdhmm-lambdas", "10000",
         "--hcrf-mix-list", "1", "--hcrf-knots-list", "2", "--hcrf-iters", "2",
         "--hcrf-tagger-iters", "1")
    rows = _check_results(exp, ["CDHMM-ML(s1)", "CDHMM-NCOH(s1)", "CDHMM-NCOS(s1)",
                                "HMM-MAXMARG(s3)", "HCRF-TAG(s3)"])
    hcrf = _table(exp / "hcrf_results.tsv")
    assert [r["system"] for r in hcrf] == ["HCRF-ML", "HCRF-MC", "HCRF-DC"]
    assert all(0 < float(r["test_err"]) < 100 for r in hcrf)
    assert (exp / "compare_hcrf_DC_ML.txt").read_text().count("p=") >= 1
    tag = _table(exp / "hcrf_tagger_results.tsv")
    assert [r["system"] for r in tag] == ["HMM-MAXMARG(s3)", "HCRF-TAG(s3)"]
    per = _table(exp / "cdhmm_per.tsv")
    assert len(per) == 1 and 0 < float(per[0]["ml_test_per"]) < 100
    assert 0 < float(per[0]["lm_test_per"]) < 100 and 0 < float(per[0]["ncos_test_per"]) < 100
    assert per[0]["lm_lambda"] == "10000" and 0 < float(per[0]["lm_vs_ml_p"]) <= 1
    assert (exp / "compare_spectral_em.txt").read_text().count("p=") >= 1
    stages = _table(exp / "log" / "stages.tsv")
    assert len(stages) >= 8
    by = {r["system"]: float(r["test_acc"]) for r in rows}
    assert by["HMM"] > by["UNIGRAM"]
    # stage 4 chose the emission backoff on dev with the HMM; EM and SPECTRAL use it
    from rhmmtk.models import load_model

    choice = _table_rows(exp / "log" / "emission_floor.tsv")
    eps = (exp / "emission_floor").read_text().strip()
    assert eps == max(choice, key=lambda r: float(r[1]))[0]
    hmm = [r for r in _table(exp / "dev_grid.tsv") if r["system"] == "HMM"]
    assert [r["config"] for r in hmm] == ["hmm_m1_e0.001", "hmm_m1_e2"]
    assert load_model(exp / "em_m2" / "final.h5").backoff[0] == float(eps)
    spectral = load_model(exp / "spectral_m2_c30" / "final.h5")
    assert spectral.info["options"]["emission_floor"] == float(eps)


def _table_rows(path):
    return [line.split() for line in path.read_text().splitlines()]


def test_timit_recipe_refuses_a_missing_corpus(tmp_path):
    recipe = _tree(tmp_path, "timit")
    p = subprocess.run(["bash", "run.sh", "--timit-root", tmp_path / "nope"], cwd=recipe,
                       capture_output=True, text=True)
    assert p.returncode != 0 and "TIMIT" in p.stderr
