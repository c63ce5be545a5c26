#!/usr/bin/env bash
# The R-HMM stages every corpus runs, called by the corpus's run.sh with its configuration
# (ESPnet's asr.sh way; the corpus keeps its own data preparation and observations):
#
#   scripts/rhmm.sh [options] --data DIR --exp DIR --templates FILE --ablations "FILE ..."
#
# Reads DIR/{train,dev,test}/obs.h5 and DIR/{train,dev,test}/$ali (--ali). Stages,
# numbered from --first-stage F (the corpus's numbers, so --stage/--stop-stage pass through):
#   F    featurize the training data with --templates (DIR/train/feats.tpl.h5)
#   F+1  UNIGRAM and HMM (with --emission-floor-list: one HMM per eps, the dev-best eps is
#        every later EM's and SPECTRAL's --emission-floor, written to EXP/emission_floor)
#   F+2  EM(m), m in --em-m-list, the dev-best iteration kept
#   F+3  SPECTRAL(m, C), m in --m-list, C in --smooth-list (with --parallel N > 1 and
#        F+2 in the same run: both grids in one pool of jobs, longest first, logged as
#        stage F+2)
#   F+4  every system's configuration chosen on dev, test decoded and scored once
#        (EXP/results.tsv, EXP/dev_grid.tsv, EXP/compare_spectral_em.txt)
#   F+5  the feature ablation at the selected SPECTRAL(m, C) (EXP/ablation.tsv) and the
#        figures (EXP/figures/)
# Every training and decoding step runs through $cmd over --nj shards (scripts/steps/:
# per-step logs in EXP/<config>/log/). A model or decoding made with the same options and
# inputs is not made again; one made otherwise is redone (scripts/utils/stamp.sh), and a
# failed job stops the run with its log named. Relative paths are relative to the working
# directory (this script does not change it).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
stage=0
stop_stage=100
first_stage=1
data=data
ali=ali
mapping=                    # scoring: fold both sides first (TIMIT: 48 -> 39 phones)
exp=exp
templates=
ablations=
m_list="1 2 4 8 16 24 32"
em_m_list=                  # EM's own grid when it differs (default: --m-list)
smooth_list="10 30 100"
beam=1e-8
precision=float64
emission_floor_list=
spectral_svd_opts=""
spectral_est_opts=""
em_iters=200
em_dev_every=1
em_patience=0
em_seed=1
em_mode=single
nj=1
cmd=$root/scripts/utils/run_local.sh
parallel=1
help_message="Usage: $0 [options]   (normally called by recipes/<corpus>/run.sh)
  --stage N --stop-stage N --first-stage F   run stages N..M of F featurize, F+1 UNIGRAM
                       and HMM, F+2 EM, F+3 SPECTRAL, F+4 select + test, F+5 ablation + figures
  --data DIR ($data)  --ali NAME ($ali)  --mapping FILE  --exp DIR ($exp)
  --templates FILE  --ablations \"FILE ...\"   feature templates; the ablation's sets
  --m-list \"...\" ($m_list)  --em-m-list \"...\" (default: --m-list)  --smooth-list \"...\" ($smooth_list)
  --beam B ($beam)   every R-HMM decoding
  --precision float64|float32 ($precision)   the R-HMM decoder's products (\`rhmmtk decode --precision\`)
  --emission-floor-list \"...\"   the HMM's emission backoff grid (empty: none)
  --spectral-svd-opts \"...\"  --spectral-est-opts \"...\"
  --em-iters N ($em_iters)  --em-dev-every K ($em_dev_every)  --em-patience P ($em_patience)
  --em-seed N ($em_seed)  --em-mode acc|single ($em_mode)
  --nj N ($nj)  --cmd CMD  --parallel N ($parallel)"
. "$root/scripts/utils/recipe_setup.sh"   # options, stages, stamp, parallel
em_m_list=${em_m_list:-$m_list}
[ -n "$templates" ] || { echo "$0: error: --templates FILE is needed" >&2; exit 1; }
steps=$root/scripts/steps
decode_opts="--beam $beam --precision $precision"
map=(${mapping:+--mapping "$mapping"})
mkdir -p "$exp/log"
feats=$data/train/feats.tpl.h5

decode_dev() {  # config: EXP/config/final.h5 -> EXP/config/dev.hyp
  "$steps/decode.sh" --decode-opts "$decode_opts" --nj "$nj" --cmd "$cmd" "$exp/$1/final.h5" \
    "$data/dev/obs.h5" "$exp/$1/dev.hyp"
}
# the emission backoff the baselines' stage chose on dev (0: none) for every later model,
# as est-spectral options
chosen_floor() {
  if [ -z "$emission_floor_list" ]; then echo 0; return; fi
  [ -s "$exp/emission_floor" ] ||
    { echo "$0: error: $exp/emission_floor missing: run stage $((first_stage + 1)) first" >&2; exit 1; }
  cat "$exp/emission_floor"
}
spectral_est_opts() {
  if [ -n "$emission_floor_list" ]; then echo "--emission-floor $eps $spectral_est_opts"
  else echo "$spectral_est_opts"; fi
}
train_baseline() {  # config [train-em options]: UNIGRAM without options, else an HMM
  local d=$exp/$1 how=(train-em -m 1 --iters 0)
  shift
  [ "$d" = "$exp/unigram" ] && how=(train-unigram)
  mkdir -p "$d/log"
  once "$d/final.h5" "$d/log/train.log" rhmmtk "${how[@]}" "$@" "$data/train/obs.h5" \
    "$data/train/$ali" "$d/final.h5"
  decode_dev "${d##*/}"
}
train_hmm() {  # eps
  train_baseline "hmm_m1_e$1" --emission-floor "$1"
}
train_em() {  # m: final.h5 = the iteration best on dev
  "$steps/train_em.sh" --mode "$em_mode" --nj "$nj" --cmd "$cmd" --states "$1" \
    --emission-floor "$eps" --iters "$em_iters" --dev-every "$em_dev_every" \
    --patience "$em_patience" --seed "$em_seed" --decode-opts "$decode_opts" \
    --dev-obs "$data/dev/obs.h5" --dev-ali "$data/dev/$ali" "$data/train/obs.h5" \
    "$data/train/$ali" "$exp/em_m$1"
  decode_dev "em_m$1"
}
spectral_stats() {  # m: the statistics every C of m trains from
  "$steps/train_spectral.sh" --nj "$nj" --cmd "$cmd" --states "$1" --stats-only true \
    --svd-opts "$spectral_svd_opts" "$feats" "$exp/spectral_m$1_stats"
}
train_spectral() {  # m C: the statistics of m are shared by every C
  "$steps/train_spectral.sh" --nj "$nj" --cmd "$cmd" --states "$1" --smooth "$2" \
    --svd-opts "$spectral_svd_opts" --est-opts "$(spectral_est_opts)" \
    --stats-dir "$exp/spectral_m$1_stats" "$feats" "$exp/spectral_m$1_c$2"
  decode_dev "spectral_m$1_c$2"
}

if run_stage "$first_stage"; then
  stage_begin "$first_stage" "features ($templates)"
  once "$feats" "$exp/log/featurize.log" rhmmtk featurize --templates "$templates" \
    "$data/train/obs.h5" "$data/train/$ali" "$feats"
fi

if run_stage $((first_stage + 1)); then
  if [ -z "$emission_floor_list" ]; then
    stage_begin $((first_stage + 1)) "UNIGRAM and HMM"
    parallel_run train_baseline unigram
    parallel_run train_baseline hmm
    parallel_wait
  else
    stage_begin $((first_stage + 1)) "UNIGRAM and HMM; the HMM's emission backoff eps in $emission_floor_list chosen on dev"
    train_baseline unigram
    for e in $emission_floor_list; do parallel_run train_hmm "$e"; done
    parallel_wait
    hyps=()
    for e in $emission_floor_list; do hyps+=("$exp/hmm_m1_e$e/dev.hyp"); done
    paste <(printf 'emission_floor\n'; printf '%s\n' $emission_floor_list) \
      <(printf 'dev_acc\n'; "$root/scripts/utils/accuracy.sh" "${map[@]}" "$data/dev/$ali" "${hyps[@]}") \
      > "$exp/log/emission_floor.tsv"
    "$root/scripts/utils/select_best.sh" dev_acc emission_floor "$exp/log/emission_floor.tsv" \
      > "$exp/emission_floor"
    echo "emission backoff: dev accuracy of the HMM per eps ($exp/log/emission_floor.tsv); chosen $(cat "$exp/emission_floor")"
    sed 's/^/  /' "$exp/log/emission_floor.tsv"
  fi
fi

spectral_job() {  # m C: the statistics of m (the first job of m computes them, under a
  # lock: another job of m waits for them instead of computing them twice), then SPECTRAL(m, C)
  ( flock 9 && spectral_stats "$1" ) 9> "$exp/spectral_m$1_stats.lock"
  train_spectral "$1" "$2"
}
# The EM and SPECTRAL grids as one list of jobs, longest first (LPT: with --parallel N
# the last job to start is a short one, so the N cores stay busy to the end; run one
# stage after the other, the EM stage ended with EM(32) alone on one core while the
# other idled). A job's cost is m^2 (its dev decodings' work per position grows with it)
# times a weight: SPECTRAL(m, C) 1, EM(m) em_job_weight. At TIMIT's size (m = 32, 200 dev
# utterances, float32; bench/README.md, RESULTS_timitsize) an EM iteration is about 17
# CPU s (E-step 1.8, dev 15) and EM runs 30-40 of them, against about 165 CPU s for
# SPECTRAL(32, C) (its share of the statistics 15, est-spectral 20, dev 128): 4 to 1.
# Printed as "kind m C".
em_job_weight=4
grid_jobs() {
  {
    for m in $em_m_list; do echo "$((em_job_weight * m * m)) em $m -"; done
    for m in $m_list; do for c in $smooth_list; do echo "$((m * m)) spectral $m $c"; done; done
  } | longest_first
}
run_grid_job() {  # kind m C
  if [ "$1" = em ]; then train_em "$2"; else spectral_job "$2" "$3"; fi
}

if run_stage $((first_stage + 2)) && run_stage $((first_stage + 3)) && [ "$parallel" -gt 1 ]; then
  # both grids in one pool: one stage in $exp/log/stages.tsv (stage F+3 has no row)
  stage_begin $((first_stage + 2)) "EM(m) for m in $em_m_list (up to $em_iters iterations, dev every $em_dev_every, stop after $em_patience without a gain, best dev iteration kept) and SPECTRAL(m) for m in $m_list, C in $smooth_list: one pool of $parallel, longest first"
  eps=$(chosen_floor)
  mapfile -t grid < <(grid_jobs)      # (not read in a loop: the jobs would share its stdin)
  for job in "${grid[@]}"; do
    # shellcheck disable=SC2086
    parallel_run run_grid_job $job
  done
  parallel_wait
elif run_stage $((first_stage + 2)); then
  stage_begin $((first_stage + 2)) "EM(m) for m in $em_m_list, up to $em_iters iterations (dev every $em_dev_every, stop after $em_patience without a gain), best dev iteration kept"
  eps=$(chosen_floor)
  for m in $(largest_first_order $em_m_list); do parallel_run train_em "$m"; done
  parallel_wait
fi

if run_stage $((first_stage + 3)) && ! { run_stage $((first_stage + 2)) && [ "$parallel" -gt 1 ]; }; then
  stage_begin $((first_stage + 3)) "SPECTRAL(m) for m in $m_list, C in $smooth_list"
  eps=$(chosen_floor)
  # statistics first (cheap), then every (m, C) as its own job, largest m first: the three
  # C of m = 32 do not run one after another on one core
  for m in $(largest_first_order $m_list); do parallel_run spectral_stats "$m"; done
  parallel_wait
  for m in $(largest_first_order $m_list); do
    for c in $smooth_list; do parallel_run train_spectral "$m" "$c"; done
  done
  parallel_wait
fi

configs="unigram"
if [ -z "$emission_floor_list" ]; then configs+=" hmm"; fi
for e in $emission_floor_list; do configs+=" hmm_m1_e$e"; done
for m in $em_m_list; do configs+=" em_m$m"; done
for m in $m_list; do for c in $smooth_list; do configs+=" spectral_m${m}_c$c"; done; done

if run_stage $((first_stage + 4)); then
  stage_begin $((first_stage + 4)) "select on dev, score test once"
  "$steps/select_test.sh" --nj "$nj" --cmd "$cmd" --parallel "$parallel" \
    --decode-opts "$decode_opts" "${map[@]}" "$exp" "$data/dev/$ali" "$data/test/obs.h5" \
    "$data/test/$ali" "$configs"
  column -t -s$'\t' "$exp/results.tsv"
  cat "$exp/log/selection.log"
  [ ! -f "$exp/compare_spectral_em.txt" ] || cat "$exp/compare_spectral_em.txt"
fi

if run_stage $((first_stage + 5)); then
  # figure 7: the selected SPECTRAL(m, C) retrained with fewer templates; figures 5 and 7
  # and EM's per-iteration dev curve as PNG + TSV in EXP/figures/
  stage_begin $((first_stage + 5)) "feature ablation at the selected SPECTRAL(m, C); figures"
  eps=$(chosen_floor)
  "$steps/ablation.sh" --nj "$nj" --cmd "$cmd" --parallel "$parallel" \
    --decode-opts "$decode_opts" --templates "$templates" --svd-opts "$spectral_svd_opts" \
    --est-opts "$(spectral_est_opts)" "${map[@]}" "$exp" "$data/train/obs.h5" \
    "$data/train/$ali" "$data/dev/obs.h5" "$data/dev/$ali" "$ablations"
fi
stage_end
