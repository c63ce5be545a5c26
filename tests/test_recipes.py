"""Smoke runs of both recipes end to end (small grids, few EM iterations), as a user runs
them: results tables, dev grids, figures (non-trivial PNGs) and per-step logs; every
training and decoding through $cmd; reruns that reuse only what was made with the same
options; paths given relative to where a recipe is started; path.sh's install check.

Each recipe is run from a copy of its folder in a temporary tree (with scripts/ linked),
so the runs leave nothing in the repository.
"""
import csv
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, shared_dir


def _tree(tmp_path, name):
    root = tmp_path / "repo"
    (root / "recipes").mkdir(parents=True, exist_ok=True)    # a second recipe, same tree
    shutil.copytree(REPO / "recipes" / name, root / "recipes" / name,
                    ignore=shutil.ignore_patterns("data", "exp"))
    if not (root / "scripts").exists():
        os.symlink(REPO / "scripts", root / "scripts")
    return root / "recipes" / name


def _run(recipe, *args, timeout=900, script="run.sh", env=None, cwd=None):
    p = subprocess.run(["bash", str(recipe / script), *map(str, args)], cwd=cwd or recipe,
                       capture_output=True, text=True, timeout=timeout, env=env)
    assert p.returncode == 0, f"run.sh failed ({p.returncode}):\n{p.stdout}\n{p.stderr[-4000:]}"
    return p


# the rhmmtk subcommands that may run outside $cmd: scoring and reading, all quick
LOCAL_COMMANDS = ("score", "compare", "info")


def cmd_guard(tmp_path):
    """A job runner and an `rhmmtk` first on PATH that together record every rhmmtk
    command run outside the runner (other than LOCAL_COMMANDS). Returns (env, the --cmd
    value, the file of commands run outside, the file of jobs run inside)."""
    bin_dir = tmp_path / "guard"
    bin_dir.mkdir()
    outside, inside = tmp_path / "outside_cmd.txt", tmp_path / "inside_cmd.txt"
    real = shutil.which("rhmmtk", path=os.pathsep.join([os.path.dirname(sys.executable),
                                                        os.environ["PATH"]]))
    (bin_dir / "rhmmtk").write_text(f"""#!/usr/bin/env bash
case "$1" in {"|".join(LOCAL_COMMANDS)}) ;;
  *) [ -n "${{UNDER_CMD:-}}" ] || echo "$*" >> {outside} ;;
esac
exec {real} "$@"
""")
    runner = bin_dir / "cmd.sh"
    runner.write_text(f"""#!/usr/bin/env bash
echo "$*" >> {inside}
UNDER_CMD=1 exec {REPO}/scripts/utils/run_local.sh "$@"
""")
    for f in (runner, bin_dir / "rhmmtk"):
        f.chmod(0o755)
    env = dict(os.environ, PATH=os.pathsep.join([str(bin_dir), os.path.dirname(sys.executable),
                                                 os.environ["PATH"]]))
    return env, runner, outside, inside


def assert_all_through_cmd(outside, inside):
    assert inside.is_file() and len(inside.read_text().splitlines()) > 5
    assert not outside.exists(), "run outside $cmd:\n" + outside.read_text()


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


def _logs_its_command(log):
    """rhmmtk wrote its command line into the job's log, unless the job ran it with -q
    (the CDHMM stages' decodes do; the runner's header line still names the command)."""
    text = log.read_text()
    return "command:" in text or " -q " in text.splitlines()[0]


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
    logs = [p for p in exp.glob("*/log/*.log") if "decode" in p.name]
    assert logs and all(_logs_its_command(p) for p in logs), logs
    return rows


def test_nettalk_recipe_smoke(tmp_path, nettalk):
    recipe = _tree(tmp_path, "nettalk")
    exp = tmp_path / "exp"
    env, runner, outside, inside = cmd_guard(tmp_path)
    p = _run(recipe, "--data", nettalk, "--exp", exp, "--m-list", "1 2", "--smooth-list", "30",
             "--em-iters", "2", "--em-mode", "single", "--cmd", runner, env=env)
    assert_all_through_cmd(outside, inside)
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
    p = _run(recipe, "--data", nettalk, "--exp", exp, "--m-list", "1 2", "--smooth-list", "30",
             "--em-iters", "2", "--em-mode", "single", "--stage", "3", "--stop-stage", "4")
    assert model.stat().st_mtime_ns == before
    assert "redoing" not in p.stderr
    # ... but one made with other options is made again, and its dev decoding with it,
    # and the rerun says so
    hyp = exp / "em_m2" / "dev.hyp"
    hyp_before = hyp.stat().st_mtime_ns
    p = _run(recipe, "--data", nettalk, "--exp", exp, "--m-list", "2", "--em-iters", "3",
             "--em-mode", "single", "--stage", "3", "--stop-stage", "3")
    assert model.stat().st_mtime_ns != before and hyp.stat().st_mtime_ns != hyp_before
    assert f"{model} was made with other options or inputs: redoing it" in p.stderr
    assert "iters=2" in p.stderr
    assert _table(exp / "em_m2" / "history.tsv")[-1]["iter"] == "3"
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
         "--cdhmm-lambda-down", "0",
         "--hcrf-mix-list", "1", "--hcrf-knots-list", "2", "--hcrf-iters", "2",
         "--hcrf-tagger-iters", "1", "--hcrf-tagger-mix-list", "1", "--stop-stage", "15", "--cmd", runner, env=env)
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


def test_recipe_paths_are_relative_to_where_it_is_started(tmp_path, nettalk):
    """README's command, run from the repository's root: every path option is resolved
    before the recipe changes to its own directory."""
    top = tmp_path / "repo"
    timit = shared_dir() / "data" / "festival-timit"
    recipe = _tree(tmp_path, "timit")
    if timit.is_dir():
        rel = os.path.relpath(timit, top)
        p = _run(recipe, "--timit-root", rel, "--exp", "exp_here", "--stop-stage", "0",
                 cwd=top)
        assert (top / "exp_here" / "log" / "prepare.log").is_file(), p.stderr
        assert (recipe / "data" / "train" / "ali.48").is_file()
        assert not (recipe / "exp_here").exists()
        p = subprocess.run(["bash", "recipes/timit/run.sh", "--timit-root", "nope"], cwd=top,
                           capture_output=True, text=True)
        assert p.returncode == 1 and f"'{top}/nope' not found" in p.stderr
    recipe = _tree(tmp_path, "nettalk")
    (top / "dict").mkdir()
    shutil.copy(nettalk, top / "dict" / "nettalk.data")
    _run(recipe, "--data", "dict/nettalk.data", "--exp", "out/exp", "--stop-stage", "0", cwd=top)
    assert (top / "out" / "exp" / "log" / "prepare.log").is_file()
    assert (recipe / "data" / "train" / "letters").is_file()
    # relative to the recipe's directory when given there, as before
    _run(recipe, "--data", os.path.relpath(top / "dict" / "nettalk.data", recipe),
         "--exp", "exp_in_recipe", "--stop-stage", "0")
    assert (recipe / "exp_in_recipe" / "log" / "prepare.log").is_file()


def test_parse_options_makes_path_options_absolute(tmp_path):
    script = tmp_path / "s.sh"
    script.write_text(f"""one=default/x
many="a b"
other=keep/me
cmd=run.pl
path_options="one"
path_list_options="many"
. {REPO}/scripts/utils/parse_options.sh
cd /
echo "$one|$many|$other|$cmd"
""")
    (tmp_path / "here").mkdir()
    p = subprocess.run(["bash", str(script), "--one", "../f", "--many", "c /abs/d",
                        "--other", "rel", "--cmd", "bin/r.sh --mem 4G"], cwd=tmp_path / "here",
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == f"{tmp_path}/f|{tmp_path}/here/c /abs/d|rel|{tmp_path}/here/bin/r.sh --mem 4G"
    p = subprocess.run(["bash", str(script), "--cmd", "queue.pl --mem 4G"], cwd=tmp_path,
                       capture_output=True, text=True)
    # defaults, and a runner found on PATH, are left alone
    assert p.stdout.strip() == "default/x|a b|keep/me|queue.pl --mem 4G"


def _once(tmp_path, *args):
    """scripts/utils/stamp.sh's `once OUT LOG cp SRC OUT ARGS...` in tmp_path."""
    script = f""". {REPO}/scripts/utils/stamp.sh
cmd={REPO}/scripts/utils/run_local.sh
once out.txt log/copy.log cp "$@" src.txt out.txt
"""
    return subprocess.run(["bash", "-c", script, "once", *args], cwd=tmp_path,
                          capture_output=True, text=True)


def test_once_reuses_only_what_the_same_command_made(tmp_path):
    src, out = tmp_path / "src.txt", tmp_path / "out.txt"
    src.write_text("one\n")
    out.write_text("made by hand\n")              # no record of how: redone
    p = _once(tmp_path)
    assert p.returncode == 0 and out.read_text() == "one\n"
    assert "out.txt has no record of the options it was made with: redoing it" in p.stderr
    (tmp_path / "log" / "copy.log").unlink()
    p = _once(tmp_path)                            # the same command and input: kept
    assert p.returncode == 0 and p.stderr == "" and not (tmp_path / "log" / "copy.log").exists()
    src.write_text("two\n")                         # another input: redone
    p = _once(tmp_path)
    assert out.read_text() == "two\n" and "made with other options or inputs" in p.stderr
    p = _once(tmp_path, "-p")                      # another option: redone, the old one named
    assert p.returncode == 0 and "redoing it (was: ; now: -p )" in p.stderr
    assert "cp\n-p\nsrc.txt" in (tmp_path / "out.txt.stamp").read_text()
    p = _once(tmp_path, "--no-such-option")        # a failed job leaves no stamp
    assert p.returncode != 0 and not (tmp_path / "out.txt.stamp").exists()


def test_path_sh_says_when_rhmmtk_is_not_installed(tmp_path):
    recipe = _tree(tmp_path, "nettalk")
    env = dict(os.environ, PATH="/usr/bin:/bin")
    for script in ("run.sh", "run_competitors.sh"):
        p = subprocess.run(["bash", script], cwd=recipe, capture_output=True, text=True, env=env)
        assert p.returncode == 1
        assert len(p.stderr.splitlines()) == 1 and "rhmmtk is not installed" in p.stderr


def test_longest_first_orders_unlike_jobs_by_cost():
    """scripts/utils/parallel.sh's longest_first (the EM and SPECTRAL grids' one pool in
    scripts/rhmm.sh): costliest first, ties in the order given."""
    script = pathlib.Path(__file__).resolve().parents[1] / "scripts" / "utils" / "parallel.sh"
    jobs = "4 spectral 2 30\n30720 em 32 -\n1024 spectral 32 30\n1024 spectral 32 100\n30 em 1 -\n"
    p = subprocess.run(["bash", "-c", f". {script} && longest_first"], input=jobs,
                       capture_output=True, text=True, check=True)
    assert p.stdout.splitlines() == ["em 32 -", "spectral 32 30", "spectral 32 100", "em 1 -",
                                     "spectral 2 30"]
