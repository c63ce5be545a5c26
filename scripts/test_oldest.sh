#!/usr/bin/env bash
# CI's second run: the Python API's tests against the OLDEST numpy, scipy and scikit-learn
# setup.cfg allows (scripts/oldest-constraints.txt), in a virtualenv of their own, so a
# scikit-learn release cannot silently break the API on either end of the range
# (scripts/install.sh's eager upgrade tests the newest). The virtualenv is kept between runs
# ($RHMMTK_OLDEST_VENV, default .venv-oldest): a first run installs (about three minutes
# here), later ones only check it and run the tests (about a minute: 30 s of tests).
#   bash scripts/test_oldest.sh [pytest options]
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${RHMMTK_OLDEST_VENV:-$PWD/.venv-oldest}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check \
  -c scripts/oldest-constraints.txt -e '.[test]'
"$venv/bin/python" -c 'import sklearn, numpy, scipy
print(f"test_oldest.sh: scikit-learn {sklearn.__version__}, numpy {numpy.__version__}, "
      f"scipy {scipy.__version__}")'
export PATH="$venv/bin:$PATH"
"$venv/bin/python" -m pytest -q -p no:cacheprovider tests/test_estimator.py \
  tests/test_estimator_competitors.py -k "not api_equals_command" "$@"
