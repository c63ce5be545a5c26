#!/usr/bin/env bash
# Decode an observations archive in --nj shards and concatenate the alignments:
#
#   scripts/steps/decode.sh [--nj N] [--cmd CMD] [--decode-opts "..."] MODEL OBS OUT
#
#   $cmd JOB=1:nj LOGDIR/decode.NAME.JOB.log rhmmtk decode --job JOB/nj MODEL OBS OUT.JOB
#   cat OUT.1 ... OUT.nj > OUT          (the same as one `rhmmtk decode MODEL OBS OUT`)
#
# LOGDIR is the log/ directory beside OUT, NAME the basename of OUT. An OUT made from the
# same MODEL, OBS and options (OUT.stamp) is kept; one made otherwise is decoded again.
set -euo pipefail
. "$(dirname "$0")/../utils/step_defaults.sh"    # root, nj, cmd
. "$root/scripts/utils/stamp.sh"
decode_opts=""
help_message="Usage: $0 [--nj N] [--cmd CMD] [--decode-opts \"...\"] MODEL OBS OUT"
num_args=3
. "$root/scripts/utils/parse_options.sh"
model=$1
obs=$2
out=$3
logdir=$(dirname "$out")/log
name=$(basename "$out")
mkdir -p "$logdir"
# shellcheck disable=SC2086
text=$(stamp_text rhmmtk decode $decode_opts "$model" "$obs")
stamp_current "$out.stamp" "$text" "$out" && exit 0
# shellcheck disable=SC2086
$cmd JOB=1:"$nj" "$logdir/decode.$name.JOB.log" \
  rhmmtk decode --job JOB/"$nj" $decode_opts "$model" "$obs" "$out.JOB" ||
  { echo "$0: error: decoding $obs failed" >&2; exit 1; }
for j in $(seq "$nj"); do cat "$out.$j"; done > "$out.tmp"
mv "$out.tmp" "$out"
for j in $(seq "$nj"); do rm -f "$out.$j"; done
stamp_write "$out.stamp" "$text"
