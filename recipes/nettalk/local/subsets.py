#!/usr/bin/env python3
"""Nested training subsets: the first N words of one seeded order of the training list.

  subsets.py --seed 1 --sizes "500 1000" data/train data        -> data/train_500/{letters,ali}, ...

Words are drawn in one random order (seeded), so every subset contains the smaller ones
(the training list itself is in dictionary order; its prefixes would be one letter's words).
"""
import argparse
import os

import numpy as np


def read(path):
    with open(path, encoding="utf-8") as f:
        return [line for line in f if line.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sizes", required=True)
    ap.add_argument("train_dir")
    ap.add_argument("out_dir")
    args = ap.parse_args()
    letters = read(os.path.join(args.train_dir, "letters"))
    ali = read(os.path.join(args.train_dir, "ali"))
    assert [l.split()[0] for l in letters] == [a.split()[0] for a in ali]
    order = np.random.default_rng(args.seed).permutation(len(ali))
    for n in map(int, args.sizes.split()):
        if n > len(ali):
            raise SystemExit(f"subsets.py: error: {n} words asked, {len(ali)} in the training set")
        keep = sorted(order[:n])
        d = os.path.join(args.out_dir, f"train_{n}")
        os.makedirs(d, exist_ok=True)
        for name, lines in (("letters", letters), ("ali", ali)):
            with open(os.path.join(d, name), "w", encoding="utf-8") as f:
                f.writelines(lines[i] for i in keep)


if __name__ == "__main__":
    main()
