#!/usr/bin/env python3
"""HCRF speed: one gradient evaluation over the training segments, as a ratio to its
matrix-multiply bound measured in the same run.

    python bench/bench_hcrf.py                         # synthetic segments
    python bench/bench_hcrf.py --feats data/train/feats.h5 --segments data/train/phone_segments \
        --model exp/cdhmm_s3_m4/final.h5 [--knots 5]
    python bench/bench_hcrf.py --json out.json
    python bench/bench_hcrf.py --smoke                 # seconds: 100 synthetic segments

What is timed (best of --repeats): rhmmtk.models.hcrf.train.total_gradient over every
training segment, features already expanded (as in training, where they are computed
once): the emission product psi W^T, the compiled lattice pass (forward-backward of
every class over every segment) and the gradient product G^T psi.

The bound: the two products of shapes (T, F) @ (F, C N) and (C N, T) @ (T, F) that any
gradient evaluation needs (every frame is scored by every state of every class, and the
gradient of every weight sums over every frame), timed as bare numpy GEMMs on the same
shapes in this process. The lattice pass is on top of that bound (its cost grows with
C N^2 per frame, not with F).
"""
import sys

import numpy as np

import options  # bench/options.py: the options every benchmark shares
from timing import best_time  # bench/timing.py


def synthetic(args, rng):
    """A random HCRF (C classes, S*M states) and segments of 2-15 frames."""
    from rhmmtk.models.hcrf.data import SegmentData
    from rhmmtk.models.hcrf.model import HCRF
    from rhmmtk.symbols import SymbolTable

    C, N, D = args.classes, args.states * args.mixtures, args.dim
    lens = rng.integers(2, 16, size=args.segments_n)
    off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    X = rng.normal(size=(off[-1], D))
    st = np.repeat(np.arange(args.states), args.mixtures)
    masks = {"trans_ok": np.broadcast_to((st[:, None] == st) | (st[None] == st[:, None] + 1),
                                         (C, N, N)).copy(),
             "entry_ok": np.broadcast_to(st == 0, (C, N)).copy(),
             "exit_ok": np.ones((C, N), dtype=bool)}
    w = {"prior": np.zeros(C), "entry": np.zeros((C, N)), "trans": np.full((C, N, N), -1.0),
         "exit": np.full((C, N), -2.0), "W": 0.05 * rng.normal(size=(C, N, 2 * D)),
         "bias": np.zeros((C, N))}
    model = HCRF(SymbolTable([f"c{i}" for i in range(C)]), w, masks, np.zeros(2 * D),
                 np.ones(2 * D), states=args.states)
    return model, SegmentData(X, off, rng.integers(C, size=len(lens)), [], [])


def real(args):
    from rhmmtk.models import load_model
    from rhmmtk.models.hcrf.data import read_segment_data
    from rhmmtk.models.hcrf.train import HcrfOptions, start_model

    init = load_model(args.model, expect=("cdhmm", "hcrf"))
    data = read_segment_data(args.feats, args.segments, init.labels, dim=init.dim)
    return start_model(init, data, HcrfOptions()), data


def main():
    ap = options.parser(__doc__, seed=0)
    ap.add_argument("--feats"), ap.add_argument("--segments"), ap.add_argument("--model")
    ap.add_argument("--classes", type=int, default=41)
    ap.add_argument("--states", type=int, default=3)
    ap.add_argument("--mixtures", type=int, default=4)
    ap.add_argument("--dim", type=int, default=39)
    ap.add_argument("--segments-n", dest="segments_n", type=int, default=3000,
                    help="synthetic segments (default: %(default)s)")
    ap.add_argument("--knots", type=int, default=0, help="DC with K knots (0: MC)")
    args = options.parse(ap, dict(segments_n=100))
    print(f"[seed] {args.seed}", file=sys.stderr)
    from rhmmtk.models.hcrf.model import moment_features
    from rhmmtk.models.hcrf.train import block_features, total_gradient

    rng = np.random.default_rng(args.seed)
    if args.feats:
        model, data = real(args)
    else:
        model, data = synthetic(args, rng)
    if args.knots:
        z = (moment_features(data.X) - model.shift) / model.scale
        model = model.to_distribution(args.knots, z)
    feats = block_features(model, data)
    total_gradient(model, feats)           # compile and warm up
    t_grad = best_time(lambda: total_gradient(model, feats), args.repeats)
    C, N, F = model.w["W"].shape
    T = int(data.off[-1])
    psi = np.concatenate([p for p, _, _ in feats])
    Wt = rng.normal(size=(F, C * N))
    G = rng.normal(size=(T, C * N))
    t_bound = best_time(lambda: (psi @ Wt, G.T @ psi), args.repeats)
    out = {"frames": T, "segments": data.num_segments, "classes": C, "states": N,
           "features": F, "gradient_s": t_grad, "gemm_bound_s": t_bound,
           "ratio": t_grad / t_bound}
    print(f"{T} frames, {data.num_segments} segments, C={C} N={N} F={F}: gradient "
          f"{t_grad:.3f} s, GEMM bound {t_bound:.3f} s, ratio {t_grad / t_bound:.2f}")
    options.write_json(args, out)


if __name__ == "__main__":
    main()
