#!/usr/bin/env bash
# EM for the R-HMM over --nj shards, Kaldi's accumulate/estimate loop (steps/train_*.sh):
#
#   scripts/steps/train_em.sh [options] OBS ALI DIR
#
#   iteration 0:  $cmd JOB=1:nj DIR/log/acc.0.JOB.log rhmmtk acc-em --init --job JOB/nj ...
#                 $cmd DIR/log/init.log rhmmtk init-em ... -> DIR/0.h5
#   iteration i:  $cmd JOB=1:nj DIR/log/acc.i.JOB.log rhmmtk acc-em --model DIR/(i-1).h5 ...
#                 $cmd DIR/log/est.i.log rhmmtk est-em DIR/(i-1).h5 ... -> DIR/i.h5
#
# Every iteration's model DIR/i.h5 is kept; DIR/history.tsv has iter, loglik, objective,
# dev_acc (as train-em --history); DIR/final.h5 is the iteration with the best dev
# accuracy (the first of equals; with no dev set, the last iteration). The model is
# the one `rhmmtk train-em` makes with the same options, up to floating-point summation
# order. Re-running skips what is done: a final.h5 made with the same options and inputs
# (DIR/final.h5.stamp) ends the script at once, existing DIR/i.h5 are not recomputed (an
# interrupted run resumes); a DIR made with other options or inputs is trained again.
#
# Example:
#   scripts/steps/train_em.sh --nj 4 --cmd scripts/utils/run_local.sh --states 4 --iters 30 \
#     --dev-obs data/dev/obs.h5 --dev-ali data/dev/ali data/train/obs.h5 data/train/ali exp/em_m4
set -euo pipefail
. "$(dirname "$0")/../utils/step_defaults.sh"    # root, nj, cmd
. "$root/scripts/utils/stamp.sh"
states=4
iters=50
seed=0
floor=1e-3
noise=0.5
emission_floor=0
mode=acc
dev_every=1
patience=0
dev_obs=
dev_ali=
decode_opts=
help_message="Usage: $0 [options] OBS ALI DIR
  --nj N ($nj)  --cmd CMD ($cmd)
  --states M ($states)  --iters N ($iters)  --seed S ($seed)  --floor F ($floor)  --noise X ($noise)
  --emission-floor E ($emission_floor)  decode with every emission interpolated with E p(x)
                    (\`rhmmtk train-em --emission-floor\`)
  --dev-obs FILE --dev-ali FILE   score every iteration on dev; final.h5 = the best
  --dev-every K ($dev_every)  single mode: decode dev after every K-th iteration and the last
  --patience P ($patience)  stop once P scored iterations in a row have not beaten the best
                    dev accuracy (0: run all --iters)
  --decode-opts \"...\"  how dev is decoded (\`rhmmtk decode\` options, e.g. --beam 1e-4)
  --mode acc|single ($mode)  acc: acc-em/est-em jobs over --nj shards, every iteration kept
                    as DIR/N.h5; single: one train-em process (the same model, less
                    process start-up on one machine; only final.h5 and history.tsv)"
num_args=3
. "$root/scripts/utils/parse_options.sh"
obs=$1
ali=$2
dir=$3
for f in "$obs" "$ali"; do
  [ -f "$f" ] || { echo "$0: error: no such file $f" >&2; exit 1; }
done
if [ "$patience" -gt 0 ] && [ -z "$dev_obs" ]; then
  echo "$0: error: --patience needs a dev set (--dev-obs, --dev-ali)" >&2
  exit 1
fi
# what the model depends on (not --nj or --cmd)
text="states=$states iters=$iters seed=$seed floor=$floor noise=$noise emission_floor=$emission_floor
mode=$mode dev_every=$dev_every patience=$patience decode_opts=$decode_opts
$(stamp_text "$obs" "$ali" "$dev_obs" "$dev_ali")"
if stamp_current "$dir/final.h5.stamp" "$text" "$dir/final.h5"; then
  echo "$0: $dir/final.h5 exists: nothing to do" >&2
  exit 0
fi
[ -f "$dir/final.h5.stamp" ] || rm -f "$dir"/[0-9]*.h5 "$dir"/*.acc "$dir/history.tsv"
mkdir -p "$dir/log"
stamp_write "$dir/final.h5.stamp" "$text"
echo "$0 $*" > "$dir/log/cmdline"
dev=()
# shellcheck disable=SC2206
[ -n "$dev_obs" ] && dev=(--dev-obs "$dev_obs" --dev-ali "$dev_ali" $decode_opts)
if [ "$mode" = single ]; then
  $cmd "$dir/log/train.log" rhmmtk train-em -m "$states" --iters "$iters" --seed "$seed" \
    --floor "$floor" --noise "$noise" --emission-floor "$emission_floor" "${dev[@]}" \
    --dev-every "$dev_every" \
    --patience "$patience" --history "$dir/history.tsv" "$obs" "$ali" \
    "$dir/final.h5" || { echo "$0: error: train-em failed (see $dir/log/train.log)" >&2; exit 1; }
  exit 0
fi
accs() { for j in $(seq "$nj"); do echo "$dir/$1.$j.acc"; done; }
# the best dev iteration among 0..N (DIR/history.tsv has a row per iteration, in order,
# dev accuracies to 6 decimals: distinct below a million dev positions); without a dev
# set, N
best_iteration() {
  if [ -z "$dev_obs" ]; then echo "$1"; return; fi
  head -n "$(($1 + 2))" "$dir/history.tsv" | "$root/scripts/utils/select_best.sh" dev_acc iter -
}

if [ ! -f "$dir/0.h5" ]; then
  $cmd JOB=1:"$nj" "$dir/log/acc.0.JOB.log" \
    rhmmtk acc-em --init --job JOB/"$nj" "$obs" "$ali" "$dir/0.JOB.acc" ||
    { echo "$0: error: counting (iteration 0) failed" >&2; exit 1; }
  # shellcheck disable=SC2046
  $cmd "$dir/log/init.log" rhmmtk init-em -m "$states" --seed "$seed" --floor "$floor" \
    --noise "$noise" --emission-floor "$emission_floor" "${dev[@]}" --history "$dir/history.tsv" $(accs 0) "$dir/0.h5" ||
    { echo "$0: error: init-em failed" >&2; exit 1; }
  rm -f $(accs 0)
fi
last=0
for it in $(seq "$iters"); do
  # early stopping, as train-em --patience (every iteration is scored here); checked on
  # the last model kept, so a resumed run stops where the first one did
  if [ "$patience" -gt 0 ] && [ -n "$dev_obs" ] && [ "$last" -gt 0 ] &&
     [ $((last - $(best_iteration "$last"))) -ge "$patience" ]; then
    echo "$0: no dev gain in $patience iterations: stopping after iteration $last" >&2
    break
  fi
  last=$it
  [ -f "$dir/$it.h5" ] && continue
  prev=$dir/$((it - 1)).h5
  $cmd JOB=1:"$nj" "$dir/log/acc.$it.JOB.log" \
    rhmmtk acc-em --model "$prev" --job JOB/"$nj" "$obs" "$ali" "$dir/$it.JOB.acc" ||
    { echo "$0: error: E-step of iteration $it failed" >&2; exit 1; }
  # shellcheck disable=SC2046
  $cmd "$dir/log/est.$it.log" rhmmtk est-em "${dev[@]}" --history "$dir/history.tsv" \
    "$prev" $(accs "$it") "$dir/$it.h5" ||
    { echo "$0: error: M-step of iteration $it failed" >&2; exit 1; }
  rm -f $(accs "$it")
  grep -h "iteration $it:" "$dir/log/est.$it.log" | sed 's/^rhmmtk est-em: /  /' >&2 || true
done
# the best dev accuracy (first of equals, as train-em), else the last iteration
best=$(best_iteration "$last")
cp "$dir/$best.h5" "$dir/.final.h5.tmp"
mv "$dir/.final.h5.tmp" "$dir/final.h5"
echo "$0: $dir/final.h5 = iteration $best of $last" | tee "$dir/log/final.log" >&2
