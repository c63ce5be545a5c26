# Sourced by the recipes' path.sh: the recipes call `rhmmtk` and `python3 -m rhmmtk...`, so
# both must find the toolkit; otherwise one line saying how to install it, and exit 1.
if ! command -v rhmmtk > /dev/null || ! python3 -c 'import rhmmtk' 2> /dev/null; then
  echo "$0: error: rhmmtk is not installed for this shell (no rhmmtk command, or python3 cannot import it): run bash $root/scripts/install.sh (or activate the virtualenv it is installed in)" >&2
  exit 1
fi
