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
  lexicon_data.py errors [--train-letters LETTERS] REF_ALI HYP_ALI
      where a tagger's per-letter errors fall (what separates per-letter accuracy from
      WER): wrong words by their number of wrong letters, error rates at the first,
      inner and last letters, and (with the training letters) on letters whose +-2
      window was or was not seen in training
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
    e = sub.add_parser("errors")
    e.add_argument("--train-letters")
    e.add_argument("ref")
    e.add_argument("hyp")
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
    elif args.what == "errors":
        train = read_table(args.train_letters) if args.train_letters else None
        errors(read_alignment(args.ref), read_alignment(args.hyp), train)
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


def windows(letters, k=2):
    """The +-k letter window of every letter ('<b>' beyond the word), as tuples."""
    pad = ["<b>"] * k + list(letters) + ["<b>"] * k
    return [tuple(pad[i:i + 2 * k + 1]) for i in range(len(letters))]


def errors(ref, hyp, train=None):
    import collections

    seen = {w for v in (train or {}).values() for w in windows(v)}
    wrong_words = collections.Counter()
    at = collections.defaultdict(lambda: [0, 0])     # where -> [errors, letters]
    for k, r in ref.items():
        h = hyp.get(k, [])
        bad = [a != b for a, b in zip(r, h)] + [True] * (len(r) - len(h))
        wrong_words[min(sum(bad), 3)] += 1
        for i, b in enumerate(bad):
            where = "first" if i == 0 else "last" if i == len(r) - 1 else "inner"
            for key in (where, "all"):
                at[key][0] += b
                at[key][1] += 1
        if train is not None:
            for w, b in zip(windows(k.split("_", 1)[-1]), bad):
                key = "window seen" if w in seen else "window unseen"
                at[key][0] += b
                at[key][1] += 1
    n = len(ref)
    print(f"words {n}: right {100 * wrong_words[0] / n:.2f}%, wrong with 1 / 2 / 3+ wrong "
          "letters: " + " / ".join(f"{100 * wrong_words[i] / n:.2f}%" for i in (1, 2, 3)))
    for key in ("all", "first", "inner", "last", "window seen", "window unseen"):
        if key in at:
            e, t = at[key]
            print(f"{key}: {100 * e / t:.2f}% of {t} letters wrong")


if __name__ == "__main__":
    main()
