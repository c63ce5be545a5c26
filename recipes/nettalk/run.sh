#!/usr/bin/env bash
# NETtalk letter-to-phoneme with refinement HMMs: UNIGRAM, HMM, EM(m) and
# SPECTRAL(m) trained on 15,000 words, every choice (m, the EM iteration, the
# smoothing constant) made on the 1,034 dev words, test scored once.
# Output: exp/results.tsv (system m dev_acc test_acc, accuracy in % per letter),
# exp/dev_grid.tsv (every configuration's dev accuracy), per-step logs in exp/*/log/.
#
#   recipes/nettalk/run.sh                          # everything, defaults below
#   recipes/nettalk/run.sh --stage 4 --m-list "8 24" # resume at the spectral stage
set -euo pipefail
cd "$(dirname "$0")"
root=$(cd ../..; pwd)

stage=0
stop_stage=100
data=${RHMMTK_NETTALK:-$root/../shared/data/nettalk/nettalk.data}
seed=1                      # the train/dev/test split
context=1                   # observation = letters i-1..i+1 (backoff below min_count; chosen on dev, see RESULTS)
min_count=2
templates=conf/templates.conf
ablations="conf/templates.conf conf/templates_nopos.conf conf/templates_nonppppos.conf"
m_list="1 2 4 8 16 24 32"
smooth_list="10 30 100"     # spectral smoothing constants C tried on dev
em_iters=200                # the paper's; the best dev iteration is kept
em_dev_every=10             # dev decoded after every 10th iteration (and the last; single mode)
em_seed=1
em_mode=single               # acc: acc-em/est-em jobs per iteration; single: one train-em per m
nj=1                        # parallel jobs (shards) of each training step, run by $cmd
exp=exp
. ./cmd.sh                  # cmd: the job runner (local by default; see cmd.sh for Slurm)
help_message="Usage: $0 [options]
  --data FILE          NETtalk dictionary (default: \$RHMMTK_NETTALK or ../shared/data/nettalk/nettalk.data)
  --stage N / --stop-stage N   run stages N..M (0 prepare, 1 observations, 2 baselines,
                       3 EM, 4 spectral, 5 select + test, 6 ablation + figures)
  --seed N             split seed ($seed)          --context K --min-count C   observations ($context, $min_count)
  --m-list \"...\"       hidden-state grid ($m_list)
  --smooth-list \"...\"  spectral smoothing grid ($smooth_list)
  --em-iters N         EM iterations, best on dev kept ($em_iters)   --em-seed N ($em_seed)
  --em-dev-every K     in single mode, decode dev after every K-th iteration ($em_dev_every)
  --em-mode acc|single EM as accumulate/estimate jobs over --nj shards, every iteration kept
                       as N.h5 (scales out), or one train-em process per m (the same model,
                       less process start-up on one machine) ($em_mode)
  --templates FILE     feature templates ($templates)   --exp DIR  output ($exp)
  --nj N               shards per training step ($nj)   --cmd CMD  job runner ($cmd)"
. "$root/scripts/parse_options.sh"

run_stage() { [ "$stage" -le "$1" ] && [ "$stop_stage" -ge "$1" ]; }
dev_acc() { rhmmtk score -q --json data/dev/ali "$1" | python3 "$root/scripts/json_field.py" position_accuracy; }
mkdir -p "$exp/log"
SECONDS=0
[ -f "$exp/log/stages.tsv" ] || printf 'stage\tseconds\n' > "$exp/log/stages.tsv"
t_stage=$SECONDS
stamp() {  # log the previous stage's wall time (exp/log/stages.tsv), announce the next
  if [ -n "${cur_stage:-}" ]; then
    printf '%s\t%s\n' "$cur_stage" "$((SECONDS - t_stage))" >> "$exp/log/stages.tsv"
  fi
  cur_stage=$(echo "$*" | cut -d: -f1); t_stage=$SECONDS
  echo "[$(date +%T)] $* (${SECONDS}s)"
}

if run_stage 0; then
  if [ ! -f "$data" ]; then
    echo "$0: error: NETtalk dictionary not found at $data" >&2
    echo "  Download nettalk.data from the UCI machine-learning repository" >&2
    echo "  (undocumented/connectionist-bench/nettalk/nettalk.data) and pass --data FILE" >&2
    echo "  or set RHMMTK_NETTALK." >&2
    exit 1
  fi
  stamp "stage 0: split $data (seed $seed)"
  python3 local/prepare_nettalk.py --seed "$seed" "$data" data 2> "$exp/log/prepare.log"
fi

if run_stage 1; then
  stamp "stage 1: observations (context $context, min count $min_count) and features"
  rhmmtk make-obs -q --context "$context" --min-count "$min_count" \
    --write-symbols data/obs.syms data/train/letters data/train/obs.h5
  for s in dev test; do
    rhmmtk make-obs -q --symbols data/obs.syms data/$s/letters data/$s/obs.h5
  done
  rhmmtk featurize --templates "$templates" data/train/obs.h5 data/train/ali \
    data/train/feats.h5 2> "$exp/log/featurize.log"
fi


if run_stage 2; then
  stamp "stage 2: UNIGRAM and HMM"
  mkdir -p "$exp/unigram/log" "$exp/hmm/log"
  rhmmtk train-unigram data/train/obs.h5 data/train/ali "$exp/unigram/final.h5" 2> "$exp/unigram/log/train.log"
  rhmmtk train-em -m 1 --iters 0 data/train/obs.h5 data/train/ali "$exp/hmm/final.h5" 2> "$exp/hmm/log/train.log"
  for sys in unigram hmm; do
    rhmmtk decode "$exp/$sys/final.h5" data/dev/obs.h5 "$exp/$sys/dev.hyp" 2> "$exp/$sys/log/decode_dev.log"
  done
fi

# Training runs as accumulate/estimate steps over $nj shards through $cmd
# (scripts/train_em.sh, scripts/train_spectral.sh: per-step logs in exp/<system>/log/,
# their summaries in exp/log/<system>.log); finished models are not redone, and a failed
# job stops the recipe with its log named.
train_em() {  # m: final.h5 = the iteration best on dev (acc mode: every iteration as N.h5)
  local d=$exp/em_m$1
  if [ "$em_mode" = single ]; then
    mkdir -p "$d/log"
    [ -f "$d/final.h5" ] || $cmd "$d/log/train.log" rhmmtk train-em -m "$1" --iters "$em_iters" \
      --dev-every "$em_dev_every" --seed "$em_seed" --dev-obs data/dev/obs.h5 --dev-ali data/dev/ali \
      --history "$d/history.tsv" data/train/obs.h5 data/train/ali "$d/final.h5"
  else
    "$root/scripts/train_em.sh" --nj "$nj" --cmd "$cmd" --states "$1" --iters "$em_iters" \
      --seed "$em_seed" --dev-obs data/dev/obs.h5 --dev-ali data/dev/ali \
      data/train/obs.h5 data/train/ali "$d" 2>> "$exp/log/em_m$1.log" ||
      { tail -n 20 "$exp/log/em_m$1.log" >&2; return 1; }
  fi
  [ -f "$d/dev.hyp" ] || rhmmtk decode "$d/final.h5" data/dev/obs.h5 "$d/dev.hyp" \
    2> "$d/log/decode_dev.log"
}
train_spectral() {  # m C: the statistics of m are shared by every C
  local d=$exp/spectral_m$1_c$2
  "$root/scripts/train_spectral.sh" --nj "$nj" --cmd "$cmd" --states "$1" --smooth "$2" \
    --stats-dir "$exp/spectral_m$1_stats" data/train/feats.h5 "$d" \
    2>> "$exp/log/spectral_m$1_c$2.log" || { tail -n 20 "$exp/log/spectral_m$1_c$2.log" >&2; return 1; }
  [ -f "$d/dev.hyp" ] || rhmmtk decode "$d/final.h5" data/dev/obs.h5 "$d/dev.hyp" \
    2> "$d/log/decode_dev.log"
}

if run_stage 3; then
  stamp "stage 3: EM(m) for m in $m_list, $em_iters iterations each, best dev iteration kept"
  for m in $m_list; do train_em "$m"; done
fi

if run_stage 4; then
  stamp "stage 4: SPECTRAL(m) for m in $m_list, C in $smooth_list"
  for m in $m_list; do for c in $smooth_list; do train_spectral "$m" "$c"; done; done
fi

if run_stage 5; then
  stamp "stage 5: select on dev, score test once"
  : > "$exp/log/selection.log"
  {
    printf 'system\tconfig\tm\tdev_acc\n'
    printf 'UNIGRAM\tunigram\t1\t%s\n' "$(dev_acc $exp/unigram/dev.hyp)"
    printf 'HMM\thmm\t1\t%s\n' "$(dev_acc $exp/hmm/dev.hyp)"
    for m in $m_list; do
      printf 'EM\tem_m%s\t%s\t%s\n' "$m" "$m" "$(dev_acc $exp/em_m$m/dev.hyp)"
      for c in $smooth_list; do
        printf 'SPECTRAL\tspectral_m%s_c%s\t%s\t%s\n' "$m" "$c" "$m" "$(dev_acc $exp/spectral_m${m}_c$c/dev.hyp)"
      done
    done
  } > "$exp/dev_grid.tsv"
  printf 'system\tm\tdev_acc\ttest_acc\n' > "$exp/results.tsv.tmp"
  for sys in UNIGRAM HMM EM SPECTRAL; do
    # best dev accuracy; ties go to the smaller m (first in the grid)
    read -r config m acc < <(awk -F'\t' -v s=$sys '$1==s {print $2, $3, $4}' "$exp/dev_grid.tsv" |
                              sort -s -k3,3gr | head -n 1)
    d=$exp/$config
    rhmmtk decode "$d/final.h5" data/test/obs.h5 "$d/test.hyp" 2> "$d/log/decode_test.log"
    tacc=$(rhmmtk score -q --json data/test/ali "$d/test.hyp" | python3 "$root/scripts/json_field.py" position_accuracy)
    printf '%s\t%s\t%s\t%s\n' "$sys" "$m" "$acc" "$tacc" >> "$exp/results.tsv.tmp"
    echo "$sys: selected $config on dev" >> "$exp/log/selection.log"
  done
  mv "$exp/results.tsv.tmp" "$exp/results.tsv"
  stamp "done"
  column -t -s$'\t' "$exp/results.tsv"
  cat "$exp/log/selection.log"
fi

if run_stage 6; then
  # Figure 7: the selected SPECTRAL(m, C) retrained with fewer templates; figures 5 and 7
  # and EM's per-iteration dev curve as PNG + TSV in exp/figures/.
  read -r m c < <(awk -F'\t' '$1=="SPECTRAL" {print $4, $2}' "$exp/dev_grid.tsv" | sort -s -k1,1gr |
                  head -n 1 | sed -E 's/.* spectral_m([0-9]+)_c([0-9.]+)$/\1 \2/')
  stamp "stage 6: feature ablation at SPECTRAL(m=$m, C=$c); figures"
  printf 'templates\tdev_acc\n' > "$exp/ablation.tsv.tmp"
  for conf in $ablations; do
    name=$(basename "$conf" .conf)
    d=$exp/ablation_$name
    mkdir -p "$d/log"
    if [ ! -f "$d/final.h5" ]; then
      rhmmtk featurize --templates "$conf" data/train/obs.h5 data/train/ali "$d/feats.h5" 2> "$d/log/featurize.log"
      rhmmtk train-spectral -m "$m" --smooth "$c" "$d/feats.h5" "$d/final.h5" 2> "$d/log/train.log"
      rm -f "$d/feats.h5"
    fi
    rhmmtk decode "$d/final.h5" data/dev/obs.h5 "$d/dev.hyp" 2> "$d/log/decode_dev.log"
    printf '%s\t%s\n' "$name" "$(dev_acc $d/dev.hyp)" >> "$exp/ablation.tsv.tmp"
  done
  mv "$exp/ablation.tsv.tmp" "$exp/ablation.tsv"
  mkdir -p "$exp/figures"
  python3 "$root/scripts/plot_figures.py" fig5 "$exp/dev_grid.tsv" "$exp/figures/fig5_dev_vs_m"
  python3 "$root/scripts/plot_figures.py" fig7 "$exp/ablation.tsv" "$exp/figures/fig7_ablation"
  python3 "$root/scripts/plot_figures.py" emcurve "$exp/figures/em_dev_curve" "$exp"/em_m*/history.tsv
  stamp "stage 6 done"
fi
