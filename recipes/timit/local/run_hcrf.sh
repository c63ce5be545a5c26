#!/usr/bin/env bash
# TIMIT phone classification with hidden CRFs (paper 003; stages 12-14 of ../run.sh):
# segments with known boundaries (data/<set>/phone_segments), 48 training classes scored on 39.
#   12  ML phone HMMs (train-cdhmm, 3 states x {1,2,4} Gaussians) and their Bayes
#       classifiers: the exact HCRF conversion before training (train-hcrf --iters 0)
#   13  HCRF-MC and HCRF-DC (K in --knots-list) trained by RPROP from each ML HMM; the
#       iteration is chosen on dev classification accuracy (39 classes)
#   14  per system (ML, MC, DC) the Gaussians (and K) chosen on dev; core test scored
#       once; significance of ML vs MC, MC vs DC, ML vs DC (rhmmtk compare)
#   15  frame tagging: the HCRF over whole utterances (train-hcrf-tagger, phone bigram
#       trained with the rest) from the ML HMM with M in --tagger-mix-list Gaussians; the
#       RPROP iteration and M chosen on dev frame accuracy; frame accuracy, PER and
#       training time of it and of its start (the HMM's max-marginals) on dev and core
#       test, rows HCRF-TAG / HMM-MAXMARG added to exp/results.tsv; compared on the core
#       test with the ML CDHMM's Viterbi decoding (exp/cdhmm_s<S>_m<--cdhmm-mix>, stages 9
#       and 11) when it is there
#
#   local/run_hcrf.sh [--stage 12] [--mix-list "1 2 4"] [--knots-list "3 5"] [--iters 30]
# Reads data/{train,dev,test}/{feats.h5,ali.48,phone_segments,seg.48} (stages 0-1 of run.sh).
# Writes exp/hcrf/{ml,mc,dc<K>}_m<M>/ (model, history, dev/test hypotheses),
#   exp/hcrf_dev_grid.tsv (system, M, K, dev error), exp/hcrf_results.tsv (the table:
#   system, M, K, dev error, core test error), exp/hcrf_confusion_{ML,MC,DC}.txt (core
#   test, 39 classes), exp/compare_hcrf_*.txt; stage 15: exp/hcrf_tagger_dev_grid.tsv,
#   exp/hcrf_tagger_results.tsv, exp/compare_hcrf_tagger*.txt.
# Every training and decoding runs through $cmd (--cmd, default cmd.sh's) and is redone
# when its options or inputs changed (scripts/utils/stamp.sh); choices on dev are made by
# scripts/utils/select_best.sh.
set -euo pipefail
. "$(dirname "$0")/../path.sh"   # recipe, root; checks that rhmmtk is installed
. "$recipe/local/defaults.sh"   # data, exp, cmd
stage=12
stop_stage=15
states=3
mix_list="1 2 4"       # festival-timit has ~7,000 training segments: beyond 4 Gaussians
                       # per state the HMMs have more Gaussians than many phones have frames
cdhmm_iters=4
knots_list="3 5"
iters=30
step=0.01
tagger_mix_list="2 4 8"
tagger_iters=15
tagger_patience=4
tagger_lm_list="1:0"   # the bigram's start, SCALE:PENALTY (train-hcrf-tagger --lm-scale,
                       # --insertion-penalty); 1:0 is the HMM itself
cdhmm_mix=8            # stage 15 compares with local/run_cdhmm.sh's ML CDHMM of this M
help_message="Usage: $0 [--stage 12|13|14|15] [--stop-stage N] [--data DIR] [--exp DIR] [--cmd CMD]
  --states $states  --mix-list \"$mix_list\"  --cdhmm-iters $cdhmm_iters
  --knots-list \"$knots_list\"  --iters $iters  --step $step
  --tagger-mix-list \"$tagger_mix_list\"  --tagger-lm-list \"$tagger_lm_list\"
  --tagger-iters $tagger_iters  --tagger-patience $tagger_patience
  --cdhmm-mix $cdhmm_mix"
path_options="data exp"
. "$root/scripts/utils/recipe_setup.sh"   # options, stages, stamp, parallel
cd "$recipe"
h=$exp/hcrf
mkdir -p "$h" "$exp/log"
. local/scoring.sh            # map39, score_field
# REF HYP -> classification error (%) on 39 classes
cer() {
  python3 -c 'import sys; print("%.2f" % (100 - float(sys.argv[1])))' \
    "$(score_field "$1" "$2" position_accuracy)"
}
# DIR SET: classify SET's segments with DIR/final.h5 -> DIR/SET.hyp
classify() {
  once "$1/$2.hyp" "$1/log/classify_$2.log" rhmmtk decode -q --phone-segments \
    "$data/$2/phone_segments" "$1/final.h5" "$data/$2/feats.h5" "$1/$2.hyp"
}
# M: the ML HMM with M Gaussians per state every HCRF of M starts from
train_hmm() {
  once "$h/hmm_m$1.h5" "$exp/log/hcrf_hmm_m$1.log" rhmmtk train-cdhmm --states "$states" \
    --mixtures "$1" --iters "$cdhmm_iters" "$data/train/feats.h5" "$data/train/ali.48" \
    "$h/hmm_m$1.h5"
}
# DIR SYSTEM M K [train-hcrf options]: train, classify dev, one row of the dev grid
hcrf() {
  local d=$1 sys=$2 m=$3 k=$4
  shift 4
  mkdir -p "$d/log"
  once --out "$d/history.tsv" "$d/final.h5" "$d/log/train.log" rhmmtk train-hcrf "$@" \
    --mapping "$map39" --dev-obs "$data/dev/feats.h5" --dev-ali "$data/dev/phone_segments" \
    --history "$d/history.tsv" "$h/hmm_m$m.h5" "$data/train/feats.h5" \
    "$data/train/phone_segments" "$d/final.h5"
  classify "$d" dev
  printf '%s\t%s\t%s\t%s\n' "$sys" "$m" "$k" "$(cer "$data/dev/seg.48" "$d/dev.hyp")" >> "$h/dev_grid.tsv"
}

if run_stage 12; then
  echo "[$(date +%T)] stage 12: ML HMMs (S=$states, M in {$mix_list}) and their Bayes classifiers"
  for m in $mix_list; do
    train_hmm "$m"
    hcrf "$h/ml_m$m" ML "$m" - --iters 0
  done
fi

if run_stage 13; then
  echo "[$(date +%T)] stage 13: HCRF-MC and HCRF-DC (K in {$knots_list}) by RPROP, $iters iterations"
  for m in $mix_list; do
    hcrf "$h/mc_m$m" MC "$m" - --constraints moment --iters "$iters" --step "$step"
    for k in $knots_list; do
      hcrf "$h/dc${k}_m$m" DC "$m" "$k" --constraints distribution --knots "$k" \
        --iters "$iters" --step "$step"
    done
  done
fi

if run_stage 14; then
  echo "[$(date +%T)] stage 14: select on dev, classify the core test once"
  # one row per (system, M, K): a rerun's row replaces the earlier one
  awk -F'\t' '!($1 FS $2 FS $3 in row) {order[n++] = $1 FS $2 FS $3} {row[$1 FS $2 FS $3] = $0}
    END {for (i = 0; i < n; i++) print row[order[i]]}' "$h/dev_grid.tsv" > "$h/dev_grid.tsv.tmp"
  mv "$h/dev_grid.tsv.tmp" "$h/dev_grid.tsv"
  { printf 'system\tmixtures\tknots\tdev_err\n'; cat "$h/dev_grid.tsv"; } > "$exp/hcrf_dev_grid.tsv"
  printf 'system\tmixtures\tknots\tdev_err\ttest_err\n' > "$exp/hcrf_results.tsv.tmp"
  for sys in ML MC DC; do
    read -r m k dev < <(awk -F'\t' -v s=$sys 'NR == 1 || $1 == s' "$exp/hcrf_dev_grid.tsv" |
                        "$root/scripts/utils/select_best.sh" --lower dev_err mixtures,knots,dev_err -)
    case $sys in ML) d=$h/ml_m$m ;; MC) d=$h/mc_m$m ;; DC) d=$h/dc${k}_m$m ;; esac
    classify "$d" test
    rhmmtk score -q --confusion --mapping "$map39" "$data/test/seg.48" "$d/test.hyp" \
      > "$exp/hcrf_confusion_$sys.txt"
    printf '%s\t%s\t%s\t%s\t%s\n' "HCRF-$sys" "$m" "$k" "$dev" "$(cer "$data/test/seg.48" "$d/test.hyp")" \
      >> "$exp/hcrf_results.tsv.tmp"
    printf -v "hyp_$sys" '%s' "$d/test.hyp"
  done
  mv "$exp/hcrf_results.tsv.tmp" "$exp/hcrf_results.tsv"
  for pair in "MC ML" "DC MC" "DC ML"; do
    read -r a b <<< "$pair"
    va=hyp_$a; vb=hyp_$b
    rhmmtk compare --mapping "$map39" "$data/test/seg.48" "${!va}" "${!vb}" \
      > "$exp/compare_hcrf_${a}_${b}.txt" 2> "$exp/log/compare_hcrf.log"
  done
  column -t -s$'\t' "$exp/hcrf_results.tsv"
  cat "$exp"/compare_hcrf_*.txt
fi

if run_stage 15; then
  echo "[$(date +%T)] stage 15: frame-tagging HCRF from ML HMMs (M in {$tagger_mix_list}), up to $tagger_iters iterations"
  acc_per() {  # REF HYP -> "frame_acc per" on 39 phones
    score_field "$1" "$2" position_accuracy segments.per
  }
  seconds() {  # LOG -> the command's wall time (rhmmtk's "finished in S s")
    sed -n 's/.*finished in \([0-9.]*\) s.*/\1/p' "$1" | tail -n 1
  }
  lm_dir() {  # M SCALE PENALTY -> the tagger's directory (1:0, the HMM's LM: tag_m<M>)
    echo "$h/tag_m$1$([ "$2:$3" = 1:0 ] || echo "_lm$2,$3")"
  }
  # DIR M ITERS SCALE PENALTY: the tagger from the M-Gaussian HMM, its bigram started at
  # the HMM's LM weighted by SCALE and PENALTY (ITERS 0: the max-marginals of that HMM);
  # RPROP's iteration chosen on dev frame accuracy; dev decoded
  tagger() {
    local lm=()     # the defaults unwritten: 1:0 runs keep their stamps
    [ "$4:$5" = 1:0 ] || lm=(--lm-scale "$4" --insertion-penalty "$5")
    mkdir -p "$1/log"
    once --out "$1/history.tsv" "$1/final.h5" "$1/log/train.log" rhmmtk train-hcrf-tagger \
      --iters "$3" "${lm[@]}" --patience "$tagger_patience" --step "$step" --mapping "$map39" \
      --dev-obs "$data/dev/feats.h5" --dev-ali "$data/dev/ali.48" --history "$1/history.tsv" \
      "$h/hmm_m$2.h5" "$data/train/feats.h5" "$data/train/ali.48" "$1/final.h5"
    decode_set "$1" dev
  }
  decode_set() {  # DIR SET [DECODER]: DIR/SET.hyp by max-marginals, DIR/SET.DECODER.hyp
    local o=$1/$2${3:+.$3}.hyp
    once "$o" "$1/log/decode_$2${3:+_$3}.log" rhmmtk decode -q ${3:+--tagger-decode "$3"} \
      "$1/final.h5" "$data/$2/feats.h5" "$o"
  }
  printf 'mixtures\tlm_scale\tpenalty\tbest_iter\tdev_acc\tdev_per\ttrain_s\n' > "$h/tagger_dev_grid.tsv"
  for m in $tagger_mix_list; do
    train_hmm "$m"
    for lm in $tagger_lm_list; do
      d=$(lm_dir "$m" "${lm%:*}" "${lm#*:}")
      tagger "$d" "$m" "$tagger_iters" "${lm%:*}" "${lm#*:}"
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$m" "${lm%:*}" "${lm#*:}" \
        "$("$root/scripts/utils/select_best.sh" dev_acc iter "$d/history.tsv")" \
        "$(acc_per "$data/dev/ali.48" "$d/dev.hyp" | tr ' ' '\t')" \
        "$(seconds "$d/log/train.log")" >> "$h/tagger_dev_grid.tsv"
    done
  done
  cp "$h/tagger_dev_grid.tsv" "$exp/hcrf_tagger_dev_grid.tsv"
  read -r m sc p < <("$root/scripts/utils/select_best.sh" dev_acc mixtures,lm_scale,penalty \
                     "$h/tagger_dev_grid.tsv")
  best=$(lm_dir "$m" "$sc" "$p")
  start=$h/tag0_m$m$([ "$sc:$p" = 1:0 ] || echo "_lm$sc,$p")
  tagger "$start" "$m" 0 "$sc" "$p"     # its start: the max-marginals of the HMM
  # system m dev_acc test_acc (the rows of exp/results.tsv), then PER and training time
  printf 'system\tm\tdev_acc\ttest_acc\tdev_per\ttest_per\ttrain_s\n' > "$exp/hcrf_tagger_results.tsv.tmp"
  # and the chosen tagger's best path (decode --tagger-decode viterbi), for its PER
  for run in "$start HMM-MAXMARG" "$best HCRF-TAG" "$best:viterbi HCRF-TAG-VIT"; do
    read -r d name <<< "$run"
    dec=${d#*:}; [ "$dec" = "$d" ] && dec= ; d=${d%:*}
    for set in dev test; do decode_set "$d" "$set" $dec; done
    read -r da dp < <(acc_per "$data/dev/ali.48" "$d/dev${dec:+.$dec}.hyp")
    read -r ta tp < <(acc_per "$data/test/ali.48" "$d/test${dec:+.$dec}.hyp")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name(s$states)" "$m" "$da" "$ta" "$dp" "$tp" \
      "$(seconds "$d/log/train.log")" >> "$exp/hcrf_tagger_results.tsv.tmp"
  done
  mv "$exp/hcrf_tagger_results.tsv.tmp" "$exp/hcrf_tagger_results.tsv"
  rhmmtk compare --mapping "$map39" "$data/test/ali.48" "$best/test.hyp" \
    "$start/test.hyp" > "$exp/compare_hcrf_tagger.txt" 2>> "$exp/log/compare_hcrf.log"
  # against the ML CDHMM's Viterbi decoding (stages 9 and 11, local/run_cdhmm.sh), at the
  # decoding weights chosen there on dev accuracy and on dev PER
  c=$exp/cdhmm_s${states}_m$cdhmm_mix
  if [ -f "$c/dev_grid.tsv" ]; then
    for how in acc per; do
      key=dev_$how low=$([ $how = per ] && echo --lower || true)
      read -r sc p < <("$root/scripts/utils/select_best.sh" $low "$key" lm_scale,penalty "$c/dev_grid.tsv")
      once "$c/test_${sc}_${p}.hyp" "$c/log/decode_test_${sc}_${p}.log" rhmmtk decode -q \
        --lm-scale "$sc" --insertion-penalty "$p" "$c/final.h5" "$data/test/feats.h5" \
        "$c/test_${sc}_${p}.hyp"
      for dec in "" .viterbi; do
        rhmmtk compare --mapping "$map39" "$data/test/ali.48" "$best/test$dec.hyp" \
          "$c/test_${sc}_${p}.hyp" > "$exp/compare_hcrf_tagger${dec/./_}_cdhmm_$how.txt" \
          2>> "$exp/log/compare_hcrf.log"
      done
    done
  fi
  if [ -f "$exp/results.tsv" ]; then
    grep -v '^HCRF-TAG\|^HMM-MAXMARG' "$exp/results.tsv" > "$exp/results.tsv.tmp" || true
    tail -n +2 "$exp/hcrf_tagger_results.tsv" | cut -f 1-4 >> "$exp/results.tsv.tmp"
    mv "$exp/results.tsv.tmp" "$exp/results.tsv"
  fi
  column -t -s$'\t' "$exp/hcrf_tagger_dev_grid.tsv"
  column -t -s$'\t' "$exp/hcrf_tagger_results.tsv"
  cat "$exp"/compare_hcrf_tagger*.txt
fi
