#!/usr/bin/env python3
"""Scale-out benchmark on TIMIT-size synthetic data: sharded accumulation and estimation.

  python bench/bench_scale.py                        # temporary work dir, removed afterwards
  python bench/bench_scale.py --work /tmp/bs --reuse --json bench_scale.json
  python bench/bench_scale.py --smoke                # seconds: 3,000 positions

Data (rhmmtk.corpora.synthetic): 1.1M positions, l = 39 labels, n = 10,000 codes, ~300
positions per utterance, and a 110,000-position held-out set from the same generator;
the TIMIT recipe's 17 templates. Every step runs as a user runs it, `rhmmtk` commands
through the job runner scripts/utils/run_local.sh (GNU parallel), each wrapped by
bench/peak_rss.py for its wall time and peak resident memory. For 1 and 2 jobs:

  featurize        rhmmtk featurize --job JOB/N (shard archives)
  spectral m=24    acc-spectral (pass 1) -> svd-spectral --workers N -> acc-spectral --projections
                   (pass 2) -> est-spectral; wall time end to end (target < 120 s, 2 jobs)
  EM m=4           acc-em --init -> init-em (setup), then one iteration: acc-em --model
                   -> est-em; wall time of the iteration (target < 15 s)
  decode           rhmmtk decode --job JOB/N of the held-out set with the EM model

plus the single-process commands train-spectral and train-em --iters 1 for reference,
the in-process EM iteration (em.e_step + em.m_step), and a check that the sharded
models equal the single-process ones. With --fractions (default 0.5,2) the pass-1/SVD
steps are also run on smaller and larger synthetic sets, to fit how the serial SVD step grows with
the data for the projection to 10x and 100x the data (bench/README.md states the model).
Peak resident memory target: < 4 GB for every stage.
"""
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import options  # bench/options.py: the options every benchmark shares
from timing import REPO, loadavg, rhmmtk_command  # bench/timing.py

RUN_LOCAL = REPO / "scripts" / "utils" / "run_local.sh"
PEAK = [sys.executable, str(REPO / "bench" / "peak_rss.py")]


class Bench:
    def __init__(self, work):
        self.work = Path(work)
        self.log = self.work / "log"
        self.log.mkdir(parents=True, exist_ok=True)
        self.steps = []

    def run(self, name, args, nj=None):
        """Run one step (nj=None: one process; else `run_local.sh JOB=1:nj`); record wall
        time and the largest peak RSS of its processes."""
        if nj is None:
            logs = [self.log / f"{name}.log"]
            cmd = [str(RUN_LOCAL), str(logs[0]), *PEAK, *map(str, args)]
        else:
            logs = [self.log / f"{name}.{j}.log" for j in range(1, nj + 1)]
            cmd = [str(RUN_LOCAL), f"JOB=1:{nj}", str(self.log / f"{name}.JOB.log"), *PEAK,
                   *map(str, args)]
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if p.returncode != 0:
            sys.exit(f"bench_scale: step {name} failed:\n{p.stderr}")
        peaks, cpus = [], []
        for f in logs:
            m = re.findall(r"# peak_rss_mb=(\d+) wall_s=([\d.]+) cpu_s=([\d.]+)", f.read_text())
            peaks.append(int(m[-1][0]))
            cpus.append(float(m[-1][2]))
        rec = {"step": name, "jobs": nj or 1, "wall_s": round(wall, 2), "peak_rss_mb": max(peaks),
               "cpu_max_s": round(max(cpus), 2), "cpu_sum_s": round(sum(cpus), 2)}
        self.steps.append(rec)
        print(f"  {name:34s} jobs {rec['jobs']}  {wall:7.2f} s wall  CPU per job max "
              f"{max(cpus):6.2f} s, sum {sum(cpus):6.2f} s   peak RSS {max(peaks):6d} MB",
              flush=True)
        return rec


def rel_diff(path_a, path_b):
    import numpy as np

    from rhmmtk.models.rhmm.operators import Operators

    a, b = Operators.load(path_a), Operators.load(path_b)
    if a.m.tolist() != b.m.tolist() or sorted(a.trans) != sorted(b.trans):
        return float("inf")
    worst = 0.0
    pairs = list(zip(a.emit + a.init + a.stop, b.emit + b.init + b.stop))
    pairs += [(a.trans[k], b.trans[k]) for k in a.trans]
    for x, y in pairs:
        worst = max(worst, float(np.abs(x - y).max() / max(np.abs(y).max(), 1e-300)))
    return worst


def make_data(d, frames, dev_frames, codes, reuse, seed=1):
    from rhmmtk.corpora.synthetic import SyntheticOptions, make_corpus

    if reuse and (d / "feats.h5").exists():
        return d
    t0 = time.perf_counter()
    opts = SyntheticOptions(frames=frames, dev_frames=dev_frames, codes=codes, seed=seed)
    for line in make_corpus(d, opts):
        print(f"  {line}", flush=True)
    subprocess.run([*rhmmtk_command(), "featurize", "-q", "--templates", str(d / "templates.conf"),
                    str(d / "obs.h5"), str(d / "ali"), str(d / "feats.h5")], check=True)
    print(f"  data: {frames} positions made and featurized in {time.perf_counter() - t0:.1f} s",
          flush=True)
    return d


def spectral(b, d, nj, m, tag):
    out = b.work / f"spectral_{tag}_nj{nj}"
    out.mkdir(exist_ok=True)
    R = rhmmtk_command()
    t0 = time.perf_counter()
    recs = [b.run(f"{tag}.acc_omega.nj{nj}", [*R, "acc-spectral", "-q", "--job", f"JOB/{nj}",
                                             d / "feats.h5", out / "omega.JOB.acc"], nj)]
    recs.append(b.run(f"{tag}.svd.nj{nj}", [*R, "svd-spectral", "-q", "-m", m, "--workers",
                                           nj, *[out / f"omega.{j}.acc" for j in range(1, nj + 1)],
                                           out / "proj.h5"]))
    recs.append(b.run(f"{tag}.acc_moments.nj{nj}", [*R, "acc-spectral", "-q", "--job",
                                                   f"JOB/{nj}", "--projections", out / "proj.h5",
                                                   d / "feats.h5", out / "moments.JOB.acc"], nj))
    recs.append(b.run(f"{tag}.est.nj{nj}", [*R, "est-spectral", "-q", out / "proj.h5",
                                           *[out / f"moments.{j}.acc" for j in range(1, nj + 1)],
                                           out / "final.h5"]))
    total = time.perf_counter() - t0
    # the SVD step's CPU is shared by its nj worker processes (ideally)
    crit = sum(r["cpu_max_s"] / (nj if ".svd." in r["step"] else 1) for r in recs)
    return {"jobs": nj, "total_s": round(total, 2), "steps": recs,
            "critical_cpu_s": round(crit, 2),
            "peak_rss_mb": max(r["peak_rss_mb"] for r in recs), "model": str(out / "final.h5")}


def em_iteration(b, d, nj, m):
    out = b.work / f"em_nj{nj}"
    out.mkdir(exist_ok=True)
    R = rhmmtk_command()
    setup = [b.run(f"em.acc_counts.nj{nj}", [*R, "acc-em", "-q", "--init", "--job", f"JOB/{nj}",
                                             d / "obs.h5", d / "ali", out / "0.JOB.acc"], nj)]
    setup.append(b.run(f"em.init.nj{nj}", [*R, "init-em", "-q", "-m", m, "--seed", "1",
                                          *[out / f"0.{j}.acc" for j in range(1, nj + 1)],
                                          out / "0.h5"]))
    t0 = time.perf_counter()
    it = [b.run(f"em.acc_estep.nj{nj}", [*R, "acc-em", "-q", "--model", out / "0.h5", "--job",
                                         f"JOB/{nj}", d / "obs.h5", d / "ali", out / "1.JOB.acc"],
                nj)]
    it.append(b.run(f"em.est.nj{nj}", [*R, "est-em", "-q", out / "0.h5",
                                       *[out / f"1.{j}.acc" for j in range(1, nj + 1)],
                                       out / "1.h5"]))
    total = time.perf_counter() - t0
    return {"jobs": nj, "iteration_s": round(total, 2), "setup": setup, "steps": it,
            "critical_cpu_s": round(sum(r["cpu_max_s"] for r in it), 2),
            "peak_rss_mb": max(r["peak_rss_mb"] for r in setup + it), "model": str(out / "1.h5")}


def sum_cost(out):
    """Seconds per shard that the serial steps spend reading and adding one shard's
    statistics (from the 2-job run's files): pass-1 Omega counts and pass-2 moments."""
    from rhmmtk.models.rhmm import spectral as S
    from rhmmtk.io.stats import StatsFile

    t0 = time.perf_counter()
    parts = []
    for j in (1, 2):
        with StatsFile(out / f"omega.{j}.acc") as sf:
            parts.append(S.OmegaStats.from_file(sf, len(sf.symbols("labels"))))
    S.OmegaStats.total(parts)
    t1 = time.perf_counter()
    mom = None
    for j in (1, 2):
        with StatsFile(out / f"moments.{j}.acc") as sf:
            part = S.MomentStats.from_file(sf, len(sf.symbols("observations")))
        mom = part if mom is None else mom.add(part)
    t2 = time.perf_counter()
    return {"omega_per_shard_s": round((t1 - t0) / 2, 3), "moments_per_shard_s":
            round((t2 - t1) / 2, 3)}


def em_in_process(d, m):
    """e_step + m_step in one process, after reading and bucketing (as train-em iterates)."""
    import numpy as np

    from rhmmtk.models.rhmm import em
    from rhmmtk.training_data import read_corpus

    corpus = read_corpus(str(d / "obs.h5"), str(d / "ali"))
    counts = em.Counts.from_corpus(corpus)
    support = em.Support.from_counts(counts, True)
    buckets = em.make_buckets(corpus, support, m)
    model, tp = em.initial_model(counts, support, m, np.random.default_rng(1), 0.5, 1e-3)
    t0 = time.perf_counter()
    stats = em.e_step(model, tp, buckets, support)
    t1 = time.perf_counter()
    em.m_step(stats, support, 1e-3)
    t2 = time.perf_counter()
    return {"e_step_s": round(t1 - t0, 2), "m_step_s": round(t2 - t1, 2)}


# --smoke: 3,000 positions, 2 jobs only and no growth fit (each step is a few rhmmtk
# processes, about a second of start-up each: the 1-job run and the growth fit's data
# would double it; `--smoke --jobs 1,2 --fractions 0.5` runs them too)
SMOKE = dict(frames=3000, dev_frames=1000, codes=1500, jobs=[2], fractions=[])


def parse_args(argv=None):
    ap = options.parser(__doc__, repeats=None, work=True, reuse=True)
    ap.add_argument("--frames", type=options.positive, default=1_100_000)
    ap.add_argument("--dev-frames", type=options.positive, default=110_000)
    ap.add_argument("--codes", type=options.positive, default=10_000,
                    help="observation symbols of the synthetic data (>= 1500)")
    ap.add_argument("--jobs", type=options.comma_list(options.positive), default=[1, 2],
                    help="job counts to run, comma-separated (default: 1,2)")
    ap.add_argument("--m-spectral", type=options.positive, default=24, help="spectral m")
    ap.add_argument("--m-em", type=options.positive, default=4, help="EM m")
    ap.add_argument("--fractions", type=options.comma_list(float), default=[0.5, 2.0],
                    help="other data sizes (multiples of --frames) for the SVD growth fit, "
                         "comma-separated; empty: none (default: 0.5,2)")
    ap.add_argument("--no-decode", action="store_true")
    return options.parse(ap, SMOKE, argv)


def main():
    args = parse_args()
    if shutil.which("parallel") is None:
        sys.exit("bench_scale: GNU parallel is needed (apt-get install parallel)")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    with options.work_dir(args, "rhmmtk-bench-scale-") as work:
        out = bench(args, work)
    options.write_json(args, out)


def bench(args, work):
    jobs = args.jobs
    out = {"machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                       "python": platform.python_version(), "load_before": loadavg()},
           "frames": args.frames, "m": args.m_spectral, "m_em": args.m_em}
    b = Bench(work)
    print(f"bench_scale: work dir {work}; load {loadavg()}", flush=True)
    d = make_data(work / "data", args.frames, args.dev_frames, args.codes,
                  args.reuse and bool(args.work))
    R = rhmmtk_command()

    print("featurize", flush=True)
    out["featurize"] = {}
    for nj in jobs:
        out["featurize"][nj] = b.run(f"featurize.nj{nj}", [
            *R, "featurize", "-q", "--job", f"JOB/{nj}", "--templates", d / "templates.conf",
            d / "obs.h5", d / "ali", work / f"feats.nj{nj}.JOB.h5"], nj)
        for j in range(1, nj + 1):
            (work / f"feats.nj{nj}.{j}.h5").unlink()

    print(f"spectral m={args.m_spectral}", flush=True)
    out["spectral"] = {nj: spectral(b, d, nj, args.m_spectral, "full") for nj in jobs}
    out["train_spectral"] = b.run("train_spectral", [*R, "train-spectral", "-q", "-m", args.m_spectral,
                                                    d / "feats.h5", work / "train_spectral.h5"])
    if 2 in jobs:
        out["sum_cost"] = sum_cost(work / "spectral_full_nj2")
        print(f"  summing statistics, per shard: {out['sum_cost']}", flush=True)
    out["spectral_max_rel_diff"] = {
        nj: rel_diff(out["spectral"][nj]["model"], work / "train_spectral.h5") for nj in jobs}

    print(f"EM m={args.m_em}", flush=True)
    out["em"] = {nj: em_iteration(b, d, nj, args.m_em) for nj in jobs}
    out["train_em"] = b.run("train_em_1iter", [*R, "train-em", "-q", "-m", args.m_em, "--iters",
                                               "1", "--seed", "1", d / "obs.h5", d / "ali",
                                               work / "train_em.h5"])
    out["em_in_process"] = em_in_process(d, args.m_em)
    if 2 in jobs:
        from rhmmtk.models.rhmm import em as _em
        from rhmmtk.io.stats import StatsFile

        t0 = time.perf_counter()
        for j in (1, 2):
            with StatsFile(work / "em_nj2" / f"1.{j}.acc") as sf:
                _em.Stats.from_file(sf, len(sf.symbols("labels")), len(sf.symbols("observations")),
                                    sf["t"].shape[0], args.m_em)
        out["em_sum_per_shard_s"] = round((time.perf_counter() - t0) / 2, 3)
    print(f"  in-process e_step + m_step: {out['em_in_process']}", flush=True)
    from rhmmtk.models.rhmm.em_files import load_model
    import numpy as np

    ref, _ = load_model(work / "train_em.h5")
    out["em_max_rel_diff"] = {}
    for nj in jobs:
        got, _ = load_model(out["em"][nj]["model"])
        out["em_max_rel_diff"][nj] = max(
            float(np.abs(getattr(got, k) - getattr(ref, k)).max() / np.abs(getattr(ref, k)).max())
            for k in ("pi", "o", "t", "f"))

    if not args.no_decode:
        print("decode (EM model, held-out set)", flush=True)
        out["decode"] = {}
        model = out["em"][jobs[0]]["model"]
        for nj in jobs:
            out["decode"][nj] = b.run(f"decode.nj{nj}", [
                *R, "decode", "-q", "--job", f"JOB/{nj}", model, d / "dev" / "obs.h5",
                work / f"dev.nj{nj}.JOB.hyp"], nj)

    fractions = args.fractions
    out["svd_growth"] = {}
    for frac in fractions:
        print(f"SVD growth: {frac} x the data", flush=True)
        dd = make_data(work / f"data_{frac}", int(args.frames * frac), 0, args.codes,
                       args.reuse and bool(args.work), seed=7)
        res = spectral(b, dd, 1, args.m_spectral, f"frac{int(round(frac * 100))}")
        out["svd_growth"][frac] = {
            **{s["step"].split(".")[1]: s["wall_s"] for s in res["steps"]},
            **{s["step"].split(".")[1] + "_cpu": s["cpu_max_s"] for s in res["steps"]},
            "peak_rss_mb": res["peak_rss_mb"]}

    out["machine"]["load_after"] = loadavg()
    out["steps"] = b.steps
    summarize(out, jobs, fractions)
    return out


def summarize(out, jobs, fractions):
    import math

    print("\n=== summary ===")
    print(f"load average before {out['machine']['load_before']}, after "
          f"{out['machine']['load_after']} (2 cores; other work on the machine slows the jobs)")
    sp = out["spectral"]
    for nj in jobs:
        s = sp[nj]
        parts = ", ".join(f"{r['step'].split('.')[1]} {r['wall_s']:.1f}" for r in s["steps"])
        print(f"spectral m={out['m']}, {nj} job(s): {s['total_s']:.1f} s end to end ({parts}); "
              f"critical-path CPU {s['critical_cpu_s']:.1f} s; peak RSS {s['peak_rss_mb']} MB; "
              f"model vs train-spectral: max rel diff {out['spectral_max_rel_diff'][nj]:.1e}")
    print(f"train-spectral (one process): {out['train_spectral']['wall_s']:.1f} s, peak RSS "
          f"{out['train_spectral']['peak_rss_mb']} MB")
    for nj in jobs:
        e = out["em"][nj]
        print(f"EM m={out['m_em']} iteration, {nj} job(s): {e['iteration_s']:.1f} s (acc-em "
              f"{e['steps'][0]['wall_s']:.1f} + est-em {e['steps'][1]['wall_s']:.1f}); "
              f"critical-path CPU {e['critical_cpu_s']:.1f} s; setup "
              f"{sum(r['wall_s'] for r in e['setup']):.1f} s; peak RSS {e['peak_rss_mb']} MB; "
              f"vs train-em: max rel diff {out['em_max_rel_diff'][nj]:.1e}")
    print(f"train-em --iters 1 (one process, with setup): {out['train_em']['wall_s']:.1f} s; "
          f"in-process e_step {out['em_in_process']['e_step_s']} s + m_step "
          f"{out['em_in_process']['m_step_s']} s")
    if len(jobs) > 1:
        a, z = jobs[0], jobs[-1]
        wall = {"spectral": sp[a]["total_s"] / sp[z]["total_s"],
                "EM iteration": out["em"][a]["iteration_s"] / out["em"][z]["iteration_s"],
                "featurize": out["featurize"][a]["wall_s"] / out["featurize"][z]["wall_s"]}
        cpu = {"spectral": sp[a]["critical_cpu_s"] / sp[z]["critical_cpu_s"],
               "EM iteration": out["em"][a]["critical_cpu_s"] / out["em"][z]["critical_cpu_s"],
               "featurize": out["featurize"][a]["cpu_max_s"] / out["featurize"][z]["cpu_max_s"]}
        if "decode" in out:
            wall["decode"] = out["decode"][a]["wall_s"] / out["decode"][z]["wall_s"]
            cpu["decode"] = out["decode"][a]["cpu_max_s"] / out["decode"][z]["cpu_max_s"]
        out["scaling"] = {"wall": wall, "critical_cpu": cpu}
        print(f"scaling {a} -> {z} jobs, wall: "
              + ", ".join(f"{k} {v:.2f}x" for k, v in wall.items()))
        print(f"scaling {a} -> {z} jobs, critical-path CPU (about the wall time on {z} free "
              "cores; the SVD's CPU divided among its workers): "
              + ", ".join(f"{k} {v:.2f}x" for k, v in cpu.items()))
    print("peak RSS of every step (MB): " + ", ".join(
        f"{r['step']} {r['peak_rss_mb']}" for r in out["steps"]))
    worst = max(r["peak_rss_mb"] for r in out["steps"])
    print(f"largest peak RSS: {worst} MB (target < 4096)")
    # projection (bench/README.md): T(D, N) = acc * D / N + serial * D^gamma + c * N, with
    # acc the one-job CPU time of both accumulation passes (linear in the data, split N
    # ways), serial the SVD + estimation steps (one process) growing as D^gamma, gamma
    # fitted between the two largest sizes measured and kept in [0, 1], and c the time the
    # serial steps spend reading and adding one shard's statistics.
    one = {r["step"].split(".")[1]: r for r in sp[jobs[0]]["steps"]}
    acc1 = one["acc_omega"]["cpu_max_s"] + one["acc_moments"]["cpu_max_s"]
    serial1 = one["svd"]["cpu_max_s"] + one["est"]["cpu_max_s"]
    sizes = {1.0: serial1}
    for f, g in out["svd_growth"].items():
        sizes[float(f)] = g["svd_cpu"] + g["est_cpu"]
    xs = sorted(sizes)
    gamma = 0.0
    if len(xs) > 1:
        f0, f1 = xs[-2], xs[-1]
        gamma = math.log(sizes[f1] / sizes[f0]) / math.log(f1 / f0)
    gamma_used = min(max(gamma, 0.0), 1.0)
    out["projection"] = {"acc_1job_cpu_s": acc1, "serial_cpu_s": serial1,
                         "serial_by_size": sizes, "gamma_fit": round(gamma, 3),
                         "gamma_used": gamma_used, "table": {}}
    print("serial steps (svd + est) CPU by data size: "
          + ", ".join(f"{x}x {sizes[x]:.1f} s" for x in xs)
          + f"; growth exponent {gamma:.2f} (used: {gamma_used:.2f}; upper bound 1)")
    c = sum(out.get("sum_cost", {}).values())
    out["projection"]["sum_per_shard_s"] = c
    print(f"projection T(D, N) = {acc1:.1f} s * D / N + {serial1:.1f} s * D^g + {c:.2f} s * N  "
          "(D: multiple of 1.1M positions, N machines)")
    for D in (10, 100):
        row = {}
        for N in (1, 2, 10, 100):
            row[N] = (round(acc1 * D / N + serial1 * D ** gamma_used + c * N),
                      round(acc1 * D / N + serial1 * D + c * N))
        out["projection"]["table"][D] = row
        print(f"  {D:3d}x data: " + ", ".join(
            f"N={N}: {t / 60:.1f} min (g=1: {u / 60:.1f})" for N, (t, u) in row.items()))
    # EM: the E-step is linear in the data and split N ways; the M-step does not grow with
    # the data (l n m parameters); each shard's statistics file is read once.
    e1 = out["em"][jobs[0]]["steps"]
    acc_em, est_em = e1[0]["cpu_max_s"], e1[1]["cpu_max_s"]
    c_em = out.get("em_sum_per_shard_s", 0.05)
    out["projection_em"] = {D: {N: round(acc_em * D / N + est_em + c_em * N, 1)
                                for N in (1, 2, 10, 100)} for D in (10, 100)}
    print(f"EM iteration T(D, N) = {acc_em:.1f} s * D / N + {est_em:.1f} s + {c_em:.2f} s * N:")
    for D, row in out["projection_em"].items():
        print(f"  {D:3d}x data: " + ", ".join(f"N={N}: {t:.0f} s" for N, t in row.items()))


if __name__ == "__main__":
    main()
