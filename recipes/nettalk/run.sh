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
. ./path.sh                 # root, data (the dictionary), stage=0, stop_stage=100
seed=1                      # the train/dev/test split
context=2                   # observation = letters i-2..i+2 (backoff to narrower windows below min_count; chosen on dev, see RESULTS)
min_count=2
templates=conf/templates.conf
ablations="conf/templates.conf conf/templates_nopos.conf conf/templates_nonppppos.conf"
m_list="1 2 4 8 16 24 32"
smooth_list="10 30 100"     # spectral smoothing constants C tried on dev
beam=1e-4                   # decoder beam of every R-HMM decoding (dev, test, EM's dev scoring);
                            # chosen on dev: 3.6x faster than the CLI's 1e-8 for SPECTRAL(32), see RESULTS
em_iters=200                # the paper's; the best dev iteration is kept
em_dev_every=1              # dev decoded after every iteration, as the paper (single mode: K for every K-th)
em_patience=10              # stop EM(m) once 10 dev scorings in a row bring no gain (0: all iterations)
em_seed=1
em_mode=single               # acc: acc-em/est-em jobs per iteration; single: one train-em per m
nj=1                        # parallel jobs (shards) of each training step, run by $cmd
parallel=1                  # trainings/decodings at once on this machine (stages 3-6)
exp=exp
. ./cmd.sh                  # cmd: the job runner (local by default; see cmd.sh for Slurm)
help_message="Usage: $0 [options]
  --data FILE          NETtalk dictionary (default: \$RHMMTK_NETTALK or ../shared/data/nettalk/nettalk.data)
  --stage N / --stop-stage N   run stages N..M (0 prepare, 1 observations, 2 baselines,
                       3 EM, 4 spectral, 5 select + test, 6 ablation + figures)
  --seed N             split seed ($seed)          --context K --min-count C   observations ($context, $min_count)
  --m-list \"...\"       hidden-state grid ($m_list)
  --smooth-list \"...\"  spectral smoothing grid ($smooth_list)
  --beam B             R-HMM decoder beam, every decoding (\`rhmmtk decode --beam\`) ($beam)
  --em-iters N         EM iterations, best on dev kept ($em_iters)   --em-seed N ($em_seed)
  --em-dev-every K     in single mode, decode dev after every K-th iteration ($em_dev_every)
  --em-patience P      stop EM once P dev scorings in a row bring no gain; 0 runs all ($em_patience)
  --em-mode acc|single EM as accumulate/estimate jobs over --nj shards, every iteration kept
                       as N.h5 (scales out), or one train-em process per m (the same model,
                       less process start-up on one machine) ($em_mode)
  --templates FILE     feature templates ($templates)   --exp DIR  output ($exp)
  --nj N               shards per training step ($nj)   --cmd CMD  job runner ($cmd)
  --parallel N         on this machine, N values of m trained at once (stages 3-4), each
                       test decoding in nj x N shards (5), N ablations (6) ($parallel); results
                       do not depend on it (on 2 idle cores: --parallel 2)"
. "$root/scripts/utils/parse_options.sh"
. "$root/scripts/utils/parallel.sh"
parallel_check "$parallel"

run_stage() { [ "$stage" -le "$1" ] && [ "$stop_stage" -ge "$1" ]; }
steps=$root/scripts/steps
decode_opts="--beam $beam"
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
  python3 local/prepare_nettalk.py --seed "$seed" "$data" data 2> "$exp/log/prepare.log" ||
    { echo "$0: error: preparing the data failed:" >&2; tail -n 3 "$exp/log/prepare.log" >&2; exit 1; }
fi

if run_stage 1; then
  stamp "stage 1: observations (context $context, min count $min_count) and features"
  rhmmtk make-obs -q --context "$context" --min-count "$min_count" \
    --write-symbols data/obs.syms data/train/letters data/train/obs.h5
  for s in dev test; do
    rhmmtk make-obs -q --symbols data/obs.syms data/$s/letters data/$s/obs.h5
  done
  $cmd "$exp/log/featurize.log" rhmmtk featurize --templates "$templates" data/train/obs.h5 \
    data/train/ali data/train/feats.h5
fi


# Every training and decoding step runs through $cmd over --nj shards (scripts/steps/:
# per-step logs in exp/<config>/log/); finished models and decodings are not redone, and a
# failed job stops the recipe with its log named.
decode_dev() {  # config: exp/config/final.h5 -> exp/config/dev.hyp
  [ -f "$exp/$1/dev.hyp" ] ||
    "$steps/decode.sh" --decode-opts "$decode_opts" --nj "$nj" --cmd "$cmd" "$exp/$1/final.h5" \
      data/dev/obs.h5 "$exp/$1/dev.hyp"
}
train_em() {  # m: final.h5 = the iteration best on dev
  "$steps/train_em.sh" --mode "$em_mode" --nj "$nj" --cmd "$cmd" --states "$1" \
    --iters "$em_iters" --dev-every "$em_dev_every" --patience "$em_patience" --seed "$em_seed" --decode-opts "$decode_opts" \
    --dev-obs data/dev/obs.h5 --dev-ali data/dev/ali data/train/obs.h5 data/train/ali "$exp/em_m$1"
  decode_dev "em_m$1"
}
train_spectral() {  # m C: the statistics of m are shared by every C
  "$steps/train_spectral.sh" --nj "$nj" --cmd "$cmd" --states "$1" --smooth "$2" \
    --stats-dir "$exp/spectral_m$1_stats" data/train/feats.h5 "$exp/spectral_m$1_c$2"
  decode_dev "spectral_m$1_c$2"
}
spectral_stats() {  # m: the statistics every C of m trains from (skipped once all are trained)
  local c
  for c in $smooth_list; do
    [ -f "$exp/spectral_m$1_c$c/final.h5" ] && continue
    "$steps/train_spectral.sh" --nj "$nj" --cmd "$cmd" --states "$1" --stats-only true \
      data/train/feats.h5 "$exp/spectral_m$1_stats"
    return
  done
}

if run_stage 2; then
  stamp "stage 2: UNIGRAM and HMM"
  mkdir -p "$exp/unigram/log" "$exp/hmm/log"
  [ -f "$exp/unigram/final.h5" ] || $cmd "$exp/unigram/log/train.log" \
    rhmmtk train-unigram data/train/obs.h5 data/train/ali "$exp/unigram/final.h5"
  [ -f "$exp/hmm/final.h5" ] || $cmd "$exp/hmm/log/train.log" \
    rhmmtk train-em -m 1 --iters 0 data/train/obs.h5 data/train/ali "$exp/hmm/final.h5"
  decode_dev unigram
  decode_dev hmm
fi

if run_stage 3; then
  stamp "stage 3: EM(m) for m in $m_list, up to $em_iters iterations (dev every $em_dev_every, stop after $em_patience without a gain), best dev iteration kept"
  for m in $(largest_first_order $m_list); do parallel_run train_em "$m"; done
  parallel_wait
fi

if run_stage 4; then
  stamp "stage 4: SPECTRAL(m) for m in $m_list, C in $smooth_list"
  # statistics first (cheap), then every (m, C) as its own job, largest m first: the three
  # C of m = 32 no longer run one after another on one core
  for m in $(largest_first_order $m_list); do parallel_run spectral_stats "$m"; done
  parallel_wait
  for m in $(largest_first_order $m_list); do
    for c in $smooth_list; do parallel_run train_spectral "$m" "$c"; done
  done
  parallel_wait
fi

configs="unigram hmm"
for m in $m_list; do configs+=" em_m$m"; done
for m in $m_list; do for c in $smooth_list; do configs+=" spectral_m${m}_c$c"; done; done

if run_stage 5; then
  stamp "stage 5: select on dev, score test once"
  "$steps/select_test.sh" --nj "$nj" --cmd "$cmd" --parallel "$parallel" --decode-opts "$decode_opts" "$exp" data/dev/ali data/test/obs.h5 \
    data/test/ali "$configs"
  column -t -s$'\t' "$exp/results.tsv"
  cat "$exp/log/selection.log"
fi

if run_stage 6; then
  # figure 7: the selected SPECTRAL(m, C) retrained with fewer templates; figures 5 and 7
  # and EM's per-iteration dev curve as PNG + TSV in exp/figures/
  stamp "stage 6: feature ablation; figures"
  "$steps/ablation.sh" --nj "$nj" --cmd "$cmd" --parallel "$parallel" --decode-opts "$decode_opts" --templates "$templates" "$exp" data/train/obs.h5 data/train/ali \
    data/dev/obs.h5 data/dev/ali "$ablations"
fi
stamp "done"
