"""Timing shared by the benchmarks: the best of a few runs (the least disturbed by the
other work on a shared machine), commands run as a user runs them, GEMM rates, and the
state of the machine that a reader of the figures needs."""
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def best_of(fn, repeats):
    """Call fn() `repeats` times; returns (best seconds, all seconds, last result)."""
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), times, out


def best_time(fn, repeats):
    """The best of `repeats` calls of fn(), in seconds."""
    return best_of(fn, repeats)[0]


def rhmmtk_command():
    """The `rhmmtk` console script of this interpreter (what a user runs)."""
    here = Path(sys.executable).parent / "rhmmtk"
    if here.exists():
        return [str(here)]
    found = shutil.which("rhmmtk")
    return [found] if found else [sys.executable, "-m", "rhmmtk"]


def run(cmd, what):
    """Run a command from the repository; returns (wall seconds, stderr). Exits with its
    stderr on failure."""
    t0 = time.perf_counter()
    p = subprocess.run(list(map(str, cmd)), cwd=REPO, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"{Path(sys.argv[0]).name}: error: {what} failed (exit {p.returncode}):\n"
                 f"$ {' '.join(map(str, cmd))}\n{p.stderr}")
    return dt, p.stderr


def gemm_seconds(m, k, n, repeats, rng_seed=0):
    """Best seconds of numpy (m, k) @ (k, n) on random data, after one untimed call."""
    import numpy as np

    a = np.random.default_rng(rng_seed).normal(size=(m, k))
    b = np.random.default_rng(rng_seed + 1).normal(size=(k, n))
    a @ b
    return best_time(lambda: a @ b, repeats)


def loadavg():
    try:
        return list(os.getloadavg())
    except OSError:
        return None


def blas_info():
    """The BLAS libraries numpy loaded: kind, thread count, version."""
    try:
        from threadpoolctl import threadpool_info
        return [{k: i.get(k) for k in ("internal_api", "num_threads", "version")}
                for i in threadpool_info() if i.get("user_api") == "blas"]
    except Exception:
        return None
