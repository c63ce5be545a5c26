# Sourced by the job runners (run_local.sh, run_slurm.sh): the part of their contract they
# share. Expects $me set and the runner's own options already shifted off "$@".
#
# parse_job_spec "$@"   reads `[VAR=FIRST:LAST | VAR=J] LOG command args...` into var, first,
#                       last, log and the array cmd; exits 2 with a usage line when malformed.
# logname J             the log path of job J.
# report_jobs STATUSDIR [EXTRA]  one line per failed job (its log, and EXTRA's %a as J),
#                       the tail of its log; returns 1 when any failed.
parse_job_spec() {
  var=""
  first=1
  last=1
  if [[ $# -gt 0 && "$1" =~ ^([A-Za-z_][A-Za-z0-9_]*)=([0-9]+):([0-9]+)$ ]]; then
    var=${BASH_REMATCH[1]}
    first=${BASH_REMATCH[2]}
    last=${BASH_REMATCH[3]}
    shift
  elif [[ $# -gt 0 && "$1" =~ ^[A-Za-z_][A-Za-z0-9_]*=[0-9]+$ ]]; then
    var=${1%%=*}
    first=${1#*=}
    last=$first
    shift
  fi
  if [ $# -lt 2 ]; then
    echo "usage: $me [options] JOB=1:N log/name.JOB.log command args..." >&2
    exit 2
  fi
  log=$1
  shift
  cmd=("$@")
  if [ "$first" -gt "$last" ]; then
    echo "$me: error: empty job range $var=$first:$last" >&2
    exit 2
  fi
  if [ -n "$var" ] && [ "$last" -gt "$first" ] && [[ "$log" != *"$var"* ]]; then
    echo "$me: error: the log path $log must contain $var (one log per job)" >&2
    exit 2
  fi
  njobs=$((last - first + 1))
}

logname() { [ -n "$var" ] && echo "${log//$var/$1}" || echo "$log"; }

report_jobs() {
  local statusdir=$1 extra=${2:-} failed=0 j rc
  for j in $(seq "$first" "$last"); do
    rc=$(cat "$statusdir/$j" 2> /dev/null || echo "none")
    [ "$rc" = 0 ] && continue
    failed=$((failed + 1))
    if [ "$rc" = none ]; then
      echo "$me: job $j of $first..$last did not finish${extra:+ (cancelled, or never started)}:" \
        "see $(logname "$j")${extra:+ and ${extra//%a/$j}}" >&2
    else
      echo "$me: job $j of $first..$last failed (exit code $rc): see $(logname "$j")" >&2
    fi
    tail -n 4 "$(logname "$j")" 2> /dev/null | grep -v '^# ' | sed 's/^/    /' >&2
  done
  if [ "$failed" -gt 0 ]; then
    echo "$me: $failed of $njobs jobs failed" >&2
    return 1
  fi
}
