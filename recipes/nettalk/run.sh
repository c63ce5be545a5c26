#!/usr/bin/env bash
# NETtalk letter-to-phoneme with refinement HMMs: UNIGRAM, HMM, EM(m) and
# SPECTRAL(m) trained on 15,000 words, every choice (m, the EM iteration, the
# smoothing constant) made on the 1,034 dev words, test scored once.
# Output: exp/results.tsv (system m dev_acc test_acc, accuracy in % per letter),
# exp/dev_grid.tsv (every configuration's dev accuracy), per-step logs in exp/*/log/.
# Stages 0-1 (the split, the letter-window observations) are this corpus's; stages 1-6
# (features on) are the R-HMM stages every corpus shares, scripts/rhmm.sh.
#
#   recipes/nettalk/run.sh                          # everything, defaults below
#   recipes/nettalk/run.sh --stage 4 --m-list "8 24" # resume at the spectral stage
set -euo pipefail
. "$(dirname "$0")/path.sh"  # recipe, root; checks that rhmmtk is installed
stage=0
stop_stage=100
data=${RHMMTK_NETTALK:-$root/../shared/data/nettalk/nettalk.data}   # the dictionary
seed=1                      # the train/dev/test split
split_sizes=15000,1034      # train,dev words of the split (paper 002's); test takes the rest
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
parallel=1                  # trainings/decodings at once on this machine (stages 2-6)
exp=exp
. "$recipe/cmd.sh"          # cmd: the job runner (local by default; see cmd.sh for Slurm)
help_message="Usage: $0 [options]
  --data FILE          NETtalk dictionary (default: \$RHMMTK_NETTALK or ../shared/data/nettalk/nettalk.data)
  --stage N / --stop-stage N   run stages N..M (0 prepare, 1 observations and features,
                       2 baselines, 3 EM, 4 spectral, 5 select + test, 6 ablation + figures)
  --seed N             split seed ($seed)          --context K --min-count C   observations ($context, $min_count)
  --split-sizes T,D    train and dev words of the split, test the rest ($split_sizes)
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
path_options="data templates exp"
. "$root/scripts/utils/recipe_setup.sh"   # options, stages, stamp, parallel
data=$(realpath -ms -- "$data")             # $RHMMTK_NETTALK: from here too
cd "$recipe"
mkdir -p "$exp/log"

if run_stage 0; then
  if [ ! -f "$data" ]; then
    echo "$0: error: NETtalk dictionary not found at $data" >&2
    echo "  Download nettalk.data from the UCI machine-learning repository" >&2
    echo "  (undocumented/connectionist-bench/nettalk/nettalk.data) and pass --data FILE" >&2
    echo "  or set RHMMTK_NETTALK." >&2
    exit 1
  fi
  stage_begin 0 "split $data (seed $seed, $split_sizes words)"
  $cmd "$exp/log/prepare.log" python3 local/prepare_nettalk.py --seed "$seed" \
    --sizes "$split_sizes" "$data" data ||
    { echo "$0: error: preparing the data failed (see $exp/log/prepare.log)" >&2; exit 1; }
fi

if run_stage 1; then
  stage_begin 1 "observations (context $context, min count $min_count)"
  once --out data/obs.syms data/train/obs.h5 "$exp/log/make_obs_train.log" rhmmtk make-obs \
    --context "$context" --min-count "$min_count" --write-symbols data/obs.syms \
    data/train/letters data/train/obs.h5
  for s in dev test; do
    once data/$s/obs.h5 "$exp/log/make_obs_$s.log" rhmmtk make-obs --symbols data/obs.syms \
      data/$s/letters data/$s/obs.h5
  done
fi
stage_end

"$root/scripts/rhmm.sh" --stage "$stage" --stop-stage "$stop_stage" --first-stage 1 \
  --data data --ali ali --exp "$exp" --templates "$templates" --ablations "$ablations" \
  --m-list "$m_list" --smooth-list "$smooth_list" --beam "$beam" --em-iters "$em_iters" \
  --em-dev-every "$em_dev_every" --em-patience "$em_patience" --em-seed "$em_seed" \
  --em-mode "$em_mode" --nj "$nj" --cmd "$cmd" --parallel "$parallel"
