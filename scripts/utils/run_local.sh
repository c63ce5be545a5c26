#!/usr/bin/env bash
# Run a command as N parallel jobs on this machine, with GNU parallel (Kaldi's run.pl).
#
#   scripts/utils/run_local.sh [options] JOB=1:N log/name.JOB.log command arg ... JOB ...
#   scripts/utils/run_local.sh [options] log/name.log command arg ...        (one job)
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
. "$here/job_spec.sh"
parse_job_spec "$@"

mkdir -p "$(dirname "$log")" || exit 1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rhmmtk-run.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/status"
{ printf '%s\0' "$var" "$log" "$tmp/status" "${cmd[@]}"; } > "$tmp/args"

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
report_jobs "$tmp/status" || exit 1
exit 0
