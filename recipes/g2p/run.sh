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
# PER and WER are per word: a word with several pronunciations is right when it matches
# any of them, its PER against the closest (score/compare --phonemes --letters).
set -euo pipefail
. "$(dirname "$0")/path.sh"  # recipe, root; checks that rhmmtk is installed
stage=0
stop_stage=100
lexicon=                      # the lexicon to split (or --nettalk FILE)
nettalk=${RHMMTK_NETTALK:-$root/../shared/data/nettalk/nettalk.data}   # the example's dictionary
seed=1
parts=0.75,0.05               # train, dev fractions of the words; test the rest
stress=keep                   # keep|strip stress digits (CMU's AH0)
align_opts="--max-letters 2 --max-phones 2 --iters 10"
train_ali=ours                # ours | hand (--nettalk only)
crf_windows="5 7"             # CRF letter windows tried on dev (train-crf --window; RESULTS)
crf_ngrams="5"                # and longest letter n-grams (train-crf --ngram): a grid of both
crf_algorithm=ap              # averaged perceptron: better on NETtalk's dev and ~10x faster than lbfgs
crf_c2=0.1                    # (lbfgs only)
crf_iters=20
subpat_grid="w7_n5_g-1_o2 w5_n5_g1_o2"   # SUBPAT configurations tried on dev: window, n-gram,
                              # graphone window (-1: none), label order (train-subpat; the
                              # lowest dev PER and WER of RESULTS' grid)
subpat_opts="--iters 12 --seed 1 --patience 3"   # epochs (each scored on dev, best kept), seed
hmm_context=2                 # HMM observations: letters i-K..i+K (make-obs --context)
em_states=32                  # EM: the R-HMM on the HMM's windows (train-em -m), as recipes/nettalk
em_opts="--iters 40 --seed 1 --dev-every 5 --patience 2"   # best dev iteration kept (train-em)
systems="HMM CRF SUBPAT PHONETISAURUS"
exp=exp
. "$recipe/cmd.sh"            # cmd: the job runner (local by default; see cmd.sh for Slurm)
help_message="Usage: $0 (--lexicon FILE | --nettalk FILE) [options]
  --lexicon FILE       pronunciation lexicon (CMU-style or word<TAB>phonemes)
  --nettalk FILE       or: NETtalk's dictionary, split as recipes/nettalk (seed $seed)
                       (default: \$RHMMTK_NETTALK or ../shared/data/nettalk/nettalk.data)
  --seed N --parts TRAIN,DEV   the word split ($seed; $parts)
  --stress keep|strip  ($stress)   --align-opts \"...\" (rhmmtk align: $align_opts)
  --train-ali ours|hand  training labels ($train_ali; hand: NETtalk's own alignment)
  --crf-windows \"...\" --crf-ngrams \"...\"   CRF grid ($crf_windows; $crf_ngrams)
  --crf-algorithm ap|lbfgs --crf-c2 C --crf-iters N   ($crf_algorithm; $crf_c2; $crf_iters)
  --subpat-grid "..."  SUBPAT configurations w<window>_n<ngram>_g<graphone window>_o<label
                       order> ($subpat_grid)   --subpat-opts "..." ($subpat_opts)
  --hmm-context K      ($hmm_context)   --systems \"...\" ($systems; EM adds the R-HMM,
                       decoded both ways: EM_MM max-marginals, EM_VIT best refined path)
  --em-states M --em-opts \"...\"   EM's train-em -m ($em_states) and options ($em_opts)
  --stage N / --stop-stage N   0 data, 1 observations, 2 train + dev, 3 select + test
  --exp DIR            output ($exp)   --cmd CMD  job runner ($cmd)"
path_options="lexicon nettalk exp"
. "$root/scripts/utils/recipe_setup.sh"   # options, stages, stamp, parallel
nettalk=$(realpath -ms -- "$nettalk")       # $RHMMTK_NETTALK: from here too
cd "$recipe"
has() { case " $systems " in *" $1 "*) return 0 ;; esac; return 1; }
if has PHONETISAURUS && { run_stage 2 || run_stage 3; } && ! command -v phonetisaurus > /dev/null
then
  echo "$0: error: phonetisaurus not found: install it (bash $root/scripts/install.sh)" \
    "or leave PHONETISAURUS out of --systems" >&2
  exit 1
fi
data=$exp/data
mkdir -p "$exp/log"
local=local/lexicon_data.py

# SECONDS_FILE [--out F]... OUT LOG COMMAND...: `once`, and when the job ran, its wall
# time in SECONDS_FILE (an output too: redone with the others; $cmd names a failed job's log)
timed() {
  local secs=$1 t0=$SECONDS
  shift
  once --out "$secs" "$@" || exit 1
  [ -f "$secs" ] || echo $((SECONDS - t0)) > "$secs"
}

if run_stage 0; then
  if [ -n "$lexicon" ]; then
    [ -f "$lexicon" ] || { echo "$0: error: lexicon $lexicon not found" >&2; exit 1; }
    [ "$train_ali" = ours ] || { echo "$0: error: --train-ali hand needs --nettalk" >&2; exit 1; }
    stage_begin 0 "split $lexicon by word (seed $seed), align"
    $cmd "$exp/log/split.log" python3 $local split --seed "$seed" --parts "$parts" \
      --stress "$stress" "$lexicon" "$data" ||
      { echo "$0: error: splitting the lexicon failed (see $exp/log/split.log)" >&2; exit 1; }
    # per-letter references of dev and test: the whole lexicon aligned at once
    cat "$data"/{train,dev,test}/lexicon > "$data/all.lexicon"
    once --out "$data/all.letters" "$data/all.ali" "$exp/log/align_all.log" \
      rhmmtk align -q $align_opts "$data/all.lexicon" "$data/all.letters" "$data/all.ali"
    for s in dev test; do
      for f in letters ali; do
        awk 'NR==FNR { w[$1] = 1; next } { k = $1; sub(/\([0-9]+\)$/, "", k) } k in w' \
          "$data/$s/words" "$data/all.$f" > "$data/$s/$f"
      done
    done
  else
    [ -f "$nettalk" ] || { echo "$0: error: give --lexicon FILE (or --nettalk FILE)" >&2; exit 1; }
    stage_begin 0 "NETtalk's seed-$seed split, read as an unaligned lexicon"
    $cmd "$exp/log/prepare.log" python3 "$root/recipes/nettalk/local/prepare_nettalk.py" \
      --seed "$seed" "$nettalk" "$data" ||
      { echo "$0: error: preparing the data failed (see $exp/log/prepare.log)" >&2; exit 1; }
    for s in train dev test; do
      $cmd "$exp/log/from_ali_$s.log" python3 $local from-ali "$data/$s/ali" "$data/$s/lexicon"
      cut -f1 "$data/$s/lexicon" | awk '!seen[$0]++' > "$data/$s/words"
    done
  fi
  echo "  align the training lexicon ($align_opts)"
  timed "$exp/log/align.seconds" --out "$data/train/ours.letters" "$data/train/ours.ali" \
    "$exp/log/align.log" rhmmtk align --skip-duplicates $align_opts "$data/train/lexicon" \
    "$data/train/ours.letters" "$data/train/ours.ali"
  if [ -z "$lexicon" ]; then
    python3 $local agree "$data/train/ali" "$data/train/ours.ali" | tee "$exp/align_agreement.txt"
  fi
fi

if [ "$train_ali" = hand ]; then tr_letters=$data/train/letters; tr_ali=$data/train/ali
else tr_letters=$data/train/ours.letters; tr_ali=$data/train/ours.ali; fi

if run_stage 1; then
  stage_begin 1 "observations (letters; HMM windows +-$hmm_context)"
  once --out "$data/let.syms" "$data/train/let.h5" "$exp/log/make_obs_let_train.log" \
    rhmmtk make-obs -q --write-symbols "$data/let.syms" "$tr_letters" "$data/train/let.h5"
  once --out "$data/win.syms" "$data/train/win.h5" "$exp/log/make_obs_win_train.log" \
    rhmmtk make-obs -q --context "$hmm_context" --min-count 2 --write-symbols "$data/win.syms" \
    "$tr_letters" "$data/train/win.h5"
  for s in dev test; do
    for kind in let win; do
      once "$data/$s/$kind.h5" "$exp/log/make_obs_${kind}_$s.log" \
        rhmmtk make-obs -q --symbols "$data/$kind.syms" "$data/$s/letters" "$data/$s/$kind.h5"
    done
  done
fi

decode() {  # config obs-kind part: exp/config/part.hyp
  local d=$exp/$1
  if [ "$1" = phonetisaurus ]; then
    once "$d/$3.prons" "$d/log/predict_$3.log" \
      bash -c 'phonetisaurus predict --model "$1" < "$2" > "$3"' predict \
      "$d/model.fst" "$data/$3/words" "$d/$3.prons"
    once "$d/$3.hyp" "$d/log/by_utt_$3.log" \
      python3 $local by-utt "$data/$3/letters" "$d/$3.prons" "$d/$3.hyp"
  else
    local how=()            # the R-HMM's two decodings share one model (stage 2)
    case $1 in em*_vit) how=(--rhmm-decode viterbi) ;; em*_mm) how=(--rhmm-decode maxmarginal) ;; esac
    once "$d/$3.hyp" "$d/log/decode_$3.log" rhmmtk decode -q "${how[@]}" "$d/final.h5" \
      "$data/$3/$2.h5" "$d/$3.hyp"
  fi || exit 1              # $cmd has named the failed job's log
}
configs=()   # "system config obs-kind"

if has HMM; then configs+=("HMM hmm win"); fi
if has EM; then configs+=("EM_MM em${em_states}_mm win" "EM_VIT em${em_states}_vit win"); fi
if has CRF; then
  for w in $crf_windows; do for n in $crf_ngrams; do configs+=("CRF crf_w${w}_n$n let"); done; done
fi
if has SUBPAT; then for g in $subpat_grid; do configs+=("SUBPAT subpat_$g let"); done; fi
if has PHONETISAURUS; then configs+=("PHONETISAURUS phonetisaurus -"); fi

if run_stage 2; then
  stage_begin 2 "train, decode dev: ${configs[*]}"
  for c in "${configs[@]}"; do
    read -r system config kind <<< "$c"
    d=$exp/$config
    case $system in
      HMM) timed "$d/train_s" "$d/final.h5" "$d/log/train.log" rhmmtk train-em -m 1 --iters 0 \
             "$data/train/win.h5" "$tr_ali" "$d/final.h5" ;;
      EM_MM) timed "$d/train_s" "$d/final.h5" "$d/log/train.log" rhmmtk train-em \
               -m "$em_states" $em_opts --dev-obs "$data/dev/win.h5" --dev-ali "$data/dev/ali" \
               "$data/train/win.h5" "$tr_ali" "$d/final.h5" ;;
      EM_VIT) mkdir -p "$d"   # EM_MM's model (configs list EM_MM first)
              ln -sf "../em${em_states}_mm/final.h5" "$d/final.h5"
              cp "$exp/em${em_states}_mm/train_s" "$d/train_s" ;;
      CRF) wn=${config#crf_w}
           timed "$d/train_s" "$d/final.h5" "$d/log/train.log" rhmmtk train-crf \
             --window "${wn%_n*}" --ngram "${wn#*_n}" --algorithm "$crf_algorithm" \
             --c2 "$crf_c2" --iters "$crf_iters" "$data/train/let.h5" \
             "$tr_ali" "$d/final.h5" ;;
      SUBPAT) IFS=_ read -r w n g o <<< "${config#subpat_}"
              timed "$d/train_s" "$d/final.h5" "$d/log/train.log" rhmmtk train-subpat \
                --window "${w#w}" --ngram "${n#n}" --graphone-window "${g#g}" \
                --label-order "${o#o}" $subpat_opts --dev-obs "$data/dev/let.h5" \
                --dev-ali "$data/dev/ali" --history "$d/history.tsv" "$data/train/let.h5" \
                "$tr_ali" "$d/final.h5" ;;
      PHONETISAURUS) timed "$d/train_s" "$d/model.fst" "$d/log/train.log" phonetisaurus train \
                       --model "$d/model.fst" "$data/train/lexicon" ;;
    esac
    decode "$config" "$kind" dev
    echo "  $config trained in $(cat "$d/train_s") s"
  done
fi

per_of() {  # part hyp: PER WER, per word (--letters)
  rhmmtk score -q --phonemes --letters "$data/$1/letters" --json "$data/$1/ali" "$2" |
    python3 "$root/scripts/utils/json_field.py" per wer
}

if run_stage 3; then
  stage_begin 3 "choose on dev (PER), decode test once"
  printf 'system\tconfig\tdev_per\tdev_wer\n' > "$exp/dev_grid.tsv"
  for c in "${configs[@]}"; do
    read -r system config kind <<< "$c"
    printf '%s\t%s\t%s\n' "$system" "$config" "$(per_of dev "$exp/$config/dev.hyp" | tr ' ' '\t')" \
      >> "$exp/dev_grid.tsv"
  done
  printf 'system\tconfig\tdev_per\ttest_per\ttest_wer\ttest_letter_acc\ttrain_s\n' > "$exp/results.tsv"
  for system in $(tail -n +2 "$exp/dev_grid.tsv" | cut -f1 | awk '!seen[$0]++'); do
    # the lowest dev PER; ties go to the first configuration in the grid
    IFS=$'\t' read -r config dev_per < <(awk -F'\t' -v s="$system" 'NR == 1 || $1 == s' \
      "$exp/dev_grid.tsv" | "$root/scripts/utils/select_best.sh" --lower dev_per config,dev_per -)
    kind=$(printf '%s\n' "${configs[@]}" | awk -v c="$config" '$2 == c { print $3 }')
    decode "$config" "$kind" test
    read -r per wer < <(per_of test "$exp/$config/test.hyp")
    acc=-
    [ "$system" = PHONETISAURUS ] || acc=$(rhmmtk score -q --json "$data/test/ali" \
      "$exp/$config/test.hyp" | python3 "$root/scripts/utils/json_field.py" position_accuracy)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$system" "$config" "$dev_per" "$per" "$wer" "$acc" \
      "$(cat "$exp/$config/train_s")" >> "$exp/results.tsv"
  done
  column -t -s$'\t' "$exp/results.tsv"
  # our best on dev: the lowest dev PER of the toolkit's systems (ties: the first row)
  best_ours=$(awk -F'\t' 'NR == 1 || $1 != "PHONETISAURUS"' "$exp/results.tsv" |
              "$root/scripts/utils/select_best.sh" --lower dev_per config -)
  if has PHONETISAURUS && [ -n "$best_ours" ]; then
    rhmmtk compare -q --phonemes --letters "$data/test/letters" "$data/test/ali" \
      "$exp/$best_ours/test.hyp" \
      "$exp/phonetisaurus/test.hyp" > "$exp/compare.txt"
    echo "our best on dev ($best_ours) vs Phonetisaurus, test (A = ours):"
    grep -E '^(A|B|A-B|Bootstrap):' "$exp/compare.txt"
  fi
fi
stage_end
echo "[$(date +%T)] done"
