#!/usr/bin/env bash
# TIMIT frame-level phone recognition with refinement HMMs, the experiment of
# Stratos et al. (2013), section 7: MFCC+deltas -> k-means codes -> UNIGRAM, HMM,
# EM(m), SPECTRAL(m) trained on 48 phones, every choice made on dev, core test
# scored once on the 39-phone set (frame accuracy).
# Output: exp/results.tsv (system m dev_acc test_acc), exp/dev_grid.tsv,
# exp/ablation.tsv, exp/figures/*.png|tsv, per-step logs in exp/*/log/,
# per-stage wall times in exp/log/stages.tsv.
#
#   recipes/timit/run.sh --timit-root /corpora/LDC93S1/TIMIT
#   recipes/timit/run.sh --timit-root ../shared/data/festival-timit --codes 2000
set -euo pipefail
cd "$(dirname "$0")"
root=$(cd ../..; pwd)

stage=0
stop_stage=100
timit_root=${RHMMTK_TIMIT:-}
dev_size=0                  # 0: every dev-speaker utterance (400 on TIMIT); the paper used 200
codes=10000                 # k-means codebook size n (the paper's)
sample_frames=0             # frames k-means trains on (0: all)
kmeans_iters=20
cmvn=spk
seed=1
templates=conf/templates.conf
ablations="conf/templates.conf conf/templates_nopos.conf conf/templates_nonppppos.conf"
m_list="1 2 4 8 16 24 32"
em_m_list=                  # EM's own grid when it differs (default: m_list)
smooth_list="10 30 100"
em_iters=30
em_seed=1
nj=1
cdhmm_states_list="1 3"     # CDHMM stages 9-11 (local/run_cdhmm.sh): ML grid
cdhmm_mix_list="1 2 4 8"
cdhmm_lm_states_list=       # large-margin grid (default: the ML grid)
cdhmm_lm_mix_list=
cdhmm_lm_iters=30
cdhmm_lambda=10000
cdhmm_lm_scales="2 4 8"
cdhmm_penalties="0 -10 -20"
exp=exp
help_message="Usage: $0 --timit-root DIR [options]
  --timit-root DIR     TIMIT in its standard layout (TRAIN/ TEST/, upper or lower case),
                       or \$RHMMTK_TIMIT; e.g. ../shared/data/festival-timit
  --stage N / --stop-stage N   0 prepare, 1 feats, 2 quantize, 3 featurize, 4 baselines,
                       5 EM, 6 spectral, 7 select + test, 8 ablation + figures,
                       9 ML CDHMMs, 10 large-margin CDHMMs, 11 CDHMM select + test
  --dev-size N ($dev_size)  --codes N ($codes)  --sample-frames N ($sample_frames)
  --kmeans-iters N ($kmeans_iters)  --cmvn none|utt|spk ($cmvn)  --seed N ($seed)
  --m-list \"...\" ($m_list)  --em-m-list \"...\" (EM's grid; default: --m-list)  --smooth-list \"...\" ($smooth_list)
  --em-iters N ($em_iters)  --em-seed N ($em_seed)  --exp DIR ($exp)  --nj N ($nj)
  --cdhmm-states-list \"$cdhmm_states_list\"  --cdhmm-mix-list \"$cdhmm_mix_list\"
  --cdhmm-lm-states-list / --cdhmm-lm-mix-list (default: the ML grid)
  --cdhmm-lm-iters $cdhmm_lm_iters  --cdhmm-lambda $cdhmm_lambda
  --cdhmm-lm-scales \"$cdhmm_lm_scales\"  --cdhmm-penalties \"$cdhmm_penalties\""
. "$root/scripts/parse_options.sh"
em_m_list=${em_m_list:-$m_list}

run_stage() { [ "$stage" -le "$1" ] && [ "$stop_stage" -ge "$1" ]; }
mkdir -p "$exp/log" "$exp/figures"
[ -f "$exp/log/stages.tsv" ] || printf 'stage\tseconds\n' > "$exp/log/stages.tsv"
t_stage=$SECONDS
stamp() {  # log the previous stage's wall time, announce the next
  if [ -n "${cur_stage:-}" ]; then
    printf '%s\t%s\n' "$cur_stage" "$((SECONDS - t_stage))" >> "$exp/log/stages.tsv"
  fi
  cur_stage=$1; t_stage=$SECONDS
  echo "[$(date +%T)] stage $*"
}
# 48 -> 39 folding for scoring, from the 61/48/39 table
map39=$exp/map_48_39.txt
awk 'NF == 3 && !seen[$2]++ {print $2, $3}' conf/phones.60-48-39.map > "$map39"
acc39() {  # REF HYP -> frame accuracy (%) on the 39-phone set
  rhmmtk score -q --json --mapping "$map39" "$1" "$2" | python3 "$root/scripts/json_field.py" position_accuracy
}

if run_stage 0; then
  stamp 0 "prepare $timit_root"
  if [ -z "$timit_root" ] || [ ! -d "$timit_root" ]; then
    echo "$0: error: TIMIT root '${timit_root}' not found: pass --timit-root DIR (LDC93S1, or" >&2
    echo "  ../shared/data/festival-timit for the synthesized stand-in) or set RHMMTK_TIMIT" >&2
    exit 1
  fi
  args=()
  [ "$dev_size" -gt 0 ] && args+=(--dev-size "$dev_size")
  python3 local/prepare_timit.py "${args[@]}" "$timit_root" data 2> "$exp/log/prepare.log" ||
    { cat "$exp/log/prepare.log" >&2; exit 1; }
fi

if run_stage 1; then
  stamp 1 "feats (MFCC 13 + deltas, CMVN per $cmvn)"
  for s in train dev test; do
    [ -f data/$s/feats.h5 ] && continue
    rhmmtk feats --cmvn "$cmvn" --utt2spk data/$s/utt2spk data/$s/wav.scp data/$s/feats.h5 \
      2> "$exp/log/feats_$s.log"
  done
fi

if run_stage 2; then
  stamp 2 "quantize: $codes codes"
  [ -f data/codebook.h5 ] || rhmmtk quantize learn --codes "$codes" --seed "$seed" \
    --sample-frames "$sample_frames" --iters "$kmeans_iters" data/train/feats.h5 data/codebook.h5 \
    2> "$exp/log/quantize_learn.log"
  for s in train dev test; do
    rhmmtk quantize apply data/codebook.h5 data/$s/feats.h5 data/$s/obs.h5 2> "$exp/log/quantize_$s.log"
  done
fi

if run_stage 3; then
  stamp 3 "featurize"
  rhmmtk featurize --templates "$templates" data/train/obs.h5 data/train/ali.48 \
    data/train/feats.tpl.h5 2> "$exp/log/featurize.log"
fi

dev_acc() { acc39 data/dev/ali.48 "$1"; }
train_em() {  # m
  local d=$exp/em_m$1
  mkdir -p "$d/log"
  [ -f "$d/final.h5" ] && return 0   # finished before: not redone
  rhmmtk train-em -m "$1" --iters "$em_iters" --seed "$em_seed" --dev-obs data/dev/obs.h5 \
    --dev-ali data/dev/ali.48 --history "$d/history.tsv" data/train/obs.h5 data/train/ali.48 \
    "$d/final.h5" 2> "$d/log/train.log"
  rhmmtk decode "$d/final.h5" data/dev/obs.h5 "$d/dev.hyp" 2> "$d/log/decode_dev.log"
}
train_spectral() {  # m C
  local d=$exp/spectral_m$1_c$2
  mkdir -p "$d/log"
  [ -f "$d/final.h5" ] && return 0
  rhmmtk train-spectral -m "$1" --smooth "$2" data/train/feats.tpl.h5 "$d/final.h5" 2> "$d/log/train.log"
  rhmmtk decode "$d/final.h5" data/dev/obs.h5 "$d/dev.hyp" 2> "$d/log/decode_dev.log"
}
export -f train_em train_spectral
export exp em_iters em_seed

if run_stage 4; then
  stamp 4 "UNIGRAM and HMM"
  mkdir -p "$exp/unigram/log" "$exp/hmm/log"
  rhmmtk train-unigram data/train/obs.h5 data/train/ali.48 "$exp/unigram/final.h5" 2> "$exp/unigram/log/train.log"
  rhmmtk train-em -m 1 --iters 0 data/train/obs.h5 data/train/ali.48 "$exp/hmm/final.h5" 2> "$exp/hmm/log/train.log"
  for sys in unigram hmm; do
    rhmmtk decode "$exp/$sys/final.h5" data/dev/obs.h5 "$exp/$sys/dev.hyp" 2> "$exp/$sys/log/decode_dev.log"
  done
fi

if run_stage 5; then
  stamp 5 "EM(m) for m in $em_m_list, $em_iters iterations, best dev iteration kept"
  printf '%s\n' $em_m_list | xargs -P "$nj" -I{} bash -c 'train_em {}'
fi

if run_stage 6; then
  stamp 6 "SPECTRAL(m) for m in $m_list, C in $smooth_list"
  for m in $m_list; do for c in $smooth_list; do echo "$m $c"; done; done |
    xargs -P "$nj" -L1 bash -c 'train_spectral "$0" "$1"'
fi

if run_stage 7; then
  stamp 7 "select on dev, score core test once (39 phones)"
  {
    printf 'system\tconfig\tm\tdev_acc\n'
    printf 'UNIGRAM\tunigram\t1\t%s\n' "$(dev_acc $exp/unigram/dev.hyp)"
    printf 'HMM\thmm\t1\t%s\n' "$(dev_acc $exp/hmm/dev.hyp)"
    for m in $em_m_list; do
      printf 'EM\tem_m%s\t%s\t%s\n' "$m" "$m" "$(dev_acc $exp/em_m$m/dev.hyp)"
    done
    for m in $m_list; do
      for c in $smooth_list; do
        printf 'SPECTRAL\tspectral_m%s_c%s\t%s\t%s\n' "$m" "$c" "$m" "$(dev_acc $exp/spectral_m${m}_c$c/dev.hyp)"
      done
    done
  } > "$exp/dev_grid.tsv"
  : > "$exp/log/selection.log"
  printf 'system\tm\tdev_acc\ttest_acc\n' > "$exp/results.tsv.tmp"
  for sys in UNIGRAM HMM EM SPECTRAL; do
    read -r config m acc < <(awk -F'\t' -v s=$sys '$1==s {print $2, $3, $4}' "$exp/dev_grid.tsv" |
                              sort -s -k3,3gr | head -n 1)
    d=$exp/$config
    rhmmtk decode "$d/final.h5" data/test/obs.h5 "$d/test.hyp" 2> "$d/log/decode_test.log"
    printf '%s\t%s\t%s\t%s\n' "$sys" "$m" "$acc" "$(acc39 data/test/ali.48 $d/test.hyp)" >> "$exp/results.tsv.tmp"
    echo "$sys: selected $config on dev" >> "$exp/log/selection.log"
  done
  mv "$exp/results.tsv.tmp" "$exp/results.tsv"
  # the paper's significance claim: SPECTRAL vs EM on the test set, paired by utterance
  em_cfg=$(awk '/^EM:/ {print $3}' "$exp/log/selection.log")
  sp_cfg=$(awk '/^SPECTRAL:/ {print $3}' "$exp/log/selection.log")
  rhmmtk compare --mapping "$map39" data/test/ali.48 "$exp/$sp_cfg/test.hyp" "$exp/$em_cfg/test.hyp" \
    > "$exp/compare_spectral_em.txt" 2> "$exp/log/compare.log"
  column -t -s$'\t' "$exp/results.tsv"
  cat "$exp/log/selection.log" "$exp/compare_spectral_em.txt"
fi

if run_stage 8; then
  read -r m c < <(awk -F'\t' '$1=="SPECTRAL" {print $4, $2}' "$exp/dev_grid.tsv" | sort -s -k1,1gr |
                  head -n 1 | sed -E 's/.* spectral_m([0-9]+)_c([0-9.]+)$/\1 \2/')
  stamp 8 "feature ablation at SPECTRAL(m=$m, C=$c); figures"
  printf 'templates\tdev_acc\n' > "$exp/ablation.tsv.tmp"
  for conf in $ablations; do
    name=$(basename "$conf" .conf)
    d=$exp/ablation_$name
    mkdir -p "$d/log"
    if [ ! -f "$d/final.h5" ]; then
      rhmmtk featurize --templates "$conf" data/train/obs.h5 data/train/ali.48 "$d/feats.h5" 2> "$d/log/featurize.log"
      rhmmtk train-spectral -m "$m" --smooth "$c" "$d/feats.h5" "$d/final.h5" 2> "$d/log/train.log"
      rm -f "$d/feats.h5"
    fi
    rhmmtk decode "$d/final.h5" data/dev/obs.h5 "$d/dev.hyp" 2> "$d/log/decode_dev.log"
    printf '%s\t%s\n' "$name" "$(dev_acc $d/dev.hyp)" >> "$exp/ablation.tsv.tmp"
  done
  mv "$exp/ablation.tsv.tmp" "$exp/ablation.tsv"
  python3 "$root/scripts/plot_figures.py" fig5 "$exp/dev_grid.tsv" "$exp/figures/fig5_dev_vs_m"
  python3 "$root/scripts/plot_figures.py" fig7 "$exp/ablation.tsv" "$exp/figures/fig7_ablation"
  python3 "$root/scripts/plot_figures.py" emcurve "$exp/figures/em_dev_curve" "$exp"/em_m*/history.tsv
fi
for st in 9 10 11; do
  run_stage $st || continue
  stamp $st "CDHMM (local/run_cdhmm.sh)"
  local/run_cdhmm.sh --stage $st --stop-stage $st --data data --exp "$exp" \
    --states-list "$cdhmm_states_list" --mix-list "$cdhmm_mix_list" \
    --lm-states-list "${cdhmm_lm_states_list:-$cdhmm_states_list}" \
    --lm-mix-list "${cdhmm_lm_mix_list:-$cdhmm_mix_list}" --lm-iters "$cdhmm_lm_iters" \
    --lambda "$cdhmm_lambda" --lm-scales "$cdhmm_lm_scales" --penalties "$cdhmm_penalties"
done
stamp done
column -t "$exp/log/stages.tsv"
