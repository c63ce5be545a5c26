#!/usr/bin/env bash
# CDHMM phone recognition on the TIMIT recipe's features (stages 9-11 of ../run.sh):
# the HTK-style ML baseline (states x Gaussians grid) and paper 004's large-margin
# training started from it, NCO-H (best path) and NCO-S (log-sum over paths). Decoding
# weights (LM scale, insertion penalty), lambda and model sizes are chosen on dev, all
# by scripts/utils/select_best.sh; the core test is scored once per selected system.
# Every training and decoding runs through $cmd (--cmd, default cmd.sh's) and is redone
# when its options or inputs changed (scripts/utils/stamp.sh). --parallel N trains N cells
# of the (S, M) grid at once in stages 9 and 10; each cell's lambda walk stays sequential,
# and every cell writes only its own directory, so the results do not depend on N.
#
#   local/run_cdhmm.sh [--stage 9] [--states-list "1 3"] [--mix-list "1 2 4 8"] ...
# Reads data/{train,dev,test}/feats.h5 and ali.48 (stages 0-1 of run.sh); writes
#   exp/cdhmm_s{S}_m{M}/   ML model, history, dev decodes per (scale, penalty)
#   exp/lm_s{S}_m{M}/      NCO-H: lambda_L/ (one run per lambda of the grid, with its
#                          bundle history), final.h5 (the dev-best lambda's), lambda, decodes
#   exp/lms_s{S}_m{M}/     NCO-S, the same layout
#   exp/cdhmm_dev_grid.tsv   every (system, S, M, scale, penalty) on dev: frame acc, PER
#   exp/cdhmm_per.tsv      the PER table (S, M, ML dev/test, NCO-H and NCO-S lambda, dev/test,
#                          and the paired-bootstrap p of their test PER against ML's)
#   exp/cdhmm_results.tsv  frame-accuracy rows for exp/results.tsv (system m dev_acc test_acc)
#   exp/compare/           rhmmtk compare outputs (frame accuracy and PER, paired tests)
#   exp/compare_cdhmm_ncoh_ml.txt  NCO-H vs ML on the core test, the frame-accuracy systems
set -euo pipefail
. "$(dirname "$0")/../path.sh"   # recipe, root; checks that rhmmtk is installed
. "$recipe/local/defaults.sh"   # data, exp, cmd
stage=9
stop_stage=11
states_list="1 3"
mix_list="1 2 4 8"
iters=4
lm_scales="1 2 4 8"
penalties="0 -5 -10 -20"
systems="nco-h nco-s"      # large-margin objectives trained in stage 10
lm_states_list=            # (S, M) pairs trained NCO-H: default all of the grid
lm_mix_list=
ncos_states_list=1         # NCO-S: single-state phones, as paper 004's table 1
ncos_mix_list=             # default: the ML grid's
lambdas="100 300 1000"     # lambda grid, chosen per model on dev PER, then extended down:
lambda_down=4              # while the smallest lambda is dev-best, run it / 3 (at most N times)
lm_tol=0.01                # stop at a bundle gap of 1% of the objective (paper 004's)
lm_iters=1200              # or after this many iterations (the gap is logged either way;
                           # lambda 3.7 needs ~950 at S=1, RESULTS_cdhmm)
lm_restarts=0              # train-largemargin --restarts: new cutting-plane models at the
                           # best point when the gap is met (0: paper 004's method as written)
lm_scaling=moments         # train-largemargin --scaling (moments: w = w_ML + D v, see its help)
lm_segmentation=hidden     # train-largemargin --segmentation: paper 004's S(y_i) (fixed:
                           # the alignment's boundaries; 1.3 PER worse at S=3 M=8, RESULTS_cdhmm)
parallel=1                 # grid cells trained at once on this machine (stages 9-10)
help_message="Usage: $0 [--stage 9|10|11] [--stop-stage N] [--data DIR] [--exp DIR] [--cmd CMD]
  --states-list \"$states_list\"  --mix-list \"$mix_list\"  --iters $iters
  --lm-scales \"$lm_scales\"  --penalties \"$penalties\"  --systems \"$systems\"
  --lm-states-list / --lm-mix-list (NCO-H grid; default: the ML grid)
  --ncos-states-list \"$ncos_states_list\" / --ncos-mix-list (NCO-S grid; default mixes: the ML's)
  --lambdas \"$lambdas\"  --lambda-down $lambda_down  --lm-tol $lm_tol  --lm-iters $lm_iters
  --lm-restarts $lm_restarts  --lm-scaling $lm_scaling  --lm-segmentation $lm_segmentation
  --parallel N ($parallel)  (S, M) cells trained at once (stages 9-10); results do not depend on it"
path_options="data exp"
. "$root/scripts/utils/recipe_setup.sh"   # options, stages, stamp, parallel
cd "$recipe"
lm_states_list=${lm_states_list:-$states_list}
lm_mix_list=${lm_mix_list:-$mix_list}
ncos_mix_list=${ncos_mix_list:-$mix_list}

mkdir -p "$exp/log" "$exp/compare"
. local/scoring.sh            # map39, score_field
# REF HYP -> "frame_acc per" on the 39-phone set
acc_per() {
  score_field "$1" "$2" position_accuracy segments.per
}
# REF HYP_A HYP_B NAME -> the paired-bootstrap p of PER(A) - PER(B); the report in exp/compare
per_p() {
  rhmmtk compare -q --json --mapping "$map39" "$1" "$2" "$3" > "$exp/compare/$4.json"
  rhmmtk compare -q --mapping "$map39" "$1" "$2" "$3" > "$exp/compare/$4.txt"
  python3 -c 'import json,sys; print("%.3g" % json.load(open(sys.argv[1]))["per"]["bootstrap"]["p_value"])' \
    "$exp/compare/$4.json"
}
# DIR SYSTEM S M: decode dev for every (scale, penalty); rows to DIR/dev_grid.tsv
tune() {
  local d=$1 sys=$2 s=$3 m=$4
  printf 'system\tstates\tmixtures\tlm_scale\tpenalty\tdev_acc\tdev_per\n' > "$d/dev_grid.tsv"
  for sc in $lm_scales; do for p in $penalties; do
    once "$d/dev_${sc}_${p}.hyp" "$d/log/decode_dev_${sc}_${p}.log" rhmmtk decode -q \
      --lm-scale "$sc" --insertion-penalty "$p" "$d/final.h5" "$data/dev/feats.h5" \
      "$d/dev_${sc}_${p}.hyp"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$sys" "$s" "$m" "$sc" "$p" \
      "$(acc_per "$data/dev/ali.48" "$d/dev_${sc}_${p}.hyp" | tr ' ' '\t')" >> "$d/dev_grid.tsv"
  done; done
}
# TABLE... -> "scale penalty value" of the best dev row by accuracy (--acc) or PER (--per)
best_of() {
  local how=$1; shift
  if [ "$how" = --acc ]; then "$root/scripts/utils/select_best.sh" dev_acc lm_scale,penalty,dev_acc "$@"
  else "$root/scripts/utils/select_best.sh" --lower dev_per lm_scale,penalty,dev_per "$@"; fi | tr '\t' ' '
}
# OBJECTIVE DIR S M: one run per lambda from the (S, M) ML model at its best-PER decoding
# weights, each keeping its best dev-PER iteration. Lambdas: the grid --lambdas, then, while
# the smallest lambda run is the dev best (first of equals: the larger wins a tie), the
# smallest / 3, at most --lambda-down times. The lambda whose kept iteration has the lowest
# dev PER is the model's (DIR/final.h5, DIR/lambda); then its weights are tuned
train_lm() {
  local obj=$1 d=$2 s=$3 m=$4 src=$exp/cdhmm_s${3}_m$4 sc p l low k hist=()
  read -r sc p _ < <(best_of --per "$src/dev_grid.tsv")
  # --restarts is passed only when used, so runs made before the option keep their stamps
  local restarts=()
  [ "$lm_restarts" = 0 ] || restarts=(--restarts "$lm_restarts")
  lambda_run() {
    mkdir -p "$d/lambda_$1/log"
    once --out "$d/lambda_$1/history.tsv" "$d/lambda_$1/final.h5" "$d/lambda_$1/log/train.log" \
      rhmmtk train-largemargin --objective "$obj" --scaling "$lm_scaling" \
      --segmentation "$lm_segmentation" --lambda "$1" --tol "$lm_tol" --max-iter "$lm_iters" \
      "${restarts[@]}" --lm-scale "$sc" --insertion-penalty "$p" --select per \
      --dev-feats "$data/dev/feats.h5" --dev-ali "$data/dev/ali.48" --mapping "$map39" \
      --history "$d/lambda_$1/history.tsv" "$src/final.h5" "$data/train/feats.h5" \
      "$data/train/ali.48" "$d/lambda_$1/final.h5"
    hist+=("$d/lambda_$1/history.tsv")
  }
  for l in $(printf '%s\n' $lambdas | sort -g -r); do lambda_run "$l"; done
  low=$(printf '%s\n' $lambdas | sort -g | head -1)
  for ((k = 0; k < lambda_down; k++)); do
    l=$("$root/scripts/utils/select_best.sh" --lower dev_per table "${hist[@]}")
    [ "$(dirname "$l")" = "$d/lambda_$low" ] || break
    low=$(python3 -c 'import sys; print("%g" % (float(sys.argv[1]) / 3))' "$low")
    echo "[$(date +%T)] $d: the smallest lambda is dev-best; trying $low" >&2
    lambda_run "$low"
  done
  l=$("$root/scripts/utils/select_best.sh" --lower dev_per table "${hist[@]}")
  l=$(dirname "$l")
  cp "$l/final.h5" "$d/final.h5"
  cp "$l/final.h5.stamp" "$d/final.h5.stamp"     # the copy's identity, for its decodings
  echo "${l##*/lambda_}" > "$d/lambda"
  tune "$d" "$(echo "$obj" | tr '[:lower:]' '[:upper:]')" "$s" "$m"
}

# S M: the ML CDHMM of one cell, then its decoding weights tuned on dev
train_ml() {
  local s=$1 m=$2 d=$exp/cdhmm_s${1}_m$2
  mkdir -p "$d/log"
  once --out "$d/history.tsv" "$d/final.h5" "$d/log/train.log" rhmmtk train-cdhmm \
    --states "$s" --mixtures "$m" --iters "$iters" --history "$d/history.tsv" \
    "$data/train/feats.h5" "$data/train/ali.48" "$d/final.h5"
  tune "$d" ML "$s" "$m"
}

if run_stage 9; then
  echo "[$(date +%T)] stage 9: ML CDHMMs, states {$states_list} x Gaussians {$mix_list}; dev tuning"
  # the most Gaussians first: the longest trainings start first
  for m in $(largest_first_order $mix_list); do for s in $states_list; do
    parallel_run train_ml "$s" "$m"
  done; done
  parallel_wait
fi

if run_stage 10; then
  for obj in $systems; do
    if [ "$obj" = nco-h ]; then sl=$lm_states_list ml=$lm_mix_list pre=lm
    else sl=$ncos_states_list ml=$ncos_mix_list pre=lms; fi
    echo "[$(date +%T)] stage 10: large-margin ($obj) from the ML models, lambda in {$lambdas}"
    for s in $sl; do for m in $ml; do
      parallel_run train_lm "$obj" "$exp/${pre}_s${s}_m$m" "$s" "$m"
    done; done
  done
  parallel_wait
fi

if run_stage 11; then
  echo "[$(date +%T)] stage 11: select on dev, score the core test"
  { printf 'system\tstates\tmixtures\tlm_scale\tpenalty\tdev_acc\tdev_per\n'
    for f in "$exp"/cdhmm_s*_m*/dev_grid.tsv "$exp"/lm_s*_m*/dev_grid.tsv "$exp"/lms_s*_m*/dev_grid.tsv; do
      [ -f "$f" ] && tail -n +2 "$f"
    done; } > "$exp/cdhmm_dev_grid.tsv"
  test_of() {  # DIR --acc|--per -> "dev test_acc test_per hyp" at DIR's best dev weights
    local d=$1 sc p v
    read -r sc p v < <(best_of "$2" "$d/dev_grid.tsv")
    once "$d/test_${sc}_${p}.hyp" "$d/log/decode_test_${sc}_${p}.log" rhmmtk decode -q \
      --lm-scale "$sc" --insertion-penalty "$p" "$d/final.h5" "$data/test/feats.h5" \
      "$d/test_${sc}_${p}.hyp" > /dev/null
    echo "$v $(acc_per "$data/test/ali.48" "$d/test_${sc}_${p}.hyp") $d/test_${sc}_${p}.hyp"
  }
  ref=$data/test/ali.48
  printf 'states\tmixtures\tml_dev_per\tml_test_per\tlm_lambda\tlm_dev_per\tlm_test_per\tlm_vs_ml_p\tncos_lambda\tncos_dev_per\tncos_test_per\tncos_vs_ml_p\n' \
    > "$exp/cdhmm_per.tsv.tmp"
  for s in $states_list; do for m in $mix_list; do
    read -r mdev _ mper mhyp < <(test_of "$exp/cdhmm_s${s}_m$m" --per)
    row="$s\t$m\t$mdev\t$mper"
    for pre in lm lms; do
      d=$exp/${pre}_s${s}_m$m
      if [ -f "$d/final.h5" ]; then
        read -r ldev _ lper lhyp < <(test_of "$d" --per)
        row="$row\t$(cat "$d/lambda")\t$ldev\t$lper\t$(per_p "$ref" "$lhyp" "$mhyp" "${pre}_s${s}_m${m}_vs_ml")"
      else
        row="$row\t-\t-\t-\t-"
      fi
    done
    printf "$row\n" >> "$exp/cdhmm_per.tsv.tmp"
  done; done
  mv "$exp/cdhmm_per.tsv.tmp" "$exp/cdhmm_per.tsv"
  # frame accuracy: the best (S, M, weights) of each system on dev accuracy
  printf 'system\tm\tdev_acc\ttest_acc\n' > "$exp/cdhmm_results.tsv.tmp"
  for sys in ML NCO-H NCO-S; do
    awk -F'\t' -v s=$sys 'NR == 1 || $1 == s' "$exp/cdhmm_dev_grid.tsv" > "$exp/log/grid_$sys.tsv"
    [ "$(wc -l < "$exp/log/grid_$sys.tsv")" -gt 1 ] || continue
    read -r s m < <("$root/scripts/utils/select_best.sh" dev_acc states,mixtures "$exp/log/grid_$sys.tsv")
    case $sys in ML) pre=cdhmm name="CDHMM-ML(s$s)" ;; NCO-H) pre=lm name="CDHMM-NCOH(s$s)" ;;
                 NCO-S) pre=lms name="CDHMM-NCOS(s$s)" ;; esac
    read -r dev tacc _ hyp < <(test_of "$exp/${pre}_s${s}_m$m" --acc)
    printf '%s\t%s\t%s\t%s\n' "$name" "$m" "$dev" "$tacc" >> "$exp/cdhmm_results.tsv.tmp"
    echo "$sys: selected s$s m$m ($hyp) on dev accuracy" >> "$exp/log/cdhmm_selection.log"
    printf -v "hyp_${sys//-/}" '%s' "$hyp"
  done
  mv "$exp/cdhmm_results.tsv.tmp" "$exp/cdhmm_results.tsv"
  # large margin vs ML on the core test, paired by utterance (frame accuracy and PER)
  for sys in NCOH NCOS; do
    v=hyp_$sys
    if [ -n "${!v:-}" ] && [ -n "${hyp_ML:-}" ]; then
      out=$exp/compare_cdhmm_$(echo $sys | tr '[:upper:]' '[:lower:]')_ml.txt
      rhmmtk compare --mapping "$map39" "$ref" "${!v}" "$hyp_ML" > "$out" 2> "$exp/log/compare_cdhmm.log"
      cat "$out"
    fi
  done
  # rows for the recipe's results table (added once)
  if [ -f "$exp/results.tsv" ]; then
    grep -v '^CDHMM-' "$exp/results.tsv" > "$exp/results.tsv.tmp" || true
    tail -n +2 "$exp/cdhmm_results.tsv" >> "$exp/results.tsv.tmp"
    mv "$exp/results.tsv.tmp" "$exp/results.tsv"
  fi
  column -t -s$'\t' "$exp/cdhmm_per.tsv"
  column -t -s$'\t' "$exp/cdhmm_results.tsv"
fi
