#!/usr/bin/env python3
"""Where a frame tagger's phone errors come from: its label runs against the reference's.

Usage: local/segment_errors.py [--mapping MAP] REF HYP...
  e.g. local/segment_errors.py --mapping exp/map_48_39.txt data/test/ali.48 \\
           exp/em_m32/test.hyp exp/spectral_m32_c30/test.hyp

For each HYP (after the label mapping, as `rhmmtk score` folds them), one line of
tab-separated figures:
  per, I, D, S      the phone error rate and its insertions, deletions, substitutions
                    (rhmmtk score's HResults alignment)
  runs, runs1-3     the hypothesis' runs of one label, and those of 1, 2, 3 positions
  spurious          runs with no position right (the label is nowhere under them in REF)
  spurious_short    of them, runs of at most 3 positions
  at_boundary       spurious runs that touch a reference label change (within 1 position)
  missed            reference runs with no position labelled right
The reference itself is the first line. Frame accuracy barely sees a spurious run of one
or two positions, but each costs the phone error rate one insertion or more
(recipes/timit/RESULTS_timitsize).
"""
import argparse
import sys

import numpy as np

FIELDS = ("per", "I", "D", "S", "runs", "runs1", "runs2", "runs3", "spurious",
          "spurious_short", "at_boundary", "missed")


def run_bounds(y):
    """Starts and ends (exclusive) of the runs of equal labels of array y."""
    cut = np.flatnonzero(np.concatenate(([True], y[1:] != y[:-1], [True])))
    return cut[:-1], cut[1:]


def run_stats(r, y):
    """Counts of FIELDS[4:] for reference ids r and hypothesis ids y of one utterance."""
    starts, ends = run_bounds(y)
    lengths = ends - starts
    changes = np.flatnonzero(r[1:] != r[:-1]) + 1      # first position of each new ref run
    spurious = np.array([not np.any(r[a:b] == y[a]) for a, b in zip(starts, ends)], bool)
    touch = np.array([np.any((changes >= a - 1) & (changes <= b + 1))
                      for a, b in zip(starts, ends)], bool)
    rs, re_ = run_bounds(r)
    missed = sum(not np.any(y[a:b] == r[a]) for a, b in zip(rs, re_))
    return np.array([len(lengths), (lengths == 1).sum(), (lengths == 2).sum(),
                     (lengths == 3).sum(), spurious.sum(), (spurious & (lengths <= 3)).sum(),
                     (spurious & touch).sum(), missed], dtype=np.int64)


def segment_errors(ref, hyp, mapping=None):
    """FIELDS -> value for alignment dicts `ref` and `hyp` (utterance -> labels)."""
    from rhmmtk.scoring import encode, paired_keys, score

    keys = paired_keys(ref, [hyp])
    seg = score(ref, hyp, mapping=mapping).segments
    _, (r, y), (off, _) = encode([ref, hyp], keys, mapping)
    counts = sum(run_stats(r[a:b], y[a:b]) for a, b in zip(off[:-1], off[1:]))
    return dict(zip(FIELDS, [round(seg.per, 2), seg.I, seg.D, seg.S] + counts.tolist()))


def main(argv=None):
    from rhmmtk.errors import InputError
    from rhmmtk.io.labelmap import read_label_map
    from rhmmtk.io.text import read_alignment

    ap = argparse.ArgumentParser(prog="segment_errors.py", description=__doc__.splitlines()[0])
    ap.add_argument("--mapping", help="label mapping, `from to` per line (rhmmtk score's)")
    ap.add_argument("ref")
    ap.add_argument("hyps", nargs="+")
    args = ap.parse_args(argv)
    try:
        mapping = read_label_map(args.mapping) if args.mapping else None
        ref = read_alignment(args.ref)
        print("\t".join(("system",) + FIELDS))
        for name, hyp in [("reference", ref)] + [(h, read_alignment(h)) for h in args.hyps]:
            row = segment_errors(ref, hyp, mapping)
            print("\t".join([name] + [str(row[f]) for f in FIELDS]))
    except (InputError, OSError) as e:
        print(f"segment_errors.py: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
