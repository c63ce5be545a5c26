# Sourced by recipes: run independent grid points N at a time on this machine
# (--parallel N). Different from --nj, which splits ONE training into shards run by $cmd:
# on a 2-core machine two grid points at once keep both cores busy through the serial
# parts of a training (process start-up, SVDs, M-steps) that shards leave idle.
#
#   parallel_check "$parallel"    refuse anything but a positive integer (one error line)
#   parallel_run CMD ARGS...      run CMD ARGS in the background once fewer than
#                                 $parallel run; if one has failed, stop the others, exit 1
#   parallel_wait                 wait for all of them (same failure handling)
#   largest_first_order M ...     the values of m, largest first: the longest trainings
#                                 start first, so the last to finish is a short one
#   longest_first                 stdin lines "COST JOB...": the JOBs, costliest first (ties
#                                 in their given order), for a list of unlike jobs
#
# The command reports its own failure (the step scripts name their log); the caller
# writes results in the grid's order after parallel_wait, so they do not depend on N.
# The jobs' process ids are tracked here, not with `jobs`/`wait -n`: a job that ends
# between those two calls leaves `wait -n` nothing to wait for (exit 127), which would
# read as a failure.

parallel_pids=()

parallel_check() {
  [[ "$1" =~ ^[1-9][0-9]*$ ]] ||
    { echo "$0: error: --parallel must be a positive integer, got '$1'" >&2; exit 1; }
}

parallel_abort() {
  kill "${parallel_pids[@]}" 2> /dev/null
  wait
  exit 1
}

parallel_reap() {  # forget the jobs that have ended; a failed one aborts
  local p still=()
  for p in "${parallel_pids[@]}"; do
    if kill -0 "$p" 2> /dev/null; then still+=("$p"); else wait "$p" || parallel_abort; fi
  done
  parallel_pids=("${still[@]}")
}

parallel_run() {
  parallel_reap
  while [ "${#parallel_pids[@]}" -ge "$parallel" ]; do sleep 0.2; parallel_reap; done
  "$@" &
  parallel_pids+=("$!")
}

parallel_wait() {
  local p
  for p in "${parallel_pids[@]}"; do wait "$p" || parallel_abort; done
  parallel_pids=()
}

largest_first_order() { printf '%s\n' "$@" | sort -gr; }

longest_first() { sort -s -k1,1gr | cut -d' ' -f2-; }
