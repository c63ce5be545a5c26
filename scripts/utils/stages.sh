# Sourced by the recipes (run.sh) and scripts/rhmm.sh: which stages run, and how long each
# took (appended to $exp/log/stages.tsv: stage, seconds).
#
#   run_stage N            true when N is in --stage..--stop-stage
#   stage_begin N TEXT     close the stage before, announce stage N
#   stage_end              log the open stage's wall time (before handing over to another
#                          script, which logs its own stages)
run_stage() { [ "$stage" -le "$1" ] && [ "$stop_stage" -ge "$1" ]; }

stage_end() {
  if [ -n "${cur_stage:-}" ]; then
    mkdir -p "$exp/log"
    [ -f "$exp/log/stages.tsv" ] || printf 'stage\tseconds\n' > "$exp/log/stages.tsv"
    printf '%s\t%s\n' "$cur_stage" "$((SECONDS - t_stage))" >> "$exp/log/stages.tsv"
  fi
  cur_stage=
}

stage_begin() {
  stage_end
  cur_stage=$1; t_stage=$SECONDS
  shift
  echo "[$(date +%T)] stage $cur_stage: $*"
}
