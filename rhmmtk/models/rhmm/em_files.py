"""EM's files and shards (rhmmtk.models.rhmm.em estimates): train-em's one process
(`train_file`, `unigram_file`), acc-em's counts and E-step statistics per `--job` shard
(`acc_counts`, `acc_estep`), and init-em / est-em over the summed files (`init_files`,
`est_files`).
"""
import dataclasses
import os

import numpy as np

from ...errors import InputError
from ...progress import log, progress
from .em import (Counts, EmOptions, Stats, Support, e_step, emission_backoff, initial_model,
                 log_prior, m_step, make_buckets, train, unigram_operators)
from .params import RHMM

BLOCK_POSITIONS = 1 << 18     # acc-em reads and processes this many positions at a time


def train_file(corpus, model, opts=None, iters=50, score=None, history=None,
               dev_every=1, patience=0):
    """train-em: EM on an in-memory corpus -> model file (the best iteration on dev when
    `score` is given, scored every `dev_every` iterations and at the last, stopping
    after `patience` scored iterations without a gain if it is > 0); the
    per-iteration log also to `history` (TSV) if given. opts: EmOptions. Returns (RHMM,
    history list, best iteration)."""
    from ...provenance import record
    from ...selection import write_history

    opts = opts or EmOptions()
    best, hist, best_it = train(corpus, opts.m, iters, opts.seed, opts.floor, opts.noise,
                                score=score, dev_every=dev_every, patience=patience,
                                emission_floor=opts.emission_floor)
    if score is not None:
        log.info("best dev accuracy %.2f%% at iteration %d", 100 * hist[best_it]["dev_acc"],
                 best_it)
    record_opts = {**dataclasses.asdict(opts), "iters": iters, "dev_every": dev_every,
                   "patience": patience}
    info = {"estimator": "em" if opts.m > 1 or iters > 0 else "hmm", "options": record_opts,
            "best_iteration": best_it, "history": hist, "iterations_run": hist[-1]["iter"],
            "train_utts": len(corpus), "train_positions": corpus.num_positions}
    op = best.operators(corpus.label_table, corpus.obs_table, info)
    if history:
        write_history(history, hist)
    op.save(model, record(record_opts))
    return best, hist, best_it


def unigram_file(corpus, model):
    """train-unigram: the UNIGRAM baseline -> model file."""
    from ...provenance import record

    info = {"estimator": "unigram", "train_utts": len(corpus),
            "train_positions": corpus.num_positions}
    op = unigram_operators(corpus, info)
    op.save(model, record({}))
    return op


# ------------------------------------------------------------------------------------------
# the steps as files: acc-em, init-em, est-em

def _meta(labels, obs):
    return {"label_fingerprint": labels.fingerprint(), "observation_fingerprint": obs.fingerprint()}


def acc_counts(obs, ali, out, job=None):
    """Label-level counts of (shard `job` of) a corpus -> an `em-counts` stats file.
    The label table is that of the whole alignment (sorted), the same for every shard."""
    from ...training_data import CorpusReader
    from ...io.stats import write_stats
    from ...provenance import record

    reader = CorpusReader(obs, ali, job=job, block_positions=BLOCK_POSITIONS)
    labels, table = reader.label_table, reader.obs_table
    counts = Counts(len(labels), len(table))
    for corpus in reader.blocks():
        counts.add(Counts.from_corpus(corpus))
    write_stats(out, "em-counts", _meta(labels, table),
                record({"job": str(job or "")}),
                {"labels": labels, "observations": table},
                counts.to_data(), os.path.abspath(obs), job, counts.utts, counts.positions)
    log.info("counted %d utterances, %d positions", counts.utts, counts.positions)
    return counts


def load_model(path):
    """(RHMM, Operators) of an EM or HMM model file."""
    from .operators import Operators

    op = Operators.load(path)
    try:
        return RHMM.from_operators(op), op
    except ValueError:
        raise InputError(f"not an EM model (estimator {op.info.get('estimator')}, form "
                         f"{op.form}): only EM/HMM models are re-estimated by EM", path) from None


def acc_estep(model_path, obs, ali, out, job=None):
    """One E-step over (shard `job` of) a corpus under a model -> an `em-stats` file.
    The corpus is read and processed a block of utterances at a time (bounded memory)."""
    from ...training_data import CorpusReader
    from ...io.stats import write_stats
    from ...provenance import record

    model, op = load_model(model_path)
    reader = CorpusReader(obs, ali, op.labels, job=job, block_positions=BLOCK_POSITIONS)
    if reader.obs_table != op.observations:
        raise InputError("observation symbol table differs from the model's "
                         f"({reader.obs_table.fingerprint()} vs {op.observations.fingerprint()})",
                         obs)
    support = Support.from_model(model)
    l, m, n = model.shape
    tp = model.t[support.pairs[:, 0], support.pairs[:, 1]]
    stats = Stats(l, n, len(support.pairs), m)
    with progress(total=len(reader.keys), desc="E-step") as bar:
        for corpus in reader.blocks():
            support.check(Counts.from_corpus(corpus), ali)
            stats.add(e_step(model, tp, make_buckets(corpus, support, m), support, bar))
    meta = {**_meta(op.labels, op.observations), "m": m, "model": model.fingerprint()}
    write_stats(out, "em-stats", meta,
                record({"job": str(job or ""), "model": str(model_path)}),
                {"labels": op.labels, "observations": op.observations}, stats.to_data(),
                os.path.abspath(obs), job, len(reader.keys), stats.positions)
    log.info("E-step over %d utterances, %d positions: log-likelihood %.4f", len(reader.keys),
             stats.positions, stats.loglik)
    return stats


def _save(model, labels, obs, info, path, opts):
    from ...provenance import record

    model.operators(labels, obs, info).save(path, record(opts))


def init_files(paths, out, m, seed=EmOptions.seed, noise=EmOptions.noise,
               floor=EmOptions.floor, all_emissions=True, score=None,
               emission_floor=EmOptions.emission_floor):
    """init-em: sum `em-counts` files, the seeded initial model (iteration 0) -> `out`.
    `score`: optional function of an RHMM giving dev accuracy. The emission backoff of
    `emission_floor` is fixed here (est-em keeps the model's). Returns (RHMM, info)."""
    from ...io.stats import StatsFile, check_set

    meta, utts, positions = check_set(paths, "em-counts")
    counts = labels = obs = None
    for p in paths:
        with StatsFile(p, "em-counts") as sf:
            if counts is None:
                labels, obs = sf.symbols("labels"), sf.symbols("observations")
                counts = Counts(len(labels), len(obs))
            counts.add(Counts.from_file(sf, len(labels), len(obs)))
    support = Support.from_counts(counts, all_emissions)
    model, _ = initial_model(counts, support, m, np.random.default_rng(seed), noise, floor)
    model.backoff = emission_backoff(counts, emission_floor)
    acc = score(model) if score is not None else None
    opts = {"m": m, "seed": seed, "floor": floor, "noise": noise, "all_emissions": all_emissions,
            "emission_floor": emission_floor}
    info = {"estimator": "em", "options": opts, "iteration": 0,
            "history": [{"iter": 0, "loglik": None, "objective": None, "dev_acc": acc}],
            "train_utts": counts.utts, "train_positions": counts.positions}
    log.info("initial model: m = %d, %d labels, %d label pairs, %d utterances, %d positions%s",
             m, len(labels), len(support.pairs), counts.utts, counts.positions,
             "" if acc is None else f"; dev accuracy {100 * acc:.2f}%")
    _save(model, labels, obs, info, out, opts)
    return model, info


def est_files(model_path, paths, out, floor=None, score=None):
    """est-em: sum the `em-stats` files of one E-step under `model_path`, M-step -> `out`.
    The floor is the model's (init-em's) unless given. Returns (RHMM, info)."""
    from ...io.stats import StatsFile, check_meta, check_set

    model, op = load_model(model_path)
    info = dict(op.info)
    opts = dict(info.get("options", {}))
    floor = opts.get("floor", 1e-3) if floor is None else floor
    opts["floor"] = floor
    l, m, n = model.shape
    support = Support.from_model(model)
    meta, utts, positions = check_set(paths, "em-stats")
    want = {**_meta(op.labels, op.observations), "m": m, "model": model.fingerprint()}
    check_meta(meta, want, paths[0], model_path)
    if info.get("train_positions") not in (None, positions):
        raise InputError(f"the statistics cover {positions} positions of {utts} utterances, but "
                         f"the model's training data has {info['train_positions']} positions: "
                         "a shard missing or given twice, or other data")
    stats = Stats(l, n, len(support.pairs), m)
    for p in progress(paths, desc="sum", unit="file"):
        with StatsFile(p, "em-stats") as sf:
            stats.add(Stats.from_file(sf, l, n, len(support.pairs), m))
    tp = model.t[support.pairs[:, 0], support.pairs[:, 1]]
    objective = stats.loglik + log_prior(model, tp, support, floor)
    new, _ = m_step(stats, support, floor)
    new.backoff = model.backoff
    it = int(info.get("iteration", 0)) + 1
    history = [dict(h) for h in info.get("history", [{"iter": it - 1, "dev_acc": None}])]
    history[-1].update(loglik=stats.loglik, objective=objective)
    acc = score(new) if score is not None else None
    history.append({"iter": it, "loglik": None, "objective": None, "dev_acc": acc})
    log.info("iteration %d: train log-likelihood %.4f (%.5f per position) before "
             "re-estimation%s", it, stats.loglik, stats.loglik / max(stats.positions, 1),
             "" if acc is None else f"; dev accuracy after {100 * acc:.2f}%")
    info.update(iteration=it, history=history, options=opts)
    _save(new, op.labels, op.observations, info, out, opts)
    return new, info
