#!/usr/bin/env bash
# The feature ablation of the paper's figure 7, and the recipe's figures:
#
#   scripts/steps/ablation.sh [options] EXP TRAIN_OBS TRAIN_ALI DEV_OBS DEV_ALI "CONF ..."
#
# Retrains the dev-selected SPECTRAL(m, C) of EXP/dev_grid.tsv with each template
# configuration CONF and scores it on dev (EXP/ablation.tsv: templates dev_acc), then draws
# figure 5 (dev accuracy against m), figure 7 and EM's per-iteration dev curve into
# EXP/figures/ (PNG + TSV). A model made from the same CONF, data, m, C and options
# (EXP/ablation_NAME/ablation.stamp) is not retrained, one made otherwise is; with
# --templates FILE (the templates the grid was trained with), a CONF identical to FILE
# reuses the selected model's dev decoding instead of training it again. --parallel N:
# N CONFs at once. The selected configuration is the dev-best SPECTRAL row of
# EXP/dev_grid.tsv (scripts/utils/select_best.sh).
# --svd-opts / --est-opts: the further spectral options the grid was trained with, so
# that every CONF is the selected configuration with other templates; --decode-opts: the
# `rhmmtk decode` options the grid's dev decodings were made with.
set -euo pipefail
. "$(dirname "$0")/../utils/step_defaults.sh"    # root, nj, cmd
. "$root/scripts/utils/stamp.sh"
mapping=
templates=
parallel=1
svd_opts=
est_opts=
decode_opts=
help_message="Usage: $0 [--nj N] [--cmd CMD] [--mapping FILE] [--templates FILE] [--parallel N] [--svd-opts \"...\"] [--est-opts \"...\"] [--decode-opts \"...\"] EXP TRAIN_OBS TRAIN_ALI DEV_OBS DEV_ALI \"CONF ...\""
num_args=6
. "$root/scripts/utils/parse_options.sh"
. "$root/scripts/utils/parallel.sh"
parallel_check "$parallel"
exp=$1 train_obs=$2 train_ali=$3 dev_obs=$4 dev_ali=$5 confs=$6
map=(${mapping:+--mapping "$mapping"})
selected=$(awk -F'\t' 'NR == 1 || $1 == "SPECTRAL"' "$exp/dev_grid.tsv" |
           "$root/scripts/utils/select_best.sh" dev_acc config -)
read -r m c < <(echo "$selected" | sed -E 's/^spectral_m([0-9]+)_c([0-9.]+)$/\1 \2/')
echo "$0: ablation at SPECTRAL(m=$m, C=$c)" >&2
ablate() {  # CONF -> EXP/ablation_NAME/dev.hyp
  local conf=$1 d text
  d=$exp/ablation_$(basename "$conf" .conf)
  mkdir -p "$d/log"
  if [ -n "$templates" ] && cmp -s "$conf" "$templates"; then
    rm -f "$d/final.h5" "$d/ablation.stamp" "$d/dev.hyp.stamp"
    cp "$exp/$selected/dev.hyp" "$d/dev.hyp"     # the grid's own model
    echo "$conf: the grid's templates: dev decoding of $selected" > "$d/log/reused"
    return 0
  fi
  rm -f "$d/log/reused"
  text="$(stamp_text "$conf" "$train_obs" "$train_ali") m=$m C=$c svd_opts=$svd_opts est_opts=$est_opts"
  if ! stamp_current "$d/ablation.stamp" "$text" "$d/final.h5"; then
    rm -f "$d/final.h5" "$d/dev.hyp"
    $cmd "$d/log/featurize.log" rhmmtk featurize --templates "$conf" "$train_obs" "$train_ali" \
      "$d/feats.h5"
    "$root/scripts/steps/train_spectral.sh" --nj "$nj" --cmd "$cmd" --states "$m" --smooth "$c" \
      --svd-opts "$svd_opts" --est-opts "$est_opts" "$d/feats.h5" "$d" 2>> "$d/log/train.log"
    rm -f "$d/feats.h5"
    stamp_write "$d/ablation.stamp" "$text"
  fi
  "$root/scripts/steps/decode.sh" --decode-opts "$decode_opts" --nj "$nj" --cmd "$cmd" "$d/final.h5" "$dev_obs" "$d/dev.hyp"
}
for conf in $confs; do parallel_run ablate "$conf"; done
parallel_wait
printf 'templates\tdev_acc\n' > "$exp/ablation.tsv.tmp"
for conf in $confs; do
  name=$(basename "$conf" .conf)
  printf '%s\t%s\n' "$name" \
    "$("$root/scripts/utils/accuracy.sh" "${map[@]}" "$dev_ali" "$exp/ablation_$name/dev.hyp")" \
    >> "$exp/ablation.tsv.tmp"
done
mv "$exp/ablation.tsv.tmp" "$exp/ablation.tsv"
mkdir -p "$exp/figures"
plot=$root/scripts/utils/plot_figures.py
python3 "$plot" fig5 "$exp/dev_grid.tsv" "$exp/figures/fig5_dev_vs_m"
python3 "$plot" fig7 "$exp/ablation.tsv" "$exp/figures/fig7_ablation"
python3 "$plot" emcurve "$exp/figures/em_dev_curve" "$exp"/em_m*/history.tsv
