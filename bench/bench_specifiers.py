#!/usr/bin/env python3
"""Benchmark: Kaldi archives written and read through the specifier resolvers, against the
writer copy-feats had before them and against raw I/O of the same bytes.

Synthetic features the shape of TIMIT's (`--utts` utterances of 150-450 frames x 39
float32; default 1000, about 0.3M frames) and per-frame integer alignments of the same
lengths. Timed, round-robin, best of `--repeats` (every file is in the page cache):

  write, features   raw: each utterance's Kaldi record bytes (made in advance) written
                    in turn to one file and flushed to disk -- the bound; before: copy-feats' former writer
                    (kaldiio.save_ark of each matrix into a buffer, written through
                    rhmmtk.io.output); resolver: rhmmtk.io.features.open_feature_writer
                    with `ark:F`, `ark,scp:F,S` and `ark:| cat > F`
  write, codes      raw; resolver: open_codes_writer `ark:F` (Kaldi integer vectors)
  read, features    raw: np.fromfile of each utterance's float32 values from one raw file
                    -- the bound; resolver: open_features `ark:F` and `scp:S`
  read, alignments  raw: the same ints by np.fromfile; resolver: read_int_vectors `ark:F`

  python bench/bench_specifiers.py                 # 1000 utterances
  python bench/bench_specifiers.py --work /dev/shm/rb  # memory only: the writers' own cost
  python bench/bench_specifiers.py --smoke         # 20 utterances, 1 repeat: it runs
"""
import contextlib
import io
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import options  # bench/options.py: the options every benchmark shares


def make(utts, dim, seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(150, 451, utts)
    mats = {f"spk{i // 10:03d}_utt{i:05d}": rng.standard_normal((int(n), dim)).astype(
        np.float32) for i, n in enumerate(lengths)}
    ali = {k: rng.integers(1, 60, len(x)).astype(np.int32) for k, x in mats.items()}
    return mats, ali


def write_raw(path, records):
    """The bound: the same bytes written and flushed to disk, as any writer whose file is
    complete or absent must (rhmmtk.io.output fsyncs before renaming)."""
    with open(path, "wb") as f:
        for r in records:
            f.write(r)
        f.flush()
        os.fsync(f.fileno())


def write_before(path, mats):
    """copy-feats' Kaldi writer as it was (rhmmtk.io.features.KaldiWriter before the
    resolver): kaldiio into a buffer per utterance, written through rhmmtk.io.output."""
    import kaldiio

    from rhmmtk.io.output import open_output, transaction

    with transaction(), open_output(path, binary=True) as f:
        for k, x in mats.items():
            buf = io.BytesIO()
            kaldiio.save_ark(buf, {k: np.asarray(x, np.float32)})
            f.write(buf.getvalue())


def write_resolver(spec, mats, codes=False):
    from rhmmtk.io.features import open_feature_writer
    from rhmmtk.io.output import transaction
    from rhmmtk.io.specifiers import open_codes_writer

    with transaction():
        w = open_codes_writer(spec, {}, {}, {}) if codes else \
            open_feature_writer(spec, {"created_by": "bench"})
        with w:
            for k, x in mats.items():
                w.add(k, x)


def read_raw(path, sizes, dtype):
    n = 0
    with open(path, "rb") as f:
        for s in sizes:
            n += len(np.fromfile(f, dtype, s))
    return n


def read_features(spec):
    from rhmmtk.io.features import open_features

    with open_features(spec) as r:
        return sum(len(x) for _, x in r.items())


def read_ints(spec):
    from rhmmtk.io.specifiers import read_int_vectors

    return sum(len(v) for v in read_int_vectors(spec).values())


def cases(work, mats, ali):
    from rhmmtk.io.specifiers import int_vector_bytes, matrix_bytes

    w = lambda name: os.path.join(work, name)        # noqa: E731
    feat_records = [k.encode() + b" " + matrix_bytes(x) for k, x in mats.items()]
    code_records = [k.encode() + b" " + int_vector_bytes(v) for k, v in ali.items()]
    np.concatenate(list(mats.values())).tofile(w("raw.f32"))
    np.concatenate(list(ali.values())).tofile(w("raw.i32"))
    fsizes = [x.size for x in mats.values()]
    isizes = [len(v) for v in ali.values()]
    write_resolver(f"ark,scp:{w('r.ark')},{w('r.scp')}", mats)      # what the reads read
    write_resolver(f"ark:{w('a.ark')}", ali, codes=True)
    return {
        "write, features": {
            "raw (bound)": lambda: write_raw(w("raw.ark"), feat_records),
            "before: copy-feats' writer": lambda: write_before(w("b.ark"), mats),
            "resolver ark:F": lambda: write_resolver(f"ark:{w('o.ark')}", mats),
            "resolver ark,scp:F,S": lambda: write_resolver(f"ark,scp:{w('o.ark')},{w('o.scp')}",
                                                           mats),
            "resolver 'ark:| cat > F'": lambda: write_resolver(f"ark:| cat > {w('c.ark')}",
                                                               mats),
        },
        "write, codes": {
            "raw (bound)": lambda: write_raw(w("rawc.ark"), code_records),
            "resolver ark:F": lambda: write_resolver(f"ark:{w('oc.ark')}", ali, codes=True),
        },
        "read, features": {
            "raw (bound)": lambda: read_raw(w("raw.f32"), fsizes, np.float32),
            "resolver ark:F": lambda: read_features(f"ark:{w('r.ark')}"),
            "resolver scp:S": lambda: read_features(f"scp:{w('r.scp')}"),
        },
        "read, alignments": {
            "raw (bound)": lambda: read_raw(w("raw.i32"), isizes, np.int32),
            "resolver ark:F": lambda: read_ints(f"ark:{w('a.ark')}"),
        },
    }


def main():
    ap = options.parser(__doc__, repeats=5, work=True, seed=0)
    ap.add_argument("--utts", type=options.positive, default=1000,
                    help="utterances (default: %(default)s)")
    ap.add_argument("--dim", type=options.positive, default=39,
                    help="feature dimension (default: %(default)s)")
    args = options.parse(ap, dict(utts=20))
    import logging

    logging.getLogger("rhmmtk").setLevel(logging.WARNING)
    mats, ali = make(args.utts, args.dim, args.seed)
    frames = sum(len(x) for x in mats.values())
    with options.work_dir(args, "rhmmtk-bench-specifiers-") as work, contextlib.chdir(work):
        groups = cases(str(work), mats, ali)
        best = {g: {k: np.inf for k in c} for g, c in groups.items()}
        for c in groups.values():
            for f in c.values():
                f()                                        # warm up
        for _ in range(args.repeats):
            for g, c in groups.items():
                for k, f in c.items():
                    t = time.perf_counter()
                    f()
                    best[g][k] = min(best[g][k], time.perf_counter() - t)
    print(f"# {args.utts} utterances, {frames} frames x {args.dim} float32 "
          f"({frames * args.dim * 4 / 1e6:.0f} MB); best of {args.repeats}; "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores")
    print(f"{'case':48s} {'seconds':>9s} {'/ bound':>9s}")
    for g, times in best.items():
        lb = times["raw (bound)"]
        for k, t in times.items():
            print(f"{g + ': ' + k:48s} {t:9.4f} {t / lb:9.2f}")
    before = best["write, features"]["before: copy-feats' writer"]
    now = best["write, features"]["resolver ark:F"]
    print(f"resolver ark:F / copy-feats' former writer: {now / before:.2f}")
    options.write_json(args, {"utterances": args.utts, "frames": frames, "seconds": best,
                              "resolver_over_former_writer": now / before})


if __name__ == "__main__":
    main()
