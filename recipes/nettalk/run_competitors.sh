#!/usr/bin/env bash
# NETtalk: paper 002's competitors on nested training subsets (learning curves, figure 1)
# and the regularisation path at 2,000 words (figure 2), every system trained, decoded and
# scored by rhmmtk on the split of run.sh (same words, same dev and test):
#   HKZ(m)              train-hkz, the spectral IO-HMM (m chosen on dev)
#   MM-NUCLEAR(tau)     train-maxmargin --reg nuclear (tau chosen on dev, best iteration kept)
#   MM-L2(tau)          train-maxmargin --reg l2
#   MM-NONE             train-maxmargin --reg none
#   PERCEPTRON          train-maxmargin --update perceptron (best epoch on dev)
#   CRF                 train-crf (CRFsuite, letter window +-3)
#   SUBPAT-PAPER        paper 002's own CRF/perceptron peer: train-subpat --features paper,
#                       a second-order tagger with sub-pattern features (each bi-symbol with
#                       the trigram's input and output contexts), averaged perceptron (best
#                       epoch on dev)
#   SUBPAT-PAPER-CRF(l2) the same model and features as a CRF (paper 002's CRF peer):
#                       train-subpat --loss crf, SGD on the conditional log-likelihood + L2
#                       (l2, --subpat-crf-averages and the epoch chosen on dev)
# and the R-HMM family of run.sh on the same subsets, with run.sh's observations (letter
# windows, --context/--min-count, the window table learned on each subset) and templates:
#   UNIGRAM, HMM        train-unigram, train-em -m 1 --iters 0
#   EM(m)               train-em (best iteration on dev; m chosen on dev)
#   SPECTRAL(m, C)      featurize + train-spectral (m and C chosen on dev)
# The other systems' inputs are single letters (make-obs --context 0). Output in $exp:
#   results_N.tsv (system config dev_acc test_acc train_s, per training size N),
#   learning_curve.tsv, reg_path.tsv, figures/learning_curve.png, figures/reg_path.png,
#   dev_grid.tsv (every configuration's dev accuracy and training time), logs in */log/.
# Every training and decoding runs through $cmd (cmd.sh, --cmd) and is redone when its
# options or inputs changed (scripts/utils/stamp.sh); choices on dev are made by
# scripts/utils/select_best.sh.
#
#   recipes/nettalk/run_competitors.sh                       # everything
#   recipes/nettalk/run_competitors.sh --sizes "2000" --stage 2
set -euo pipefail
. "$(dirname "$0")/path.sh"  # recipe, root; checks that rhmmtk is installed
stage=0
stop_stage=100
data=${RHMMTK_NETTALK:-$root/../shared/data/nettalk/nettalk.data}   # the dictionary
seed=1                              # the split (as run.sh)
split_sizes=15000,1034              # its train,dev words (as run.sh); test takes the rest
subset_seed=1                       # the order the nested subsets are drawn in
sizes="500 1000 2000 4000 8000 15000"
reg_path_size=2000                  # figure 2
hkz_m_list="16 32 64 96"
nuclear_taus="0.0003 0.001 0.003 0.01 0.03"
l2_taus="0.0001 0.001 0.01 0.1"
rates="100 1000"                    # FOBOS c grid (the loss is the mean over words; on dev
                                    # 100 was better at 2,000 words, 1000 at 15,000)
iters=48                            # FOBOS dev scorings over the --steps budget (every 5 steps);
                                    # with --steps 0, FOBOS passes (best on dev kept)
steps=240                           # FOBOS budget in steps whatever the size (0: --iters passes,
                                    # a budget growing with the size; 8 passes was the default)
patience=4                          # FOBOS: stop at the P-th dev scoring in a row without a gain
                                    # (0: run the whole budget)
perceptron_iters=8                  # PERCEPTRON: epochs (best on dev kept)
batch_words=500                     # FOBOS words per step (0: the batch algorithm)
boundaries="padded"                 # max-margin/perceptron boundary conventions (chosen on dev)
averages="decay3"                   # FOBOS iterate averaging: "no", "yes" (the plain mean),
                                    # "decayG" (--average-decay G), or several (on dev).
                                    # The budget 240/48/4/decay3: RESULTS_002, section 2
crf_iters=100
subpat_iters=15                     # SUBPAT-PAPER: perceptron epochs (best on dev kept)
subpat_crf_l2s="0.1 1 10"           # SUBPAT-PAPER-CRF: the L2 grid (chosen on dev)
subpat_crf_rate=0.1                 # SUBPAT-PAPER-CRF: initial SGD step
subpat_crf_patience=3               # SUBPAT-PAPER-CRF: stop after 3 epochs without a dev gain
subpat_crf_averages="no yes"        # SUBPAT-PAPER-CRF: the mean of the SGD iterates, no/yes (on dev)
crf_c2=0.1
context=2                           # R-HMM observations and templates: as run.sh
min_count=2
templates=conf/templates.conf
m_list="8 16 32"                    # SPECTRAL's grid (with smooth_list) and EM's
smooth_list="30 100"
em_iters=20                         # EM's best dev iteration came at 10 on 15,000 words (RESULTS)
em_dev_every=2
em_seed=1
systems="UNIGRAM HMM EM SPECTRAL HKZ MM-NUCLEAR MM-L2 MM-NONE PERCEPTRON CRF SUBPAT-PAPER SUBPAT-PAPER-CRF"
parallel=1                          # configurations trained at once in stage 2 (this machine)
exp=exp_competitors
. "$recipe/cmd.sh"                  # cmd: the job runner
help_message="Usage: $0 [options]
  --data FILE          NETtalk dictionary (default: \$RHMMTK_NETTALK or ../shared/data/nettalk/nettalk.data)
  --stage N / --stop-stage N   0 prepare, 1 letters + subsets, 2 train + dev, 3 select + test,
                       4 tables + figures
  --sizes \"...\"        training sizes ($sizes)   --reg-path-size N ($reg_path_size)
  --split-sizes T,D    train and dev words of run.sh's split, test the rest ($split_sizes)
  --systems \"...\"      ($systems)
  --hkz-m-list \"...\"   ($hkz_m_list)   --nuclear-taus \"...\" ($nuclear_taus)   --l2-taus \"...\" ($l2_taus)
  --rates \"...\" --iters N --batch-words B   FOBOS ($rates, $iters, $batch_words)
  --steps S            FOBOS budget: S steps at every size, over --iters dev scorings ($steps;
                       0: --iters passes, a budget growing with the size)
  --perceptron-iters N PERCEPTRON epochs ($perceptron_iters)
  --patience P         FOBOS: stop at the P-th dev scoring in a row without a gain ($patience; 0:
                       never); with --steps S, dev is scored every S/iters steps and S is the cap
  --boundaries \"...\"   max-margin and perceptron conventions: padded paper paper-all ($boundaries)
  --averages \"...\"     FOBOS iterate averaging: no, yes (the mean), decayG (--average-decay G),
                       one or several, chosen on dev ($averages)
  --crf-iters N --crf-c2 C   CRF ($crf_iters, $crf_c2)   --subpat-iters N   SUBPAT-PAPER(-CRF) ($subpat_iters)
  --subpat-crf-l2s \"...\" --subpat-crf-rate R --subpat-crf-patience P   SUBPAT-PAPER-CRF
                       ($subpat_crf_l2s; $subpat_crf_rate; $subpat_crf_patience)
  --subpat-crf-averages \"...\"   SUBPAT-PAPER-CRF iterate averaging, no and/or yes ($subpat_crf_averages)
  --m-list \"...\" --smooth-list \"...\"   R-HMM grids ($m_list; $smooth_list)
  --em-iters N --em-dev-every K --em-seed N   EM ($em_iters, $em_dev_every, $em_seed)
  --context K --min-count C --templates FILE   R-HMM observations ($context, $min_count, $templates)
  --parallel N         configurations trained at once in stage 2, on this machine ($parallel);
                       the dev grid keeps the grid's order, so results do not depend on it
  --exp DIR            output ($exp)   --cmd CMD  job runner ($cmd)"
path_options="data templates exp"
. "$root/scripts/utils/recipe_setup.sh"   # options, stages, stamp, parallel
data=$(realpath -ms -- "$data")             # $RHMMTK_NETTALK: from here too
cd "$recipe"
acc() { "$root/scripts/utils/accuracy.sh" "$1" "$2"; }
stamp() { echo "[$(date +%T)] $*"; }
mkdir -p "$exp/log"

if run_stage 0; then      # run.sh's split is reused only if data/split.txt records this one
  [ -f "$data" ] || { echo "$0: error: NETtalk dictionary not found at $data (--data FILE)" >&2; exit 1; }
  stamp "stage 0: split $data (seed $seed, $split_sizes words; kept if data/ holds it)"
  $cmd "$exp/log/prepare.log" python3 local/prepare_nettalk.py --if-changed --seed "$seed" \
    --sizes "$split_sizes" "$data" data ||
    { echo "$0: error: preparing the data failed (see $exp/log/prepare.log)" >&2; exit 1; }
fi

has() { [[ " $systems " == *" $1 "* ]]; }

if run_stage 1; then
  stamp "stage 1: letter archives and nested subsets ($sizes words)"
  $cmd "$exp/log/subsets.log" python3 local/subsets.py --seed "$subset_seed" --sizes "$sizes" \
    data/train data
  once --out data/letters.syms data/train/let.h5 "$exp/log/make_obs_train.log" rhmmtk make-obs \
    --write-symbols data/letters.syms data/train/letters data/train/let.h5
  for s in dev test; do
    once data/$s/let.h5 "$exp/log/make_obs_$s.log" rhmmtk make-obs --symbols data/letters.syms \
      data/$s/letters data/$s/let.h5
  done
  for n in $sizes; do
    t=data/train_$n
    once $t/let.h5 "$exp/log/make_obs_$n.log" rhmmtk make-obs --symbols data/letters.syms \
      $t/letters $t/let.h5
    if has UNIGRAM || has HMM || has EM || has SPECTRAL; then   # run.sh's observations
      once --out $t/win.syms $t/win.h5 "$exp/log/make_win_$n.log" rhmmtk make-obs \
        --context "$context" --min-count "$min_count" --write-symbols $t/win.syms $t/letters $t/win.h5
      for s in dev test; do
        once $t/$s.win.h5 "$exp/log/make_win_${n}_$s.log" rhmmtk make-obs --symbols $t/win.syms \
          data/$s/letters $t/$s.win.h5
      done
      once $t/win.feats.h5 "$exp/log/featurize_$n.log" rhmmtk featurize --templates "$templates" \
        $t/win.h5 $t/ali $t/win.feats.h5
    fi
  done
fi

# What a system of N words reads: single letters, or the R-HMMs' letter windows (learned on
# that subset; SPECTRAL trains on their featurized archive). Sets train_in (the trainer's
# inputs), dev_in and test_in (the archives decoded).
letters() { train_in=(data/train_$1/let.h5 data/train_$1/ali); dev_in=data/dev/let.h5; test_in=data/test/let.h5; }
windows() { train_in=(data/train_$1/win.h5 data/train_$1/ali); dev_in=data/train_$1/dev.win.h5
            test_in=data/train_$1/test.win.h5; }
features() { windows "$1"; train_in=(data/train_$1/win.feats.h5); }

# train SYSTEM CONFIG N ARGS...: train one configuration on N words (unless done) from
# train_in, decode dev_in, write "system config words dev_acc train_s" to its grid_line.
# Run in the background by launch; the grid's order is kept in $exp/grid_dirs.
train() {
  local sys=$1 config=$2 n=$3; shift 3
  local d=$exp/n$n/$config
  mkdir -p "$d/log"
  local t0; t0=$(date +%s.%N)
  once "$d/final.h5" "$d/log/train.log" "$@" "${train_in[@]}" "$d/final.h5" ||
    { echo "$0: $sys $config ($n words) failed (see $d/log/train.log)" >&2; return 1; }
  if [ "$d/final.h5" -nt "$d/train_seconds" ]; then     # trained now, not reused
    python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" \
      "$t0" "$(date +%s.%N)" > "$d/train_seconds"
  fi
  echo "$test_in" > "$d/test_input"
  once "$d/dev.hyp" "$d/log/decode_dev.log" rhmmtk decode "$d/final.h5" "$dev_in" "$d/dev.hyp"
  printf '%s\t%s\t%s\t%s\t%s\n' "$sys" "$config" "$n" "$(acc data/dev/ali "$d/dev.hyp")" \
    "$(cat "$d/train_seconds")" > "$d/grid_line"
}
# launch ARGS...: train ARGS in the background once fewer than --parallel trainings run
# (a failed one, which train names, stops the others).
launch() {
  echo "$exp/n$3/$2" >> "$exp/grid_dirs"
  parallel_run train "$@"
}
# finish: wait for every training, then the dev grid in the grid's order.
finish() {
  parallel_wait
  printf 'system\tconfig\twords\tdev_acc\ttrain_s\n' > "$exp/dev_grid.tsv.tmp"
  while read -r d; do cat "$d/grid_line"; done < "$exp/grid_dirs" >> "$exp/dev_grid.tsv.tmp"
  mv "$exp/dev_grid.tsv.tmp" "$exp/dev_grid.tsv"
}
mm_dev="--dev-obs data/dev/let.h5 --dev-ali data/dev/ali"
mm_patience=""                      # only when set: the commands (and stamps) of earlier runs
[ "$patience" = 0 ] || mm_patience="--patience $patience"

if run_stage 2; then
  : > "$exp/grid_dirs"
  for n in $sizes; do
    stamp "stage 2: $n words"
    windows "$n"
    if has UNIGRAM; then launch UNIGRAM unigram "$n" rhmmtk train-unigram; fi
    if has HMM; then launch HMM hmm "$n" rhmmtk train-em -m 1 --iters 0; fi
    if has EM; then for m in $m_list; do
      launch EM em_m$m "$n" rhmmtk train-em -m "$m" --iters "$em_iters" --seed "$em_seed" \
        --dev-every "$em_dev_every" --dev-obs "$dev_in" --dev-ali data/dev/ali; done; fi
    features "$n"
    if has SPECTRAL; then for m in $m_list; do for c in $smooth_list; do
      launch SPECTRAL spectral_m${m}_c$c "$n" rhmmtk train-spectral -m "$m" --smooth "$c"; done; done; fi
    letters "$n"
    if has HKZ; then for m in $hkz_m_list; do
      launch HKZ hkz_m$m "$n" rhmmtk train-hkz -m "$m"; done; fi
    # config names: padded and no averaging add no suffix (the names of earlier runs)
    for b in $boundaries; do for avg in $averages; do for c in $rates; do
      x=${b/#padded/}; x=${x:+_$x}; a=--average
      case $avg in
        no) a=--no-average ;;
        yes) x=${x}_avg ;;
        decay*) x=${x}_avg$avg; a="--average --average-decay ${avg#decay}" ;;
        *) echo "$0: error: --averages takes no, yes or decayG, got '$avg'" >&2; exit 1 ;;
      esac
      mm="rhmmtk train-maxmargin --rate $c --iters $iters --steps $steps --batch-words $batch_words
          --boundary $b $a $mm_dev $mm_patience"
      if has MM-NUCLEAR || [ "$n" = "$reg_path_size" ]; then for t in $nuclear_taus; do
        launch MM-NUCLEAR mm_nuclear_${t}_c$c$x "$n" $mm --reg nuclear --tau "$t"; done; fi
      if has MM-L2 || [ "$n" = "$reg_path_size" ]; then for t in $l2_taus; do
        launch MM-L2 mm_l2_${t}_c$c$x "$n" $mm --reg l2 --tau "$t"; done; fi
      if has MM-NONE || [ "$n" = "$reg_path_size" ]; then
        launch MM-NONE mm_none_c$c$x "$n" $mm --reg none; fi
    done; done; done
    if has PERCEPTRON; then for b in $boundaries; do
      x=${b/#padded/}
      launch PERCEPTRON perceptron${x:+_$x} "$n" rhmmtk train-maxmargin \
        --update perceptron --boundary "$b" --iters "$perceptron_iters" $mm_dev; done; fi
    if has CRF; then
      launch CRF crf "$n" rhmmtk train-crf --iters "$crf_iters" --c2 "$crf_c2"; fi
    if has SUBPAT-PAPER; then
      launch SUBPAT-PAPER subpat_paper "$n" rhmmtk train-subpat --features paper \
        --iters "$subpat_iters" --seed 1 $mm_dev; fi
    # averaging: --average and an _avg suffix; without it no flag (earlier runs' commands)
    if has SUBPAT-PAPER-CRF; then for avg in $subpat_crf_averages; do for l in $subpat_crf_l2s; do
      a=; x=; [ "$avg" = no ] || { a=--average; x=_avg; }
      launch SUBPAT-PAPER-CRF subpat_paper_crf${x}_l2_$l "$n" rhmmtk train-subpat --features paper \
        --loss crf --l2 "$l" --rate "$subpat_crf_rate" --iters "$subpat_iters" --seed 1 \
        --patience "$subpat_crf_patience" $a $mm_dev; done; done; fi
  done
  finish
fi

if run_stage 3; then
  stamp "stage 3: select on dev, score test once"
  printf 'system\twords\tconfig\tdev_acc\ttest_acc\ttrain_s\n' > "$exp/learning_curve.tsv.tmp"
  for n in $sizes; do
    printf 'system\tconfig\tdev_acc\ttest_acc\ttrain_s\n' > "$exp/results_$n.tsv.tmp"
    for sys in $systems; do
      # best dev accuracy; ties go to the first configuration in the grid
      rows=$(awk -F'\t' -v s="$sys" -v n="$n" '$1 == s && $3 == n' "$exp/dev_grid.tsv")
      [ -n "$rows" ] || continue
      line=$({ head -n 1 "$exp/dev_grid.tsv"; echo "$rows"; } |
             "$root/scripts/utils/select_best.sh" dev_acc config,dev_acc,train_s -)
      IFS=$'\t' read -r config dacc secs <<< "$line"
      d=$exp/n$n/$config
      once "$d/test.hyp" "$d/log/decode_test.log" rhmmtk decode "$d/final.h5" \
        "$(cat "$d/test_input")" "$d/test.hyp"
      tacc=$(acc data/test/ali "$d/test.hyp")
      printf '%s\t%s\t%s\t%s\t%s\n' "$sys" "$config" "$dacc" "$tacc" "$secs" >> "$exp/results_$n.tsv.tmp"
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$sys" "$n" "$config" "$dacc" "$tacc" "$secs" >> "$exp/learning_curve.tsv.tmp"
    done
    mv "$exp/results_$n.tsv.tmp" "$exp/results_$n.tsv"
  done
  mv "$exp/learning_curve.tsv.tmp" "$exp/learning_curve.tsv"
fi

if run_stage 4; then
  stamp "stage 4: tables and figures"
  # per regulariser and tau, the best rate's dev accuracy
  awk -F'\t' -v n="$reg_path_size" 'NR > 1 && $3==n && $2 ~ /^mm_/ {
      k = split($2, a, "_"); key = (a[2] == "none") ? "none\t0" : a[2]"\t"a[3]
      if (!(key in best) || $4 > best[key]) best[key] = $4; if (!(key in seen)) {seen[key] = 1; order[++m] = key} }
    END {print "reg\ttau\tdev_acc"; for (i = 1; i <= m; i++) print order[i]"\t"best[order[i]]}' \
    "$exp/dev_grid.tsv" > "$exp/reg_path.tsv"
  mkdir -p "$exp/figures"
  python3 "$root/scripts/utils/plot_competitors.py" curve "$exp/learning_curve.tsv" "$exp/figures/learning_curve"
  if [ "$(wc -l < "$exp/reg_path.tsv")" -gt 1 ]; then
    python3 "$root/scripts/utils/plot_competitors.py" regpath "$exp/reg_path.tsv" "$exp/figures/reg_path"
  fi
  for n in $sizes; do echo "== $n words"; column -t -s$'\t' "$exp/results_$n.tsv"; done
fi
