#!/usr/bin/env python3
"""Cost of the safe writer (rhmmtk.io.output) against plain h5py, as ratios.

    python bench/bench_writer.py [--utts 15000] [--repeats 3]
    python bench/bench_writer.py --smoke      # seconds: 500 utterances, a 48 x 500 x 24 model

Writes a codes archive (int32 utterances of 3..12 values, the shape of NETtalk's) and a
model-like file (48 float64 arrays of --codes x 24, TIMIT's emissions by default):

  plain h5py       h5py.File(path, "w") on the sec2 driver, the archive's three datasets
                   (/data, /keys, /offsets) written at once from arrays already
                   concatenated: the lower bound
  rhmmtk writer    the archive: rhmmtk.io.archive.ArchiveWriter, one add() per utterance;
                   the model: rhmmtk.io.output.write_hdf5 with checksummed datasets.
                   Both: temp file, guarded file object (h5py's fileobj driver), fsync, rename

and prints best-of-repeats wall times (the two interleaved) and ratio = writer / plain.
Timings taken on a loaded shared machine are only meaningful as ratios from the same run.
"""
import h5py
import numpy as np

import options  # bench/options.py: the options every benchmark shares
from rhmmtk.io.archive import ArchiveWriter
from rhmmtk.io.hdf5 import create_checked
from rhmmtk.io.output import write_hdf5
from timing import best_time as best  # bench/timing.py


def archive_data(n, rng):
    return [rng.integers(0, 100, size=int(rng.integers(3, 13)), dtype=np.int32) for _ in range(n)]


def write_archive(f, data):
    """The bound: the archive layout's datasets, written at once."""
    f.create_dataset("data", data=np.concatenate(data))
    f.create_dataset("keys", data=np.array([f"u{i}" for i in range(len(data))], dtype=object),
                     dtype=h5py.string_dtype())
    f.create_dataset("offsets", data=np.concatenate([[0], np.cumsum([len(d) for d in data])]))


def add_utterances(path, data):
    with ArchiveWriter(path, "codes", {}) as w:
        for i, d in enumerate(data):
            w.add(f"u{i}", d)


def write_model(f, arrays, checked):
    for i, a in enumerate(arrays):
        if checked:
            create_checked(f, f"emit/{i}", a)
        else:
            f.create_dataset(f"emit/{i}", data=a)


def main():
    ap = options.parser(__doc__, work=True, seed=0)
    ap.add_argument("--utts", type=options.positive, default=15000)
    ap.add_argument("--codes", type=options.positive, default=10000,
                    help="rows of each of the model's 48 emission arrays (default: %(default)s)")
    args = options.parse(ap, dict(utts=500, codes=500))
    rng = np.random.default_rng(args.seed)
    data = archive_data(args.utts, rng)
    model = [rng.random((args.codes, 24)) for _ in range(48)]     # TIMIT-sized emissions

    with options.work_dir(args, "rhmmtk-bench-writer-") as d:
        p = d / "x.h5"

        def plain_archive():
            with h5py.File(p, "w") as f:
                write_archive(f, data)

        def safe_archive():
            add_utterances(p, data)

        def plain_model():
            with h5py.File(p, "w") as f:
                write_model(f, model, False)

        def safe_model():
            with write_hdf5(p) as f:
                write_model(f, model, True)

        # interleaved, so both sides of a ratio see the same machine load
        rows = []
        for name, n, plain, safe in (("archive", args.utts, plain_archive, safe_archive),
                                     ("model", 48, plain_model, safe_model)):
            a, b = zip(*[(best(plain, 1), best(safe, 1)) for _ in range(args.repeats)])
            rows.append((name, n, min(a), min(b)))
    print(f"{'file':8s} {'datasets':>8s} {'plain h5py (s)':>15s} {'rhmmtk writer (s)':>18s} "
          f"{'ratio':>6s}")
    for name, n, a, b in rows:
        print(f"{name:8s} {n:8d} {a:15.3f} {b:18.3f} {b / a:6.2f}")
    options.write_json(args, [{"file": name, "datasets": n, "plain_s": a, "rhmmtk_s": b,
                               "ratio": b / a} for name, n, a, b in rows])


if __name__ == "__main__":
    main()
