#!/usr/bin/env python3
"""G2P recipe data: thin calls into rhmmtk.g2p.

  lexicon_data.py split [--seed N] [--parts TRAIN,DEV] [--stress keep|strip] LEXICON DATA_DIR
      split by word (all pronunciations of a word in one part): DATA_DIR/{train,dev,test}/
      {lexicon,words}
  lexicon_data.py from-ali ALI LEXICON
      per-letter labels (NETtalk's hand alignment) -> the unaligned lexicon they spell
  lexicon_data.py by-utt LETTERS PRONS OUT
      `word P1 P2 ...` lines (Phonetisaurus' output) -> `utt-id P1 P2 ...` for every
      utterance of LETTERS (utt-id l e t t e r s); a word without one gets `<none>`
  lexicon_data.py agree HAND_ALI OURS_ALI
      how often two alignments of the same lexicon label a letter alike (entries paired
      by word and phonemes; NETtalk's ids `NNNNN_word`, ours `word(N)`)
"""
import argparse
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("split")
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--parts", default="0.75,0.05")
    s.add_argument("--stress", default="keep")
    s.add_argument("lexicon")
    s.add_argument("out_dir")
    f = sub.add_parser("from-ali")
    f.add_argument("ali")
    f.add_argument("lexicon")
    b = sub.add_parser("by-utt")
    b.add_argument("letters")
    b.add_argument("prons")
    b.add_argument("out")
    a = sub.add_parser("agree")
    a.add_argument("hand")
    a.add_argument("ours")
    args = ap.parse_args()

    from rhmmtk.errors import InputError
    from rhmmtk.io.output import transaction

    try:
        with transaction():
            run(args)
    except InputError as e:
        sys.exit(f"lexicon_data.py: error: {e.describe()}")


def run(args):
    from rhmmtk.g2p.labels import phonemes
    from rhmmtk.g2p.split import split_file
    from rhmmtk.io.lexicon import write_lexicon
    from rhmmtk.io.output import open_output
    from rhmmtk.io.text import read_alignment, read_table, split_lines

    if args.what == "split":
        counts = split_file(args.lexicon, args.out_dir,
                            [float(x) for x in args.parts.split(",")], args.seed,
                            args.stress, skip_duplicates=True)
        for name, (words, entries) in counts.items():
            print(f"{name}: {words} words, {entries} pronunciations", file=sys.stderr)
    elif args.what == "agree":
        agree(read_alignment(args.hand), read_alignment(args.ours), phonemes)
    elif args.what == "from-ali":
        ali = read_alignment(args.ali)
        write_lexicon(args.lexicon, [(k.split("_", 1)[-1], phonemes(v)) for k, v in ali.items()])
    else:
        prons = {parts[0]: parts[1:] for _, parts in split_lines(args.prons)}
        with open_output(args.out) as f:
            for utt, letters in read_table(args.letters).items():
                f.write(" ".join([utt, *(prons.get("".join(letters)) or ["<none>"])]) + "\n")


def agree(hand, ours, phonemes):
    def by_entry(ali, word_of):
        return {(word_of(k), tuple(phonemes(v))): v for k, v in ali.items()}

    h = by_entry(hand, lambda k: k.split("_", 1)[-1])
    o = by_entry(ours, lambda k: k.split("(")[0])
    both = [key for key in o if key in h]
    same = [sum(a == b for a, b in zip(h[key], o[key])) for key in both]
    letters = sum(len(h[key]) for key in both)
    print(f"{len(both)} entries: {100 * sum(same) / letters:.2f}% of {letters} letters and "
          f"{100 * sum(s == len(h[k]) for s, k in zip(same, both)) / len(both):.2f}% of the "
          "entries labelled alike")


if __name__ == "__main__":
    main()
