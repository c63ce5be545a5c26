#!/usr/bin/env bash
# Install rhmmtk with its test dependencies into its virtualenv, then run the test suite there.
# The README's test command and .ci/run both call this script.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
# As `source .venv/bin/activate` would: tests that start `rhmmtk` or a recipe find the venv's.
export VIRTUAL_ENV=${VIRTUAL_ENV:-$PWD/.venv}
export PATH="$VIRTUAL_ENV/bin:$PATH"
# Two pytest workers, whole test files to each (module fixtures are built once): on 2 cores
# the recipe smokes wait on their subprocesses, and the other worker runs meanwhile.
# --no-loadscope-reorder: files are handed out in collection order, which tests/conftest.py
# makes slowest first; xdist's default (files with the most tests first) handed the recipe
# smokes (2-3 tests a file) out last, so one ran alone at the end.
# RHMMTK_TEST_WORKERS=0 runs in one process.
# --durations: the slowest tests are listed, to keep the suite inside its ~15-minute budget.
python -m pytest -q -n "${RHMMTK_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder \
  --durations=20 "$@"
