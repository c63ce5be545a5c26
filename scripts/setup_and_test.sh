#!/usr/bin/env bash
# Install rhmmtk with its test dependencies, then run the test suite.
# The README's test command and .ci/run both call this script.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
python3 -m pytest -q "$@"
