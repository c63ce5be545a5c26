"""Run the rhmmtk command line for tests: in-process through click's test runner (fast: no
interpreter start-up and imports per call), or as a subprocess where the process itself
matters (signals, exit codes of the interpreter, environment) or when
RHMMTK_TEST_SUBPROCESS=1 asks for it everywhere.

Either way the result is a subprocess.CompletedProcess with text stdout and stderr, and
an exception that escapes the command becomes a traceback on stderr and exit status 1,
as it would in a real process -- so `fails` catches tracebacks in both modes.
"""
import os
import subprocess
import sys
import traceback


def _subprocess(args, input):
    return subprocess.run([sys.executable, "-m", "rhmmtk", *args], input=input,
                          capture_output=True, text=True)


def _in_process(args, input):
    from click.testing import CliRunner

    from rhmmtk.cli import main

    code = 0
    argv = sys.argv
    with CliRunner().isolation(input=input) as (out, err, _):
        sys.argv = ["rhmmtk", *args]          # what provenance records as the command line
        try:
            main(list(args))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except Exception:
            traceback.print_exc(file=sys.stderr)
            code = 1
        finally:
            sys.argv = argv
            sys.stdout.flush()
            sys.stderr.flush()
        stdout, stderr = out.getvalue(), err.getvalue()
    return subprocess.CompletedProcess(["rhmmtk", *args], code,
                                       stdout.decode("utf-8", "replace"),
                                       stderr.decode("utf-8", "replace"))


def invoke(*args, input=None, subprocess_=False):
    args = [str(a) for a in args]
    if subprocess_ or os.environ.get("RHMMTK_TEST_SUBPROCESS") == "1":
        return _subprocess(args, input)
    return _in_process(args, input)


def run(*args, input=None, check=True, subprocess_=False):
    """Run `rhmmtk ARGS`; returns CompletedProcess (text)."""
    p = invoke(*args, input=input, subprocess_=subprocess_)
    if check and p.returncode != 0:
        raise AssertionError(f"rhmmtk {' '.join(map(str, args))} failed ({p.returncode}):\n{p.stderr}")
    return p


def fails(*args, input=None, subprocess_=False):
    """Run a command that must fail with one clear error line and no traceback; return stderr."""
    p = invoke(*args, input=input, subprocess_=subprocess_)
    assert p.returncode != 0, f"expected failure, got success:\n{p.stdout}\n{p.stderr}"
    assert "Traceback" not in p.stderr, p.stderr
    err_lines = [l for l in p.stderr.splitlines() if "error" in l.lower()]
    assert err_lines, p.stderr
    return p.stderr
