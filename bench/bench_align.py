#!/usr/bin/env python3
"""rhmmtk align on NETtalk's 15,000 seed-1 training words, against a bound.

    python bench/bench_align.py                 # target: the whole alignment < 30 s
    python bench/bench_align.py --smoke         # 1,000 words, 2 iterations (seconds)

The words are read as an unaligned lexicon (NETtalk's '-' removed). Timed (best of
--repeats, in-process, after one warm-up that compiles): building the lattices, EM
(--iters iterations and the final likelihood), Viterbi, and the whole `align`. The
bound of EM is the memory traffic it cannot avoid: each iteration reads every lattice
edge's source, target and chunk id at least once (three int64 arrays), so one pass of
`numpy.sum` over those arrays, measured in the same run, times (iterations + 1) is a
floor; ratio = EM time / that floor (our E-step makes three passes: forward, backward,
counts, so about 3 is the design's own cost).
"""
import argparse
import os
import pathlib
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def best(fn, repeats):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.environ.get(
        "RHMMTK_NETTALK", str(REPO.parent / "shared/data/nettalk/nettalk.data")))
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--smoke", action="store_true", help="1,000 words, 2 iterations, 1 repeat")
    args = ap.parse_args()

    import numpy as np

    from rhmmtk.corpora.nettalk import read_dictionary, split
    from rhmmtk.g2p.align import AlignOptions, Lattices, align, em
    from rhmmtk.io.lexicon import Entry

    train = split(read_dictionary(args.data), seed=1)["train"]
    if args.smoke:
        train, args.iters, args.repeats = train[:1000], 2, 1
    entries = [Entry(w, tuple(p.replace("-", "")), k) for k, (_, w, p) in enumerate(train, 1)]
    pairs = [(tuple(e.word), e.phones) for e in entries]
    align(entries[:50], AlignOptions(iters=1))                 # compile
    t_lat, lat = best(lambda: Lattices(pairs), args.repeats)
    t_em, (p, _) = best(lambda: em(lat, args.iters), args.repeats)
    t_vit, _ = best(lambda: lat.best_cuts(p), args.repeats)
    t_all, _ = best(lambda: align(entries, AlignOptions(iters=args.iters)), args.repeats)
    arrays = (lat.src, lat.dst, lat.chunk)
    t_pass, _ = best(lambda: [np.sum(a) for a in arrays], max(args.repeats, 5))
    floor = t_pass * (args.iters + 1)
    print(f"{len(entries)} words, {len(lat.src)} lattice edges, {len(lat.chunks)} chunk pairs, "
          f"{args.iters} EM iterations")
    print(f"{'step':<12}{'time s':>10}{'bound s':>10}{'ratio':>8}")
    print(f"{'lattices':<12}{t_lat:>10.2f}")
    print(f"{'EM':<12}{t_em:>10.2f}{floor:>10.3f}{t_em / floor:>8.1f}")
    print(f"{'Viterbi':<12}{t_vit:>10.2f}")
    target = "" if args.smoke else f"  (target 30 s: {'met' if t_all < 30 else 'MISSED'})"
    print(f"{'align':<12}{t_all:>10.2f}{target}")


if __name__ == "__main__":
    main()
