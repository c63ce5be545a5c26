#!/usr/bin/env bash
# Kaldi's monophone GMM-HMM on the TIMIT recipe's features (stage 16 of ../run.sh), trained
# and decoded by Kaldi's own C++ code through PyPI kaldi-hmm-gmm (local/kaldi_gmm.py,
# rhmmtk.peers.kaldi_gmm): steps/train_mono.sh's schedule (3-state phones, 40 passes,
# realignment, Gaussians increased to --totgauss), mkgraph.sh's HCLG over a phone bigram
# (the add-k bigram train-cdhmm decodes with), decode.sh's lattice decoder. LMWT and the
# phone insertion penalty are chosen on dev PER (as score.sh), the core test is scored
# once, and its hypotheses are compared with the ML CDHMM's (stage 11's test decoding of
# --baseline at that model's dev-best weights) by rhmmtk compare. No triphone stage:
# the bindings cannot build decision trees (rhmmtk.peers.kaldi_gmm).
#
#   local/run_kaldi.sh [--totgauss 1000] [--lm-weights "..."] [--penalties "..."]
# Reads data/{train,dev,test}/feats.h5 and ali.48 (stages 0-1 of run.sh); writes
#   exp/kaldi_mono/final.mdl, log/train.log (per-pass history; its last JSON line holds
#                          train_seconds), dev_W_P.hyp per (LMWT, penalty), dev_grid.tsv
#   exp/kaldi_results.tsv  system, Gaussians, train seconds, LMWT/penalty chosen on dev PER,
#                          dev/test PER, and on dev accuracy, dev/test frame accuracy
#   exp/compare/kaldi_vs_<baseline>.txt|json  paired tests on the core test (A = Kaldi)
set -euo pipefail
. "$(dirname "$0")/../path.sh"   # recipe, root; checks that rhmmtk is installed
. "$recipe/local/defaults.sh"   # data, exp, cmd
stage=16
stop_stage=16
totgauss=1000                # train_mono.sh's
num_iters=40
lm_weights="2 4 6 8 10"      # LMWT grid (score.sh's range is 1..10 on TIMIT)
penalties="0 1"              # cost per phone (score.sh's word_ins_penalty 0.0 ... 1.0)
baseline=cdhmm_s3_m8         # the ML CDHMM compared with (a model directory of stage 9-11)
help_message="Usage: $0 [--data DIR] [--exp DIR] [--cmd CMD]
  --totgauss $totgauss  --num-iters $num_iters  --lm-weights \"$lm_weights\"
  --penalties \"$penalties\"  --baseline $baseline"
path_options="data exp"
. "$root/scripts/utils/recipe_setup.sh"   # options, stages, stamp, parallel
cd "$recipe"
run_stage 16 || exit 0
python3 -c 'import kaldi_hmm_gmm, kaldifst' 2> /dev/null ||
  { echo "$0: error: kaldi-hmm-gmm is not installed: bash $root/scripts/install.sh" >&2; exit 1; }
. local/scoring.sh            # map39, score_field
d=$exp/kaldi_mono
mkdir -p "$d/log" "$exp/compare"
echo "[$(date +%T)] stage 16: Kaldi monophone GMM-HMM, $totgauss Gaussians; LMWT/penalty on dev"
once "$d/final.mdl" "$d/log/train.log" python3 local/kaldi_gmm.py train --totgauss "$totgauss" \
  --num-iters "$num_iters" "$data/train/feats.h5" "$data/train/ali.48" "$d/final.mdl"
train_s=$(grep '^{"options"' "$d/log/train.log" | tail -1 | python3 "$root/scripts/utils/json_field.py" train_seconds)
gauss=$(grep '^{"options"' "$d/log/train.log" | tail -1 | python3 "$root/scripts/utils/json_field.py" gaussians)
# SET W P -> the hypothesis file, decoded once
hyp_of() {
  once "$d/$1_$2_$3.hyp" "$d/log/decode_$1_$2_$3.log" python3 local/kaldi_gmm.py decode \
    --lm-weight "$2" --insertion-penalty "$3" "$d/final.mdl" "$data/$1/feats.h5" "$d/$1_$2_$3.hyp"
  echo "$d/$1_$2_$3.hyp"
}
printf 'lm_scale\tpenalty\tdev_acc\tdev_per\n' > "$d/dev_grid.tsv.tmp"
for w in $lm_weights; do for p in $penalties; do
  h=$(hyp_of dev "$w" "$p")
  printf '%s\t%s\t%s\n' "$w" "$p" \
    "$(score_field "$data/dev/ali.48" "$h" position_accuracy segments.per | tr ' ' '\t')" >> "$d/dev_grid.tsv.tmp"
done; done
mv "$d/dev_grid.tsv.tmp" "$d/dev_grid.tsv"
read -r wp pp dper < <("$root/scripts/utils/select_best.sh" --lower dev_per lm_scale,penalty,dev_per "$d/dev_grid.tsv" | tr '\t' ' ')
read -r wa pa dacc < <("$root/scripts/utils/select_best.sh" dev_acc lm_scale,penalty,dev_acc "$d/dev_grid.tsv" | tr '\t' ' ')
hyp=$(hyp_of test "$wp" "$pp")
tper=$(score_field "$data/test/ali.48" "$hyp" segments.per)
tacc=$(score_field "$data/test/ali.48" "$(hyp_of test "$wa" "$pa")" position_accuracy)
printf 'system\tgaussians\ttrain_seconds\tper_lmwt\tper_penalty\tdev_per\ttest_per\tacc_lmwt\tacc_penalty\tdev_acc\ttest_acc\n%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
  KALDI-MONO "$gauss" "$train_s" "$wp" "$pp" "$dper" "$tper" "$wa" "$pa" "$dacc" "$tacc" > "$exp/kaldi_results.tsv"
column -t -s$'\t' "$exp/kaldi_results.tsv"
# against the ML CDHMM: its test hypothesis at its dev-best PER weights (stage 11 made it)
b=$exp/$baseline
if [ -f "$b/dev_grid.tsv" ]; then
  read -r sc p _ < <("$root/scripts/utils/select_best.sh" --lower dev_per lm_scale,penalty,dev_per "$b/dev_grid.tsv" | tr '\t' ' ')
  bh=$b/test_${sc}_${p}.hyp
  if [ -f "$bh" ]; then
    rhmmtk compare -q --json --mapping "$map39" "$data/test/ali.48" "$hyp" "$bh" > "$exp/compare/kaldi_vs_$baseline.json"
    rhmmtk compare --mapping "$map39" "$data/test/ali.48" "$hyp" "$bh" 2> "$d/log/compare.log" | tee "$exp/compare/kaldi_vs_$baseline.txt"
  else
    echo "$0: no $bh: run stage 11 (local/run_cdhmm.sh) for the comparison with $baseline" >&2
  fi
else
  echo "$0: no $b: run stages 9-11 for the comparison with $baseline" >&2
fi
