#!/usr/bin/env python
"""SPECTRAL(m)'s dev decoding at TIMIT's size: the general form's precomputed products
C^{b|a}(c^a_x) in float32 (`--precision float32`) against float64.

A SPECTRAL model is in the general (tensor) form, and the recipe's dev decoding of it
goes through the precomputed products schedule (`Decoder._batch_products`: C(c) once per
distinct (label, observation) of a batch, then compiled steps reading them). This script
makes the recipe's synthetic corpus (`--synthetic-size timit`: 1,100,000 training frames,
seed 7, coarticulation 0.5; dev the first 200 utterances, paper 000's dev set), trains
SPECTRAL(m, C) as the recipe does (`rhmmtk featurize`, `train-spectral` with the ridge
0.15 and the emission backoff eps = 0.3 the recipe's HMM chose), or takes `--model` and
`--dev` as they are, then decodes dev with each precision in CPU seconds with one BLAS
thread (as the CLI runs): the ratio float64 / float32, how many dev labels differ and
the largest difference of the normalised posteriors.

    python bench/bench_spectral_decode.py                   # TIMIT size, m = 32: ~6 CPU min
    python bench/bench_spectral_decode.py --model exp/spectral_m32_c30/final.h5 \\
        --dev data/dev                                      # a recipe's model and dev set
    python bench/bench_spectral_decode.py --smoke           # seconds
"""
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import options  # bench/options.py: the options every benchmark shares

SMOKE = {"frames": 3000, "dev_frames": 900, "dev_utterances": 2, "codes": 1500,
         "m_spectral": 2}
TEMPLATES = Path(__file__).resolve().parents[1] / "recipes" / "timit" / "conf" / "templates.conf"


def main():
    ap = options.parser(__doc__, repeats=None, work=True, seed=7)
    ap.add_argument("--frames", type=options.positive, default=1100000)
    ap.add_argument("--dev-frames", type=options.positive, default=119047)
    ap.add_argument("--dev-utterances", type=int, default=200)
    ap.add_argument("--codes", type=options.positive, default=10000)
    ap.add_argument("--m-spectral", type=options.positive, default=32)
    ap.add_argument("--smooth", type=float, default=30.0, help="C (the recipe's dev-best at m = 32)")
    ap.add_argument("--model", type=Path, help="a SPECTRAL model to decode (then --dev)")
    ap.add_argument("--dev", type=Path, help="a dev directory (obs.h5, ali.48) for --model")
    a = options.parse(ap, SMOKE)
    if (a.model is None) != (a.dev is None):
        ap.error("--model and --dev go together")
    from rhmmtk.threads import blas_threads

    with options.work_dir(a, "rhmmtk-bench-spdec-") as work:
        model, dev = (a.model, a.dev) if a.model else train(a, work)
        with blas_threads():
            result = compare(model, dev)
    options.write_json(a, result)


def train(a, work):
    """SPECTRAL(m, C) on the recipe's synthetic corpus, by the recipe's commands."""
    from rhmmtk.corpora.synthetic import SyntheticOptions, make_corpus

    make_corpus(work, SyntheticOptions(frames=a.frames, dev_frames=a.dev_frames,
                                       dev_utterances=a.dev_utterances, test_frames=100,
                                       codes=a.codes, seed=a.seed, context=0.5,
                                       recipe_layout=True))
    R = [sys.executable, "-m", "rhmmtk"]
    t = work / "train"
    subprocess.run([*R, "featurize", "-q", "--templates", TEMPLATES, t / "obs.h5",
                    t / "ali.48", t / "feats.tpl.h5"], check=True)
    subprocess.run([*R, "train-spectral", "-q", "-m", str(a.m_spectral), "--smooth",
                    str(a.smooth), "--ridge", "0.15", "--emission-floor", "0.3",
                    t / "feats.tpl.h5", work / "spectral.h5"], check=True)
    return work / "spectral.h5", work / "dev"


def compare(model_path, dev_dir):
    from rhmmtk.models import load_model
    from rhmmtk.models.rhmm.decoder import DEFAULT_BATCH_MB, DEFAULT_BEAM, decode
    from rhmmtk.training_data import read_corpus

    op = load_model(model_path)
    dev = read_corpus(dev_dir / "obs.h5", dev_dir / "ali.48", op.labels, strict=False)
    ref = np.concatenate(dev.labels)
    t, hyp, post = {}, {}, {}
    for prec in ("float64", "float32"):     # numba's compile (or cache load) not timed
        decode(op, dev.obs[:2], DEFAULT_BATCH_MB, beam=DEFAULT_BEAM, precision=prec)
    for prec in ("float64", "float32"):
        c0, w0 = time.process_time(), time.perf_counter()
        labels, _, mus = decode(op, dev.obs, DEFAULT_BATCH_MB, beam=DEFAULT_BEAM, precision=prec)
        t[prec], t[prec + "_wall"] = time.process_time() - c0, time.perf_counter() - w0
        hyp[prec] = np.concatenate(labels)
        mu = np.concatenate(mus)
        post[prec] = mu / mu.sum(axis=1, keepdims=True)
    ratio = t["float64"] / t["float32"]
    diff = int((hyp["float64"] != hyp["float32"]).sum())
    # a signed spectral estimate's sum_b mu(b, i) can be near 0 at a few positions, where
    # the normalised posteriors (not the labels) are ill-conditioned: the 99.9% quantile
    # says how close they are elsewhere
    per_pos = np.nan_to_num(np.abs(post["float64"] - post["float32"]).max(axis=1), nan=np.inf)
    dpost, dpost_q = float(per_pos.max()), float(np.quantile(per_pos, 0.999))
    acc = {p: float(np.mean(hyp[p] == ref)) for p in hyp}
    print(f"SPECTRAL(m = {op.m.max()}), {op.form} form: {len(dev.obs)} dev utterances, "
          f"{len(ref)} frames; CPU seconds (wall)")
    for p in hyp:
        print(f"  {p}  {t[p]:8.2f} ({t[p + '_wall']:.2f})  dev accuracy {acc[p]:.5f}")
    print(f"  ratio float64 / float32 {ratio:.2f}; {diff} labels differ; posteriors within "
          f"{dpost_q:.1e} at 99.9% of positions (at most {dpost:.1e})")
    return {**t, "m": int(op.m.max()), "dev_frames": len(ref), "ratio_float32": ratio,
            "labels_differ": diff, "max_posterior_diff": dpost,
            "posterior_diff_q999": dpost_q, "dev_acc": acc}


if __name__ == "__main__":
    main()
