# Sourced by this recipe's scripts (Kaldi's path.sh): where the toolkit and the corpus are.
root=$(cd ../..; pwd)                     # the repository (scripts/, rhmmtk/)
# The toolkit scripts/install.sh put in the repository's .venv, unless a virtualenv is active.
if [ -z "${VIRTUAL_ENV:-}" ] && [ -x "$root/.venv/bin/rhmmtk" ]; then
  export PATH="$root/.venv/bin:$PATH"
fi
data=${RHMMTK_NETTALK:-$root/../shared/data/nettalk/nettalk.data}
stage=0
stop_stage=100
