#!/usr/bin/env bash
# The spectral estimator over --nj shards (accumulate, SVD, accumulate, estimate):
#
#   scripts/steps/train_spectral.sh [options] FEATS DIR
#
#   $cmd JOB=1:nj S/log/acc_omega.JOB.log   rhmmtk acc-spectral --job JOB/nj FEATS S/omega.JOB.acc
#   $cmd S/log/svd.log                      rhmmtk svd-spectral -m M --workers nj S/omega.*.acc S/proj.h5
#   $cmd JOB=1:nj S/log/acc_moments.JOB.log rhmmtk acc-spectral --job JOB/nj --projections S/proj.h5 ...
#   $cmd DIR/log/est.log                    rhmmtk est-spectral --smooth C S/proj.h5 S/moments.*.acc DIR/final.h5
#
# S, the statistics directory (--stats-dir, default DIR), keeps proj.h5 and the moments,
# so other smoothing constants reuse them: call again with another DIR, the same
# --stats-dir and another --smooth (statistics are recomputed only when FEATS' contents,
# m, the SVD options or nj differ from those recorded in S/stats.done). FEATS is one
# featurized archive (`rhmmtk featurize`). DIR/final.h5 equals `rhmmtk train-spectral`'s
# model up to floating-point summation order. A DIR/final.h5 made from the same
# statistics and options (DIR/final.h5.stamp) ends the script at once; one made
# otherwise is estimated again.
#
# Example:
#   scripts/steps/train_spectral.sh --nj 4 --states 24 --smooth 30 --stats-dir exp/spectral_m24_stats \
#     data/train/feats.tpl.h5 exp/spectral_m24_c30
set -euo pipefail
. "$(dirname "$0")/../utils/step_defaults.sh"    # root, nj, cmd
. "$root/scripts/utils/stamp.sh"
states=24
smooth=30
stats_dir=
svd_opts=""        # further svd-spectral options, e.g. "--kappa 5 --rank-tol 1e-6"
est_opts=""        # further est-spectral options, e.g. "--smooth-emission 10"
stats_only=false   # true: compute the statistics in DIR (or --stats-dir) and stop
help_message="Usage: $0 [options] FEATS DIR
  --nj N ($nj)  --cmd CMD ($cmd)  --states M ($states)  --smooth C ($smooth)
  --stats-dir S   where the statistics live (default DIR; share it across --smooth values)
  --svd-opts \"...\"  --est-opts \"...\"   further svd-spectral / est-spectral options
  --stats-only true   compute the statistics only (then every --smooth value can train
                      from them at the same time); give the same --nj and --svd-opts"
num_args=2
. "$root/scripts/utils/parse_options.sh"
feats=$1
dir=$2
stats=${stats_dir:-$dir}
[ -f "$feats" ] || { echo "$0: error: no such file $feats" >&2; exit 1; }
case $stats_only in true|false) ;; *) echo "$0: error: --stats-only must be true or false, got '$stats_only'" >&2; exit 1;; esac
# what the statistics depend on, and the model
want="$(stamp_text "$feats") nj=$nj m=$states svd_opts=$svd_opts"
text="$want smooth=$smooth est_opts=$est_opts"
if [ "$stats_only" = false ] && stamp_current "$dir/final.h5.stamp" "$text" "$dir/final.h5"; then
  echo "$0: $dir/final.h5 exists: nothing to do" >&2
  exit 0
fi
mkdir -p "$dir/log" "$stats/log"
echo "$0 $*" > "$dir/log/cmdline"
accs() { for j in $(seq "$nj"); do echo "$stats/$1.$j.acc"; done; }
if [ "$(cat "$stats/stats.done" 2> /dev/null)" != "$want" ]; then
  rm -f "$stats/stats.done"
  $cmd JOB=1:"$nj" "$stats/log/acc_omega.JOB.log" \
    rhmmtk acc-spectral --job JOB/"$nj" "$feats" "$stats/omega.JOB.acc" ||
    { echo "$0: error: pass 1 (Omega counts) failed" >&2; exit 1; }
  # shellcheck disable=SC2046,SC2086
  $cmd --num-threads "$nj" "$stats/log/svd.log" rhmmtk svd-spectral -m "$states" \
    --workers "$nj" $svd_opts $(accs omega) "$stats/proj.h5" ||
    { echo "$0: error: svd-spectral failed" >&2; exit 1; }
  rm -f $(accs omega)
  $cmd JOB=1:"$nj" "$stats/log/acc_moments.JOB.log" \
    rhmmtk acc-spectral --job JOB/"$nj" --projections "$stats/proj.h5" "$feats" \
    "$stats/moments.JOB.acc" || { echo "$0: error: pass 2 (moments) failed" >&2; exit 1; }
  echo "$want" > "$stats/stats.done"
fi
[ "$stats_only" = true ] && exit 0
# shellcheck disable=SC2046,SC2086
$cmd "$dir/log/est.log" rhmmtk est-spectral --smooth "$smooth" $est_opts "$stats/proj.h5" \
  $(accs moments) "$dir/final.h5" || { echo "$0: error: est-spectral failed" >&2; exit 1; }
stamp_write "$dir/final.h5.stamp" "$text"
