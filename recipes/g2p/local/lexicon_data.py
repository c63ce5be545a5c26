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
    elif args.what == "from-ali":
        ali = read_alignment(args.ali)
        write_lexicon(args.lexicon, [(k.split("_", 1)[-1], phonemes(v)) for k, v in ali.items()])
    else:
        prons = {parts[0]: parts[1:] for _, parts in split_lines(args.prons)}
        with open_output(args.out) as f:
            for utt, letters in read_table(args.letters).items():
                f.write(" ".join([utt, *(prons.get("".join(letters)) or ["<none>"])]) + "\n")


if __name__ == "__main__":
    main()
