"""Smoke run of recipes/nettalk/run_competitors.sh (tiny sizes and grids): per-size result
tables, the learning curve and regularisation path, and their figures."""
import subprocess

from test_recipes import (SMALL_SPLIT, _check_png, _run, _table, _tree, assert_all_through_cmd,
                          cmd_guard, small_nettalk)

SYSTEMS = ["UNIGRAM", "HMM", "EM", "SPECTRAL", "HKZ", "MM-NUCLEAR", "MM-L2", "MM-NONE",
           "PERCEPTRON", "CRF", "SUBPAT-PAPER", "SUBPAT-PAPER-CRF"]


def test_competitors_recipe_smoke(tmp_path, nettalk):
    recipe = _tree(tmp_path, "nettalk")
    exp = tmp_path / "exp"
    env, runner, outside, inside = cmd_guard(tmp_path)
    # about 60 commands; each starts a Python process (minutes on a loaded machine)
    # NETtalk's every 8th word, as test_nettalk_recipe_smoke: 1,800 / 300 / 401 words
    _run(recipe, "--data", small_nettalk(nettalk, tmp_path / "nettalk.data"), "--split-sizes",
         SMALL_SPLIT, "--exp", exp, "--sizes", "100 200",
         "--reg-path-size", "100", "--hkz-m-list", "4", "--nuclear-taus", "0.03",
         "--l2-taus", "0.001", "--rates", "100", "--steps", "4", "--iters", "2",
         "--perceptron-iters", "1", "--batch-words", "50",
         "--crf-iters", "3", "--subpat-iters", "2", "--subpat-crf-l2s", "1", "--m-list", "2",
         "--smooth-list", "30", "--em-iters", "2",
         "--em-dev-every", "1", "--parallel", "2", "--cmd", runner, script="run_competitors.sh",
         timeout=3600, env=env)
    assert_all_through_cmd(outside, inside)
    for n in (100, 200):
        rows = _table(exp / f"results_{n}.tsv")
        assert [r["system"] for r in rows] == SYSTEMS
        for r in rows:
            assert 0 < float(r["dev_acc"]) <= 100 and 0 < float(r["test_acc"]) <= 100
            assert float(r["train_s"]) >= 0
    # the R-HMMs read letter windows learned on their own subset (as run.sh), the others letters
    for config, archive in (("em_m2", "train_200/test.win.h5"), ("spectral_m2_c30",
                            "train_200/test.win.h5"), ("crf", "test/let.h5")):
        assert (exp / "n200" / config / "test_input").read_text().strip() == f"data/{archive}"
    # trained two at a time, the dev grid still lists the configurations in the grid's order
    grid = [(r["words"], r["config"]) for r in _table(exp / "dev_grid.tsv")]
    assert grid[:6] == [("100", c) for c in ("unigram", "hmm", "em_m2", "spectral_m2_c30",
                                             "hkz_m4", "mm_nuclear_0.03_c100_avgdecay3")]
    # SUBPAT-PAPER-CRF's grid: without and with averaging (--subpat-crf-averages "no yes")
    assert grid[-2:] == [("200", "subpat_paper_crf_l2_1"), ("200", "subpat_paper_crf_avg_l2_1")]
    assert len(grid) == len(set(grid)) == 2 * (len(SYSTEMS) + 1)
    curve = _table(exp / "learning_curve.tsv")
    assert len(curve) == 2 * len(SYSTEMS)
    path = _table(exp / "reg_path.tsv")
    assert {r["reg"] for r in path} == {"nuclear", "l2", "none"}
    for fig in ("learning_curve", "reg_path"):
        _check_png(exp / "figures" / f"{fig}.png")


def test_competitors_recipe_bad_parallel(tmp_path):
    recipe = _tree(tmp_path, "nettalk")
    for value in ("0", "two"):
        p = subprocess.run(["bash", "run_competitors.sh", "--parallel", value, "--exp",
                            str(tmp_path / "exp")], cwd=recipe, capture_output=True, text=True)
        assert p.returncode == 1
        assert p.stderr.strip().splitlines() == [
            f"run_competitors.sh: error: --parallel must be a positive integer, got '{value}'"]


def test_competitors_recipe_failed_training_stops_the_grid(tmp_path, nettalk):
    # a configuration that fails (tau not positive) while others train beside it: the
    # recipe names it, exits non-zero and writes no dev grid
    recipe = _tree(tmp_path, "nettalk")
    exp = tmp_path / "exp"
    p = subprocess.run(["bash", "run_competitors.sh", "--data",
                        str(small_nettalk(nettalk, tmp_path / "nettalk.data")), "--split-sizes",
                        SMALL_SPLIT, "--exp", str(exp),
                        "--sizes", "100", "--systems", "UNIGRAM MM-NUCLEAR CRF",
                        "--nuclear-taus", "-1", "--rates", "100", "--parallel", "2",
                        "--stop-stage", "2"], cwd=recipe, capture_output=True, text=True,
                       timeout=900)
    assert p.returncode == 1
    assert "MM-NUCLEAR mm_nuclear_-1_c100_avgdecay3 (100 words) failed" in p.stderr
    assert "--tau must be positive" in p.stderr
    assert not (exp / "dev_grid.tsv").exists()
