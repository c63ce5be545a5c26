"""Timing shared by the benchmarks: the best of a few runs (the least disturbed by the
other work on a shared machine)."""
import time


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
