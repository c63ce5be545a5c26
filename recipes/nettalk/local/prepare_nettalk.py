#!/usr/bin/env python3
"""NETtalk data preparation: the dictionary -> data/{train,dev,test}/{list,letters,ali}.

The split of paper 002 (15,000 / 1,034 / 3,974 words of its 20,008; our copy of
the dictionary has 20,007 entries, so test gets the remaining 3,973), drawn at
random with a fixed seed and written out as lists, so every system uses the same words.
Utterance ids are `NNNNN_word` (NNNNN the 1-based line number: NETtalk repeats
some spellings with different pronunciations).
  letters: `utt-id l e t t e r s`    ali: `utt-id p h o n e m e s` (one per letter)
"""
import argparse
import os
import sys

import numpy as np

from rhmmtk.errors import InputError
from rhmmtk.io.output import open_output, transaction


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sizes", default="15000,1034",
                    help="train,dev word counts; test takes every remaining word")
    ap.add_argument("data_file")
    ap.add_argument("out_dir")
    args = ap.parse_args()
    entries = []
    with open(args.data_file, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 2:
                sys.exit(f"prepare_nettalk.py: error: {args.data_file}: line {lineno}: "
                         "expected 'word<TAB>phonemes<TAB>stress<TAB>flag'")
            word, phones = parts[0], parts[1]
            if len(word) != len(phones) or not word:
                sys.exit(f"prepare_nettalk.py: error: {args.data_file}: line {lineno}: word and "
                         f"phoneme string differ in length ({word!r}, {phones!r})")
            entries.append((f"{lineno:05d}_{word}", word, phones))
    sizes = [int(s) for s in args.sizes.split(",")]
    if sum(sizes) >= len(entries):
        sys.exit(f"prepare_nettalk.py: error: {args.data_file}: {len(entries)} words, "
                 f"too few for train + dev = {sum(sizes)} and a test set")
    sizes.append(len(entries) - sum(sizes))
    order = np.random.default_rng(args.seed).permutation(len(entries))
    try:
        write_split(entries, order, sizes, args.out_dir)
    except InputError as e:
        sys.exit(f"prepare_nettalk.py: error: {e.describe()}")


def write_split(entries, order, sizes, out_dir):
    """All nine files appear together (rhmmtk's writer: one transaction), so a
    recipe that skips this step when data/test/ali exists never sees half of it."""
    start = 0
    with transaction():
        for name, size in zip(("train", "dev", "test"), sizes):
            idx = sorted(order[start: start + size])
            start += size
            d = os.path.join(out_dir, name)
            os.makedirs(d, exist_ok=True)
            with open_output(f"{d}/list") as fl, open_output(f"{d}/letters") as fx, \
                    open_output(f"{d}/ali") as fa:
                for i in idx:
                    key, word, phones = entries[i]
                    fl.write(key + "\n")
                    fx.write(key + " " + " ".join(word) + "\n")
                    fa.write(key + " " + " ".join(phones) + "\n")
            print(f"{name}: {size} words", file=sys.stderr)


if __name__ == "__main__":
    main()
