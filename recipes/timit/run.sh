#!/usr/bin/env bash
# TIMIT frame-level phone recognition with refinement HMMs, the experiment of
# Stratos et al. (2013), section 7: MFCC+deltas -> k-means codes -> UNIGRAM, HMM,
# EM(m), SPECTRAL(m) trained on 48 phones, every choice made on dev, core test
# scored once on the 39-phone set (frame accuracy).
# Output: exp/results.tsv (system m dev_acc test_acc), exp/dev_grid.tsv,
# exp/ablation.tsv, exp/figures/*.png|tsv, per-step logs in exp/*/log/,
# per-stage wall times in exp/log/stages.tsv. Stages 0-2 (preparation, MFCCs, codes) are
# this corpus's; stages 3-8 are the R-HMM stages every corpus shares (scripts/rhmm.sh);
# stages 9-15 the other families (local/run_cdhmm.sh, local/run_hcrf.sh), stage 16 Kaldi's
# own monophone GMM-HMM (local/run_kaldi.sh; needs kaldi-hmm-gmm, scripts/install.sh).
#
#   recipes/timit/run.sh --timit-root /corpora/LDC93S1/TIMIT
#   recipes/timit/run.sh --timit-root ../shared/data/festival-timit --codes 2000
#   recipes/timit/run.sh --synthetic-size timit --data data_timitsize --exp exp_timitsize
#     (paper 000's experiment at TIMIT's size on codes from local/make_synthetic.py:
#     stage 0 draws the corpus, stages 1-2 are skipped; RESULTS_timitsize)
set -euo pipefail
. "$(dirname "$0")/path.sh"  # recipe, root; checks that rhmmtk is installed
stage=0
stop_stage=                 # empty: the last stage (16), or 8 with --synthetic-size (paper 000's
                            # stages: the later systems need audio, which codes do not have)
timit_root=${RHMMTK_TIMIT:-}
synthetic_size=             # instead of --timit-root: stage 0 draws codes and alignments with
                            # local/make_synthetic.py: "timit" (1,100,000 training frames,
                            # about TIMIT's 3,696 utterances) or a number of training frames;
                            # dev and test in TIMIT's proportions (400 and 192 utterances to 3,696)
synthetic_opts="--seed 7 --context 0.5"   # the generator's other options: coarticulation
                            # (--context 0.5) is what gives EM festival-timit's gain with m
                            # (docs/SPECTRAL_DIAGNOSIS.md, section 13)
data=data                   # the prepared corpus, features and codes
dev_size=                   # dev utterances: empty, every dev-speaker utterance on TIMIT (400)
                            # or of a --synthetic-size N draw, and paper 000's 200 at
                            # --synthetic-size timit (the first 200 of the draw, so train and
                            # test do not depend on it); 0: every one
codes=10000                 # k-means codebook size n (the paper's)
sample_frames=0             # frames k-means trains on (0: all)
kmeans_iters=20
cmvn=spk
seed=1
templates=conf/templates.conf
ablations="conf/templates.conf conf/templates_nopos.conf conf/templates_nonppppos.conf"
m_list="1 2 4 8 16 24 32"
em_m_list=                  # EM's own grid when it differs (default: m_list)
smooth_list="30 100 300"    # C of SPECTRAL, chosen per m on dev (with --spectral-ridge 0.15
                            # C = 30 or 100 win at every m > 1 on both TIMIT-layout corpora)
beam=1e-8                   # decoder beam of every R-HMM decoding (the CLI's; on frames 1e-6 and
                            # 1e-4 cost SPECTRAL(32) 0.24 and 0.7 points of dev: docs/SPECTRAL_DIAGNOSIS.md)
precision=float64           # the R-HMM decoder's products, every decoding (float32: 1.5x faster at
                            # m = 32, the same dev labels at TIMIT's size: bench/README.md)
emission_floor_list="0.001 0.3 1 2 3 5"  # stage 4: the HMM's emission backoff eps (every emission
                            # interpolated with eps p(x)) chosen on dev; EM and SPECTRAL then use it
                            # (docs/SPECTRAL_DIAGNOSIS.md, section 10). "0.001": as before 2026-11-24
spectral_ridge=0.15         # est-spectral --ridge: regularised inverses of Sigma/Lambda (0: the
                            # paper's plain inverse); 0.15 chosen at SPECTRAL(32) on dev of two
                            # TIMIT-layout corpora (docs/SPECTRAL_DIAGNOSIS.md, section 15). Model
                            # directories do not name it: another value retrains them in place
                            # (use a new --exp to keep both)
spectral_svd_opts=""        # further svd-spectral options, e.g. "--mean-direction"
spectral_est_opts=""        # further est-spectral options (after the chosen --emission-floor)
em_iters=200                # the paper's; the best dev iteration is kept
em_dev_every=1              # dev decoded after every iteration, as the paper (single mode: K for every K-th)
em_patience=5               # stop EM(m) once 5 dev scorings in a row bring no gain (0: all iterations);
                            # 5 and 10 kept the same iteration for every m on both TIMIT-layout
                            # corpora (RESULTS, 2026-11-24), 5 with 5 fewer dev decodings per m
em_seed=1
em_mode=single              # acc: acc-em/est-em jobs over --nj shards; single: one train-em per m
nj=1                        # parallel jobs (shards) of each step, run by $cmd
parallel=1                  # trainings/decodings at once on this machine (stages 5-10)
cdhmm_states_list="1 3"     # CDHMM stages 9-11 (local/run_cdhmm.sh): ML grid
cdhmm_mix_list="1 2 4 8"
cdhmm_lm_states_list=       # large-margin grid (default: the ML grid)
cdhmm_lm_mix_list=
cdhmm_lm_iters=1200         # bundle iterations at most (it stops earlier at a 1% gap)
cdhmm_lm_restarts=0         # new cutting-plane models at the best point (0: paper 004's)
cdhmm_lambdas="100 300 1000"      # lambda grid, chosen per model on dev, then extended
cdhmm_lambda_down=4         # down by /3 while its smallest lambda is dev-best (at most N)
cdhmm_systems="nco-h nco-s"
cdhmm_lm_scales="2 4 8"
cdhmm_penalties="0 -10 -20"
hcrf_mix_list="1 2 4"       # HCRF stages 12-14 (local/run_hcrf.sh): phone classification
hcrf_knots_list="3 5"
hcrf_iters=30
hcrf_tagger_iters=15
hcrf_tagger_mix_list="2 4 8"  # stage 15: the frame tagger's M, chosen on dev
kaldi_totgauss=2000         # stage 16 (local/run_kaldi.sh): Kaldi's monophone Gaussians in total;
                            # 2000 beat train_mono.sh's 1000 on dev PER (RESULTS_kaldi)
kaldi_lm_weights="2 4 6 8 10"   # LMWT grid and phone insertion penalties, chosen on dev PER
kaldi_penalties="0 1"
exp=exp
. "$recipe/cmd.sh"          # cmd: the job runner (local by default; see cmd.sh for Slurm)
help_message="Usage: $0 --timit-root DIR [options]
  --timit-root DIR     TIMIT in its standard layout (TRAIN/ TEST/, upper or lower case),
                       or \$RHMMTK_TIMIT; e.g. ../shared/data/festival-timit
  --synthetic-size timit|N  instead of TIMIT, a synthetic corpus of N training frames (timit:
                       1,100,000, dev the first 200 utterances as paper 000's), dev and
                       test in TIMIT's proportions, drawn in stage 0
                       (stages 1-2 skipped)  --synthetic-opts \"...\" ($synthetic_opts)
  --stage N / --stop-stage N   0 prepare, 1 feats, 2 quantize, 3 featurize, 4 baselines,
                       5 EM, 6 spectral, 7 select + test, 8 ablation + figures,
                       9 ML CDHMMs, 10 large-margin CDHMMs, 11 CDHMM select + test,
                       12 ML HMM classifiers, 13 HCRF-MC/DC, 14 HCRF select + test,
                       15 frame-tagging HCRF, 16 Kaldi's monophone GMM-HMM (kaldi-hmm-gmm);
                       --stop-stage: 16, or 8 with --synthetic-size (no audio for 9-16)
  --dev-size N (all; --synthetic-size timit: paper 000's 200)  --codes N ($codes)  --sample-frames N ($sample_frames)
  --kmeans-iters N ($kmeans_iters)  --cmvn none|utt|spk ($cmvn)  --seed N ($seed)
  --emission-floor-list \"...\" ($emission_floor_list)  the HMM's emission backoff grid
                       (stage 4); the dev-best value is every EM's and SPECTRAL's --emission-floor
  --spectral-ridge R ($spectral_ridge)  SPECTRAL's \`est-spectral --ridge\` (0: the paper's estimator)
  --spectral-svd-opts \"...\"  --spectral-est-opts \"...\"  further svd-/est-spectral options
                       (docs/SPECTRAL_DIAGNOSIS.md: \"--mean-direction\")
  --m-list \"...\" ($m_list)  --em-m-list \"...\" (EM's grid; default: --m-list)  --smooth-list \"...\" ($smooth_list)
  --beam B             R-HMM decoder beam, every decoding (\`rhmmtk decode --beam\`) ($beam)
  --precision P        R-HMM decoder's products, float64 or float32, every decoding ($precision)
  --em-iters N ($em_iters)  --em-dev-every K ($em_dev_every)  --em-patience P ($em_patience; 0: all
                       iterations)  --em-seed N ($em_seed)
  --em-mode acc|single ($em_mode)
  --data DIR ($data)  --exp DIR ($exp)  --nj N  shards per step ($nj)  --cmd CMD  job runner ($cmd)
  --parallel N ($parallel)  on this machine, N values of m trained at once (stages 5-6),
                       each test decoding in nj x N shards (7), N ablations (8), N CDHMM grid
                       cells (9-10); results do not depend on it (on 2 idle cores: --parallel 2)
  --cdhmm-states-list \"$cdhmm_states_list\"  --cdhmm-mix-list \"$cdhmm_mix_list\"
  --cdhmm-lm-states-list / --cdhmm-lm-mix-list (default: the ML grid)
  --cdhmm-lm-iters $cdhmm_lm_iters  --cdhmm-lm-restarts $cdhmm_lm_restarts
  --cdhmm-lambdas \"$cdhmm_lambdas\"  --cdhmm-lambda-down $cdhmm_lambda_down
  --cdhmm-systems \"$cdhmm_systems\" (large-margin objectives)
  --cdhmm-lm-scales \"$cdhmm_lm_scales\"  --cdhmm-penalties \"$cdhmm_penalties\"
  --hcrf-mix-list \"$hcrf_mix_list\"  --hcrf-knots-list \"$hcrf_knots_list\"  --hcrf-iters $hcrf_iters
  --hcrf-tagger-iters $hcrf_tagger_iters  --hcrf-tagger-mix-list \"$hcrf_tagger_mix_list\"
  --kaldi-totgauss $kaldi_totgauss  --kaldi-lm-weights \"$kaldi_lm_weights\"  --kaldi-penalties \"$kaldi_penalties\""
path_options="timit_root data templates exp"
path_list_options="ablations"
. "$root/scripts/utils/recipe_setup.sh"   # options, stages, stamp, parallel
[ -z "$timit_root" ] || timit_root=$(realpath -ms -- "$timit_root")   # $RHMMTK_TIMIT: from here too
cd "$recipe"
mkdir -p "$exp/log"
. local/scoring.sh            # map39 (the 48 -> 39 folding), score_field

[ -n "$stop_stage" ] || { [ -n "$synthetic_size" ] && stop_stage=8; } || stop_stage=100
case "$synthetic_size" in
  "") ;;
  timit) synthetic_size=1100000 dev_size=${dev_size:-200} ;;   # paper 000: "200 additional utterances"
  *[!0-9]*) echo "$0: error: --synthetic-size must be timit or a number of frames, got '$synthetic_size'" >&2
            exit 1 ;;
esac

if [ -n "$synthetic_size" ]; then
  # TIMIT: 3,696 training, 400 dev (50 speakers) and 192 core-test utterances
  if run_stage 0; then
    dev_frames=$((synthetic_size * 400 / 3696)) test_frames=$((synthetic_size * 192 / 3696))
    stage_begin 0 "synthetic corpus: $synthetic_size / $dev_frames (dev: ${dev_size:-all} utterances) / $test_frames frames ($synthetic_opts)"
    once --out "$data/train/ali.48" --out "$data/dev/obs.h5" --out "$data/dev/ali.48" \
      --out "$data/test/obs.h5" --out "$data/test/ali.48" "$data/train/obs.h5" \
      "$exp/log/synthetic.log" python3 local/make_synthetic.py --recipe-layout \
      --frames "$synthetic_size" --dev-frames "$dev_frames" --dev-utterances "${dev_size:-0}" \
      --test-frames "$test_frames" $synthetic_opts "$data"
  fi
  [ "$stage" -gt 3 ] || stage=3   # the codes are drawn: no MFCCs, no k-means
elif run_stage 0; then
  stage_begin 0 "prepare $timit_root"
  if [ -z "$timit_root" ] || [ ! -d "$timit_root" ]; then
    echo "$0: error: TIMIT root '${timit_root}' not found: pass --timit-root DIR (LDC93S1, or" >&2
    echo "  $(realpath -ms "$root/../shared/data/festival-timit") for the synthesized stand-in) or set RHMMTK_TIMIT" >&2
    exit 1
  fi
  args=()
  [ "${dev_size:-0}" -gt 0 ] && args+=(--dev-size "$dev_size")
  $cmd "$exp/log/prepare.log" python3 local/prepare_timit.py "${args[@]}" "$timit_root" "$data" ||
    { echo "$0: error: preparing the data failed (see $exp/log/prepare.log)" >&2; exit 1; }
fi
# before the hours of stages 1-15, not after them
if run_stage 16 && ! python3 -c 'import kaldi_hmm_gmm, kaldifst' 2> /dev/null; then
  echo "$0: error: stage 16 needs kaldi-hmm-gmm: install it (bash $root/scripts/install.sh)" \
    "or stop at stage 15 (--stop-stage 15)" >&2
  exit 1
fi

if run_stage 1; then
  stage_begin 1 "feats (MFCC 13 + deltas, CMVN per $cmvn)"
  for s in train dev test; do
    once "$data/$s/feats.h5" "$exp/log/feats_$s.log" rhmmtk feats --cmvn "$cmvn" \
      --utt2spk "$data/$s/utt2spk" "$data/$s/wav.scp" "$data/$s/feats.h5"
  done
fi

if run_stage 2; then
  stage_begin 2 "quantize: $codes codes"
  once "$data/codebook.h5" "$exp/log/quantize_learn.log" rhmmtk quantize learn --codes "$codes" \
    --seed "$seed" --sample-frames "$sample_frames" --iters "$kmeans_iters" \
    "$data/train/feats.h5" "$data/codebook.h5"
  for s in train dev test; do
    once "$data/$s/obs.h5" "$exp/log/quantize_$s.log" rhmmtk quantize apply "$data/codebook.h5" \
      "$data/$s/feats.h5" "$data/$s/obs.h5"
  done
fi
stage_end

"$root/scripts/rhmm.sh" --stage "$stage" --stop-stage "$stop_stage" --first-stage 3 \
  --data "$data" --ali ali.48 --mapping "$map39" --exp "$exp" --templates "$templates" \
  --ablations "$ablations" --m-list "$m_list" --em-m-list "$em_m_list" \
  --smooth-list "$smooth_list" --beam "$beam" --precision "$precision" --emission-floor-list "$emission_floor_list" \
  --spectral-svd-opts "$spectral_svd_opts" \
  --spectral-est-opts "--ridge $spectral_ridge $spectral_est_opts" --em-iters "$em_iters" \
  --em-dev-every "$em_dev_every" --em-patience "$em_patience" --em-seed "$em_seed" \
  --em-mode "$em_mode" --nj "$nj" --cmd "$cmd" --parallel "$parallel"

for st in 9 10 11; do
  run_stage $st || continue
  stage_begin $st "CDHMM (local/run_cdhmm.sh)"
  local/run_cdhmm.sh --stage $st --stop-stage $st --data "$data" --exp "$exp" --cmd "$cmd" \
    --states-list "$cdhmm_states_list" --mix-list "$cdhmm_mix_list" \
    --lm-states-list "${cdhmm_lm_states_list:-$cdhmm_states_list}" \
    --lm-mix-list "${cdhmm_lm_mix_list:-$cdhmm_mix_list}" --lm-iters "$cdhmm_lm_iters" \
    --lm-restarts "$cdhmm_lm_restarts" --lambdas "$cdhmm_lambdas" \
    --lambda-down "$cdhmm_lambda_down" --systems "$cdhmm_systems" \
    --lm-scales "$cdhmm_lm_scales" --penalties "$cdhmm_penalties" --parallel "$parallel"
done
for st in 12 13 14 15; do
  run_stage $st || continue
  stage_begin $st "HCRF phone classification (local/run_hcrf.sh)"
  local/run_hcrf.sh --stage $st --stop-stage $st --data "$data" --exp "$exp" --cmd "$cmd" \
    --mix-list "$hcrf_mix_list" --knots-list "$hcrf_knots_list" --iters "$hcrf_iters" \
    --tagger-mix-list "$hcrf_tagger_mix_list" --tagger-iters "$hcrf_tagger_iters" \
    --cdhmm-mix "$(echo $cdhmm_mix_list | awk '{print $NF}')"
done
if run_stage 16; then
  stage_begin 16 "Kaldi monophone GMM-HMM (local/run_kaldi.sh)"
  local/run_kaldi.sh --data "$data" --exp "$exp" --cmd "$cmd" --totgauss "$kaldi_totgauss" \
    --lm-weights "$kaldi_lm_weights" --penalties "$kaldi_penalties"
fi
stage_end
column -t "$exp/log/stages.tsv"
