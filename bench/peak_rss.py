#!/usr/bin/env python3
"""Run a command; then print its wall time, CPU time and peak resident memory to stderr.

  python bench/peak_rss.py rhmmtk acc-spectral ...
  # last stderr line: `# peak_rss_mb=... wall_s=... cpu_s=...`

The peak is the largest resident set of the command and its descendants (getrusage of
the children, ru_maxrss); the CPU time is user + system of the same. bench_scale.py wraps
every step with it, inside the job logs.
"""
import resource
import subprocess
import sys
import time

t0 = time.perf_counter()
rc = subprocess.call(sys.argv[1:])
wall = time.perf_counter() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"# peak_rss_mb={ru.ru_maxrss / 1024:.0f} wall_s={wall:.2f} "
      f"cpu_s={ru.ru_utime + ru.ru_stime:.2f}", file=sys.stderr)
sys.exit(rc)
