#!/usr/bin/env bash
# Choose every system's configuration on dev, then decode and score the test set once:
#
#   scripts/steps/select_test.sh [options] EXP DEV_ALI TEST_OBS TEST_ALI "CONFIG ..."
#
# Each CONFIG is a directory EXP/CONFIG holding final.h5 and dev.hyp (its dev decoding).
# Its system is the CONFIG name before the first `_m` (or the whole name), upper-cased,
# and its m the number after `_m` (1 if none): em_m4 -> EM, m = 4;
# spectral_m24_c30 -> SPECTRAL, m = 24. Writes
#   EXP/dev_grid.tsv   system config m dev_acc, every configuration
#   EXP/results.tsv    system m dev_acc test_acc, the dev-best configuration per system
#                      (ties: the first in CONFIG order), in order of first appearance
#   EXP/log/selection.log, EXP/compare_spectral_em.txt (paired significance, when both run)
set -euo pipefail
. "$(dirname "$0")/../utils/step_defaults.sh"    # root, nj, cmd
mapping=
help_message="Usage: $0 [--nj N] [--cmd CMD] [--mapping FILE] EXP DEV_ALI TEST_OBS TEST_ALI \"CONFIG ...\""
num_args=5
. "$root/scripts/utils/parse_options.sh"
exp=$1 dev_ali=$2 test_obs=$3 test_ali=$4 configs=$5
map=(${mapping:+--mapping "$mapping"})
acc() { "$root/scripts/utils/accuracy.sh" "${map[@]}" "$1" "$2"; }

mkdir -p "$exp/log"
{
  printf 'system\tconfig\tm\tdev_acc\n'
  for c in $configs; do
    [ -f "$exp/$c/dev.hyp" ] || { echo "$0: error: $exp/$c/dev.hyp missing" >&2; exit 1; }
    sys=$(echo "${c%%_m*}" | tr '[:lower:]' '[:upper:]')
    m=$(echo "$c" | sed -nE 's/.*_m([0-9]+).*/\1/p')
    printf '%s\t%s\t%s\t%s\n' "$sys" "$c" "${m:-1}" "$(acc "$dev_ali" "$exp/$c/dev.hyp")"
  done
} > "$exp/dev_grid.tsv.tmp"
mv "$exp/dev_grid.tsv.tmp" "$exp/dev_grid.tsv"

: > "$exp/log/selection.log"
printf 'system\tm\tdev_acc\ttest_acc\n' > "$exp/results.tsv.tmp"
for sys in $(awk -F'\t' 'NR > 1 && !seen[$1]++ {print $1}' "$exp/dev_grid.tsv"); do
  # the best dev accuracy; ties go to the first configuration (the smaller m)
  read -r config m dacc < <(awk -F'\t' -v s="$sys" '$1 == s {print $2, $3, $4}' \
                            "$exp/dev_grid.tsv" | sort -s -k3,3gr | head -n 1)
  d=$exp/$config
  "$root/scripts/steps/decode.sh" --nj "$nj" --cmd "$cmd" "$d/final.h5" "$test_obs" "$d/test.hyp"
  printf '%s\t%s\t%s\t%s\n' "$sys" "$m" "$dacc" "$(acc "$test_ali" "$d/test.hyp")" \
    >> "$exp/results.tsv.tmp"
  echo "$sys: selected $config on dev" >> "$exp/log/selection.log"
done
mv "$exp/results.tsv.tmp" "$exp/results.tsv"
em=$(awk '/^EM:/ {print $3}' "$exp/log/selection.log")
sp=$(awk '/^SPECTRAL:/ {print $3}' "$exp/log/selection.log")
if [ -n "$em" ] && [ -n "$sp" ]; then
  rhmmtk compare "${map[@]}" "$test_ali" "$exp/$sp/test.hyp" "$exp/$em/test.hyp" \
    > "$exp/compare_spectral_em.txt" 2> "$exp/log/compare.log"
fi
