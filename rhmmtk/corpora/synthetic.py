#!/usr/bin/env python3
"""TIMIT-size synthetic skeletal sequences: a codes archive and a label alignment.

`make_corpus(outdir, SyntheticOptions(...))` writes OUTDIR/obs.h5 (`codes` archive,
symbols "0".."n-1", as `rhmmtk quantize apply` makes them), OUTDIR/ali (`utt-id label
label ...`, one label per frame), with dev_frames a held-out set from the same generator
in OUTDIR/dev/, and OUTDIR/templates.conf (the TIMIT recipe's template set: neighbouring
labels and codes, previous/next phone types, runs, position in the phone). The benchmarks
(bench/bench_core.py, bench/bench_scale.py) call it in-process.

With recipe_layout it writes instead what stages 3-8 of recipes/timit/run.sh read:
OUTDIR/{train,dev,test}/{obs.h5,ali.48} (dev and test from the same generator,
dev_frames and test_frames positions), e.g. to see whether the spectral estimator
beats EM on frames whose codes are independent given the phone and its third, and what
making neighbouring codes dependent does (repeat; docs/SPECTRAL_DIAGNOSIS.md). The
command line is recipes/timit/local/make_synthetic.py:

  recipes/timit/local/make_synthetic.py --recipe-layout --frames 66600 --dev-frames 50000 \
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
import os
import time
from dataclasses import asdict, dataclass

import numpy as np

from ..errors import InputError

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
    from ..io.archive import ArchiveWriter
    from ..provenance import record
    from ..symbols import SymbolTable

    table = SymbolTable([str(i) for i in range(n)])
    keys = [f"{prefix}{i:05d}" for i in range(len(labels))]
    opts = {"generator": "rhmmtk.corpora.synthetic", **opts}
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


@dataclass
class SyntheticOptions:
    """What the generator draws (recipes/timit/local/make_synthetic.py gives each field as
    an option of the same name, with dashes)."""
    frames: int = 1_100_000         # total positions (of train, with recipe_layout)
    codes: int = 10_000             # observation symbols n
    seed: int = 1
    dev_frames: int = 0             # also OUTDIR/dev: this many positions
    dev_utterances: int = 0         # dev: only the first this many utterances of that draw
    test_frames: int = 0            # with recipe_layout: positions of OUTDIR/test
    states: int = 3                 # hidden states per phone: parts of its duration
    voices: int = 1                 # each utterance in one of this many voices
    voice_change: float = 0.5       # share of the codes each voice maps to other codes
    context: float = 0.0            # coarticulation: share of the codes a neighbour maps
    context_parts: str = "both"     # which parts context maps: first, last or both
    repeat: float = 0.0             # probability that a position repeats the code before it
    recipe_layout: bool = False     # OUTDIR/{train,dev,test}/{obs.h5,ali.48}

    def check(self):
        """InputError naming the first option out of range (as its command-line option)."""
        bad = [(self.codes, "--codes", ">= 1500 (each (phone, state) emits from 1,500 codes)",
                self.codes >= 1500),
               (self.repeat, "--repeat", "in [0, 1)", 0 <= self.repeat < 1),
               (self.states, "--states", ">= 1", self.states >= 1),
               (self.context, "--context", "in [0, 1]", 0 <= self.context <= 1),
               (self.voices, "--voices", ">= 1", self.voices >= 1),
               (self.voice_change, "--voice-change", "in [0, 1]", 0 <= self.voice_change <= 1),
               (self.context_parts, "--context-parts", "one of both, first, last",
                self.context_parts in ("both", "first", "last"))]
        if self.recipe_layout:
            bad += [(v, name, "> 0 with --recipe-layout", v > 0) for v, name in
                    ((self.frames, "--frames"), (self.dev_frames, "--dev-frames"),
                     (self.test_frames, "--test-frames"))]
        else:
            bad += [(self.frames, "--frames", "> 0", self.frames > 0),
                    (self.dev_frames, "--dev-frames", ">= 0", self.dev_frames >= 0),
                    (self.test_frames, "--test-frames", "0 without --recipe-layout",
                     self.test_frames == 0)]
        # utterances are cut at most 419 frames long (`generate`): the dev draw holds at
        # least one per 420 of its frames
        most = self.dev_frames // 420
        bad.append((self.dev_utterances, "--dev-utterances",
                    f"in [0, --dev-frames / 420 = {most}]", 0 <= self.dev_utterances <= most))
        bad.append((self.context_parts, "--context-parts", "both (the default) without --context",
                    self.context > 0 or self.context_parts == "both"))
        for value, name, want, ok in bad:
            if not ok:
                raise InputError(f"{name} must be {want}, got {value}")


def sampler(opts):
    """A function frames -> (labels, codes) drawing from one world: the generator's
    parameters and the voices, coarticulation maps and repeats the options ask for."""
    rng = np.random.default_rng(opts.seed)
    world = make_world(opts.codes, rng, states=opts.states)
    # voices and coarticulation from streams of their own, so that with and without them
    # the phones, states and codes before them are the same
    vrng = np.random.default_rng([opts.seed, 1])
    if opts.context > 0:
        world["context"] = code_maps(opts.codes, len(PHONES), opts.context,
                                     np.random.default_rng([opts.seed, 2]))
        world["context_parts"] = opts.context_parts
    maps = code_maps(opts.codes, opts.voices, opts.voice_change, vrng) if opts.voices > 1 else None

    def sample(frames):
        labels, codes = generate(world, frames, rng)
        if maps is not None:
            codes = speak(codes, maps, vrng)
        return labels, (repeat_codes(codes, opts.repeat, rng) if opts.repeat else codes)
    return sample


def make_corpus(outdir, opts):
    """Draw the corpus `opts` describes and write it under outdir (layouts: the module's
    docstring); returns one line per directory written, for the caller to print.
    InputError (before anything is written) for options out of range."""
    opts.check()
    outdir = str(outdir)
    provenance = {**asdict(opts), "outdir": outdir}
    sample = sampler(opts)
    if opts.recipe_layout:
        sets = (("train", opts.frames, "tr", 0), ("dev", opts.dev_frames, "dv", opts.dev_utterances),
                ("test", opts.test_frames, "te", 0))
        return [_write_set(os.path.join(outdir, name), sample, frames, opts.codes, provenance,
                           keep=keep, prefix=prefix, ali="ali.48", templates=False)
                for name, frames, prefix, keep in sets]
    lines = [_write_set(outdir, sample, opts.frames, opts.codes, provenance)]
    if opts.dev_frames:
        lines.append(_write_set(os.path.join(outdir, "dev"), sample, opts.dev_frames,
                                opts.codes, provenance, keep=opts.dev_utterances, prefix="dev"))
    return lines


def _write_set(d, sample, frames, n, provenance, keep=0, **how):
    """One sample of `frames` positions written to d, only its first `keep` utterances
    when keep > 0 (the whole sample is drawn all the same, so that the sets drawn after
    it do not depend on keep); its one-line summary."""
    os.makedirs(d, exist_ok=True)
    t0 = time.perf_counter()
    labels, codes = sample(frames)
    if keep:
        labels, codes = labels[:keep], codes[:keep]
    t1 = time.perf_counter()
    write(d, labels, codes, n, provenance, **how)
    lengths = np.array([len(a) for a in labels])
    A = np.concatenate(labels)
    runs = int(np.sum(A[1:] != A[:-1]) + len(labels))
    return (f"{d}: {len(labels)} utterances, {lengths.sum()} frames (mean length "
            f"{lengths.mean():.0f}), {len(set(A.tolist()))} labels, mean run "
            f"{lengths.sum() / runs:.1f} frames, {len(np.unique(np.concatenate(codes)))} of "
            f"{n} codes used; generated in {t1 - t0:.1f} s, written in "
            f"{time.perf_counter() - t1:.1f} s")


def write_dictionary(path, words, seed=1):
    """A NETtalk-format dictionary (`word<TAB>phonemes<TAB>stress<TAB>0` lines) of `words`
    random words, 3-10 letters, whose phoneme at a letter is decided by the letter and the
    next one (as spelling decides English pronunciation, mostly): small, and learnable, for
    the benchmarks' --smoke runs, which must not need the real dictionary."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    phonemes = np.array(list("abdefghiklmnoprstuvwxzACDEGIJKLMNORSTUWYZ@!#*^-"))
    freq = 1.0 / np.arange(1, 27) ** 0.8
    freq = freq[rng.permutation(26)]
    # the phoneme of letter i before letter j: one of three per letter, by j
    sound = rng.integers(0, len(phonemes), size=(26, 3))[:, np.arange(27) % 3]
    with open(path, "w") as f:
        for _ in range(words):
            w = rng.choice(26, size=int(rng.integers(3, 11)), p=freq / freq.sum())
            p = sound[w, np.append(w[1:], 26)]
            stress = rng.choice(list("01<>"), size=len(w))
            f.write(f"{''.join(letters[w])}\t{''.join(phonemes[p])}\t{''.join(stress)}\t0\n")
