# Sourced by this recipe's scripts (Kaldi's path.sh): where the recipe and the toolkit are
# (recipe, root), from any working directory; stops with one line if rhmmtk is not installed.
recipe=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$recipe/../.." && pwd)         # the repository (scripts/, rhmmtk/)
# The toolkit scripts/install.sh put in the repository's .venv, unless a virtualenv is active.
if [ -z "${VIRTUAL_ENV:-}" ] && [ -x "$root/.venv/bin/rhmmtk" ]; then
  export PATH="$root/.venv/bin:$PATH"
fi
. "$root/scripts/utils/check_install.sh"
