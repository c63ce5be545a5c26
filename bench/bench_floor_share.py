#!/usr/bin/env python
"""How much of an R-HMM decoding's per-label work is spent on (label, observation) pairs
never seen in training?

For such a pair a spectral model's emission is only its floor, c^a_x = eps p(x) g_a
(`est-spectral --emission-floor`), so alpha_a (x) c^a_x times label a's stacked operator
(m_a^2 x N_a per row) equals eps p(x) times alpha_a times one precomputable m_a x N_a
matrix: m_a times less work. This script decodes dev utterances with the CLI's beam,
records the labels the beam keeps at each position, and counts the per-label
multiply-adds of the general-form products as they are now and as they would be with
that split (a lower bound on what such a decoder could save; the scatter, the beam and
the rest are not counted). Not a timing: a count.

    python bench/bench_floor_share.py exp/spectral_m32_c300/final.h5 \\
        data/train/obs.h5 data/train/ali.48 data/dev/obs.h5 data/dev/ali.48 --utts 40
    python bench/bench_floor_share.py --smoke   # seconds: a SPECTRAL(8) on synthetic frames
"""
import sys

import numpy as np

import options  # bench/options.py: the options every benchmark shares
from timing import rhmmtk_command, run  # bench/timing.py

FILES = ("model", "train_obs", "train_ali", "dev_obs", "dev_ali")


def smoke_inputs(work):
    """With --smoke: synthetic frames in the TIMIT recipe's layout and a SPECTRAL(8) model
    trained on them as the recipe trains (emission floor 2): the five inputs."""
    from rhmmtk.corpora.synthetic import TEMPLATES, SyntheticOptions, make_corpus

    make_corpus(work, SyntheticOptions(frames=2000, dev_frames=600, test_frames=600,
                                       codes=1500, recipe_layout=True))
    (work / "templates.conf").write_text(TEMPLATES)
    tr = work / "train"
    run([*rhmmtk_command(), "featurize", "-q", "--templates", work / "templates.conf",
         tr / "obs.h5", tr / "ali.48", tr / "feats.h5"], "featurize")
    run([*rhmmtk_command(), "train-spectral", "-q", "-m", "8", "--emission-floor", "2",
         tr / "feats.h5", work / "sp8.h5"], "train-spectral")
    return (work / "sp8.h5", tr / "obs.h5", tr / "ali.48", work / "dev" / "obs.h5",
            work / "dev" / "ali.48")


def main():
    # (no --repeats: a count, not a timing)
    ap = options.parser(__doc__, repeats=None, work=True)
    for name in FILES:
        ap.add_argument(name, nargs="?", help="(all five needed without --smoke)")
    ap.add_argument("--utts", type=options.positive, default=40, help="dev utterances decoded")
    ap.add_argument("--beam", type=float, default=1e-8)
    a = options.parse(ap, {})
    given = [getattr(a, name) for name in FILES]
    if not a.smoke and not all(given):
        sys.exit("bench_floor_share.py: error: MODEL TRAIN_OBS TRAIN_ALI DEV_OBS DEV_ALI are "
                 "needed (or --smoke)")
    with options.work_dir(a, "rhmmtk-bench-floor-") as work:
        files = smoke_inputs(work) if a.smoke and not all(given) else given
        count(a, *files)


def count(a, model, train_obs, train_ali, dev_obs, dev_ali):
    """Decode, record the kept labels, count the multiply-adds; print and --json them."""
    from rhmmtk.training_data import read_corpus
    from rhmmtk.models.rhmm import decoder as fb
    from rhmmtk.models.rhmm.operators import Operators

    op = Operators.load(model)
    train = read_corpus(train_obs, train_ali, op.labels)
    l, n = op.num_labels, len(op.observations)
    labels, obs = np.concatenate(train.labels), np.concatenate(train.obs)
    seen = np.bincount(labels * n + obs, minlength=l * n).reshape(l, n) > 0
    seqs = read_corpus(dev_obs, dev_ali, op.labels, strict=False).obs[: a.utts]

    decoder = fb.Decoder(op, a.beam)
    # the labels the beam extended: a pruned label's marginal is exactly 0, a kept one's
    # is not (barring an exact cancellation)
    mus, _ = decoder.marginals(seqs)
    kept = [(mu != 0, np.asarray(x)) for mu, x in zip(mus, seqs)]
    m = op.m.astype(float)
    N = np.array([0 if c is None else len(c) for c in decoder.cols], dtype=float)
    per_row_full = m * m * N if op.form == "general" else m * N
    full = split = positions = kept_n = kept_seen = 0.0
    for k, x in kept:
        s = seen[:, x].T
        ks = np.logical_and(k, s).sum(axis=0).astype(float)
        ku = np.logical_and(k, ~s).sum(axis=0).astype(float)
        full += float((ks + ku) @ per_row_full)
        split += float(ks @ per_row_full + ku @ (m * N))
        positions += k.shape[0]
        kept_n += k.sum()
        kept_seen += ks.sum()
    print(f"{len(seqs)} utterances, {sum(len(s) for s in seqs)} positions, beam {a.beam:g}")
    print(f"labels kept per position (and sequence): {kept_n / positions:.2f}; "
          f"pairs seen in training among them: {kept_seen / kept_n:.1%}")
    print(f"per-label multiply-adds: as now {full:.3e}, with the floor split {split:.3e} "
          f"({full / split:.1f}x fewer)")
    options.write_json(a, {"utterances": len(seqs), "positions": int(positions),
                           "labels_kept_per_position": kept_n / positions,
                           "seen_share": kept_seen / kept_n, "multiply_adds_now": full,
                           "multiply_adds_split": split})


if __name__ == "__main__":
    main()
