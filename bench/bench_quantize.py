#!/usr/bin/env python3
"""Benchmark: one vector-quantisation pass (rhmmtk.frontend.codebook.assign) against its GEMM lower bound.

Synthetic data the size of TIMIT's training set (1.1M frames x 39 dims) against
10,000 centroids. Nearest-centroid search is dominated by the product of frames
and centroids, 2*N*K*D flops. In the same run this script multiplies the same
frames by the same centroids, chunk by chunk ((chunk x D) @ (D x K) into a
preallocated block: the bare GEMM, no distance or argmin), to measure this
machine's rate for that shape; the bound is 2*N*K*D / that rate. The pass and
the bare GEMMs are interleaved block by block (alternating which goes first) so
both see the same machine: on a shared computer other processes' load would
otherwise decide the ratio. For reference it also prints the best rate seen
for a few chunk heights, timed alone.

  python bench/bench_quantize.py                  # full size, float32 and float64
  python bench/bench_quantize.py --frames 100000  # quick
  python bench/bench_quantize.py --smoke          # seconds: 20,000 frames, 500 centroids
"""
import os
import platform
import time

import numpy as np

import options  # bench/options.py: the options every benchmark shares


def best_gemm_rate(m, d, k, dtype, min_seconds):
    """Best-of GFLOP/s of (m x d) @ (d x k) into a preallocated output, timed alone."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((m, d)).astype(dtype)
    b = rng.standard_normal((d, k)).astype(dtype)
    out = np.empty((m, k), dtype)
    np.matmul(a, b, out=out)
    best, spent = np.inf, 0.0
    while spent < min_seconds:
        t = time.perf_counter()
        np.matmul(a, b, out=out)
        dt = time.perf_counter() - t
        best, spent = min(best, dt), spent + dt
    return 2.0 * m * d * k / best / 1e9


def interleaved(frames, centroids, dtype, chunk, block):
    """(seconds of one assignment pass, seconds of the bare same-shape GEMMs), interleaved."""
    from rhmmtk.frontend.codebook import Assigner

    assigner = Assigner(centroids, dtype, chunk)
    x = frames.astype(dtype, copy=False)  # the GEMM gets its operands ready-made
    ct = np.ascontiguousarray(centroids.T, dtype=dtype)
    out = np.empty((chunk, len(centroids)), dtype)

    def gemm(lo, hi):
        for s in range(lo, hi, chunk):
            e = min(s + chunk, hi)
            np.matmul(x[s:e], ct, out=out[: e - s])

    warm = min(4 * chunk, len(frames))   # (fewer frames than that: all of them)
    assigner(frames[:warm])  # warm up both
    gemm(0, warm)
    t_assign = t_gemm = 0.0
    for i, lo in enumerate(range(0, len(frames), block)):
        hi = min(lo + block, len(frames))
        for which in ((0, 1) if i % 2 == 0 else (1, 0)):
            t = time.perf_counter()
            if which == 0:
                codes = assigner(frames[lo:hi])
            else:
                gemm(lo, hi)
            dt = time.perf_counter() - t
            if which == 0:
                assert codes.dtype == np.int32 and len(codes) == hi - lo
                t_assign += dt
            else:
                t_gemm += dt
    return t_assign, t_gemm


def main():
    # (no --repeats: the pass runs once, interleaved block by block with its bound)
    ap = options.parser(__doc__, repeats=None, seed=0, blas_threads=True)
    ap.add_argument("--frames", type=options.positive, default=1_100_000)
    ap.add_argument("--codes", type=options.positive, default=10_000)
    ap.add_argument("--dim", type=options.positive, default=39)
    ap.add_argument("--precisions", type=options.comma_list(str), default=["float32", "float64"],
                    help="comma-separated (default: float32,float64)")
    ap.add_argument("--chunk", type=options.positive, default=None,
                    help="frames per product (default: rhmmtk's)")
    ap.add_argument("--block", type=options.positive, default=16384,
                    help="frames per interleaving block")
    ap.add_argument("--gemm-seconds", type=float, default=1.0,
                    help="time spent on each reference (best-of) GEMM shape")
    args = options.parse(ap, dict(frames=20_000, codes=500, block=4096, gemm_seconds=0.02))

    from threadpoolctl import threadpool_info

    from rhmmtk.frontend.codebook import default_chunk

    n, k, d = args.frames, args.codes, args.dim
    chunk = args.chunk or default_chunk(k)
    flops = 2.0 * n * k * d
    blas = [f"{i['internal_api']} {i.get('version')}, {i['num_threads']} threads"
            for i in threadpool_info() if i["user_api"] == "blas"]
    print(f"# {platform.machine()}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.2f}, numpy {np.__version__}, BLAS {blas[0]}")
    print(f"# N={n} frames x D={d} dims, K={k} centroids, chunk {chunk} frames; "
          f"2*N*K*D = {flops / 1e9:.0f} GFLOP")
    rng = np.random.default_rng(args.seed)
    frames = rng.standard_normal((n, d), dtype=np.float32)
    centroids = rng.standard_normal((k, d), dtype=np.float32)

    rows = []
    for name in args.precisions:
        dtype = np.dtype(name)
        t_assign, t_gemm = interleaved(frames, centroids, dtype, chunk, args.block)
        peak = {m: best_gemm_rate(m, d, k, dtype, args.gemm_seconds)
                for m in sorted({chunk, 1024, 4096})}
        rows.append((name, flops / t_gemm / 1e9, t_gemm, t_assign, peak))

    print()
    print(f"{'precision':<10} {'GEMM GF/s':>10} {'bound s':>8} {'assign s':>9} {'ratio':>6} "
          f"{'Mframes/s':>10}   best-of GEMM GF/s by chunk height, timed alone")
    for name, rate, bound, seconds, peak in rows:
        alone = ", ".join(f"{m}: {r:.0f}" for m, r in peak.items())
        print(f"{name:<10} {rate:>10.1f} {bound:>8.2f} {seconds:>9.2f} {seconds / bound:>6.2f} "
              f"{n / seconds / 1e6:>10.3f}   {alone}")
    print(f"(bound = 2*N*K*D / GEMM rate of the same chunks, interleaved with the pass; "
          f"ratio = assign / bound; load average now {os.getloadavg()[0]:.2f})")
    options.write_json(args, {"frames": n, "codes": k, "dim": d, "chunk": chunk, "rows": [
        {"precision": name, "gemm_gflops": rate, "bound_s": bound, "assign_s": seconds,
         "ratio": seconds / bound, "alone_gflops_by_chunk": peak}
        for name, rate, bound, seconds, peak in rows]})


if __name__ == "__main__":
    main()
