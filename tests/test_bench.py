"""Every benchmark in bench/ runs: each script with --smoke (seconds, tiny data, no
../shared) in a subprocess, as a user runs it. A new script without a smoke mode fails
here (argparse refuses --smoke), so benchmarks cannot rot unnoticed (issue 36)."""
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
# the modules the benchmarks share (bench/README.md): everything else in bench/ is a
# benchmark and must have --smoke
HELPERS = {"options.py", "timing.py", "peak_rss.py"}
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py") if p.name not in HELPERS)


def test_every_script_in_bench_is_a_benchmark_or_a_named_helper():
    assert HELPERS <= {p.name for p in BENCH.glob("*.py")}, "a helper was renamed: update HELPERS"
    assert all(name.startswith("bench_") for name in SCRIPTS), SCRIPTS
    assert len(SCRIPTS) >= 10


def _smoke(script, work):
    """`script --smoke --json` in `work`: (process, the JSON's text or None)."""
    # one BLAS thread, as on a shared machine the many small products run fastest; no
    # corpus from the environment: the smoke runs make their own
    env = {k: v for k, v in os.environ.items() if k != "RHMMTK_NETTALK"}
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    out = work / "out.json"
    p = subprocess.run([sys.executable, str(BENCH / script), "--smoke", "--json", str(out)],
                       cwd=work, env=env, capture_output=True, text=True, timeout=900)
    return p, out.read_text() if out.exists() else None


@pytest.fixture(scope="module")
def smoke_runs(tmp_path_factory):
    """Every script's smoke run, two at a time (most are one process start-up after
    another: about 80 s of CPU in all, 2026-11-27), started together on first use."""
    works = {s: tmp_path_factory.mktemp(s.removesuffix(".py")) for s in SCRIPTS}
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {s: pool.submit(_smoke, s, works[s]) for s in SCRIPTS}
        return {s: f.result() for s, f in futures.items()}


@pytest.mark.parametrize("script", SCRIPTS)
def test_smoke_run(script, smoke_runs):
    p, out = smoke_runs[script]
    assert p.returncode == 0, f"{script} --smoke failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    assert "Traceback" not in p.stderr
    # the report: at least one line with a number, and the numbers in the JSON
    assert any(ch.isdigit() for ch in p.stdout), p.stdout
    assert out is not None and json.loads(out)


def test_a_bad_list_is_one_line(tmp_path):
    p = subprocess.run([sys.executable, str(BENCH / "bench_scale.py"), "--jobs", "1,x"],
                       cwd=tmp_path, capture_output=True, text=True)
    assert p.returncode == 2 and "--jobs: expected an integer >= 1, got 'x'" in p.stderr
    assert "Traceback" not in p.stderr


def test_a_missing_dictionary_is_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "RHMMTK_NETTALK"}
    p = subprocess.run([sys.executable, str(BENCH / "bench_maxmargin.py"), "--data",
                        str(tmp_path / "none.data")], cwd=tmp_path, env=env,
                       capture_output=True, text=True)
    assert p.returncode == 1 and "no such file" in p.stderr and "--smoke" in p.stderr
    assert "Traceback" not in p.stderr


def test_the_shared_options_are_defined_once():
    # bench/options.py defines them; a script that declared its own would drift from
    # the convention (bench/README.md)
    shared = ("--smoke", "--repeats", "--json", "--work", "--reuse", "--seed",
              "--blas-threads", "--data", "--words")
    for script in SCRIPTS:
        text = (BENCH / script).read_text()
        assert "argparse.ArgumentParser(" not in text, script
        for opt in shared:
            assert f'add_argument("{opt}"' not in text, (script, opt)
