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
context=0                   # observation = letters i-context..i+context (backoff below min_count)
min_count=2
templates=conf/templates.conf
m_list="1 2 4 8 16 24 32"
smooth_list="10 30 100"     # spectral smoothing constants C tried on dev
em_iters=30
em_seed=1
nj=1                        # parallel training jobs (local)
exp=exp
help_message="Usage: $0 [options]
  --data FILE          NETtalk dictionary (default: \$RHMMTK_NETTALK or ../shared/data/nettalk/nettalk.data)
  --stage N / --stop-stage N   run stages N..M (0 prepare, 1 observations, 2 baselines, 3 EM, 4 spectral, 5 test)
  --seed N             split seed ($seed)          --context K --min-count C   observations ($context, $min_count)
  --m-list \"...\"       hidden-state grid ($m_list)
  --smooth-list \"...\"  spectral smoothing grid ($smooth_list)
  --em-iters N         EM iterations, best on dev kept ($em_iters)   --em-seed N ($em_seed)
  --templates FILE     feature templates ($templates)   --exp DIR  output ($exp)   --nj N  jobs ($nj)"
. "$root/scripts/parse_options.sh"

run_stage() { [ "$stage" -le "$1" ] && [ "$stop_stage" -ge "$1" ]; }
dev_acc() { rhmmtk score -q --json data/dev/ali "$1" | python3 "$root/scripts/json_field.py" position_accuracy; }
mkdir -p "$exp/log"
SECONDS=0
stamp() { echo "[$(date +%T)] $* (${SECONDS}s)"; }

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

train_em() {  # m
  local d=$exp/em_m$1
  mkdir -p "$d/log"
  [ -f "$d/final.h5" ] && return 0   # finished before: not redone
  rhmmtk train-em -m "$1" --iters "$em_iters" --seed "$em_seed" --dev-obs data/dev/obs.h5 \
    --dev-ali data/dev/ali --history "$d/history.tsv" data/train/obs.h5 data/train/ali \
    "$d/final.h5" 2> "$d/log/train.log"
  rhmmtk decode "$d/final.h5" data/dev/obs.h5 "$d/dev.hyp" 2> "$d/log/decode_dev.log"
}
train_spectral() {  # m C
  local d=$exp/spectral_m$1_c$2
  mkdir -p "$d/log"
  [ -f "$d/final.h5" ] && return 0
  rhmmtk train-spectral -m "$1" --smooth "$2" data/train/feats.h5 "$d/final.h5" 2> "$d/log/train.log"
  rhmmtk decode "$d/final.h5" data/dev/obs.h5 "$d/dev.hyp" 2> "$d/log/decode_dev.log"
}
export -f train_em train_spectral
export exp em_iters em_seed

if run_stage 3; then
  stamp "stage 3: EM(m) for m in $m_list, $em_iters iterations each, best dev iteration kept"
  printf '%s\n' $m_list | xargs -P "$nj" -I{} bash -c 'train_em {}'
fi

if run_stage 4; then
  stamp "stage 4: SPECTRAL(m) for m in $m_list, C in $smooth_list"
  for m in $m_list; do for c in $smooth_list; do echo "$m $c"; done; done |
    xargs -P "$nj" -L1 bash -c 'train_spectral "$0" "$1"'
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
