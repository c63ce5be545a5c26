#!/usr/bin/env bash
# Install rhmmtk with its test dependencies into its virtualenv, then run the test suite there.
# The README's test command and .ci/run both call this script.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
# As `source .venv/bin/activate` would: tests that start `rhmmtk` or a recipe find the venv's.
export VIRTUAL_ENV=${VIRTUAL_ENV:-$PWD/.venv}
export PATH="$VIRTUAL_ENV/bin:$PATH"
python -m pytest -q "$@"
