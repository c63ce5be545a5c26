#!/usr/bin/env python3
"""rhmmtk align on NETtalk's 15,000 seed-1 training words, against a bound.

    python bench/bench_align.py                 # target: the whole alignment < 30 s
    python bench/bench_align.py --smoke         # 1,000 words, 2 iterations (seconds)
    python bench/bench_align.py --words 5000 --json align.json

The words are read as an unaligned lexicon (NETtalk's '-' removed). Timed (best of
--repeats, in-process, after one warm-up that compiles): building the lattices, EM
(--iters iterations and the final likelihood), Viterbi, and the whole `align`. The
bound of EM is the memory traffic it cannot avoid: each iteration reads every lattice
edge's source, target and chunk id at least once (three int64 arrays), so one pass of
`numpy.sum` over those arrays, measured in the same run, times (iterations + 1) is a
floor; ratio = EM time / that floor (our E-step makes three passes: forward, backward,
counts, so about 3 is the design's own cost).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import options  # bench/options.py: the options every benchmark shares
from timing import REPO, best_of

sys.path.insert(0, str(REPO))


def main():
    ap = options.parser(__doc__, nettalk=15000)
    ap.add_argument("--iters", type=options.positive, default=10,
                    help="EM iterations (default: %(default)s)")
    args = options.parse(ap, dict(words=1000, iters=2))

    import numpy as np

    from rhmmtk.corpora.nettalk import read_dictionary, split
    from rhmmtk.g2p.align import AlignOptions, Lattices, align, em
    from rhmmtk.io.lexicon import Entry

    with options.work_dir(args, "rhmmtk-bench-align-") as work:
        data = options.nettalk_data(args, work)
        train = split(read_dictionary(data), options.nettalk_sizes(args.words), seed=1)["train"]
    entries = [Entry(w, tuple(p.replace("-", "")), k) for k, (_, w, p) in enumerate(train, 1)]
    pairs = [(tuple(e.word), e.phones) for e in entries]
    align(entries[:50], AlignOptions(iters=1))                 # compile
    best = lambda fn, n: best_of(fn, n)[::2]                   # (seconds, result)
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
    options.write_json(args, {"words": len(entries), "edges": len(lat.src),
                              "chunks": len(lat.chunks), "iters": args.iters,
                              "lattices_s": t_lat, "em_s": t_em, "em_bound_s": floor,
                              "em_ratio": t_em / floor, "viterbi_s": t_vit, "align_s": t_all})


if __name__ == "__main__":
    main()
