"""Scale-out: --job K/N shards, accumulate/estimate steps, the job runners.

- the shards of every per-utterance command partition its utterances exactly, in order;
- models from N = 3 shards (acc-spectral/svd-spectral/est-spectral, acc-em/init-em/est-em)
  equal the single-process models (train-spectral, train-em) to 1e-10 relative;
- statistics of another template set, m, symbol table, model, kind, a missing or
  duplicated shard, a missing file are refused with one line naming the file;
- scripts/utils/run_local.sh and scripts/utils/run_slurm.sh name the failing job's log; the Slurm
  runner's command lines are checked always, and it runs for real when a Slurm
  controller answers (scripts/start_slurm.sh starts a single-node one);
- the step scripts resume and do not redo finished work.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cli_helpers import fails, run
from synthetic import h5_datasets, make_corpus

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "scripts"
SEED = int(os.environ.get("RHMMTK_TEST_SEED", "20131"))
NJ = 3


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    print(f"[seed] test_scale base: {SEED}")
    d = tmp_path_factory.mktemp("scale")
    p = make_corpus(d, SEED, sizes=(150, 30, 30))
    f = dict(p)
    f["d"] = d
    f["obs"], f["dev_obs"], f["feats"] = d / "train.obs.h5", d / "dev.obs.h5", d / "train.feats.h5"
    run("make-obs", "--write-symbols", d / "obs.syms", p["train_txt"], f["obs"])
    run("make-obs", "--symbols", d / "obs.syms", p["dev_txt"], f["dev_obs"])
    run("featurize", "--templates", p["templates"], f["obs"], p["train_ali"], f["feats"])
    return f


def rel_diff(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def assert_same_model(path_a, path_b, rtol=1e-10):
    a, b = h5_datasets(path_a), h5_datasets(path_b)
    assert sorted(a) == sorted(b)
    for k in a:
        if a[k].dtype.kind == "f":
            assert rel_diff(a[k], b[k]) <= rtol, (k, rel_diff(a[k], b[k]))
        else:
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)


# --- the split ------------------------------------------------------------------------------

@pytest.mark.parametrize("count, n", [(10, 3), (7, 7), (3, 5), (1000, 8), (0, 2)])
def test_job_split_partitions_in_order(count, n):
    from rhmmtk.jobs import Job

    items = [f"u{i}" for i in range(count)]
    shards = [Job(k, n).select(items) for k in range(1, n + 1)]
    assert sum(shards, []) == items                       # all, once each, in order
    sizes = [len(s) for s in shards]
    assert max(sizes) - min(sizes) <= 1


def test_job_spec_errors():
    from rhmmtk.errors import InputError
    from rhmmtk.jobs import Job

    assert Job.parse("2/8") == Job(2, 8) and str(Job.parse(" 3 / 4 ")) == "3/4"
    for bad in ("0/3", "4/3", "2", "a/b", "1/0"):
        with pytest.raises(InputError):
            Job.parse(bad)


def test_job_option_rejects_bad_spec(base, tmp_path):
    err = fails("decode", "--job", "4/3", base["feats"], base["obs"], tmp_path / "x.ali")
    assert "--job" in err and "Traceback" not in err


def test_sharded_featurize_and_decode_concatenate_to_the_whole(base, tmp_path):
    whole = h5_datasets(base["feats"])
    model = tmp_path / "sp.h5"
    run("train-spectral", "-m", "2", base["feats"], model)
    run("decode", model, base["obs"], tmp_path / "all.ali")
    keys, hyp = [], ""
    for j in range(1, NJ + 1):
        out = tmp_path / f"f.{j}.h5"
        run("featurize", "--job", f"{j}/{NJ}", "--templates", base["templates"], base["obs"],
            base["train_ali"], out)
        part = h5_datasets(out)
        for k, v in part.items():
            if k.startswith("utts/"):
                np.testing.assert_array_equal(v, whole[k])
        keys += [k for k in part if k.startswith("utts/")]
        run("decode", "--job", f"{j}/{NJ}", model, base["obs"], tmp_path / f"hyp.{j}")
        hyp += (tmp_path / f"hyp.{j}").read_text()
    assert sorted(keys) == sorted(k for k in whole if k.startswith("utts/"))
    assert hyp == (tmp_path / "all.ali").read_text()
    # merge-archives puts the shards back together: the same archive, in order
    run("merge-archives", tmp_path / "merged.h5",
        *[tmp_path / f"f.{j}.h5" for j in range(1, NJ + 1)])
    merged = h5_datasets(tmp_path / "merged.h5")
    assert sorted(merged) == sorted(whole)
    for k in whole:
        np.testing.assert_array_equal(merged[k], whole[k], err_msg=k)
    from rhmmtk.io.archive import Archive

    with Archive(tmp_path / "merged.h5") as a, Archive(base["feats"]) as b:
        assert a.keys() == b.keys()
        assert a.attrs["template_fingerprint"] == b.attrs["template_fingerprint"]
    err = fails("merge-archives", tmp_path / "bad.h5", tmp_path / "f.1.h5", base["obs"])
    assert "train.obs.h5" in err and "kind" in err
    err = fails("merge-archives", tmp_path / "bad.h5", tmp_path / "f.1.h5", tmp_path / "f.1.h5")
    assert "more than one" in err
    # make-obs applies a table per shard; learning one needs all of the text
    from rhmmtk.io.archive import Archive
    from rhmmtk.jobs import Job

    run("make-obs", "--job", f"2/{NJ}", "--symbols", base["d"] / "obs.syms", base["train_txt"],
        tmp_path / "o2.h5")
    with Archive(tmp_path / "o2.h5") as ar:
        assert ar.keys() == Job(2, NJ).select(base["train_keys"])
    fails("make-obs", "--job", "1/2", "--write-symbols", tmp_path / "s", base["train_txt"],
          tmp_path / "o.h5")


def test_front_end_shards_merge_to_the_whole(tmp_path, rng):
    """feats --job (per-speaker CMVN: whole speakers per shard) and quantize apply --job,
    merged, equal the single-process archives."""
    import soundfile as sf

    from rhmmtk.io.archive import Archive

    lines, spk = [], []
    for i, sec in enumerate((0.3, 0.5, 0.4, 0.35, 0.45)):
        t = np.arange(int(sec * 16000)) / 16000
        x = 5000 * np.sin(2 * np.pi * (150 + 900 * i + 700 * t) * t)
        x += 200 * rng.standard_normal(len(t))
        path = tmp_path / f"u{i}.wav"
        sf.write(str(path), np.round(x).astype(np.int16), 16000, subtype="PCM_16")
        lines.append(f"u{i} {path}")
        spk.append(f"u{i} s{[0, 0, 1, 2, 2][i]}")
    (tmp_path / "wav.scp").write_text("\n".join(lines) + "\n")
    (tmp_path / "utt2spk").write_text("\n".join(spk) + "\n")
    opts = ["--cmvn", "spk", "--utt2spk", tmp_path / "utt2spk", tmp_path / "wav.scp"]
    run("feats", *opts, tmp_path / "feats.h5")
    for j in (1, 2):
        run("feats", "--job", f"{j}/2", *opts, tmp_path / f"feats.{j}.h5")
    with Archive(tmp_path / "feats.1.h5") as a:
        assert a.keys() == ["u0", "u1"]          # speakers s0 | s1, s2
    run("merge-archives", tmp_path / "merged.h5", tmp_path / "feats.1.h5",
        tmp_path / "feats.2.h5")
    whole, merged = h5_datasets(tmp_path / "feats.h5"), h5_datasets(tmp_path / "merged.h5")
    assert sorted(whole) == sorted(merged)
    for k in whole:
        np.testing.assert_array_equal(whole[k], merged[k], err_msg=k)
    run("quantize", "learn", "--codes", "4", "--iters", "3", tmp_path / "feats.h5",
        tmp_path / "book.h5")
    run("quantize", "apply", tmp_path / "book.h5", tmp_path / "feats.h5", tmp_path / "codes.h5")
    for j in (1, 2, 3):
        run("quantize", "apply", "--job", f"{j}/3", tmp_path / "book.h5", tmp_path / "feats.h5",
            tmp_path / f"codes.{j}.h5")
    run("merge-archives", tmp_path / "cm.h5", *[tmp_path / f"codes.{j}.h5" for j in (1, 2, 3)])
    whole, merged = h5_datasets(tmp_path / "codes.h5"), h5_datasets(tmp_path / "cm.h5")
    assert sorted(whole) == sorted(merged)
    for k in whole:
        np.testing.assert_array_equal(whole[k], merged[k], err_msg=k)


# --- spectral: shards = one process ---------------------------------------------------------

@pytest.fixture(scope="module")
def spectral(base):
    d = base["d"] / "spectral"
    d.mkdir()
    omega = [d / f"omega.{j}.acc" for j in range(1, NJ + 1)]
    moments = [d / f"moments.{j}.acc" for j in range(1, NJ + 1)]
    for j, out in enumerate(omega, 1):
        run("acc-spectral", "--job", f"{j}/{NJ}", base["feats"], out)
    run("svd-spectral", "-m", "3", *omega, d / "proj.h5")
    for j, out in enumerate(moments, 1):
        run("acc-spectral", "--job", f"{j}/{NJ}", "--projections", d / "proj.h5", base["feats"],
            out)
    run("est-spectral", "--smooth", "20", d / "proj.h5", *moments, d / "sharded.h5")
    run("train-spectral", "-m", "3", "--smooth", "20", base["feats"], d / "single.h5")
    return {"d": d, "omega": omega, "moments": moments, "proj": d / "proj.h5"}


def test_spectral_shards_equal_one_process(spectral):
    import json

    from synthetic import h5_attrs

    assert_same_model(spectral["d"] / "sharded.h5", spectral["d"] / "single.h5")
    ia = json.loads(h5_attrs(spectral["d"] / "sharded.h5")["info"])
    ib = json.loads(h5_attrs(spectral["d"] / "single.h5")["info"])
    for k in ("m_requested", "label_counts", "singular_values", "train_utts", "train_positions",
              "template_fingerprint", "options"):
        assert ia[k] == ib[k], k


def test_svd_workers_do_not_change_the_projections(spectral, tmp_path):
    run("svd-spectral", "-m", "3", "--workers", "2", *spectral["omega"], tmp_path / "p2.h5")
    a, b = h5_datasets(tmp_path / "p2.h5"), h5_datasets(spectral["proj"])
    assert sorted(a) == sorted(b)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def test_estimate_is_the_composition_of_the_steps(base):
    """spectral.estimate (in memory, blocks of any size) = the file steps' model."""
    import json

    from rhmmtk.corpus import read_featurized
    from rhmmtk.models.rhmm.operators import Operators
    from rhmmtk.models.rhmm.spectral import estimate

    corpus, F, attrs = read_featurized(base["feats"])
    slices = {k: tuple(v) for k, v in json.loads(attrs["view_slices"]).items()}
    ref = Operators.load(base["d"] / "spectral" / "single.h5")
    for block in (50, 10**7):
        op = estimate(corpus, F, slices, m=3, smooth=20, emission_floor=1e-3,
                      block_positions=block)
        assert op.m.tolist() == ref.m.tolist()
        for x, y in zip(op.emit + op.init + op.stop, ref.emit + ref.init + ref.stop):
            assert rel_diff(x, y) < 1e-10
        assert sorted(op.trans) == sorted(ref.trans)
        for k in op.trans:
            assert rel_diff(op.trans[k], ref.trans[k]) < 1e-10


def test_spectral_statistics_refused(base, spectral, tmp_path):
    d = spectral["d"]
    om, mo, proj = spectral["omega"], spectral["moments"], spectral["proj"]
    # a shard missing, a shard twice, a file that does not exist
    err = fails("est-spectral", proj, mo[0], mo[2], tmp_path / "m.h5")
    assert f"2/{NJ}" in err and "missing" in err
    err = fails("svd-spectral", om[0], om[1], om[1], om[2], tmp_path / "p.h5")
    assert "twice" in err and om[1].name in err
    err = fails("est-spectral", proj, mo[0], mo[1], d / "nope.acc", tmp_path / "m.h5")
    assert "nope.acc" in err
    # another kind of statistics
    err = fails("est-spectral", proj, *om, tmp_path / "m.h5")
    assert "spectral-moments" in err and om[0].name in err
    # another template set
    other = tmp_path / "other.feats.h5"
    run("featurize", "--templates", base["other_templates"], base["obs"], base["train_ali"], other)
    run("acc-spectral", other, tmp_path / "other.acc")
    err = fails("svd-spectral", om[0], tmp_path / "other.acc", tmp_path / "p.h5")
    assert "template" in err and "other.acc" in err
    err = fails("acc-spectral", "--projections", proj, other, tmp_path / "x.acc")
    assert "template" in err and "other.feats.h5" in err
    # another m: moments of m = 3 with projections of m = 2
    run("svd-spectral", "-m", "2", *om, tmp_path / "proj2.h5")
    err = fails("est-spectral", tmp_path / "proj2.h5", *mo, tmp_path / "m.h5")
    assert "another number of hidden states m" in err and "(m 3 vs 2)" in err, err
    assert mo[0].name in err and "proj2.h5" in err
    assert not (tmp_path / "m.h5").exists() and not (tmp_path / "p.h5").exists()


# --- EM: shards = one process ---------------------------------------------------------------

def test_em_shards_equal_train_em(base, tmp_path):
    """The library steps (as acc-em/init-em/est-em run them) with 3 shards, 3 iterations."""
    from rhmmtk.models.rhmm import em
    from rhmmtk.jobs import Job

    counts = [tmp_path / f"0.{j}.acc" for j in range(1, NJ + 1)]
    for j, out in enumerate(counts, 1):
        em.acc_counts(base["obs"], base["train_ali"], out, Job(j, NJ))
    em.init_files(counts, tmp_path / "0.h5", m=3, seed=5, noise=0.5, floor=1e-3)
    for it in (1, 2, 3):
        accs = [tmp_path / f"{it}.{j}.acc" for j in range(1, NJ + 1)]
        for j, out in enumerate(accs, 1):
            em.acc_estep(tmp_path / f"{it - 1}.h5", base["obs"], base["train_ali"], out,
                         Job(j, NJ))
        em.est_files(tmp_path / f"{it - 1}.h5", accs, tmp_path / f"{it}.h5")
    run("train-em", "-m", "3", "--iters", "3", "--seed", "5", base["obs"], base["train_ali"],
        tmp_path / "single.h5")
    a, _ = em.load_model(tmp_path / "3.h5")
    b, op = em.load_model(tmp_path / "single.h5")
    for name in ("pi", "o", "t", "f"):
        assert rel_diff(getattr(a, name), getattr(b, name)) < 1e-10, name
    # the log-likelihoods of every iteration agree too
    _, info = em.load_model(tmp_path / "3.h5")
    ll_a = [h["loglik"] for h in info.info["history"][:3]]
    ll_b = [h["loglik"] for h in op.info["history"][:3]]
    np.testing.assert_allclose(ll_a, ll_b, rtol=1e-12)


def test_corpus_blocks_and_small_blocks_do_not_change_statistics(base, tmp_path, monkeypatch):
    """CorpusReader's blocks are read_corpus cut in pieces; an E-step over many small
    blocks gives the statistics of one block."""
    from rhmmtk.models.rhmm import em
    from rhmmtk.corpus import CorpusReader, read_corpus
    from rhmmtk.io.stats import StatsFile
    from rhmmtk.jobs import Job

    whole = read_corpus(base["obs"], base["train_ali"])
    blocks = list(CorpusReader(base["obs"], base["train_ali"], block_positions=40).blocks())
    assert len(blocks) > 5
    assert sum((b.keys for b in blocks), []) == whole.keys
    for a, b in zip(sum((b.labels for b in blocks), []), whole.labels):
        np.testing.assert_array_equal(a, b)
    shard = CorpusReader(base["obs"], base["train_ali"], job=Job(2, 3))
    assert shard.keys == Job(2, 3).select(whole.keys)
    assert sum((b.keys for b in shard.blocks()), []) == shard.keys
    em.acc_counts(base["obs"], base["train_ali"], tmp_path / "c.acc")
    em.init_files([tmp_path / "c.acc"], tmp_path / "0.h5", m=2)
    em.acc_estep(tmp_path / "0.h5", base["obs"], base["train_ali"], tmp_path / "big.acc")
    monkeypatch.setattr(em, "BLOCK_POSITIONS", 40)
    em.acc_estep(tmp_path / "0.h5", base["obs"], base["train_ali"], tmp_path / "small.acc")
    with StatsFile(tmp_path / "big.acc") as a, StatsFile(tmp_path / "small.acc") as b:
        for name in ("pi", "o", "t", "f", "loglik"):
            np.testing.assert_allclose(a[name], b[name], rtol=1e-12, atol=1e-12)


def test_em_statistics_refused(base, tmp_path):
    from rhmmtk.models.rhmm import em
    from rhmmtk.jobs import Job

    run("acc-em", "--init", base["obs"], base["train_ali"], tmp_path / "c.acc")
    run("init-em", "-m", "2", tmp_path / "c.acc", tmp_path / "0.h5")
    run("acc-em", "--model", tmp_path / "0.h5", base["obs"], base["train_ali"], tmp_path / "s1.acc")
    run("est-em", tmp_path / "0.h5", tmp_path / "s1.acc", tmp_path / "1.h5")
    # statistics of iteration 1's E-step summed into iteration 2's M-step: another model
    err = fails("est-em", tmp_path / "1.h5", tmp_path / "s1.acc", tmp_path / "2.h5")
    assert "model" in err and "s1.acc" in err
    # counts where E-step statistics belong, and the reverse
    err = fails("est-em", tmp_path / "0.h5", tmp_path / "c.acc", tmp_path / "2.h5")
    assert "em-stats" in err and "c.acc" in err
    err = fails("init-em", tmp_path / "s1.acc", tmp_path / "x.h5")
    assert "em-counts" in err
    # another observation table (windows of 3 letters)
    ctx = tmp_path / "ctx.h5"
    run("make-obs", "--context", "1", "--write-symbols", tmp_path / "ctx.syms", base["train_txt"],
        ctx)
    run("acc-em", "--init", ctx, base["train_ali"], tmp_path / "cx.acc")
    err = fails("init-em", tmp_path / "c.acc", tmp_path / "cx.acc", tmp_path / "x.h5")
    assert "observation symbol table" in err and "cx.acc" in err
    err = fails("acc-em", "--model", tmp_path / "0.h5", ctx, base["train_ali"], tmp_path / "y.acc")
    assert "observation symbol table" in err
    # a shard missing: the positions do not add up (and the job is named)
    for j in (1, 3):
        em.acc_estep(tmp_path / "0.h5", base["obs"], base["train_ali"], tmp_path / f"p{j}.acc",
                     Job(j, 3))
    err = fails("est-em", tmp_path / "0.h5", tmp_path / "p1.acc", tmp_path / "p3.acc",
                tmp_path / "2.h5")
    assert "2/3" in err and "missing" in err
    # a spectral model cannot be re-estimated by EM
    run("train-spectral", "-m", "2", base["feats"], tmp_path / "sp.h5")
    err = fails("acc-em", "--model", tmp_path / "sp.h5", base["obs"], base["train_ali"],
                tmp_path / "z.acc")
    assert "sp.h5" in err
    fails("acc-em", base["obs"], base["train_ali"], tmp_path / "z.acc")     # --init or --model
    assert not (tmp_path / "2.h5").exists() and not (tmp_path / "x.h5").exists()


# --- the runners ----------------------------------------------------------------------------

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
def test_run_slurm_on_a_real_cluster(base, tmp_path, mode):
    p = sh(SCRIPTS / "utils" / "run_slurm.sh", *mode, "JOB=1:3", tmp_path / "log" / "c.JOB.log",
           sys.executable, "-m", "rhmmtk", "acc-em", "--init", "--job", "JOB/3", base["obs"],
           base["train_ali"], tmp_path / "c.JOB.acc", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "Slurm job" in (tmp_path / "log" / "c.2.log").read_text()
    run("init-em", "-m", "2", *[tmp_path / f"c.{j}.acc" for j in (1, 2, 3)], tmp_path / "0.h5")
    p = sh(SCRIPTS / "utils" / "run_slurm.sh", *mode, "JOB=1:2", tmp_path / "log" / "f.JOB.log",
           "bash", "-c", "exit $(( JOB == 2 ? 3 : 0 ))", cwd=tmp_path)
    assert p.returncode == 1 and "f.2.log" in p.stderr and "f.1.log" not in p.stderr


# --- the step scripts -----------------------------------------------------------------------

@needs_parallel
def test_train_em_script_equals_train_em_and_resumes(base, tmp_path):
    d = tmp_path / "em"
    args = ["--nj", "2", "--states", "2", "--iters", "2", "--seed", "3",
            "--dev-obs", base["dev_obs"], "--dev-ali", base["dev_ali"]]
    p = sh("bash", SCRIPTS / "steps" / "train_em.sh", *args, base["obs"], base["train_ali"], d)
    assert p.returncode == 0, p.stderr
    run("train-em", "-m", "2", "--iters", "2", "--seed", "3", "--dev-obs", base["dev_obs"],
        "--dev-ali", base["dev_ali"], "--history", tmp_path / "h.tsv", base["obs"],
        base["train_ali"], tmp_path / "single.h5")
    hist = [line.split("\t") for line in (d / "history.tsv").read_text().splitlines()]
    want = [line.split("\t") for line in (tmp_path / "h.tsv").read_text().splitlines()]
    assert [r[0] for r in hist] == [r[0] for r in want] == ["iter", "0", "1", "2"]
    for r, w in zip(hist[1:], want[1:]):
        for x, y in zip(r[1:], w[1:]):
            assert (x == y == "") or abs(float(x) - float(y)) <= 1e-6 * max(1, abs(float(y)))
    assert all((d / f"{i}.h5").exists() for i in range(3))
    # final.h5 is the best dev iteration, as train-em keeps it
    from rhmmtk.models.rhmm.em import load_model

    assert load_model(d / "final.h5")[1].info["iteration"] == \
        load_model(tmp_path / "single.h5")[1].info["best_iteration"]
    # re-running does not redo anything; without final.h5 it resumes at the last model
    mtimes = {f: f.stat().st_mtime_ns for f in list(d.glob("*.h5")) + list(d.glob("log/*"))}
    p = sh("bash", SCRIPTS / "steps" / "train_em.sh", *args, base["obs"], base["train_ali"], d)
    assert p.returncode == 0 and "nothing to do" in p.stderr
    (d / "final.h5").unlink()
    (d / "2.h5").unlink()
    p = sh("bash", SCRIPTS / "steps" / "train_em.sh", *args, base["obs"], base["train_ali"], d)
    assert p.returncode == 0, p.stderr
    for f in [d / "0.h5", d / "1.h5", d / "log" / "acc.1.1.log", d / "log" / "est.1.log"]:
        assert f.stat().st_mtime_ns == mtimes[f], f               # not redone
    assert (d / "2.h5").exists() and (d / "final.h5").exists()


@needs_parallel
def test_train_spectral_script_stops_at_a_failed_job(base, spectral, tmp_path):
    """A failing shard stops the script; the runner names the failing job's log."""
    bad = tmp_path / "bad.h5"
    shutil.copy(base["obs"], bad)            # a codes archive where features belong
    p = sh("bash", SCRIPTS / "steps" / "train_spectral.sh", "--nj", "2", "--states", "2", bad,
           tmp_path / "sp")
    assert p.returncode == 1
    assert f"{tmp_path}/sp/log/acc_omega.1.log" in p.stderr
    assert "pass 1" in p.stderr
    assert not (tmp_path / "sp" / "final.h5").exists()
    # a good run, then a re-run that does nothing
    p = sh("bash", SCRIPTS / "steps" / "train_spectral.sh", "--nj", "2", "--states", "3", "--smooth", "20",
           base["feats"], tmp_path / "sp")
    assert p.returncode == 0, p.stderr
    assert_same_model(tmp_path / "sp" / "final.h5", spectral["d"] / "single.h5")
    p = sh("bash", SCRIPTS / "steps" / "train_spectral.sh", "--nj", "2", "--states", "3", "--smooth", "20",
           base["feats"], tmp_path / "sp")
    assert p.returncode == 0 and "nothing to do" in p.stderr
