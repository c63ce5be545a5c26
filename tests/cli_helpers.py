"""Run the rhmmtk command line in-process or as a subprocess, for tests."""
import subprocess
import sys


def run(*args, input=None, check=True):
    """Run `rhmmtk ARGS` in a subprocess; returns CompletedProcess (text)."""
    p = subprocess.run([sys.executable, "-m", "rhmmtk", *map(str, args)], input=input,
                       capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"rhmmtk {' '.join(map(str, args))} failed ({p.returncode}):\n{p.stderr}")
    return p


def fails(*args, input=None):
    """Run a command that must fail with one clear error line and no traceback; return stderr."""
    p = subprocess.run([sys.executable, "-m", "rhmmtk", *map(str, args)], input=input,
                       capture_output=True, text=True)
    assert p.returncode != 0, f"expected failure, got success:\n{p.stdout}\n{p.stderr}"
    assert "Traceback" not in p.stderr, p.stderr
    err_lines = [l for l in p.stderr.splitlines() if "error" in l.lower()]
    assert err_lines, p.stderr
    return p.stderr
