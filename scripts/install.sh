#!/usr/bin/env bash
# Install rhmmtk (editable) and what its recipes and tests use, into a virtualenv: the active
# one ($VIRTUAL_ENV) if there is one, else .venv in the repository, made here. Not the system
# Python: distributions' system Pythons refuse a system-wide pip install (PEP 668), and a
# machine's leftovers there would hide a missing or broken dependency.
# Dependencies are upgraded to the newest releases setup.cfg allows (pip's eager strategy), so
# a release of a dependency that breaks rhmmtk fails the tests here and in CI, not at a user's.
# The recipes' path.sh puts .venv/bin first on PATH; for a shell: source .venv/bin/activate
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${VIRTUAL_ENV:-$PWD/.venv}
if [ ! -x "$venv/bin/python" ]; then
  if ! python3 -m venv "$venv" 2> /dev/null; then
    # Debian's python3 has venv in a package of its own.
    if [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
      echo "install.sh: installing python3-venv (apt-get install python3-venv)" >&2
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv; } > /dev/null
      rm -rf "$venv"
      python3 -m venv "$venv"
    else
      echo "install.sh: cannot make a virtualenv at $venv: install python3-venv" \
        "(sudo apt-get install python3-venv), or activate a virtualenv of yours and rerun" >&2
      exit 1
    fi
  fi
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade \
  --upgrade-strategy eager -e '.[test]'
echo "install.sh: rhmmtk installed in $venv (for a shell: source $venv/bin/activate)" >&2
# GNU parallel runs the recipes' parallel jobs locally (scripts/utils/run_local.sh, the default
# $cmd); install it from Debian when missing and we may (root with apt-get).
case "$(parallel --version 2> /dev/null || true)" in
  *"GNU parallel"*) have_parallel=1 ;;
  *) have_parallel=0 ;;
esac
if [ "$have_parallel" = 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
    echo "install.sh: installing GNU parallel (apt-get install parallel)" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq parallel; } > /dev/null ||
      echo "install.sh: warning: could not install GNU parallel; recipes with --nj > 1 need it" >&2
  else
    echo "install.sh: warning: GNU parallel not found; recipes with --nj > 1 need it:" \
      "sudo apt-get install parallel" >&2
  fi
fi
# sox: the tests run Kaldi-style `wav.scp` commands (`sox file.wav -t wav - |`) through it
# when present (skipped otherwise); recipes do not need it.
if ! command -v sox > /dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
    echo "install.sh: installing sox (apt-get install sox)" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sox; } > /dev/null ||
      echo "install.sh: warning: could not install sox; its wav.scp test will be skipped" >&2
  fi
fi
# Phonetisaurus (PyPI `phonetisaurus`: its own aligner, n-gram and FST binaries, x86_64 and
# ARM Linux): the G2P recipe (recipes/g2p/run.sh) trains it beside the toolkit's taggers.
"$venv/bin/python" -m pip install -q --disable-pip-version-check 'phonetisaurus==0.3.0' ||
  echo "install.sh: warning: could not install phonetisaurus; recipes/g2p needs it" \
    "(or --systems without PHONETISAURUS)" >&2
# Kaldi's GMM-HMM code (PyPI `kaldi-hmm-gmm`: Kaldi's own C++ through Python bindings, with
# `kaldifst` for its graphs): the TIMIT recipe's stage 16 (local/run_kaldi.sh) trains Kaldi's
# monophone system beside train-cdhmm. kaldifst is pinned to 1.7.17: kaldi-hmm-gmm 1.1.4's
# functions refuse the FSTs of kaldifst 1.8.x ("incompatible constructor arguments").
"$venv/bin/python" -m pip install -q --disable-pip-version-check 'kaldi-hmm-gmm==1.1.4' \
  'kaldifst==1.7.17' ||
  echo "install.sh: warning: could not install kaldi-hmm-gmm; recipes/timit stage 16 needs it" \
    "(and tests/test_kaldi_gmm.py is skipped)" >&2
