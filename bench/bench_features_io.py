#!/usr/bin/env python3
"""Benchmark: reading frame features from Kaldi and HTK files against rhmmtk's own archives.

Synthetic features the shape of TIMIT's (`--utts` utterances of 150-450 frames x 39
float32 dims; default 1000 utterances, about 0.3M frames) are written as an rhmmtk archive,
a Kaldi ark + scp and HTK parameter files (rhmmtk copy-feats' writers). Each source is then
read whole through rhmmtk.io.features.open_features -- what `quantize learn/apply` do -- and
the time compared with a lower bound measured in the same run: np.fromfile of each
utterance's float32 values, in turn, from one raw file holding them (the copying and
allocation no reader can avoid; every file is in the page cache after writing, as on a
second read). Sources are timed round-robin, best of
`--repeats`, so the machine's load affects them alike.

  python bench/bench_features_io.py               # 1000 utterances
  python bench/bench_features_io.py --utts 4000   # about TIMIT's training set
  python bench/bench_features_io.py --smoke       # seconds: 20 utterances
"""
import os
import platform
import time

import numpy as np

import options  # bench/options.py: the options every benchmark shares


def make(work, utts, dim, seed):
    from rhmmtk.io.archive import ArchiveWriter
    from rhmmtk.io.features import copy_features

    rng = np.random.default_rng(seed)
    mats = {f"spk{i // 10:03d}_utt{i:05d}": rng.standard_normal(
        (int(rng.integers(150, 451)), dim)).astype(np.float32) for i in range(utts)}
    h5 = os.path.join(work, "feats.h5")
    with ArchiveWriter(h5, "features", {"created_by": "bench"},
                       attrs={"dim": dim, "frame_shift": 0.01}) as w:
        for k, x in mats.items():
            w.add(k, x)
    copy_features(h5, f"ark,scp:{work}/feats.ark,{work}/feats.scp")
    copy_features(h5, f"htk:{work}/htk")
    raw = os.path.join(work, "raw.f32")
    np.concatenate(list(mats.values())).tofile(raw)
    sizes = [x.size for x in mats.values()]
    return h5, raw, sizes


def read_raw(raw, sizes):
    """The bound: each utterance's float32 values read from one raw file into a new array."""
    n = 0
    with open(raw, "rb") as f:
        for s in sizes:
            n += len(np.fromfile(f, np.float32, s))
    return n


def read_all(spec):
    from rhmmtk.io.features import open_features

    n = 0
    with open_features(spec) as r:
        for _, x in r.items():
            n += len(x)
    return n


def main():
    ap = options.parser(__doc__, repeats=5, work=True, seed=0)
    ap.add_argument("--utts", type=options.positive, default=1000)
    ap.add_argument("--dim", type=options.positive, default=39)
    args = options.parse(ap, dict(utts=20))
    import logging

    logging.getLogger("rhmmtk").setLevel(logging.WARNING)
    with options.work_dir(args, "rhmmtk-bench-features-") as work:
        h5, raw, sizes = make(work, args.utts, args.dim, args.seed)
        frames = sum(sizes) // args.dim
        import kaldiio

        cases = {
            "lower bound: np.fromfile per utterance": lambda: read_raw(raw, sizes),
            "rhmmtk archive (HDF5)": lambda: read_all(h5),
            "Kaldi ark:": lambda: read_all(f"ark:{work}/feats.ark"),
            "Kaldi scp:": lambda: read_all(f"scp:{work}/feats.scp"),
            "Kaldi 'ark:cat feats.ark |'": lambda: read_all(f"ark:cat {work}/feats.ark |"),
            "HTK htk:feats.scp": lambda: read_all(f"htk:{work}/htk/feats.scp"),
            "(kaldiio.load_ark alone)": lambda: sum(
                len(x) for _, x in kaldiio.load_ark(f"{work}/feats.ark")),
        }
        best = {k: np.inf for k in cases}
        for f in cases.values():
            f()                                            # warm the page cache
        for _ in range(args.repeats):
            for k, f in cases.items():
                t = time.perf_counter()
                f()
                best[k] = min(best[k], time.perf_counter() - t)
    lb, own = best["lower bound: np.fromfile per utterance"], best["rhmmtk archive (HDF5)"]
    mb = frames * args.dim * 4 / 1e6
    print(f"# {args.utts} utterances, {frames} frames x {args.dim} float32 ({mb:.0f} MB); "
          f"best of {args.repeats}; {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores (shared, loaded)")
    print(f"{'source':40s} {'seconds':>9s} {'/ bound':>9s} {'/ rhmmtk':>9s}")
    for k, t in best.items():
        print(f"{k:40s} {t:9.4f} {t / lb:9.1f} {t / own:9.2f}")
    options.write_json(args, {"utterances": args.utts, "frames": frames, "dim": args.dim,
                              "repeats": args.repeats, "seconds": best})


if __name__ == "__main__":
    main()
