"""The job runners and step scripts: scripts/utils/run_local.sh and run_slurm.sh name
the failing job's log (the Slurm runner's command lines are checked always, and it runs
for real when a controller answers: scripts/start_slurm.sh); the step scripts equal the
one-process commands, resume, and stop at a failed job."""
import os
import shutil
import subprocess
import sys

import pytest

from cli_helpers import run
from shards import SCRIPTS, assert_same_model


def sh(*args, env=None, cwd=None):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, env=env,
                          cwd=cwd)


needs_parallel = pytest.mark.skipif(shutil.which("parallel") is None,
                                    reason="GNU parallel not installed (apt-get install parallel)")


@needs_parallel
def test_run_local_runs_jobs_and_names_the_failing_log(tmp_path):
    p = sh(SCRIPTS / "utils" / "run_local.sh", "JOB=1:4", tmp_path / "log" / "t.JOB.log",
           "bash", "-c", "echo 'job JOB of 4 (a b)'; [ JOB != 3 ]")
    assert p.returncode == 1
    assert f"{tmp_path}/log/t.3.log" in p.stderr and "t.1.log" not in p.stderr
    for j in range(1, 5):
        text = (tmp_path / "log" / f"t.{j}.log").read_text()
        assert f"job {j} of 4 (a b)" in text
        assert f"# Ended (code {int(j == 3)})" in text
    p = sh(SCRIPTS / "utils" / "run_local.sh", "--max-jobs-run", "2", "JOB=2:3", tmp_path / "ok.JOB.log",
           "echo", "JOB")
    assert p.returncode == 0, p.stderr
    assert "\n3\n" in (tmp_path / "ok.3.log").read_text()
    # one job, no JOB=: the command runs as given
    p = sh(SCRIPTS / "utils" / "run_local.sh", tmp_path / "one.log", "false")
    assert p.returncode == 1 and "one.log" in p.stderr


FAKE_SBATCH = """#!/usr/bin/env bash
# sbatch stand-in: runs an --array's tasks here, one after the other, like `sbatch --wait`
for a in "$@"; do case "$a" in --array=*) r=${a#--array=}; r=${r%%%*};; esac; script=$a; done
echo "$@" > "$(dirname "$0")/sbatch.args"
echo 4242
rc=0
for t in $(seq ${r%-*} ${r#*-}); do SLURM_ARRAY_TASK_ID=$t bash "$script" || rc=1; done
exit $rc
"""


def test_run_slurm_command_line_and_failure(tmp_path):
    """Without a cluster: the dry-run command line, and the whole runner against a stand-in
    `sbatch` that runs the array's tasks locally (failing jobs named with their logs)."""
    env = {**os.environ, "RHMMTK_SLURM_OPTS": "--account=lab --qos=normal"}
    p = sh(SCRIPTS / "utils" / "run_slurm.sh", "--dry-run", "--mem", "4G", "--time", "1:00:00",
           "--max-jobs-run", "2", "JOB=1:5", tmp_path / "log" / "acc.JOB.log",
           "rhmmtk", "acc-em", "--job", "JOB/5", env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    line = p.stdout.strip()
    q = tmp_path / "log" / "q"
    for part in ("sbatch", "--wait", "--array=1-5%2", f"--output={q}/acc.JOB.%a.out",
                 f"--chdir={tmp_path}", "--mem=4G", "--time=1:00:00", "--account=lab",
                 "--qos=normal", f"{q}/acc.JOB.sh"):
        assert part in line.split(), (part, line)
    assert (q / "acc.JOB.sh").exists()
    p = sh(SCRIPTS / "utils" / "run_slurm.sh", "--srun", "--dry-run", "JOB=1:2", tmp_path / "s.JOB.log",
           "true")
    assert p.stdout.count("srun ") == 2 and f"{tmp_path}/q/s.JOB.sh 2" in p.stdout
    # the real thing, with the stand-in sbatch first on PATH
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "sbatch").write_text(FAKE_SBATCH)
    (fake / "sbatch").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    p = sh(SCRIPTS / "utils" / "run_slurm.sh", "JOB=1:3", tmp_path / "log" / "r.JOB.log",
           "bash", "-c", "echo task JOB; exit $(( JOB == 2 ? 7 : 0 ))", env=env, cwd=tmp_path)
    assert p.returncode == 1
    assert "exit code 7" in p.stderr and f"{tmp_path}/log/r.2.log" in p.stderr
    assert "r.1.log" not in p.stderr and "r.3.log" not in p.stderr
    assert "task 3" in (tmp_path / "log" / "r.3.log").read_text()
    assert "--array=1-3" in (fake / "sbatch.args").read_text()


def slurm_up():
    if shutil.which("sinfo") is None:
        return False
    p = sh("sinfo", "-h", "-o", "%t")
    return p.returncode == 0 and any(s.startswith(("idle", "mix", "alloc"))
                                     for s in p.stdout.split())


@pytest.mark.skipif(not slurm_up(), reason="no Slurm controller answers "
                    "(scripts/start_slurm.sh starts a single-node one)")
@pytest.mark.parametrize("mode", [[], ["--srun"]])
def test_run_slurm_on_a_real_cluster(shard_corpus, tmp_path, mode):
    p = sh(SCRIPTS / "utils" / "run_slurm.sh", *mode, "JOB=1:3", tmp_path / "log" / "c.JOB.log",
           sys.executable, "-m", "rhmmtk", "acc-em", "--init", "--job", "JOB/3", shard_corpus["obs"],
           shard_corpus["train_ali"], tmp_path / "c.JOB.acc", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "Slurm job" in (tmp_path / "log" / "c.2.log").read_text()
    run("init-em", "-m", "2", *[tmp_path / f"c.{j}.acc" for j in (1, 2, 3)], tmp_path / "0.h5")
    p = sh(SCRIPTS / "utils" / "run_slurm.sh", *mode, "JOB=1:2", tmp_path / "log" / "f.JOB.log",
           "bash", "-c", "exit $(( JOB == 2 ? 3 : 0 ))", cwd=tmp_path)
    assert p.returncode == 1 and "f.2.log" in p.stderr and "f.1.log" not in p.stderr



@needs_parallel
def test_train_em_script_equals_train_em_and_resumes(shard_corpus, tmp_path):
    d = tmp_path / "em"
    args = ["--nj", "2", "--states", "2", "--iters", "2", "--seed", "3",
            "--dev-obs", shard_corpus["dev_obs"], "--dev-ali", shard_corpus["dev_ali"]]
    p = sh("bash", SCRIPTS / "steps" / "train_em.sh", *args, shard_corpus["obs"], shard_corpus["train_ali"], d)
    assert p.returncode == 0, p.stderr
    run("train-em", "-m", "2", "--iters", "2", "--seed", "3", "--dev-obs", shard_corpus["dev_obs"],
        "--dev-ali", shard_corpus["dev_ali"], "--history", tmp_path / "h.tsv", shard_corpus["obs"],
        shard_corpus["train_ali"], tmp_path / "single.h5")
    hist = [line.split("\t") for line in (d / "history.tsv").read_text().splitlines()]
    want = [line.split("\t") for line in (tmp_path / "h.tsv").read_text().splitlines()]
    assert [r[0] for r in hist] == [r[0] for r in want] == ["iter", "0", "1", "2"]
    for r, w in zip(hist[1:], want[1:]):
        for x, y in zip(r[1:], w[1:]):
            assert (x == y == "") or abs(float(x) - float(y)) <= 1e-6 * max(1, abs(float(y)))
    assert all((d / f"{i}.h5").exists() for i in range(3))
    # final.h5 is the best dev iteration, as train-em keeps it
    from rhmmtk.models.rhmm.em_files import load_model

    assert load_model(d / "final.h5")[1].info["iteration"] == \
        load_model(tmp_path / "single.h5")[1].info["best_iteration"]
    # re-running does not redo anything; without final.h5 it resumes at the last model
    mtimes = {f: f.stat().st_mtime_ns for f in list(d.glob("*.h5")) + list(d.glob("log/*"))}
    p = sh("bash", SCRIPTS / "steps" / "train_em.sh", *args, shard_corpus["obs"], shard_corpus["train_ali"], d)
    assert p.returncode == 0 and "nothing to do" in p.stderr
    (d / "final.h5").unlink()
    (d / "2.h5").unlink()
    p = sh("bash", SCRIPTS / "steps" / "train_em.sh", *args, shard_corpus["obs"], shard_corpus["train_ali"], d)
    assert p.returncode == 0, p.stderr
    for f in [d / "0.h5", d / "1.h5", d / "log" / "acc.1.1.log", d / "log" / "est.1.log"]:
        assert f.stat().st_mtime_ns == mtimes[f], f               # not redone
    assert (d / "2.h5").exists() and (d / "final.h5").exists()


@needs_parallel
def test_train_em_script_stops_early_where_train_em_does(shard_corpus, tmp_path):
    """--patience: the accumulate/estimate loop stops after the same iteration as
    `train-em --patience` (dev scored every iteration), keeps the same best iteration,
    and a resumed run stops there again; --patience without dev is refused."""
    from rhmmtk.models.rhmm.em_files import load_model

    d = tmp_path / "em"
    common = ["--seed", "3", "--dev-obs", shard_corpus["dev_obs"], "--dev-ali",
              shard_corpus["dev_ali"]]
    data = [shard_corpus["obs"], shard_corpus["train_ali"]]
    args = ["--nj", "2", "--states", "2", "--iters", "10", "--patience", "1", *common]
    p = sh("bash", SCRIPTS / "steps" / "train_em.sh", *args, *data, d)
    assert p.returncode == 0, p.stderr
    run("train-em", "-m", "2", "--iters", "10", "--patience", "1", *common, "--history",
        tmp_path / "h.tsv", *data, tmp_path / "single.h5")
    want = [line.split("\t")[0] for line in (tmp_path / "h.tsv").read_text().splitlines()]
    last = int(want[-1])
    assert last < 10                                        # it did stop early
    assert "stopping after iteration" in p.stderr
    assert sorted(int(f.stem) for f in d.glob("[0-9]*.h5")) == list(range(last + 1))
    best = load_model(tmp_path / "single.h5")[1].info["best_iteration"]
    assert load_model(d / "final.h5")[1].info["iteration"] == best
    (d / "final.h5").unlink()
    p = sh("bash", SCRIPTS / "steps" / "train_em.sh", *args, *data, d)
    assert p.returncode == 0, p.stderr
    assert not (d / f"{last + 1}.h5").exists()
    q = run("train-em", "-m", "2", "--patience", "2", *data, tmp_path / "x.h5", check=False)
    assert q.returncode == 1 and "--patience needs a dev set" in q.stderr
    assert not (tmp_path / "x.h5").exists()
    q = sh("bash", SCRIPTS / "steps" / "train_em.sh", "--patience", "2", *data, tmp_path / "y")
    assert q.returncode == 1 and "--patience needs a dev set" in q.stderr
    assert not (tmp_path / "y").exists()


@needs_parallel
def test_train_spectral_script_stops_at_a_failed_job(shard_corpus, shard_spectral, tmp_path):
    """A failing shard stops the script; the runner names the failing job's log."""
    bad = tmp_path / "bad.h5"
    shutil.copy(shard_corpus["obs"], bad)            # a codes archive where features belong
    p = sh("bash", SCRIPTS / "steps" / "train_spectral.sh", "--nj", "2", "--states", "2", bad,
           tmp_path / "sp")
    assert p.returncode == 1
    assert f"{tmp_path}/sp/log/acc_omega.1.log" in p.stderr
    assert "pass 1" in p.stderr
    assert not (tmp_path / "sp" / "final.h5").exists()
    # a good run, then a re-run that does nothing
    p = sh("bash", SCRIPTS / "steps" / "train_spectral.sh", "--nj", "2", "--states", "3", "--smooth", "20",
           shard_corpus["feats"], tmp_path / "sp")
    assert p.returncode == 0, p.stderr
    assert_same_model(tmp_path / "sp" / "final.h5", shard_spectral["d"] / "single.h5")
    p = sh("bash", SCRIPTS / "steps" / "train_spectral.sh", "--nj", "2", "--states", "3", "--smooth", "20",
           shard_corpus["feats"], tmp_path / "sp")
    assert p.returncode == 0 and "nothing to do" in p.stderr


@needs_parallel
def test_train_spectral_stats_only_then_every_smoothing_from_them(shard_corpus, shard_spectral,
                                                                  tmp_path):
    """--stats-only true computes the shared statistics and no model; a training with
    --stats-dir then reuses them (not recomputed) and gives the one-step model."""
    stats = tmp_path / "stats"
    step = ["bash", SCRIPTS / "steps" / "train_spectral.sh", "--nj", "2", "--states", "3"]
    p = sh(*step, "--stats-only", "maybe", shard_corpus["feats"], stats)
    assert p.returncode == 1 and "--stats-only must be true or false" in p.stderr
    p = sh(*step, "--stats-only", "true", shard_corpus["feats"], stats)
    assert p.returncode == 0, p.stderr
    assert (stats / "stats.done").exists() and (stats / "proj.h5").exists()
    assert not (stats / "final.h5").exists()
    mtimes = {f: f.stat().st_mtime_ns for f in stats.glob("moments.*.acc")}
    assert len(mtimes) == 2
    p = sh(*step, "--smooth", "20", "--stats-dir", stats, shard_corpus["feats"], tmp_path / "c20")
    assert p.returncode == 0, p.stderr
    for f, t in mtimes.items():
        assert f.stat().st_mtime_ns == t, f                       # not recomputed
    assert_same_model(tmp_path / "c20" / "final.h5", shard_spectral["d"] / "single.h5")
