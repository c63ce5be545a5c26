#!/usr/bin/env python3
"""A synthetic corpus with a known answer, in the TIMIT recipe's layout or a bare one.

Usage: local/make_synthetic.py [options] OUT_DIR
  e.g. local/make_synthetic.py --recipe-layout --frames 66600 --dev-frames 50000 \\
           --test-frames 50000 --seed 7 --repeat 0.2 data
       (then ./run.sh --stage 3 --stop-stage 7 --parallel 2)

With --recipe-layout: OUT_DIR/{train,dev,test}/{obs.h5,ali.48}, what stages 3-8 of
run.sh read. Without it: OUT_DIR/{obs.h5,ali,templates.conf} (and OUT_DIR/dev/ with
--dev-frames), what the benchmarks use. The generator (phones, durations, the hidden
thirds, codes, voices, coarticulation, repeats) is described in, and the work done by,
rhmmtk.corpora.synthetic.
"""
import argparse
import sys
from dataclasses import fields


def main(argv=None):
    from rhmmtk.corpora.synthetic import SyntheticOptions, make_corpus
    from rhmmtk.errors import InputError

    d = SyntheticOptions()
    ap = argparse.ArgumentParser(prog="make_synthetic.py", description=__doc__.splitlines()[0],
                                 epilog="\n".join(__doc__.splitlines()[2:6]),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frames", type=int, default=d.frames,
                    help="positions (of train with --recipe-layout; default: %(default)s)")
    ap.add_argument("--codes", type=int, default=d.codes,
                    help="observation symbols n, >= 1500 (default: %(default)s)")
    ap.add_argument("--seed", type=int, default=d.seed, help="(default: %(default)s)")
    ap.add_argument("--dev-frames", type=int, default=d.dev_frames,
                    help="positions of the held-out set OUT_DIR/dev (default: none)")
    ap.add_argument("--dev-utterances", type=int, default=d.dev_utterances,
                    help="keep only the first N utterances of the dev draw (paper 000's dev "
                         "set: 200); train and test are the same as without it "
                         "(default: all)")
    ap.add_argument("--test-frames", type=int, default=d.test_frames,
                    help="with --recipe-layout: positions of OUT_DIR/test")
    ap.add_argument("--states", type=int, default=d.states,
                    help="hidden states per phone: parts of its duration (default: %(default)s)")
    ap.add_argument("--voices", type=int, default=d.voices,
                    help="each utterance in one of this many voices, each mapping a share "
                         "(--voice-change) of the codes to others (default: %(default)s)")
    ap.add_argument("--voice-change", type=float, default=d.voice_change,
                    help="share of the codes each voice maps to other codes "
                         "(default: %(default)s)")
    ap.add_argument("--context", type=float, default=d.context,
                    help="coarticulation: share of the codes each neighbouring phone maps to "
                         "others in a phone's first part (the predecessor) and last part "
                         "(the successor) (default: %(default)s)")
    ap.add_argument("--context-parts", default=d.context_parts,
                    help="which parts --context maps: first, last or both (default)")
    ap.add_argument("--repeat", type=float, default=d.repeat,
                    help="probability that a position repeats the previous position's code "
                         "(default: %(default)s)")
    ap.add_argument("--recipe-layout", action="store_true",
                    help="OUT_DIR/{train,dev,test}/{obs.h5,ali.48}, as run.sh's stages 3-8 "
                         "read them")
    ap.add_argument("out_dir")
    args = ap.parse_args(argv)
    opts = SyntheticOptions(**{f.name: getattr(args, f.name) for f in fields(SyntheticOptions)})
    try:
        for line in make_corpus(args.out_dir, opts):
            print(line, file=sys.stderr)
    except InputError as e:
        sys.exit(f"make_synthetic.py: error: {e.describe()}")


if __name__ == "__main__":
    main()
