#!/usr/bin/env bash
# Choose every system's configuration on dev (scripts/utils/select_best.sh), then decode
# and score the test set once:
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
parallel=1
decode_opts=
help_message="Usage: $0 [--nj N] [--cmd CMD] [--mapping FILE] [--parallel N] [--decode-opts \"...\"] EXP DEV_ALI TEST_OBS TEST_ALI \"CONFIG ...\"
  --parallel N   each system's test decoding in nj x N shards on this machine ($parallel)
  --decode-opts  \`rhmmtk decode\` options of the test decodings (as the dev ones were made)"
num_args=5
. "$root/scripts/utils/parse_options.sh"
. "$root/scripts/utils/parallel.sh"
parallel_check "$parallel"
exp=$1 dev_ali=$2 test_obs=$3 test_ali=$4 configs=$5
map=(${mapping:+--mapping "$mapping"})
acc() { "$root/scripts/utils/accuracy.sh" "${map[@]}" "$@"; }

mkdir -p "$exp/log"
for c in $configs; do
  [ -f "$exp/$c/dev.hyp" ] || { echo "$0: error: $exp/$c/dev.hyp missing" >&2; exit 1; }
done
# every configuration's dev accuracy from one `rhmmtk score` (one start-up, not one each)
hyps=()
for c in $configs; do hyps+=("$exp/$c/dev.hyp"); done
mapfile -t dev_accs < <(acc "$dev_ali" "${hyps[@]}")
[ "${#dev_accs[@]}" -eq "${#hyps[@]}" ] || { echo "$0: error: scoring the dev grid failed" >&2; exit 1; }
i=0
{
  printf 'system\tconfig\tm\tdev_acc\n'
  for c in $configs; do
    sys=$(echo "${c%%_m*}" | tr '[:lower:]' '[:upper:]')
    m=$(echo "$c" | sed -nE 's/.*_m([0-9]+).*/\1/p')
    printf '%s\t%s\t%s\t%s\n' "$sys" "$c" "${m:-1}" "${dev_accs[$i]}"
    i=$((i + 1))
  done
} > "$exp/dev_grid.tsv.tmp"
mv "$exp/dev_grid.tsv.tmp" "$exp/dev_grid.tsv"

systems=$(awk -F'\t' 'NR > 1 && !seen[$1]++ {print $1}' "$exp/dev_grid.tsv")
selected() {  # system -> "config m dev_acc": the best dev accuracy; ties go to the first
  awk -F'\t' -v s="$1" 'NR == 1 || $1 == s' "$exp/dev_grid.tsv" |
    "$root/scripts/utils/select_best.sh" dev_acc config,m,dev_acc - | tr '\t' ' '
}
test_line() {  # system -> EXP/config/test_line (system m dev_acc test_acc)
  local config m dacc
  read -r config m dacc < <(selected "$1")
  "$root/scripts/steps/decode.sh" --decode-opts "$decode_opts" --nj "$((nj * parallel))" --cmd "$cmd" "$exp/$config/final.h5" \
    "$test_obs" "$exp/$config/test.hyp"
  printf '%s\t%s\t%s\t%s\n' "$1" "$m" "$dacc" "$(acc "$test_ali" "$exp/$config/test.hyp")" \
    > "$exp/$config/test_line"
}
# One system at a time, each over nj x parallel shards: the selected systems' decoding
# costs differ by 100x (SPECTRAL(32) vs UNIGRAM), so N systems at once would leave the
# largest alone on one core at the end (NETtalk: 80 s of a 114 s stage).
for sys in $systems; do test_line "$sys"; done
: > "$exp/log/selection.log"
printf 'system\tm\tdev_acc\ttest_acc\n' > "$exp/results.tsv.tmp"
for sys in $systems; do
  read -r config _ < <(selected "$sys")
  cat "$exp/$config/test_line" >> "$exp/results.tsv.tmp"
  echo "$sys: selected $config on dev" >> "$exp/log/selection.log"
done
mv "$exp/results.tsv.tmp" "$exp/results.tsv"
em=$(awk '/^EM:/ {print $3}' "$exp/log/selection.log")
sp=$(awk '/^SPECTRAL:/ {print $3}' "$exp/log/selection.log")
if [ -n "$em" ] && [ -n "$sp" ]; then
  rhmmtk compare "${map[@]}" "$test_ali" "$exp/$sp/test.hyp" "$exp/$em/test.hyp" \
    > "$exp/compare_spectral_em.txt" 2> "$exp/log/compare.log"
fi
