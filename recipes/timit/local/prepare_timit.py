#!/usr/bin/env python3
"""TIMIT data preparation: a TIMIT root -> data/{train,dev,test}/ (wav.scp, utt2spk, ali.48, ...).

Usage: local/prepare_timit.py [options] TIMIT_ROOT DATA_DIR
  e.g. local/prepare_timit.py --dev-size 200 /corpora/LDC93S1/TIMIT data

train = TRAIN sx+si; test = the 24 core test speakers' sx+si; dev = the 50
development speakers' sx+si (or a speaker-balanced --dev-size subset); SA never.
Alignments give one label per 10 ms frame of `rhmmtk feats` (the phone at each
frame's centre): ali.48 for training, ali.39 for scoring; phone segments
(`segments`, with seg.48/seg.39 references) for phone classification. Speaker lists and the
61 -> 48 -> 39 map come from --conf (default: the recipe's conf/). The work is
done by rhmmtk.corpora.timit.prepare.
"""
import argparse
import os
import shlex
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="prepare_timit.py", description=__doc__.splitlines()[0],
                                 epilog="\n".join(__doc__.splitlines()[2:4]),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--conf", default=os.path.join(os.path.dirname(HERE), "conf"),
                    help="folder with core_test_spk.txt, dev_spk.txt, phones.60-48-39.map "
                         "(default: %(default)s)")
    ap.add_argument("--dev-size", type=int, default=None,
                    help="keep this many dev utterances, balanced over speakers "
                         "(the core paper used 200; default: all)")
    ap.add_argument("--seed", type=int, default=0, help="which --dev-size subset (default: 0)")
    ap.add_argument("--sample-rate", type=int, default=16000,
                    help="expected sample rate in Hz (default: %(default)s)")
    ap.add_argument("--frame-length", type=float, default=25.0,
                    help="ms; must match rhmmtk feats (default: %(default)s)")
    ap.add_argument("--frame-shift", type=float, default=10.0,
                    help="ms; must match rhmmtk feats (default: %(default)s)")
    ap.add_argument("timit_root")
    ap.add_argument("data_dir")
    args = ap.parse_args(argv)
    print("# " + shlex.join(["prepare_timit.py", *(sys.argv[1:] if argv is None else argv)]),
          file=sys.stderr)

    from rhmmtk.errors import InputError
    from rhmmtk.progress import setup_logging
    from rhmmtk.corpora.timit import prepare

    setup_logging("prepare_timit")
    try:
        summary = prepare(args.timit_root, args.data_dir, args.conf, dev_size=args.dev_size,
                          seed=args.seed, sample_rate=args.sample_rate,
                          frame_length=args.frame_length, frame_shift=args.frame_shift)
    except InputError as e:
        sys.exit(f"prepare_timit.py: error: {e.describe()}")
    for name, (utts, frames, segs) in summary.items():
        print(f"{name}: {utts} utterances, {frames} frames, {segs} phone segments",
              file=sys.stderr)


if __name__ == "__main__":
    main()
