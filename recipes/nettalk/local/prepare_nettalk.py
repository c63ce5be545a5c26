#!/usr/bin/env python3
"""NETtalk data preparation: the dictionary -> data/{train,dev,test}/{list,letters,ali}.

Usage: local/prepare_nettalk.py [--seed N] [--sizes TRAIN,DEV] [--if-changed] DATA_FILE DATA_DIR

Paper 002's split (15,000 / 1,034 words, test the rest), drawn with a fixed seed, and its
record DATA_DIR/split.txt (the entries' md5, seed and sizes). --if-changed keeps DATA_DIR
when its record says it already holds this split. The work is done by
rhmmtk.corpora.nettalk.prepare.
"""
import argparse
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sizes", default="15000,1034",
                    help="train,dev word counts; test takes every remaining word")
    ap.add_argument("--if-changed", action="store_true",
                    help="keep DATA_DIR if its split.txt records this split")
    ap.add_argument("data_file")
    ap.add_argument("out_dir")
    args = ap.parse_args()

    from rhmmtk.corpora.nettalk import prepare
    from rhmmtk.errors import InputError

    try:
        counts = prepare(args.data_file, args.out_dir,
                         [int(s) for s in args.sizes.split(",")], args.seed,
                         if_changed=args.if_changed)
    except InputError as e:
        sys.exit(f"prepare_nettalk.py: error: {e.describe()}")
    if counts is None:
        print(f"{args.out_dir} holds this split already (seed {args.seed}, sizes "
              f"{args.sizes}): kept", file=sys.stderr)
        return
    for name, n in counts.items():
        print(f"{name}: {n} words", file=sys.stderr)


if __name__ == "__main__":
    main()
