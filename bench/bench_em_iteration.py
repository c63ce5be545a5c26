#!/usr/bin/env python
"""Where one EM(m) iteration of paper 000's protocol spends its time at TIMIT's size, and
the decoder's float32 products against float64.

One iteration of `train-em` with a dev set is: the E-step over the training frames
(compiled forward-backward over the m states of each known label), the M-step and the
prior, building the RHMM and its operators, and decoding the whole dev set with them
(the max-marginal decoder over l m joint states). This script makes the recipe's
synthetic corpus (`--synthetic-size timit`: 1,100,000 training and 119,047 dev frames,
seed 7, coarticulation 0.5), runs `--warm` EM iterations, then times each part of the
next one in CPU seconds (and wall), with the CLI's one BLAS thread (RHMMTK_THREADS), and
decodes dev a second time with `--precision float32`: the ratio float64 / float32, and
how many dev labels the two give differently. The lower bound of the float32 products
is float64's time halved (single-precision GEMM does twice the multiply-adds per cycle);
the rest of the decoding (scatter, gather, beam, rescaling) stays float64.

    python bench/bench_em_iteration.py                  # TIMIT size, m = 32: ~3 CPU min
    python bench/bench_em_iteration.py --m-em 24 --frames 300000
    python bench/bench_em_iteration.py --smoke          # seconds
"""
import time

import numpy as np

import options  # bench/options.py: the options every benchmark shares

SMOKE = {"frames": 3000, "dev_frames": 800, "codes": 1500, "m_em": 4, "warm": 1}


def main():
    ap = options.parser(__doc__, repeats=None, work=True, seed=7)
    ap.add_argument("--frames", type=options.positive, default=1100000)
    ap.add_argument("--dev-frames", type=options.positive, default=119047)
    ap.add_argument("--codes", type=options.positive, default=10000)
    ap.add_argument("--m-em", type=options.positive, default=32)
    ap.add_argument("--warm", type=int, default=3, help="EM iterations before the timed one")
    ap.add_argument("--emission-floor", type=float, default=0.3,
                    help="the dev decoding's emission backoff (the recipe's HMM chose 0.3)")
    a = options.parse(ap, SMOKE)
    from rhmmtk.threads import blas_threads

    with options.work_dir(a, "rhmmtk-bench-emit-") as work, blas_threads():
        result = profile(a, work)
    options.write_json(a, result)


def cpu_wall(fn):
    """(result, CPU seconds, wall seconds) of fn()."""
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c0, time.perf_counter() - w0


def profile(a, work):
    from rhmmtk.corpora.synthetic import SyntheticOptions, make_corpus
    from rhmmtk.models.rhmm import em
    from rhmmtk.models.rhmm.decoder import DEFAULT_BATCH_MB, DEFAULT_BEAM, decode
    from rhmmtk.training_data import read_corpus

    make_corpus(work, SyntheticOptions(frames=a.frames, dev_frames=a.dev_frames,
                                       test_frames=100, codes=a.codes, seed=a.seed,
                                       context=0.5, recipe_layout=True))
    train = read_corpus(work / "train" / "obs.h5", work / "train" / "ali.48")
    dev = read_corpus(work / "dev" / "obs.h5", work / "dev" / "ali.48", train.label_table,
                      strict=False)
    ref = np.concatenate(dev.labels)
    # em.train's set-up, then its iteration, part by part
    counts = em.Counts.from_corpus(train)
    support = em.Support.from_counts(counts, True)
    buckets = em.make_buckets(train, support, a.m_em)
    ids, row_of = em.visited_rows(counts)
    rows = em.EmissionRows(ids, support.emit)
    cur = em.m_step_rows(em.initial_stats(counts, support, a.m_em, np.random.default_rng(1),
                                          0.5), support, 1e-3, rows)
    backoff = em.emission_backoff(counts, a.emission_floor)
    for _ in range(a.warm):
        _, cur = em.em_iteration(cur, buckets, support, rows, row_of, 1e-3)
    t = {}
    stats, t["e_step"], _ = cpu_wall(lambda: em._e_step(cur.pi, cur.em.values, cur.f, cur.tp,
                                                        buckets, support, row_of))
    nxt, t["m_step"], _ = cpu_wall(lambda: (em.m_step_rows(stats, support, 1e-3, rows),
                                            em.iterate_log_prior(cur, support, 1e-3))[0])
    op, t["operators"], _ = cpu_wall(
        lambda: nxt.rhmm(backoff).operators(train.label_table, train.obs_table))
    hyp = {}
    for prec in ("float64", "float32"):
        out, t[f"dev_{prec}"], t[f"dev_{prec}_wall"] = cpu_wall(
            lambda: decode(op, dev.obs, DEFAULT_BATCH_MB, beam=DEFAULT_BEAM, precision=prec))
        hyp[prec] = np.concatenate(out[0])
    iteration = t["e_step"] + t["m_step"] + t["operators"] + t["dev_float64"]
    print(f"EM({a.m_em}): {len(ref)} dev frames, {sum(map(len, train.labels))} training "
          f"frames, after {a.warm} iterations; CPU seconds (share of the iteration):")
    for k in ("e_step", "m_step", "operators", "dev_float64"):
        print(f"  {k:12s} {t[k]:8.2f}  ({t[k] / iteration:5.1%})")
    ratio = t["dev_float64"] / t["dev_float32"]
    diff = int((hyp["float64"] != hyp["float32"]).sum())
    print(f"  dev_float32  {t['dev_float32']:8.2f}  ratio float64 / float32 {ratio:.2f} "
          f"(bound 2.0); dev accuracy {np.mean(hyp['float64'] == ref):.5f} / "
          f"{np.mean(hyp['float32'] == ref):.5f}, {diff} labels differ")
    return {**t, "m": a.m_em, "dev_frames": len(ref), "ratio_float32": ratio,
            "labels_differ": diff, "iteration_cpu": iteration}


if __name__ == "__main__":
    main()
