#!/usr/bin/env bash
# Grapheme-to-phoneme from a pronunciation lexicon, beside Phonetisaurus: split by word
# (seeded; every pronunciation of a word in one part), align the training lexicon
# (rhmmtk align), train the toolkit's taggers and Phonetisaurus on the same words,
# choose each system's configuration on dev by PER, decode test once.
# Output: exp/results.tsv (system config dev_per test_per test_wer test_letter_acc
# train_s), exp/dev_grid.tsv, exp/compare.txt (our best vs Phonetisaurus, paired tests).
#
#   recipes/g2p/run.sh --lexicon cmudict.dict --stress strip    # any lexicon
#   recipes/g2p/run.sh --nettalk FILE    # NETtalk's seed-1 split (run.sh's), read unaligned
#
# With --nettalk, NETtalk's hand alignment is the per-letter reference of dev and test
# (the test_letter_acc column), and --train-ali hand trains on it instead of ours.
# Otherwise the per-letter reference is rhmmtk align run on the whole lexicon, and
# test_letter_acc says how often a tagger's labels are that alignment's.
# PER and WER are per pronunciation (a word with two is scored against each).
set -euo pipefail
cd "$(dirname "$0")"
. ./path.sh                   # root, nettalk (the example's dictionary), stage, stop_stage
lexicon=                      # the lexicon to split (or --nettalk FILE)
seed=1
parts=0.75,0.05               # train, dev fractions of the words; test the rest
stress=keep                   # keep|strip stress digits (CMU's AH0)
align_opts="--max-letters 2 --max-phones 2 --iters 10"
train_ali=ours                # ours | hand (--nettalk only)
crf_windows="3 5"             # CRF letter windows tried on dev (train-crf --window; 5 best on NETtalk, RESULTS)
crf_c2=0.1
crf_iters=100
hmm_context=2                 # HMM observations: letters i-K..i+K (make-obs --context)
systems="HMM CRF PHONETISAURUS"
exp=exp
help_message="Usage: $0 (--lexicon FILE | --nettalk FILE) [options]
  --lexicon FILE       pronunciation lexicon (CMU-style or word<TAB>phonemes)
  --nettalk FILE       or: NETtalk's dictionary, split as recipes/nettalk (seed $seed)
  --seed N --parts TRAIN,DEV   the word split ($seed; $parts)
  --stress keep|strip  ($stress)   --align-opts \"...\" (rhmmtk align: $align_opts)
  --train-ali ours|hand  training labels ($train_ali; hand: NETtalk's own alignment)
  --crf-windows \"...\" --crf-c2 C --crf-iters N   ($crf_windows; $crf_c2; $crf_iters)
  --hmm-context K      ($hmm_context)   --systems \"...\" ($systems)
  --stage N / --stop-stage N   0 data, 1 observations, 2 train + dev, 3 select + test
  --exp DIR            output ($exp)"
. "$root/scripts/utils/parse_options.sh"
run_stage() { [ "$stage" -le "$1" ] && [ "$stop_stage" -ge "$1" ]; }
has() { case " $systems " in *" $1 "*) return 0 ;; esac; return 1; }
stamp() { echo "[$(date +%T)] $* (${SECONDS}s)"; }
data=$exp/data
mkdir -p "$exp/log"
local=local/lexicon_data.py

if run_stage 0; then
  if [ -n "$lexicon" ]; then
    [ -f "$lexicon" ] || { echo "$0: error: lexicon $lexicon not found" >&2; exit 1; }
    [ "$train_ali" = ours ] || { echo "$0: error: --train-ali hand needs --nettalk" >&2; exit 1; }
    stamp "stage 0: split $lexicon by word (seed $seed), align"
    python3 $local split --seed "$seed" --parts "$parts" --stress "$stress" "$lexicon" "$data"
    # per-letter references of dev and test: the whole lexicon aligned at once
    cat "$data"/{train,dev,test}/lexicon > "$data/all.lexicon"
    rhmmtk align -q $align_opts "$data/all.lexicon" "$data/all.letters" "$data/all.ali"
    for s in dev test; do
      for f in letters ali; do
        awk 'NR==FNR { w[$1] = 1; next } { k = $1; sub(/\([0-9]+\)$/, "", k) } k in w' \
          "$data/$s/words" "$data/all.$f" > "$data/$s/$f"
      done
    done
  else
    [ -f "$nettalk" ] || { echo "$0: error: give --lexicon FILE (or --nettalk FILE)" >&2; exit 1; }
    stamp "stage 0: NETtalk's seed-$seed split, read as an unaligned lexicon"
    python3 "$root/recipes/nettalk/local/prepare_nettalk.py" --seed "$seed" "$nettalk" "$data"
    for s in train dev test; do
      python3 $local from-ali "$data/$s/ali" "$data/$s/lexicon"
      cut -f1 "$data/$s/lexicon" | awk '!seen[$0]++' > "$data/$s/words"
    done
  fi
  stamp "stage 0: align the training lexicon ($align_opts)"
  SECONDS_ALIGN=$SECONDS
  rhmmtk align --skip-duplicates $align_opts "$data/train/lexicon" "$data/train/ours.letters" \
    "$data/train/ours.ali" 2> "$exp/log/align.log"
  echo $((SECONDS - SECONDS_ALIGN)) > "$exp/log/align.seconds"
  if [ -z "$lexicon" ]; then
    python3 $local agree "$data/train/ali" "$data/train/ours.ali" | tee "$exp/align_agreement.txt"
  fi
fi

if [ "$train_ali" = hand ]; then tr_letters=$data/train/letters; tr_ali=$data/train/ali
else tr_letters=$data/train/ours.letters; tr_ali=$data/train/ours.ali; fi

if run_stage 1; then
  stamp "stage 1: observations (letters; HMM windows +-$hmm_context)"
  rhmmtk make-obs -q --write-symbols "$data/let.syms" "$tr_letters" "$data/train/let.h5"
  rhmmtk make-obs -q --context "$hmm_context" --min-count 2 --write-symbols "$data/win.syms" \
    "$tr_letters" "$data/train/win.h5"
  for s in dev test; do
    rhmmtk make-obs -q --symbols "$data/let.syms" "$data/$s/letters" "$data/$s/let.h5"
    rhmmtk make-obs -q --symbols "$data/win.syms" "$data/$s/letters" "$data/$s/win.h5"
  done
fi

timed() {  # config command...: run, logging to exp/config/log, seconds to exp/config/train_s
  local config=$1 t0=$SECONDS; shift
  mkdir -p "$exp/$config/log"
  "$@" 2> "$exp/$config/log/train.log" ||
    { echo "$0: error: $config failed; see $exp/$config/log/train.log" >&2; exit 1; }
  echo $((SECONDS - t0)) > "$exp/$config/train_s"
}
decode() {  # config obs-kind part: exp/config/part.hyp
  if [ "$1" = phonetisaurus ]; then
    phonetisaurus predict --model "$exp/$1/model.fst" < "$data/$3/words" > "$exp/$1/$3.prons" \
      2> "$exp/$1/log/predict_$3.log"
    python3 $local by-utt "$data/$3/letters" "$exp/$1/$3.prons" "$exp/$1/$3.hyp"
  else
    rhmmtk decode -q "$exp/$1/final.h5" "$data/$3/$2.h5" "$exp/$1/$3.hyp"
  fi
}
configs=()   # "system config obs-kind"

if has HMM; then configs+=("HMM hmm win"); fi
if has CRF; then for w in $crf_windows; do configs+=("CRF crf_w$w let"); done; fi
if has PHONETISAURUS; then configs+=("PHONETISAURUS phonetisaurus -"); fi

if run_stage 2; then
  stamp "stage 2: train, decode dev: ${configs[*]}"
  for c in "${configs[@]}"; do
    read -r system config kind <<< "$c"
    if [ ! -f "$exp/$config/train_s" ]; then
      case $system in
        HMM) timed "$config" rhmmtk train-em -m 1 --iters 0 "$data/train/win.h5" "$tr_ali" \
               "$exp/$config/final.h5" ;;
        CRF) timed "$config" rhmmtk train-crf --window "${config#crf_w}" --c2 "$crf_c2" \
               --iters "$crf_iters" "$data/train/let.h5" "$tr_ali" "$exp/$config/final.h5" ;;
        PHONETISAURUS) timed "$config" phonetisaurus train --model "$exp/$config/model.fst" \
                         "$data/train/lexicon" ;;
      esac
    fi
    decode "$config" "$kind" dev
    stamp "  $config trained in $(cat "$exp/$config/train_s") s"
  done
fi

per_of() { rhmmtk score -q --phonemes --json "$1" "$2" | python3 "$root/scripts/utils/json_field.py" per wer; }

if run_stage 3; then
  stamp "stage 3: choose on dev (PER), decode test once"
  printf 'system\tconfig\tdev_per\tdev_wer\n' > "$exp/dev_grid.tsv"
  for c in "${configs[@]}"; do
    read -r system config kind <<< "$c"
    printf '%s\t%s\t%s\n' "$system" "$config" "$(per_of "$data/dev/ali" "$exp/$config/dev.hyp" | tr ' ' '\t')" \
      >> "$exp/dev_grid.tsv"
  done
  printf 'system\tconfig\tdev_per\ttest_per\ttest_wer\ttest_letter_acc\ttrain_s\n' > "$exp/results.tsv"
  best_ours= ; best_per=
  for system in $(tail -n +2 "$exp/dev_grid.tsv" | cut -f1 | awk '!seen[$0]++'); do
    read -r config dev_per < <(awk -F'\t' -v s="$system" '$1 == s' "$exp/dev_grid.tsv" |
                               sort -t$'\t' -k3,3g | head -1 | cut -f2,3)
    kind=$(printf '%s\n' "${configs[@]}" | awk -v c="$config" '$2 == c { print $3 }')
    decode "$config" "$kind" test
    read -r per wer < <(per_of "$data/test/ali" "$exp/$config/test.hyp")
    acc=-
    [ "$system" = PHONETISAURUS ] || acc=$(rhmmtk score -q --json "$data/test/ali" \
      "$exp/$config/test.hyp" | python3 "$root/scripts/utils/json_field.py" position_accuracy)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$system" "$config" "$dev_per" "$per" "$wer" "$acc" \
      "$(cat "$exp/$config/train_s")" >> "$exp/results.tsv"
    if [ "$system" != PHONETISAURUS ] &&
       { [ -z "$best_per" ] || awk -v a="$dev_per" -v b="$best_per" 'BEGIN { exit !(a < b) }'; }; then
      best_ours=$config; best_per=$dev_per
    fi
  done
  column -t -s$'\t' "$exp/results.tsv"
  if has PHONETISAURUS && [ -n "$best_ours" ]; then
    rhmmtk compare -q --phonemes "$data/test/ali" "$exp/$best_ours/test.hyp" \
      "$exp/phonetisaurus/test.hyp" > "$exp/compare.txt"
    echo "our best on dev ($best_ours) vs Phonetisaurus, test (A = ours):"
    grep -E '^(A|B|A-B|Bootstrap):' "$exp/compare.txt"
  fi
fi
stamp done
