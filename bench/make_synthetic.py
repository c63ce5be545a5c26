#!/usr/bin/env python3
"""TIMIT-size synthetic skeletal sequences: a codes archive and a label alignment.

  python bench/make_synthetic.py OUTDIR                       # 1.1M frames, l=39, n=10,000
  python bench/make_synthetic.py --frames 100000 --seed 2 OUTDIR

Writes OUTDIR/obs.h5 (`codes` archive, symbols "0".."n-1", as `rhmmtk quantize apply`
makes them), OUTDIR/ali (`utt-id label label ...`, one label per frame), with
--dev-frames a held-out set from the same generator in OUTDIR/dev/, and
OUTDIR/templates.conf (the TIMIT recipe's template set: neighbouring labels and codes,
previous/next phone types, runs, position in the phone).

With --recipe-layout it writes instead what stages 3-8 of recipes/timit/run.sh read:
OUTDIR/{train,dev,test}/{obs.h5,ali.48} (dev and test from the same generator,
--dev-frames and --test-frames positions), e.g. to see whether the spectral estimator
beats EM on frames whose codes are independent given the phone and its third, and what
making neighbouring codes dependent does (--repeat; docs/SPECTRAL_DIAGNOSIS.md):

  python bench/make_synthetic.py --recipe-layout --frames 66600 --dev-frames 50000 \
      --test-frames 50000 --seed 7 --repeat 0.2 recipes/timit/data
  (cd recipes/timit && ./run.sh --stage 3 --stop-stage 7 --parallel 2)

A fast stand-in for an R-HMM with realistic label runs, sampled with vectorised numpy
(about 2 s for 1.1M frames):
  - phones: 39 labels (TIMIT's folded set); every utterance starts and ends with `sil`;
    the phone sequence is a first-order Markov chain over a random sparse bigram table
    (about a third of the bigrams allowed, no self-loops), with Zipf-like phone
    frequencies;
  - durations: 1 + Poisson(mean_a - 1) frames per phone, mean_a drawn in [4, 14]
    (TIMIT phones average about 8 frames of 10 ms);
  - hidden state: beginning, middle or end third of the phone (3 refinements per label;
    --states k: k parts, part = k * offset // duration, so the first part is never
    shorter than the last and phones shorter than k frames lack some), which the codes
    depend on;
  - codes: each (phone, state) emits from its own Zipf distribution over a random set of
    1,500 of the n codes (85%), or uniformly from all n codes (15%), so phones share
    codes as quantised speech frames do;
  - --voices V: each utterance in one of V voices, each of which maps a share of the
    codes (--voice-change) to other codes, as speakers move some frames to other codes;
  - --context share: coarticulation, a phone's first part mapped (a share of its codes to
    others) by its predecessor, its last part by its successor (--context-parts: one
    of them only);
  - --repeat rho: a frame repeats the previous frame's code with probability rho;
  - utterance lengths: uniform in [200, 400] frames (mean 300), cut at phone boundaries
    where possible, until the frame budget is reached (3,667 utterances for 1.1M frames;
    TIMIT's training set has 3,696).
"""
import argparse
import os
import sys
import time

import numpy as np

PHONES = ("aa ae ah aw ay b ch d dh dx eh er ey f g hh ih iy jh k l m n ng ow oy p r s sh "
          "sil t th uh uw v w y z").split()

TEMPLATES = """\
# The TIMIT recipe's templates (current label and code; neighbouring labels and codes;
# previous and next phone types; runs; position in the phone). Conjoined with a_i.
future   x[0]
future   a[+1]
future   x[+1]
future   np
future   runend
past     a[-1]
past     x[-1]
past     pp
past     runstart
present  x[0]
destiny  a[-1]
destiny  a[+1]
destiny  x[-1]
destiny  x[+1]
destiny  pp
destiny  np
destiny  pos
"""


def make_world(n, rng, support=1500, states=3):
    """The generator's parameters: phone bigrams, durations, emissions."""
    l = len(PHONES)
    sil = PHONES.index("sil")
    # segment-level phone bigrams: sparse, no self-loops, Zipf-like popularity
    popularity = 1.0 / np.arange(1, l + 1) ** 0.7
    popularity = popularity[rng.permutation(l)]
    allowed = rng.random((l, l)) < 0.33
    allowed[np.arange(l), rng.integers(0, l, size=l)] = True
    np.fill_diagonal(allowed, False)
    allowed[:, sil] = True
    allowed[sil, :] = True
    allowed[sil, sil] = False
    big = allowed * popularity[None, :] * rng.gamma(1.0, 1.0, size=(l, l))
    zipf = 1.0 / np.arange(1, support + 1)
    return {"cum_big": np.cumsum(big / big.sum(1, keepdims=True), axis=1),
            "mean_dur": rng.uniform(4, 14, size=l),
            # emissions per (phone, state): Zipf weights over `support` random codes
            "emit_codes": np.stack([rng.choice(n, size=support, replace=False)
                                    for _ in range(l * states)]),
            "cum_zipf": np.cumsum(zipf / zipf.sum()), "support": support, "states": states,
            "n": n}


def generate(world, frames, rng):
    """(list of label arrays, list of code arrays) with about `frames` positions in all."""
    sil = PHONES.index("sil")
    cum_big, mean_dur = world["cum_big"], world["mean_dur"]
    emit_codes, cum_zipf = world["emit_codes"], world["cum_zipf"]
    support, states, n = world["support"], world["states"], world["n"]
    # 1. phone segments: a Markov chain long enough for every frame (vectorised in blocks)
    seg_lab = [sil]
    total = 0
    need = frames + 1000
    while total < need:
        k = max(1000, int((need - total) / 8) + 1000)
        u = rng.random(k)
        labs = np.empty(k, dtype=np.int64)
        prev = seg_lab[-1]
        for i in range(k):                     # one step per segment (~140k for 1.1M frames)
            prev = int(np.searchsorted(cum_big[prev], u[i] * cum_big[prev, -1], side="right"))
            labs[i] = prev
        seg_lab.extend(labs.tolist())
        seg = np.asarray(seg_lab)
        dur = 1 + rng.poisson(mean_dur[seg] - 1)
        total = int(dur.sum())
    seg = np.asarray(seg_lab)
    dur = 1 + rng.poisson(mean_dur[seg] - 1)
    # 2. frames: label, offset in the phone, hidden state (begin/middle/end third)
    A = np.repeat(seg, dur)
    starts = np.cumsum(dur) - dur
    offset = np.arange(len(A)) - np.repeat(starts, dur)
    H = np.minimum(states * offset // np.repeat(dur, dur), states - 1)
    # 3. utterances: cut near [200, 400]-frame targets, at a phone boundary when one is near
    seg_end = np.cumsum(dur)
    cuts, pos = [], 0
    while pos < frames:
        want = pos + int(rng.integers(200, 401))
        j = np.searchsorted(seg_end, want)
        cut = int(seg_end[j]) if j < len(seg_end) and seg_end[j] - want < 20 else want
        cut = min(cut, len(A))
        cuts.append(cut)
        pos = cut
    A, H = A[:pos].copy(), H[:pos]
    bounds = np.array([0] + cuts)
    A[bounds[:-1]] = sil                       # utterances start and end with silence
    A[bounds[1:] - 1] = sil
    # 4. codes: Zipf over the (phone, state)'s support, or uniform noise
    N = len(A)
    group = A * states + H
    ranks = np.minimum(np.searchsorted(cum_zipf, rng.random(N) * cum_zipf[-1]), support - 1)
    X = emit_codes[group, ranks]
    if world.get("context") is not None:
        # coarticulation: a phone's first part sounds partly like its predecessor's
        # context, its last part like its successor's (a code map per neighbouring phone)
        prev_seg = np.concatenate([[sil], seg[:-1]])
        next_seg = np.concatenate([seg[1:], [sil]])
        # (the chain runs across utterance cuts, so at an utterance's edges the neighbour
        # may be a phone of the next or previous utterance; with one part per phone,
        # both maps apply to it, the predecessor's first)
        first, last = (H == 0)[:N], (H == states - 1)[:N]
        if world["context_parts"] == "first":
            last = np.zeros(N, dtype=bool)
        if world["context_parts"] == "last":
            first = np.zeros(N, dtype=bool)
        ctx_prev = np.repeat(prev_seg, dur)[:N]
        ctx_next = np.repeat(next_seg, dur)[:N]
        X[first] = world["context"][ctx_prev[first], X[first]]
        X[last] = world["context"][ctx_next[last], X[last]]
    noise = rng.random(N) < 0.15
    X[noise] = rng.integers(0, n, size=int(noise.sum()))
    labels = np.split(A, bounds[1:-1])
    codes = np.split(X.astype(np.int32), bounds[1:-1])
    return labels, codes


def code_maps(n, count, change, rng):
    """`count` maps of the n codes (one per voice, or per neighbouring phone): in each, a
    share `change` of the codes replaced by other random codes, the rest kept (voices
    share most codes, as speakers share most acoustics)."""
    maps = np.tile(np.arange(n), (count, 1))
    for v in range(count):
        moved = rng.random(n) < change
        maps[v, moved] = rng.integers(0, n, size=int(moved.sum()))
    return maps


def speak(codes, maps, rng):
    """Each utterance in one voice drawn uniformly: its codes through that voice's map."""
    return [maps[v][x] for v, x in zip(rng.integers(0, len(maps), size=len(codes)), codes)]


def repeat_codes(codes, rho, rng):
    """Each position but an utterance's first repeats the code before it with probability
    rho: neighbouring codes dependent beyond what the phone and its third explain, as the
    codes of overlapping 25 ms analysis windows are (on festival-timit's quantised frames
    x[t] = x[t-1] at 22% of positions; rho = 0.2 gives 21% here, rho = 0 1.3%)."""
    out = []
    for x in codes:
        copy = rng.random(len(x)) < rho
        copy[0] = False
        # each position takes the code of the last position at or before it not copying
        out.append(x[np.maximum.accumulate(np.where(copy, 0, np.arange(len(x))))])
    return out


def write(outdir, labels, codes, n, opts, prefix="syn", ali="ali", templates=True):
    """obs.h5 (its provenance: opts, every option the corpus was made with), the alignment
    file `ali` and (templates) templates.conf in outdir."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from rhmmtk.io.archive import ArchiveWriter
    from rhmmtk.provenance import record
    from rhmmtk.symbols import SymbolTable

    table = SymbolTable([str(i) for i in range(n)])
    keys = [f"{prefix}{i:05d}" for i in range(len(labels))]
    opts = {"generator": "bench/make_synthetic.py", **opts}
    with ArchiveWriter(os.path.join(outdir, "obs.h5"), "codes", record(opts),
                       {"observations": table},
                       {"observation_fingerprint": table.fingerprint()}) as w:
        for k, x in zip(keys, codes):
            w.add(k, x)
    names = np.array(PHONES)
    with open(os.path.join(outdir, ali), "w") as f:
        for k, a in zip(keys, labels):
            f.write(k + " " + " ".join(names[a].tolist()) + "\n")
    if templates:
        with open(os.path.join(outdir, "templates.conf"), "w") as f:
            f.write(TEMPLATES)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=1_100_000, help="total positions")
    ap.add_argument("--codes", type=int, default=10_000, help="observation symbols n")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dev-frames", type=int, default=0,
                    help="also OUTDIR/dev/{obs.h5,ali}: this many positions from the same "
                         "generator")
    ap.add_argument("--test-frames", type=int, default=0,
                    help="with --recipe-layout: positions of OUTDIR/test")
    ap.add_argument("--states", type=int, default=3,
                    help="hidden states per phone: parts of its duration")
    ap.add_argument("--voices", type=int, default=1,
                    help="each utterance in one of this many voices, each mapping a share "
                         "(--voice-change) of the codes to others")
    ap.add_argument("--voice-change", type=float, default=0.5,
                    help="share of the codes each voice maps to other codes")
    ap.add_argument("--context", type=float, default=0.0,
                    help="coarticulation: share of the codes each neighbouring phone maps to "
                         "others in a phone's first part (the predecessor) and last part "
                         "(the successor)")
    ap.add_argument("--context-parts", choices=("both", "first", "last"), default="both",
                    help="which parts --context maps: the first (by the predecessor), the "
                         "last (by the successor) or both")
    ap.add_argument("--repeat", type=float, default=0.0,
                    help="probability that a position repeats the previous position's code")
    ap.add_argument("--recipe-layout", action="store_true",
                    help="OUTDIR/{train,dev,test}/{obs.h5,ali.48}, as recipes/timit/run.sh's "
                         "stages 3-8 read them")
    ap.add_argument("outdir")
    args = ap.parse_args()
    bad = [(args.codes, "--codes", ">= 1500 (each (phone, state) emits from 1,500 codes)",
            args.codes >= 1500),
           (args.repeat, "--repeat", "in [0, 1)", 0 <= args.repeat < 1),
           (args.states, "--states", ">= 1", args.states >= 1),
           (args.context, "--context", "in [0, 1]", 0 <= args.context <= 1),
           (args.voices, "--voices", ">= 1", args.voices >= 1),
           (args.voice_change, "--voice-change", "in [0, 1]", 0 <= args.voice_change <= 1)]
    if args.recipe_layout:
        bad += [(v, name, "> 0 with --recipe-layout", v > 0) for v, name in
                ((args.frames, "--frames"), (args.dev_frames, "--dev-frames"),
                 (args.test_frames, "--test-frames"))]
    else:
        bad.append((args.test_frames, "--test-frames", "0 without --recipe-layout",
                    args.test_frames == 0))
    bad.append((args.context_parts, "--context-parts", "both (the default) without --context",
                args.context > 0 or args.context_parts == "both"))
    for value, name, want, ok in bad:
        if not ok:
            ap.error(f"{name} must be {want}, got {value}")
    return args


def sampler(args):
    """A function frames -> (labels, codes) drawing from one world: the generator's
    parameters and the voices, coarticulation maps and repeats the options ask for."""
    rng = np.random.default_rng(args.seed)
    world = make_world(args.codes, rng, states=args.states)
    # voices and coarticulation from streams of their own, so that with and without them
    # the phones, states and codes before them are the same
    vrng = np.random.default_rng([args.seed, 1])
    if args.context > 0:
        world["context"] = code_maps(args.codes, len(PHONES), args.context,
                                     np.random.default_rng([args.seed, 2]))
        world["context_parts"] = args.context_parts
    maps = code_maps(args.codes, args.voices, args.voice_change, vrng) if args.voices > 1 else None

    def sample(frames):
        labels, codes = generate(world, frames, rng)
        if maps is not None:
            codes = speak(codes, maps, vrng)
        return labels, (repeat_codes(codes, args.repeat, rng) if args.repeat else codes)
    return sample


def write_recipe_layout(args, sample):
    for name, frames, prefix in (("train", args.frames, "tr"), ("dev", args.dev_frames, "dv"),
                                 ("test", args.test_frames, "te")):
        d = os.path.join(args.outdir, name)
        os.makedirs(d, exist_ok=True)
        labels, codes = sample(frames)
        write(d, labels, codes, args.codes, vars(args), prefix=prefix, ali="ali.48",
              templates=False)
        print(f"{d}: {len(labels)} utterances, {sum(len(a) for a in labels)} frames",
              file=sys.stderr)


def main():
    args = parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    t0 = time.perf_counter()
    sample = sampler(args)
    if args.recipe_layout:
        write_recipe_layout(args, sample)
        return
    labels, codes = sample(args.frames)
    t1 = time.perf_counter()
    write(args.outdir, labels, codes, args.codes, vars(args))
    if args.dev_frames:
        dev = os.path.join(args.outdir, "dev")
        os.makedirs(dev, exist_ok=True)
        write(dev, *sample(args.dev_frames), args.codes, vars(args), prefix="dev")
    lengths = np.array([len(a) for a in labels])
    A = np.concatenate(labels)
    runs = int(np.sum(A[1:] != A[:-1]) + len(labels))
    print(f"{len(labels)} utterances, {lengths.sum()} frames (mean length {lengths.mean():.0f}), "
          f"{len(set(A.tolist()))} labels, mean run {lengths.sum() / runs:.1f} frames, "
          f"{len(np.unique(np.concatenate(codes)))} of {args.codes} codes used; "
          f"generated in {t1 - t0:.1f} s, written in {time.perf_counter() - t1:.1f} s "
          f"to {args.outdir}", file=sys.stderr)


if __name__ == "__main__":
    main()
