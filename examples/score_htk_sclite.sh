#!/usr/bin/env bash
# Score rhmmtk output with HTK's HResults and NIST's sclite (when installed), beside
# rhmmtk's own HResults-style `rhmmtk score`.
#
#   examples/score_htk_sclite.sh REF.ali HYP.ali [FRAME_SHIFT_SECONDS]
#   e.g. examples/score_htk_sclite.sh recipes/timit/data/test/ali.48 \
#          recipes/timit/exp/em_m4/test.hyp 0.01
#
# REF and HYP are rhmmtk alignments (one label per frame). Each run of one label becomes
# one HTK label / CTM word, so HResults and sclite score label sequences (phone error
# rates), while `rhmmtk score` also gives per-frame accuracy.
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,10p' "$0" >&2; exit 1; }
ref=$1 hyp=$2 shift=${3:-0.01}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

rhmmtk score "$ref" "$hyp"

# HTK: reference labels as *.lab, hypotheses as *.rec, and the list of labels
rhmmtk convert-ali -q --to mlf --mlf-ext lab --frame-shift "$shift" "$ref" "$tmp/ref.mlf"
rhmmtk convert-ali -q --to mlf --frame-shift "$shift" "$hyp" "$tmp/hyp.mlf"
cut -d' ' -f2- "$ref" "$hyp" | tr ' ' '\n' | sort -u > "$tmp/labels.list"
if command -v HResults > /dev/null; then
  HResults -I "$tmp/ref.mlf" "$tmp/labels.list" "$tmp/hyp.mlf"
else
  echo "(HResults not found; would run: HResults -I ref.mlf labels.list hyp.mlf)" >&2
fi

# sclite: both sides as CTM (file channel start duration label)
rhmmtk convert-ali -q --to ctm --frame-shift "$shift" "$ref" "$tmp/ref.ctm"
rhmmtk convert-ali -q --to ctm --frame-shift "$shift" "$hyp" "$tmp/hyp.ctm"
if command -v sclite > /dev/null; then
  sclite -r "$tmp/ref.ctm" ctm -h "$tmp/hyp.ctm" ctm -o sum stdout
else
  echo "(sclite not found; would run: sclite -r ref.ctm ctm -h hyp.ctm ctm -o sum stdout)" >&2
fi
