"""Smoke run of the NETtalk recipe end to end (small grids, few EM iterations), as a user
runs it: results tables, dev grids, figures (non-trivial PNGs) and per-step logs; every
training and decoding through $cmd; reruns that reuse only what was made with the same
options; paths given relative to where a recipe is started; path.sh's install check.
The TIMIT recipe's smokes are in test_recipe_timit.py (a file of its own, so that the two
long smokes go to different workers under --dist loadfile); the helpers here are shared
by every recipe test.

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


# The smokes' feature ablation (both recipes' --ablations): the grid's own templates (its
# dev decoding reused) and one set retrained; the recipes' third set takes the same path.
ABLATIONS = ("conf/templates.conf", "conf/templates_nopos.conf")


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
    assert [r["templates"] for r in _table(exp / "ablation.tsv")] == \
        [pathlib.Path(c).stem for c in ABLATIONS]
    logs = [p for p in exp.glob("*/log/*.log") if "decode" in p.name]
    assert logs and all(_logs_its_command(p) for p in logs), logs
    return rows


# The NETtalk smokes' dictionary: every 8th entry of NETtalk (2,501 words), split 1,800 /
# 300 / 401 words (--split-sizes): every stage runs as on the whole dictionary, with most of
# EM's and the decodings' work gone (on it HMM 79.4% test accuracy, UNIGRAM 77.8%; on the
# whole dictionary 86.6% and 86.2%, RESULTS).
SMALL_SPLIT = "1800,300"


def small_nettalk(nettalk, dest):
    """Every 8th line of the dictionary `nettalk`, written to `dest`."""
    lines = nettalk.read_text().splitlines(keepends=True)
    dest.write_text("".join(lines[::8]))
    return dest


def test_nettalk_recipe_smoke(tmp_path, nettalk):
    recipe = _tree(tmp_path, "nettalk")
    exp = tmp_path / "exp"
    env, runner, outside, inside = cmd_guard(tmp_path)
    data = ("--data", small_nettalk(nettalk, tmp_path / "nettalk.data"), "--split-sizes",
            SMALL_SPLIT)
    grid = ("--m-list", "1 2", "--smooth-list", "30", "--em-iters", "2", "--em-mode", "single",
            "--ablations", " ".join(ABLATIONS))
    p = _run(recipe, *data, "--exp", exp, *grid, "--cmd", runner, env=env)
    assert_all_through_cmd(outside, inside)
    assert (recipe / "data" / "dev" / "list").read_text().count("\n") == 300
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
    p = _run(recipe, *data, "--exp", exp, *grid, "--stage", "3", "--stop-stage", "4")
    assert model.stat().st_mtime_ns == before
    assert "redoing" not in p.stderr
    # ... but one made with other options is made again, and its dev decoding with it,
    # and the rerun says so
    hyp = exp / "em_m2" / "dev.hyp"
    hyp_before = hyp.stat().st_mtime_ns
    p = _run(recipe, *data, "--exp", exp, "--m-list", "2", "--em-iters", "3",
             "--em-mode", "single", "--stage", "3", "--stop-stage", "3")
    assert model.stat().st_mtime_ns != before and hyp.stat().st_mtime_ns != hyp_before
    assert f"{model} was made with other options or inputs: redoing it" in p.stderr
    assert "iters=2" in p.stderr
    assert _table(exp / "em_m2" / "history.tsv")[-1]["iter"] == "3"
    # --parallel 2 (two trainings, decodings, ablations at once) gives the same tables
    exp2 = tmp_path / "exp2"
    _run(recipe, *data, "--exp", exp2, *grid, "--stage", "2", "--parallel", "2")
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
