#!/usr/bin/env python3
"""Kaldi's monophone GMM-HMM (Kaldi's own code, PyPI kaldi-hmm-gmm) on the recipe's features.

Usage: local/kaldi_gmm.py train [options] FEATS ALI MODEL
       local/kaldi_gmm.py decode [options] MODEL FEATS HYP

train: steps/train_mono.sh's schedule from the transcriptions in ALI (runs of its frame
labels; Kaldi finds the boundaries itself), writes MODEL and prints its info as JSON.
decode: mkgraph.sh's HCLG over the model's phone bigram, Kaldi's lattice decoder at
acoustic scale 1/LMWT; HYP is a frame alignment (`utt phone ...`) for rhmmtk score.
The work is done by rhmmtk.peers.kaldi_gmm (train_files, decode_files).
"""
import argparse
import json
import shlex
import sys


def main(argv=None):
    from rhmmtk.peers.kaldi_gmm import DecodeOptions, MonoOptions

    ap = argparse.ArgumentParser(prog="kaldi_gmm.py", description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[2:]))
    sub = ap.add_subparsers(dest="step", required=True)
    tr = sub.add_parser("train", help="train_mono.sh")
    mono = MonoOptions()
    for name, help_ in (("num_iters", "training passes"),
                        ("max_iter_inc", "Gaussians grow in passes 1..N"),
                        ("totgauss", "target total number of Gaussians"),
                        ("power", "gmm-est --power"), ("lm_smooth", "add-k of the phone bigram")):
        default = getattr(mono, name)
        tr.add_argument("--" + name.replace("_", "-"), type=type(default), default=default,
                        help=f"{help_} (default: %(default)s)")
    for a in ("feats", "ali", "model"):
        tr.add_argument(a)
    de = sub.add_parser("decode", help="mkgraph.sh + decode.sh at one LMWT and penalty")
    dec = DecodeOptions()
    for name, help_ in (("lm_weight", "LMWT: the acoustic scale is 1/LMWT"),
                        ("insertion_penalty", "cost added per phone (score.sh's word_ins_penalty)"),
                        ("beam", "decoder beam"), ("lattice_beam", "lattice beam"),
                        ("max_active", "most active states per frame")):
        default = getattr(dec, name)
        de.add_argument("--" + name.replace("_", "-"), type=type(default), default=default,
                        help=f"{help_} (default: %(default)s)")
    for a in ("model", "feats", "hyp"):
        de.add_argument(a)
    args = vars(ap.parse_args(argv))
    print("# " + shlex.join(["kaldi_gmm.py", *(sys.argv[1:] if argv is None else argv)]),
          file=sys.stderr)

    from rhmmtk.errors import InputError
    from rhmmtk.progress import setup_logging
    from rhmmtk.peers import kaldi_gmm

    setup_logging("kaldi_gmm")
    step = args.pop("step")
    try:
        if step == "train":
            files = [args.pop(a) for a in ("feats", "ali", "model")]
            info = kaldi_gmm.train_files(*files, MonoOptions(**args))
            print(json.dumps(info))
        else:
            files = [args.pop(a) for a in ("model", "feats", "hyp")]
            kaldi_gmm.decode_files(*files, DecodeOptions(**args))
    except InputError as e:
        sys.exit(f"kaldi_gmm.py: error: {e.describe()}")


if __name__ == "__main__":
    main()
