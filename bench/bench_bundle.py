#!/usr/bin/env python3
"""Benchmark: the bundle method's dual QP (rhmmtk.bundle.solve_dual) as the bundle grows,
against quadprog (its former solver, now the fallback) on the same problems, in the same
run, and against a floor.

The bundle is run on a multiclass hinge risk (Crammer-Singer, a linear model of `--dim`
parameters over `--samples` points; lambda small and tol 0, so it never stops before
`--planes` iterations, as the small-lambda runs of paper 004's protocol take 500-1,200).
At each checkpoint t the QP of that iteration (t planes) is solved three ways: as the
method solves it (the active set from the previous iteration's alpha), by quadprog from
scratch, and by the active set from a cold start. Floor: one product G x with the t x t
Gram matrix, the least a solver that reads G once must do. Ratios: quadprog / active set
(the speed-up), active set / floor. The three solutions' objectives are printed too (the
active set's is never worse).

  python bench/bench_bundle.py [--planes 900] [--dim 2000] [--samples 3000] [--repeats 3]
  python bench/bench_bundle.py --smoke
"""
import numpy as np

import options  # bench/options.py: the options every benchmark shares
from timing import best_time  # bench/timing.py


def hinge_oracle(X, y, k):
    """Crammer-Singer multiclass hinge: R(u) = sum_i max_c (1[c != y_i] + w_c x_i - w_y x_i)."""
    n, d = X.shape
    rows = np.arange(n)

    def oracle(u):
        W = u.reshape(k, d)
        S = X @ W.T + 1.0
        S[rows, y] -= 1.0
        c = S.argmax(axis=1)
        R = float((S[rows, c] - S[rows, y]).sum())
        G = np.zeros((k, d))
        np.add.at(G, c, X)
        np.add.at(G, y, -X)
        return R, G.ravel()
    return oracle


def main():
    ap = options.parser(__doc__, seed=1)
    ap.add_argument("--planes", type=options.positive, default=900,
                    help="bundle iterations (the last checkpoint; default: %(default)s)")
    ap.add_argument("--dim", type=options.positive, default=2000,
                    help="parameters (classes x features; default: %(default)s)")
    ap.add_argument("--samples", type=options.positive, default=3000,
                    help="points of the hinge risk (default: %(default)s)")
    args = options.parse(ap, dict(planes=40, dim=200, samples=300))

    from rhmmtk import bundle

    k = 20
    d = max(1, args.dim // k)
    rng = np.random.default_rng(args.seed)
    X = rng.normal(size=(args.samples, d))
    y = (X @ rng.normal(size=(d, k)) + 2.0 * rng.normal(size=(args.samples, k))).argmax(1)
    oracle = hinge_oracle(X, y, k)
    lam = 1e-3
    checks = sorted({t for t in (args.planes // 9, args.planes // 3, 2 * args.planes // 3,
                                 args.planes) if t >= 2})
    b = bundle.Bundle(k * d, lam, tol=0.0)
    report = {"planes": args.planes, "dim": k * d, "samples": args.samples,
              "seed": args.seed, "checkpoints": []}
    print(f"seed {args.seed}: {args.samples} points, {k} classes x {d} features, lambda "
          f"{lam}, {args.planes} bundle iterations; shared machine: read ratios only")
    print(f"{'planes':>6} {'support':>7} {'active set (warm)':>17} {'quadprog':>9} "
          f"{'cold':>8} {'floor':>8} {'qp/warm':>8} {'warm/floor':>10}  objective excess")
    while len(b.history) < args.planes:
        R, a = oracle(b.u)
        t = len(b.history) + 1
        if t in checks:     # the QP this step will solve, timed before it is
            row = b.A @ a
            K = np.block([[b.K, row[:, None]], [row[None, :], np.array([[a @ a]])]])
            B = np.append(b.B, R - float(a @ b.u))      # (no conflict: convex risk)
            G, q = bundle.simplex_qp(K, B, lam)       # the QP exactly as solve_dual poses it
            prev = b.alpha
            warm = best_time(lambda: bundle._simplex_active_set(G, q, prev), args.repeats)
            quad = best_time(lambda: bundle._simplex_quadprog(G, q), args.repeats)
            cold = best_time(lambda: bundle._simplex_active_set(G, q), args.repeats)
            x0 = np.full(t, 1.0 / t)
            floor = best_time(lambda: G @ x0, max(args.repeats, 5))
            f = lambda z: 0.5 * z @ G @ z - q @ z       # noqa: E731
            xw = bundle._simplex_active_set(G, q, prev)
            xq = np.maximum(bundle._simplex_quadprog(G, q), 0)
            xq /= xq.sum()
            row = {"planes": t, "support": int((xw > 0).sum()), "warm_s": warm,
                   "quadprog_s": quad, "cold_s": cold, "floor_s": floor,
                   "speedup": quad / warm, "warm_over_floor": warm / floor,
                   "objective_warm_minus_quadprog": float(f(xw) - f(xq))}
            report["checkpoints"].append(row)
            print(f"{t:6d} {row['support']:7d} {warm:17.4f} {quad:9.4f} {cold:8.4f} "
                  f"{floor:8.5f} {row['speedup']:8.1f} {row['warm_over_floor']:10.1f}  "
                  f"{row['objective_warm_minus_quadprog']:.2e}")
        b.step(R, a)
    options.write_json(args, report)


if __name__ == "__main__":
    main()
