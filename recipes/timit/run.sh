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
. ./path.sh                 # root (and the default data=data, exp=exp)
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
smooth_list="30 100 300"    # C of SPECTRAL, chosen per m on dev (with --spectral-ridge 0.15
                            # C = 30 or 100 win at every m > 1 on both TIMIT-layout corpora)
beam=1e-8                   # decoder beam of every R-HMM decoding (the CLI's; on frames 1e-6 and
                            # 1e-4 cost SPECTRAL(32) 0.24 and 0.7 points of dev: docs/SPECTRAL_DIAGNOSIS.md)
emission_floor_list="0.001 0.3 1 2 3 5"  # stage 4: the HMM's emission backoff eps (every emission
                            # interpolated with eps p(x)) chosen on dev; EM and SPECTRAL then use it
                            # (docs/SPECTRAL_DIAGNOSIS.md, section 10). "0.001": as before 2026-11-24
spectral_ridge=0.15         # est-spectral --ridge: regularised inverses of Sigma/Lambda (0: the
                            # paper's plain inverse); 0.15 chosen at SPECTRAL(32) on dev of two
                            # TIMIT-layout corpora (docs/SPECTRAL_DIAGNOSIS.md, section 15). Model
                            # directories do not name it: use a new --exp to compare values
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
parallel=1                  # trainings/decodings at once on this machine (stages 5-8)
cdhmm_states_list="1 3"     # CDHMM stages 9-11 (local/run_cdhmm.sh): ML grid
cdhmm_mix_list="1 2 4 8"
cdhmm_lm_states_list=       # large-margin grid (default: the ML grid)
cdhmm_lm_mix_list=
cdhmm_lm_iters=30
cdhmm_lambdas="1000 3000 10000"   # lambda grid, chosen per model on dev
cdhmm_systems="nco-h nco-s"
cdhmm_lm_scales="2 4 8"
cdhmm_penalties="0 -10 -20"
hcrf_mix_list="1 2 4"       # HCRF stages 12-14 (local/run_hcrf.sh): phone classification
hcrf_knots_list="3 5"
hcrf_iters=30
hcrf_tagger_iters=10
exp=exp
. ./cmd.sh                  # cmd: the job runner (local by default; see cmd.sh for Slurm)
help_message="Usage: $0 --timit-root DIR [options]
  --timit-root DIR     TIMIT in its standard layout (TRAIN/ TEST/, upper or lower case),
                       or \$RHMMTK_TIMIT; e.g. ../shared/data/festival-timit
  --stage N / --stop-stage N   0 prepare, 1 feats, 2 quantize, 3 featurize, 4 baselines,
                       5 EM, 6 spectral, 7 select + test, 8 ablation + figures,
                       9 ML CDHMMs, 10 large-margin CDHMMs, 11 CDHMM select + test,
                       12 ML HMM classifiers, 13 HCRF-MC/DC, 14 HCRF select + test,
                       15 frame-tagging HCRF
  --dev-size N ($dev_size)  --codes N ($codes)  --sample-frames N ($sample_frames)
  --kmeans-iters N ($kmeans_iters)  --cmvn none|utt|spk ($cmvn)  --seed N ($seed)
  --emission-floor-list \"...\" ($emission_floor_list)  the HMM's emission backoff grid
                       (stage 4); the dev-best value is every EM's and SPECTRAL's --emission-floor
  --spectral-ridge R ($spectral_ridge)  SPECTRAL's \`est-spectral --ridge\` (0: the paper's estimator)
  --spectral-svd-opts \"...\"  --spectral-est-opts \"...\"  further svd-/est-spectral options
                       (docs/SPECTRAL_DIAGNOSIS.md: \"--mean-direction\")
  --m-list \"...\" ($m_list)  --em-m-list \"...\" (EM's grid; default: --m-list)  --smooth-list \"...\" ($smooth_list)
  --beam B             R-HMM decoder beam, every decoding (\`rhmmtk decode --beam\`) ($beam)
  --em-iters N ($em_iters)  --em-dev-every K ($em_dev_every)  --em-patience P ($em_patience; 0: all
                       iterations)  --em-seed N ($em_seed)
  --em-mode acc|single ($em_mode)
  --exp DIR ($exp)  --nj N  shards per step ($nj)  --cmd CMD  job runner ($cmd)
  --parallel N ($parallel)  on this machine, N values of m trained at once (stages 5-6),
                       each test decoding in nj x N shards (7), N ablations (8); results do not
                       depend on it (on 2 idle cores: --parallel 2)
  --cdhmm-states-list \"$cdhmm_states_list\"  --cdhmm-mix-list \"$cdhmm_mix_list\"
  --cdhmm-lm-states-list / --cdhmm-lm-mix-list (default: the ML grid)
  --cdhmm-lm-iters $cdhmm_lm_iters  --cdhmm-lambdas \"$cdhmm_lambdas\"
  --cdhmm-systems \"$cdhmm_systems\" (large-margin objectives)
  --cdhmm-lm-scales \"$cdhmm_lm_scales\"  --cdhmm-penalties \"$cdhmm_penalties\"
  --hcrf-mix-list \"$hcrf_mix_list\"  --hcrf-knots-list \"$hcrf_knots_list\"  --hcrf-iters $hcrf_iters
  --hcrf-tagger-iters $hcrf_tagger_iters (the tagger uses the largest --hcrf-mix-list M)"
. "$root/scripts/utils/parse_options.sh"
. "$root/scripts/utils/parallel.sh"
parallel_check "$parallel"
em_m_list=${em_m_list:-$m_list}

run_stage() { [ "$stage" -le "$1" ] && [ "$stop_stage" -ge "$1" ]; }
steps=$root/scripts/steps
decode_opts="--beam $beam"
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
. local/scoring.sh            # map39 (the 48 -> 39 folding), score_field
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
    $cmd "$exp/log/feats_$s.log" \
      rhmmtk feats --cmvn "$cmvn" --utt2spk data/$s/utt2spk data/$s/wav.scp data/$s/feats.h5
  done
fi

if run_stage 2; then
  stamp 2 "quantize: $codes codes"
  [ -f data/codebook.h5 ] || $cmd "$exp/log/quantize_learn.log" \
    rhmmtk quantize learn --codes "$codes" --seed "$seed" --sample-frames "$sample_frames" \
    --iters "$kmeans_iters" data/train/feats.h5 data/codebook.h5
  for s in train dev test; do
    $cmd "$exp/log/quantize_$s.log" rhmmtk quantize apply data/codebook.h5 data/$s/feats.h5 data/$s/obs.h5
  done
fi

if run_stage 3; then
  stamp 3 "featurize"
  $cmd "$exp/log/featurize.log" rhmmtk featurize --templates "$templates" \
    data/train/obs.h5 data/train/ali.48 data/train/feats.tpl.h5
fi

# Every training and decoding step runs through $cmd over --nj shards (scripts/steps/);
# finished models and decodings are not redone.
decode_dev() {  # config
  [ -f "$exp/$1/dev.hyp" ] ||
    "$steps/decode.sh" --decode-opts "$decode_opts" --nj "$nj" --cmd "$cmd" "$exp/$1/final.h5" \
      data/dev/obs.h5 "$exp/$1/dev.hyp"
}
# the emission backoff eps stage 4 chose on dev (with the HMM) for every later model
chosen_floor() {
  [ -s "$exp/emission_floor" ] ||
    { echo "$0: error: $exp/emission_floor missing: run stage 4 first" >&2; exit 1; }
  cat "$exp/emission_floor"
}
train_hmm() {  # eps
  local d=$exp/hmm_m1_e$1
  mkdir -p "$d/log"
  [ -f "$d/final.h5" ] || $cmd "$d/log/train.log" rhmmtk train-em -m 1 --iters 0 \
    --emission-floor "$1" data/train/obs.h5 data/train/ali.48 "$d/final.h5"
  decode_dev "hmm_m1_e$1"
}
train_em() {  # m
  "$steps/train_em.sh" --mode "$em_mode" --nj "$nj" --cmd "$cmd" --states "$1" \
    --emission-floor "$eps" \
    --iters "$em_iters" --dev-every "$em_dev_every" --patience "$em_patience" --seed "$em_seed" --decode-opts "$decode_opts" \
    --dev-obs data/dev/obs.h5 --dev-ali data/dev/ali.48 data/train/obs.h5 data/train/ali.48 \
    "$exp/em_m$1"
  decode_dev "em_m$1"
}
train_spectral() {  # m C: the statistics of m are shared by every C
  "$steps/train_spectral.sh" --nj "$nj" --cmd "$cmd" --states "$1" --smooth "$2" \
    --svd-opts "$spectral_svd_opts" --est-opts "--emission-floor $eps --ridge $spectral_ridge $spectral_est_opts" \
    --stats-dir "$exp/spectral_m$1_stats" data/train/feats.tpl.h5 "$exp/spectral_m$1_c$2"
  decode_dev "spectral_m$1_c$2"
}
spectral_stats() {  # m: the statistics every C of m trains from (skipped once all are trained)
  local c
  for c in $smooth_list; do
    [ -f "$exp/spectral_m$1_c$c/final.h5" ] && continue
    "$steps/train_spectral.sh" --nj "$nj" --cmd "$cmd" --states "$1" --stats-only true \
      --svd-opts "$spectral_svd_opts" data/train/feats.tpl.h5 "$exp/spectral_m$1_stats"
    return
  done
}

if run_stage 4; then
  stamp 4 "UNIGRAM and HMM; the HMM's emission backoff eps in $emission_floor_list chosen on dev"
  mkdir -p "$exp/unigram/log"
  [ -f "$exp/unigram/final.h5" ] || $cmd "$exp/unigram/log/train.log" \
    rhmmtk train-unigram data/train/obs.h5 data/train/ali.48 "$exp/unigram/final.h5"
  decode_dev unigram
  for e in $emission_floor_list; do parallel_run train_hmm "$e"; done
  parallel_wait
  # the best dev accuracy (39 phones), ties to the first in the list
  hyps=()
  for e in $emission_floor_list; do hyps+=("$exp/hmm_m1_e$e/dev.hyp"); done
  paste -d' ' <(printf '%s\n' $emission_floor_list) \
    <("$root/scripts/utils/accuracy.sh" --mapping "$map39" data/dev/ali.48 "${hyps[@]}") \
    > "$exp/log/emission_floor.tsv"
  best=$(sort -s -k2,2gr "$exp/log/emission_floor.tsv" | head -n 1 | cut -d' ' -f1)
  echo "$best" > "$exp/emission_floor"
  echo "emission backoff: dev accuracy of the HMM per eps (exp/log/emission_floor.tsv); chosen $best"
  sed 's/^/  /' "$exp/log/emission_floor.tsv"
fi

if run_stage 5; then
  stamp 5 "EM(m) for m in $em_m_list, up to $em_iters iterations (dev every $em_dev_every, stop after $em_patience without a gain), best dev iteration kept"
  eps=$(chosen_floor)
  for m in $(largest_first_order $em_m_list); do parallel_run train_em "$m"; done
  parallel_wait
fi

if run_stage 6; then
  stamp 6 "SPECTRAL(m) for m in $m_list, C in $smooth_list"
  eps=$(chosen_floor)
  # statistics first (cheap), then every (m, C) as its own job, largest m first: the three
  # C of m = 32 no longer run one after another on one core
  for m in $(largest_first_order $m_list); do parallel_run spectral_stats "$m"; done
  parallel_wait
  for m in $(largest_first_order $m_list); do
    for c in $smooth_list; do parallel_run train_spectral "$m" "$c"; done
  done
  parallel_wait
fi

configs="unigram"
for e in $emission_floor_list; do configs+=" hmm_m1_e$e"; done
for m in $em_m_list; do configs+=" em_m$m"; done
for m in $m_list; do for c in $smooth_list; do configs+=" spectral_m${m}_c$c"; done; done

if run_stage 7; then
  stamp 7 "select on dev, score core test once (39 phones)"
  "$steps/select_test.sh" --nj "$nj" --cmd "$cmd" --parallel "$parallel" --decode-opts "$decode_opts" --mapping "$map39" "$exp" data/dev/ali.48 \
    data/test/obs.h5 data/test/ali.48 "$configs"
  column -t -s$'\t' "$exp/results.tsv"
  cat "$exp/log/selection.log" "$exp/compare_spectral_em.txt"
fi

if run_stage 8; then
  stamp 8 "feature ablation at the selected SPECTRAL(m, C); figures"
  eps=$(chosen_floor)
  "$steps/ablation.sh" --nj "$nj" --cmd "$cmd" --parallel "$parallel" --decode-opts "$decode_opts" --templates "$templates" \
    --svd-opts "$spectral_svd_opts" --est-opts "--emission-floor $eps --ridge $spectral_ridge $spectral_est_opts" --mapping "$map39" "$exp" data/train/obs.h5 \
    data/train/ali.48 data/dev/obs.h5 data/dev/ali.48 "$ablations"
fi
for st in 9 10 11; do
  run_stage $st || continue
  stamp $st "CDHMM (local/run_cdhmm.sh)"
  local/run_cdhmm.sh --stage $st --stop-stage $st --data data --exp "$exp" \
    --states-list "$cdhmm_states_list" --mix-list "$cdhmm_mix_list" \
    --lm-states-list "${cdhmm_lm_states_list:-$cdhmm_states_list}" \
    --lm-mix-list "${cdhmm_lm_mix_list:-$cdhmm_mix_list}" --lm-iters "$cdhmm_lm_iters" \
    --lambdas "$cdhmm_lambdas" --systems "$cdhmm_systems" --lm-scales "$cdhmm_lm_scales" \
    --penalties "$cdhmm_penalties"
done
for st in 12 13 14 15; do
  run_stage $st || continue
  stamp $st "HCRF phone classification (local/run_hcrf.sh)"
  local/run_hcrf.sh --stage $st --stop-stage $st --data data --exp "$exp" \
    --mix-list "$hcrf_mix_list" --knots-list "$hcrf_knots_list" --iters "$hcrf_iters" \
    --tagger-mix "$(echo $hcrf_mix_list | awk '{print $NF}')" --tagger-iters "$hcrf_tagger_iters"
done
stamp done
column -t "$exp/log/stages.tsv"
