#!/usr/bin/env bash
# One job of the run_local.sh / run_slurm.sh contract (not called by users):
#   run_job.sh ARGFILE J
# ARGFILE holds NUL-separated fields: the job variable (e.g. JOB, or empty), the log
# path, the status directory, then the command and its arguments. Every occurrence
# of the variable's name in the log path and the arguments becomes J. The command
# runs as an argument vector (no shell) with stdout and stderr appended to the log,
# framed like Kaldi's run.pl logs; its exit status is written to STATUSDIR/J.
set -u
argfile=$1
j=$2
mapfile -d '' -t fields < "$argfile"
var=${fields[0]}
log=${fields[1]}
statusdir=${fields[2]}
cmd=("${fields[@]:3}")
if [ -n "$var" ]; then
  log=${log//$var/$j}
  for i in "${!cmd[@]}"; do cmd[$i]=${cmd[$i]//$var/$j}; done
fi
mkdir -p "$(dirname "$log")"
start=$(date +%s)
{
  printf '#'; printf ' %q' "${cmd[@]}"; printf '\n'
  echo "# Started at $(date) on $(hostname)${SLURM_JOB_ID:+ (Slurm job $SLURM_JOB_ID${SLURM_ARRAY_TASK_ID:+, task $SLURM_ARRAY_TASK_ID})}"
} > "$log"
"${cmd[@]}" >> "$log" 2>&1 < /dev/null
rc=$?
{
  echo "# Accounting: time=$(( $(date +%s) - start )) threads=1"
  echo "# Ended (code $rc) at $(date)"
} >> "$log"
echo "$rc" > "$statusdir/$j"
exit "$rc"
