#!/usr/bin/env python3
"""CDHMM speed, each step as a ratio to a lower bound measured in the same run.

    python bench/bench_cdhmm.py                                  # synthetic frames
    python bench/bench_cdhmm.py --feats data/train/feats.h5 --ali data/train/ali.48
    python bench/bench_cdhmm.py --json out.json
    python bench/bench_cdhmm.py --smoke                          # seconds

Steps and bounds (the bound is the GEMM the step cannot avoid, timed on the same
shapes with numpy in this process; best of --repeats):

- Gaussian scoring: CDHMM.gaussian_scores (features [x*x, x, 1] then one product) and
  state_scores (plus the log-sum over components), for all P*S*M Gaussians of all
  frames; bound: the bare (N, 2D+1) @ (2D+1, G) product.
- ML training per M (train_cdhmm, S states, --iters per stage): bound: the Gaussian
  scoring products of every E-step of the schedule (each frame against its own phone's
  S*M Gaussians: (N, 2D+1) @ (2D+1, S*M)) and the M-step's accumulation of first and
  second moments ((S*M, N) @ (N, 2D)), timed as GEMMs.
- one bundle iteration (largemargin.Problem.risk over the training set), NCO-H
  (Viterbi) and NCO-S (forward-backward): bound: the full scoring product of every
  frame against every Gaussian (the loss-augmented search needs all of them). The
  phone loop's own O(T P^2) dynamic programme is not in the bound, so for small G
  (S=1, M=1: G = P) the ratio is dominated by it.

Run with one BLAS thread (OPENBLAS_NUM_THREADS=1), as the commands do.
"""
import os

import numpy as np

import options  # bench/options.py: the options every benchmark shares
from timing import best_time, gemm_seconds as gemm_time  # bench/timing.py


def synthetic(work, n_utts, P, D, seed):
    from rhmmtk.io.archive import ArchiveWriter
    from rhmmtk.provenance import record

    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(P, D)) * 2
    feats, ali = os.path.join(work, "feats.h5"), os.path.join(work, "ali")
    with ArchiveWriter(feats, "features", record({})) as w, open(ali, "w") as f:
        for u in range(n_utts):
            lens = rng.integers(2, 15, size=40)
            ph = rng.integers(P, size=40)
            y = np.repeat(ph, lens)
            x = (centres[y] + rng.normal(size=(len(y), D))).astype(np.float32)
            w.add(f"u{u:04d}", x)
            f.write(f"u{u:04d} " + " ".join(f"p{k}" for k in y) + "\n")
    return feats, ali


# --smoke: 4 synthetic utterances (about 1,300 frames), mixtures 1 and 2
SMOKE = dict(utts=4, mixtures=[1, 2], iters=1)


def parse_args(argv=None):
    ap = options.parser(__doc__, work=True, seed=1)
    ap.add_argument("--feats", help="features archive (default: synthetic frames)")
    ap.add_argument("--ali", help="its frame alignment")
    ap.add_argument("--utts", type=options.positive, default=200, help="synthetic utterances")
    ap.add_argument("--states", type=options.positive, default=3)
    ap.add_argument("--mixtures", type=options.comma_list(options.positive), default=[1, 2, 4, 8],
                    help="Gaussians per state, comma-separated (default: 1,2,4,8)")
    ap.add_argument("--iters", type=options.positive, default=2)
    ap.add_argument("--objectives", type=options.comma_list(str), default=["nco-h", "nco-s"],
                    help="bundle objectives, comma-separated (default: nco-h,nco-s)")
    return options.parse(ap, SMOKE, argv)


def main():
    args = parse_args()

    from rhmmtk.models.cdhmm_train import CdhmmOptions, stages, train_cdhmm
    from rhmmtk.models.frames import read_frames
    from rhmmtk.models.largemargin import Problem

    rows = []
    with options.work_dir(args, "rhmmtk-bench-cdhmm-") as work:
        feats, ali = args.feats, args.ali
        if not feats:
            feats, ali = synthetic(work, args.utts, 41, 39, args.seed)
        frames = read_frames(feats, ali)
        N, D = frames.X.shape
        P = len(frames.labels)
        K = 2 * D + 1
        print(f"{len(frames)} utterances, {N} frames, {P} phones, D={D}; "
              f"numpy {np.__version__}, threads {os.environ.get('OPENBLAS_NUM_THREADS', 'default')}")
        S = args.states
        train_cdhmm(feats, ali, CdhmmOptions(states=S, mixtures=1, iters=1))   # compile kernels
        for M in args.mixtures:
            t_train = best_time(lambda: train_cdhmm(feats, ali, CdhmmOptions(
                states=S, mixtures=M, iters=args.iters)), 1)
            model = train_cdhmm(feats, ali, CdhmmOptions(states=S, mixtures=M, iters=1))
            G = P * S * M
            X = frames.X
            g_bound = gemm_time(N, K, G, args.repeats)
            t_g = best_time(lambda: model.gaussian_scores(X), args.repeats)
            t_s = best_time(lambda: model.state_scores(X), args.repeats)
            # ML bound: per E-step N x K x (S m) scoring + (G, N) @ (N, 2D) M-step, per stage
            n_steps = [(m, args.iters) for m in stages(M)]
            ml_bound = sum(it * (gemm_time(N, K, S * m, args.repeats)
                                 + gemm_time(S * m, N, 2 * D, args.repeats))
                           for m, it in n_steps)
            steps = [(f"gaussian_scores S={S} M={M} (G={G})", t_g, g_bound),
                     (f"state_scores S={S} M={M}", t_s, g_bound),
                     (f"train-cdhmm S={S} M={M} ({args.iters} iters/stage)", t_train, ml_bound)]
            for obj in args.objectives:
                prob = Problem(model, frames, objective=obj)
                prob.risk(prob.w0, utts=[0])          # compile
                steps.append((f"bundle iteration {obj.upper()} S={S} M={M}",
                              best_time(lambda: prob.risk(prob.w0), 1), g_bound))
            for name, t, bound in steps:
                rows.append({"step": name, "seconds": t, "bound": bound, "ratio": t / bound})
                print(f"{name:55s} {t:9.3f} s  bound {bound:8.4f} s  ratio {t / bound:7.1f}")
    options.write_json(args, rows)


if __name__ == "__main__":
    main()
