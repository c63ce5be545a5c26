"""The spectral estimator's files and shards (rhmmtk.models.rhmm.spectral computes):
acc-spectral's two passes over a featurized archive (`acc_omega`, `acc_moments`), the
summed statistics' SVD and estimate (`svd_files`, `est_files`), and train-spectral's
one process streaming the archive twice (`train_file`).
"""
import dataclasses
import os

from ...errors import InputError
from ...progress import log, progress
from .spectral import (BLOCK_POSITIONS, EstimateOptions, MomentStats, OmegaAccumulator,
                       OmegaStats, SvdOptions, operators, recorded_options)
from .spectral_svd import Projections, projections


# ------------------------------------------------------------------------------------------
# the steps as files: acc-spectral, svd-spectral, est-spectral, train-spectral

def _tables(sf):
    return sf.symbols("labels"), sf.symbols("observations")


def acc_omega(feats, out, job=None, block_positions=None):
    """Pass 1 over (a shard of) a featurized archive -> an `spectral-omega` stats file."""
    from ...training_data import FeaturizedArchive
    from ...io.stats import write_stats
    from ...provenance import record

    with FeaturizedArchive(feats) as fa:
        l = len(fa.label_table)
        keys = fa.keys(job)
        acc = OmegaAccumulator(l)
        positions = 0
        for F, lengths in progress(fa.blocks(keys, block_positions or BLOCK_POSITIONS),
                                   desc="acc omega", unit="block"):
            acc.add(OmegaStats.from_block(F, fa.slices, l))
            positions += len(F)
        stats = acc.result()
        write_stats(out, "spectral-omega", fa.meta, record({"job": str(job or "")}),
                    {"labels": fa.label_table, "observations": fa.obs_table}, stats.to_data(),
                    os.path.abspath(feats), job, len(keys), positions,
                    {"templates": fa.attrs.get("templates", "")})
    log.info("accumulated Omega counts of %d utterances, %d positions (%d nonzeros)",
             len(keys), positions, stats.nnz())
    return stats


def sum_omega(paths):
    """Sum `spectral-omega` stats files -> (OmegaStats, meta, label table, obs table, attrs)."""
    from ...io.stats import StatsFile, check_set

    meta, utts, positions = check_set(paths, "spectral-omega")
    acc, tables, attrs = None, None, None
    for p in progress(paths, desc="sum", unit="file"):
        with StatsFile(p, "spectral-omega") as sf:
            if tables is None:
                tables, attrs = _tables(sf), dict(sf.attrs)
                acc = OmegaAccumulator(len(tables[0]))
            acc.add(OmegaStats.from_file(sf, len(tables[0])))
    log.info("summed %d statistics files: %d utterances, %d positions", len(paths), utts,
             positions)
    return acc.result(), meta, tables, attrs, (utts, positions)


def svd_files(paths, out, svd=None):
    """svd-spectral: sum pass-1 stats, SVD (labels shared among `svd.workers` processes)
    -> a `spectral-projections` file. svd: SvdOptions."""
    from ...io.stats import write_stats
    from ...provenance import record

    svd = svd or SvdOptions()
    m = svd.m
    omega, meta, (labels, obs), attrs, (utts, positions) = sum_omega(paths)
    opts = {"m": m, "kappa": svd.scaling, "rank_tol": svd.rank_tol, "seed": svd.seed,
            "mean_direction": svd.mean_direction}
    proj = projections(omega, m, svd.scaling, svd.rank_tol, svd.seed, labels, svd.workers,
                       svd.mean_direction)
    meta = {**meta, "m": m}
    pmeta = {**meta, "fingerprint": proj.fingerprint(), "options": opts}
    write_stats(out, "spectral-projections", pmeta, record(opts),
                {"labels": labels, "observations": obs}, proj.to_data(),
                f"sum of {len(paths)} statistics files", None,
                utts, positions, {"templates": attrs.get("templates", "")})
    log.info("projections: mean m_a %.2f (m = %d), fingerprint %s", proj.m.mean(), m,
             pmeta["fingerprint"])
    return proj


def load_projections(path):
    """(Projections, its stats-file meta, label table, obs table, attrs)."""
    from ...io.stats import StatsFile

    with StatsFile(path, "spectral-projections") as sf:
        proj = Projections.from_file(sf)
        return proj, sf.meta, _tables(sf), dict(sf.attrs)


def _moment_meta(pmeta):
    meta = {k: v for k, v in pmeta.items() if k not in ("fingerprint", "options")}
    meta["projections"] = pmeta["fingerprint"]
    return meta


def acc_moments(feats, proj_path, out, job=None, block_positions=None):
    """Pass 2 over (a shard of) a featurized archive with the projections of svd-spectral
    -> a `spectral-moments` stats file."""
    from ...training_data import FeaturizedArchive
    from ...io.stats import check_meta, write_stats
    from ...provenance import record

    proj, pmeta, _, _ = load_projections(proj_path)
    with FeaturizedArchive(feats) as fa:
        check_meta(fa.meta, {k: pmeta[k] for k in fa.meta}, feats, proj_path)
        keys = fa.keys(job)
        mom = MomentStats(proj.m, len(fa.obs_table))
        positions = 0
        for F, lengths in progress(fa.blocks(keys, block_positions or BLOCK_POSITIONS),
                                   desc="acc moments", unit="block"):
            try:
                mom.add_block(F, lengths, fa.slices, proj)
            except InputError as e:
                raise InputError(e.problem, feats) from None
            positions += len(F)
        write_stats(out, "spectral-moments", _moment_meta(pmeta),
                    record({"job": str(job or ""), "projections": str(proj_path)}),
                    {"labels": fa.label_table, "observations": fa.obs_table}, mom.to_data(),
                    os.path.abspath(feats), job, len(keys), positions)
    log.info("accumulated moments of %d utterances, %d positions", len(keys), positions)
    return mom


def est_files(proj_path, paths, model, est=None):
    """est-spectral: sum pass-2 stats, form the operators with the projections -> MODEL.
    est: EstimateOptions."""
    from ...io.stats import StatsFile, check_meta, check_set
    from ...provenance import record

    proj, pmeta, (labels, obs), pattrs = load_projections(proj_path)
    meta, utts, positions = check_set(paths, "spectral-moments")
    check_meta(meta, _moment_meta(pmeta), paths[0], proj_path)
    mom = None
    for p in progress(paths, desc="sum", unit="file"):
        with StatsFile(p, "spectral-moments") as sf:
            part = MomentStats.from_file(sf, len(obs))
        mom = part if mom is None else mom.add(part)
    est = est or EstimateOptions()
    opts = {**pmeta["options"], **dataclasses.asdict(est)}
    op = operators(mom, proj, labels, obs, est.smooth, est.max_cond, est.smooth_emission,
                   est.emission_floor, est.ridge)
    op.info.update(options=opts, templates=pattrs.get("templates", ""),
                   template_fingerprint=pmeta["template_fingerprint"],
                   train_utts=utts, train_positions=positions, projections=pmeta["fingerprint"])
    op.save(model, record(opts))
    return op


def train_file(feats, model, svd=None, est=None, block_positions=None):
    """train-spectral: both passes and the estimate in one process, streaming the archive
    twice (memory: one block of positions, the statistics and the projections).
    svd: SvdOptions; est: EstimateOptions."""
    from ...training_data import FeaturizedArchive
    from ...progress import Timer
    from ...provenance import record

    svd, est = svd or SvdOptions(), est or EstimateOptions()
    block_positions = block_positions or BLOCK_POSITIONS
    with FeaturizedArchive(feats) as fa:
        l, n = len(fa.label_table), len(fa.obs_table)
        keys = fa.keys()
        with Timer("pass 1 (Omega counts)"):
            acc = OmegaAccumulator(l)
            positions = 0
            for F, _ in fa.blocks(keys, block_positions):
                acc.add(OmegaStats.from_block(F, fa.slices, l))
                positions += len(F)
            omega = acc.result()
        with Timer("SVD"):
            proj = projections(omega, svd.m, svd.scaling, svd.rank_tol, svd.seed,
                               fa.label_table, svd.workers, svd.mean_direction)
        del omega
        with Timer("pass 2 (moments)"):
            mom = MomentStats(proj.m, n)
            for F, lengths in fa.blocks(keys, block_positions):
                mom.add_block(F, lengths, fa.slices, proj)
        with Timer("operators"):
            op = operators(mom, proj, fa.label_table, fa.obs_table, est.smooth, est.max_cond,
                           est.smooth_emission, est.emission_floor, est.ridge)
        opts = recorded_options(svd, est)
        op.info.update(options=opts, templates=fa.attrs.get("templates", ""),
                       template_fingerprint=fa.template_fingerprint,
                       train_utts=len(keys), train_positions=positions)
    op.save(model, record(opts))
    return op
