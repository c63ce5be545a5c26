#!/usr/bin/env bash
# CDHMM phone recognition on the TIMIT recipe's features (stages 9-11 of ../run.sh):
# the HTK-style ML baseline (states x Gaussians grid) and paper 004's large-margin
# training (NCO-H) started from it. Decoding weights (LM scale, insertion penalty) and
# model sizes are chosen on dev; the core test is scored once per selected system.
#
#   local/run_cdhmm.sh [--stage 9] [--states-list "1 3"] [--mix-list "1 2 4 8"] ...
# Reads data/{train,dev,test}/feats.h5 and ali.48 (stages 0-1 of run.sh); writes
#   exp/cdhmm_s{S}_m{M}/   ML model, history, dev decodes per (scale, penalty)
#   exp/lm_s{S}_m{M}/      large-margin model, bundle history, decodes
#   exp/cdhmm_dev_grid.tsv   every (system, S, M, scale, penalty) on dev: frame acc, PER
#   exp/cdhmm_per.tsv      the PER table (S, M, ML dev/test, NCO-H dev/test), paper 004's layout
#   exp/cdhmm_results.tsv  frame-accuracy rows for exp/results.tsv (system m dev_acc test_acc)
#   exp/compare_cdhmm_ncoh_ml.txt  NCO-H vs ML on the core test (rhmmtk compare)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(cd ../..; pwd)

stage=9
stop_stage=11
data=data
exp=exp
states_list="1 3"
mix_list="1 2 4 8"
iters=4
lm_scales="1 2 4 8"
penalties="0 -5 -10 -20"
lm_states_list=            # (S, M) pairs trained large-margin: default all of the grid
lm_mix_list=
lambda=10000
lm_tol=0.001
lm_iters=30
help_message="Usage: $0 [--stage 9|10|11] [--stop-stage N] [--data DIR] [--exp DIR]
  --states-list \"$states_list\"  --mix-list \"$mix_list\"  --iters $iters
  --lm-scales \"$lm_scales\"  --penalties \"$penalties\"
  --lm-states-list / --lm-mix-list (large-margin grid; default: the ML grid)
  --lambda $lambda  --lm-tol $lm_tol  --lm-iters $lm_iters"
. "$root/scripts/utils/parse_options.sh"
lm_states_list=${lm_states_list:-$states_list}
lm_mix_list=${lm_mix_list:-$mix_list}

run_stage() { [ "$stage" -le "$1" ] && [ "$stop_stage" -ge "$1" ]; }
mkdir -p "$exp/log"
map39=$exp/map_48_39.txt
awk 'NF == 3 && !seen[$2]++ {print $2, $3}' conf/phones.60-48-39.map > "$map39"
# REF HYP -> "frame_acc per" on the 39-phone set
acc_per() {
  rhmmtk score -q --json --mapping "$map39" "$1" "$2" |
    python3 -c 'import json,sys; j=json.load(sys.stdin); print("%.2f %.2f" % (j["position_accuracy"], j["segments"]["per"]))'
}
# DIR SYSTEM S M: decode dev for every (scale, penalty); rows to DIR/dev_grid.tsv
tune() {
  local d=$1 sys=$2 s=$3 m=$4
  : > "$d/dev_grid.tsv"
  for sc in $lm_scales; do for p in $penalties; do
    rhmmtk decode -q --lm-scale "$sc" --insertion-penalty "$p" "$d/final.h5" \
      "$data/dev/feats.h5" "$d/dev_${sc}_${p}.hyp"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$sys" "$s" "$m" "$sc" "$p" \
      "$(acc_per "$data/dev/ali.48" "$d/dev_${sc}_${p}.hyp" | tr ' ' '\t')" >> "$d/dev_grid.tsv"
  done; done
}
# DIR COLUMN(6: acc, 7: per) -> "scale penalty value" of the best dev decode
best_of() {
  if [ "$2" = 6 ]; then sort -t$'\t' -k6,6gr "$1/dev_grid.tsv"; else sort -t$'\t' -k7,7g "$1/dev_grid.tsv"; fi |
    head -n 1 | awk -F'\t' -v c="$2" '{print $4, $5, $c}'
}

if run_stage 9; then
  echo "[$(date +%T)] stage 9: ML CDHMMs, states {$states_list} x Gaussians {$mix_list}; dev tuning"
  for s in $states_list; do for m in $mix_list; do
    d=$exp/cdhmm_s${s}_m$m
    mkdir -p "$d/log"
    [ -f "$d/final.h5" ] || rhmmtk train-cdhmm --states "$s" --mixtures "$m" --iters "$iters" \
      --history "$d/history.tsv" "$data/train/feats.h5" "$data/train/ali.48" "$d/final.h5" \
      2> "$d/log/train.log"
    tune "$d" ML "$s" "$m"
  done; done
fi

if run_stage 10; then
  echo "[$(date +%T)] stage 10: large-margin (NCO-H) from each ML model, lambda $lambda"
  for s in $lm_states_list; do for m in $lm_mix_list; do
    src=$exp/cdhmm_s${s}_m$m
    d=$exp/lm_s${s}_m$m
    mkdir -p "$d/log"
    read -r sc p _ < <(best_of "$src" 7)    # the ML model's best-PER decoding weights
    [ -f "$d/final.h5" ] || rhmmtk train-largemargin --lambda "$lambda" --tol "$lm_tol" \
      --max-iter "$lm_iters" --lm-scale "$sc" --insertion-penalty "$p" --select per \
      --dev-feats "$data/dev/feats.h5" --dev-ali "$data/dev/ali.48" --mapping "$map39" \
      --history "$d/history.tsv" "$src/final.h5" "$data/train/feats.h5" "$data/train/ali.48" \
      "$d/final.h5" 2> "$d/log/train.log"
    tune "$d" NCO-H "$s" "$m"
  done; done
fi

if run_stage 11; then
  echo "[$(date +%T)] stage 11: select on dev, score the core test"
  cat "$exp"/cdhmm_s*_m*/dev_grid.tsv "$exp"/lm_s*_m*/dev_grid.tsv 2> /dev/null |
    { printf 'system\tstates\tmixtures\tlm_scale\tpenalty\tdev_acc\tdev_per\n'; cat; } > "$exp/cdhmm_dev_grid.tsv"
  test_of() {  # DIR COLUMN -> "dev test_acc test_per" at DIR's best dev weights by COLUMN
    local d=$1 sc p v
    read -r sc p v < <(best_of "$d" "$2")
    rhmmtk decode -q --lm-scale "$sc" --insertion-penalty "$p" "$d/final.h5" \
      "$data/test/feats.h5" "$d/test_${sc}_${p}.hyp"
    echo "$v $(acc_per "$data/test/ali.48" "$d/test_${sc}_${p}.hyp") $sc $p"
  }
  printf 'states\tmixtures\tml_dev_per\tml_test_per\tlm_dev_per\tlm_test_per\n' > "$exp/cdhmm_per.tsv.tmp"
  for s in $states_list; do for m in $mix_list; do
    read -r mdev _ mper _ _ < <(test_of "$exp/cdhmm_s${s}_m$m" 7)
    ldev=-; lper=-
    [ -f "$exp/lm_s${s}_m$m/final.h5" ] && read -r ldev _ lper _ _ < <(test_of "$exp/lm_s${s}_m$m" 7)
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$m" "$mdev" "$mper" "$ldev" "$lper" >> "$exp/cdhmm_per.tsv.tmp"
  done; done
  mv "$exp/cdhmm_per.tsv.tmp" "$exp/cdhmm_per.tsv"
  # frame accuracy: the best (S, M, weights) of each system on dev accuracy
  printf 'system\tm\tdev_acc\ttest_acc\n' > "$exp/cdhmm_results.tsv.tmp"
  for sys in ML NCO-H; do
    best=$(awk -F'\t' -v s=$sys 'NR > 1 && $1 == s' "$exp/cdhmm_dev_grid.tsv" | sort -t$'\t' -k6,6gr | head -n 1)
    [ -n "$best" ] || continue
    read -r _ s m _ _ _ _ <<< "$best"
    d=$exp/$([ $sys = ML ] && echo cdhmm || echo lm)_s${s}_m$m
    read -r dev tacc _ sc p < <(test_of "$d" 6)
    name=$([ $sys = ML ] && echo "CDHMM-ML(s$s)" || echo "CDHMM-NCOH(s$s)")
    printf '%s\t%s\t%s\t%s\n' "$name" "$m" "$dev" "$tacc" >> "$exp/cdhmm_results.tsv.tmp"
    echo "$sys: selected s$s m$m lm-scale $sc penalty $p on dev accuracy" >> "$exp/log/cdhmm_selection.log"
    printf -v "hyp_${sys//-/}" '%s' "$d/test_${sc}_${p}.hyp"
  done
  mv "$exp/cdhmm_results.tsv.tmp" "$exp/cdhmm_results.tsv"
  # large margin vs ML on the core test, paired by utterance (frame accuracy)
  if [ -n "${hyp_NCOH:-}" ] && [ -n "${hyp_ML:-}" ]; then
    rhmmtk compare --mapping "$map39" "$data/test/ali.48" "$hyp_NCOH" "$hyp_ML" \
      > "$exp/compare_cdhmm_ncoh_ml.txt" 2> "$exp/log/compare_cdhmm.log"
    cat "$exp/compare_cdhmm_ncoh_ml.txt"
  fi
  # rows for the recipe's results table (added once)
  if [ -f "$exp/results.tsv" ]; then
    grep -v '^CDHMM-' "$exp/results.tsv" > "$exp/results.tsv.tmp" || true
    tail -n +2 "$exp/cdhmm_results.tsv" >> "$exp/results.tsv.tmp"
    mv "$exp/results.tsv.tmp" "$exp/results.tsv"
  fi
  column -t -s$'\t' "$exp/cdhmm_per.tsv"
  column -t -s$'\t' "$exp/cdhmm_results.tsv"
fi
