# Source this after setting defaults: turns `--some-name value` (or --some-name=value)
# into some_name=value for every variable already defined, the Kaldi recipe
# convention. Unknown options and missing values are errors; `--help` prints
# $help_message. Positional arguments are left in "$@"; when the caller sets num_args,
# any other number of them prints $help_message and exits 1.
# The variables named in $path_options hold a path, those in $path_list_options a list
# of paths: a relative path given on the command line is made absolute here, against the
# directory the script was started from, so that the script may change directory
# afterwards (its defaults stay relative to the directory it changes to). So is the
# program of --cmd (the job runner) when it is given as a relative path (a/b.sh ...).
_po_usage() { printf '%s\n' "${help_message:-no help available}"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --help|-h) _po_usage; exit 0 ;;
    --*=*) _po_name=${1%%=*}; _po_value=${1#*=}; _po_shift=1 ;;
    --*) _po_name=$1
         if [ $# -lt 2 ]; then echo "$0: error: option $1 needs a value" >&2; exit 1; fi
         _po_value=$2; _po_shift=2 ;;
    *) break ;;
  esac
  _po_var=$(echo "${_po_name#--}" | tr - _)
  if ! declare -p "$_po_var" >/dev/null 2>&1; then
    echo "$0: error: unknown option $_po_name (try --help)" >&2; exit 1
  fi
  if [[ " ${path_options:-} " == *" $_po_var "* ]]; then
    [[ -z "$_po_value" || "$_po_value" == /* ]] || _po_value=$(realpath -ms -- "$_po_value")
  elif [ "$_po_var" = cmd ] && [[ "${_po_value%% *}" == */* && "$_po_value" != /* ]]; then
    _po_value="$(realpath -ms -- "${_po_value%% *}")${_po_value#"${_po_value%% *}"}"
  elif [[ " ${path_list_options:-} " == *" $_po_var "* ]]; then
    _po_paths=()
    for _po_p in $_po_value; do
      [[ "$_po_p" == /* ]] || _po_p=$(realpath -ms -- "$_po_p")
      _po_paths+=("$_po_p")
    done
    _po_value=${_po_paths[*]}
  fi
  printf -v "$_po_var" '%s' "$_po_value"
  shift $_po_shift
done
unset _po_name _po_value _po_shift _po_var _po_paths _po_p
if [ -n "${num_args:-}" ] && [ $# -ne "$num_args" ]; then
  _po_usage >&2
  exit 1
fi
