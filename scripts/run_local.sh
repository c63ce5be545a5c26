#!/usr/bin/env bash
# Run a command as N parallel jobs on this machine, with GNU parallel (Kaldi's run.pl).
#
#   scripts/run_local.sh [options] JOB=1:N log/name.JOB.log command arg ... JOB ...
#   scripts/run_local.sh [options] log/name.log command arg ...        (one job)
#
# The contract every rhmmtk recipe uses through $cmd (cmd.sh): job J runs the command
# with every occurrence of the string JOB (the name before `=`) in the log path and the
# arguments replaced by J, e.g. `rhmmtk acc-em --job JOB/4 ... stats.JOB.acc`. The
# command runs as an argument vector, not through a shell (for a pipeline, run
# `bash -c '... JOB ...'`). Its stdout and stderr go to its log, framed by the command
# line, start and end time and exit code. Exit status 0 when every job succeeded;
# otherwise each failing job is named with its log on stderr and the status is 1.
#
# Options (also accepted by run_slurm.sh; resource options are ignored here):
#   --max-jobs-run K   at most K jobs at a time (default: all N at once, as run.pl)
#   --mem X, --time T, --num-threads N, --partition P   ignored locally
#
# Needs GNU parallel for N > 1 (Debian: apt-get install parallel; scripts/install.sh
# installs it when run as root).
set -u
me=run_local.sh
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
max_jobs=0
while [ $# -gt 0 ]; do
  case "$1" in
    --max-jobs-run) max_jobs=$2; shift 2 ;;
    --mem|--time|--num-threads|--partition|--gpu) shift 2 ;;
    --*) echo "$me: error: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
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
  echo "usage: $me [--max-jobs-run K] JOB=1:N log/name.JOB.log command args..." >&2
  exit 2
fi
log=$1
shift
if [ "$first" -gt "$last" ]; then
  echo "$me: error: empty job range $var=$first:$last" >&2
  exit 2
fi
if [ -n "$var" ] && [ "$last" -gt "$first" ] && [[ "$log" != *"$var"* ]]; then
  echo "$me: error: the log path $log must contain $var (one log per job)" >&2
  exit 2
fi
logname() { [ -n "$var" ] && echo "${log//$var/$1}" || echo "$log"; }

mkdir -p "$(dirname "$log")" || exit 1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rhmmtk-run.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/status"
{ printf '%s\0' "$var" "$log" "$tmp/status" "$@"; } > "$tmp/args"

njobs=$((last - first + 1))
if [ "$njobs" -eq 1 ]; then
  bash "$here/run_job.sh" "$tmp/args" "$first"
else
  if [[ "$(parallel --version 2> /dev/null)" != *"GNU parallel"* ]]; then
    echo "$me: error: GNU parallel is needed to run $njobs jobs locally;" \
      "install it with: apt-get install parallel (or: bash scripts/install.sh, as root)" >&2
    exit 1
  fi
  [ "$max_jobs" -gt 0 ] 2> /dev/null || max_jobs=$njobs
  seq "$first" "$last" | parallel --will-cite --halt never -j "$max_jobs" \
    bash "$(printf %q "$here/run_job.sh")" "$(printf %q "$tmp/args")" {}
fi
failed=0
for j in $(seq "$first" "$last"); do
  rc=$(cat "$tmp/status/$j" 2> /dev/null || echo "none")
  if [ "$rc" != 0 ]; then
    failed=$((failed + 1))
    if [ "$rc" = none ]; then
      echo "$me: job $j of $first..$last did not finish: see $(logname "$j")" >&2
    else
      echo "$me: job $j of $first..$last failed (exit code $rc): see $(logname "$j")" >&2
    fi
    tail -n 4 "$(logname "$j")" 2> /dev/null | grep -v '^# ' | sed 's/^/    /' >&2
  fi
done
if [ "$failed" -gt 0 ]; then
  echo "$me: $failed of $njobs jobs failed" >&2
  exit 1
fi
exit 0
