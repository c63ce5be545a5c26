#!/usr/bin/env bash
# A Kaldi TIMIT setup into rhmmtk's TIMIT recipe without re-preparing anything.
#
#   examples/kaldi_timit.sh KALDI_TIMIT_S5 [recipes/timit/run.sh options, e.g. --codes 2000]
#
# KALDI_TIMIT_S5 is Kaldi's egs/timit/s5 after its data preparation (data/{train,dev,test},
# data/lang: 48 training phones, no word-position markers) and a per-set alignment (e.g.
# steps/align_fmllr.sh data/$s data/lang exp/tri3 exp/tri3_ali_$s). Kaldi's `sph2pipe ... |`
# wav.scp entries, utt2spk and segments (if any) are read as they are. Then the recipe runs
# from quantisation (stage 2) on.
set -euo pipefail
[ $# -ge 1 ] || { sed -n '2,11p' "$0" >&2; exit 1; }
s5=$(cd "$1"; pwd); shift
cd "$(dirname "$0")/../recipes/timit"
for s in train dev test; do
  mkdir -p data/$s
  rhmmtk validate-data-dir "$s5/data/$s"
  # features: rhmmtk's MFCCs from the data directory (one option of the two) ...
  rhmmtk feats -q --cmvn spk "$s5/data/$s" data/$s/feats.h5
  # ... or Kaldi's own features, speaker-normalised by Kaldi, read through a pipe:
  # rhmmtk copy-feats "ark:apply-cmvn --utt2spk=ark:$s5/data/$s/utt2spk \
  #   scp:$s5/data/$s/cmvn.scp scp:$s5/data/$s/feats.scp ark:- |" data/$s/feats.h5
  # labels: the alignment's phone at every frame, fitted to the features' frame counts
  # (Kaldi's frames and python_speech_features' can differ by one at the end)
  ali=$s5/exp/tri3_ali_$s
  for f in "$ali"/ali.*.gz; do
    ali-to-phones --per-frame=true "$ali/final.mdl" "ark:gunzip -c $f |" ark,t:-
  done | rhmmtk convert-ali -q --from int --symbols "$s5/data/lang/phones.txt" \
    --strip-word-position --features data/$s/feats.h5 - data/$s/ali.48
done
./run.sh --stage 2 "$@"
