"""acc-spectral, svd-spectral, est-spectral: the spectral estimator as accumulate/estimate
steps over shards (thin shims over rhmmtk.spectral). train-spectral runs the same
functions in one process."""
import click

from .common import command, job_option
from .params import HDF5_INPUT, HDF5_OUTPUT, Real, SEED


@command("acc-spectral")
@job_option
@click.option("--projections", "proj", type=HDF5_INPUT,
              help="Projections from svd-spectral: accumulate the moments (pass 2). "
                   "Without it: the Omega counts (pass 1).")
@click.argument("feats", type=HDF5_INPUT)
@click.argument("stats", type=HDF5_OUTPUT)
def acc_spectral(job, proj, feats, stats):
    """Accumulate spectral statistics of (shard --job K/N of) featurized archive FEATS.

    Pass 1 (no --projections) writes per-label Omega co-occurrence and feature
    counts, keyed by feature id; svd-spectral sums any number of them into
    projections. Pass 2 (--projections) writes the moments under those
    projections; est-spectral sums them into a model. Example, 4 jobs:

    \b
      $cmd JOB=1:4 log/acc1.JOB.log rhmmtk acc-spectral --job JOB/4 feats.h5 omega.JOB.acc
      rhmmtk svd-spectral -m 24 omega.*.acc proj.h5
      $cmd JOB=1:4 log/acc2.JOB.log rhmmtk acc-spectral --job JOB/4 --projections proj.h5 \\
          feats.h5 moments.JOB.acc
      rhmmtk est-spectral --smooth 30 proj.h5 moments.*.acc final.h5
    """
    from ..io.text import check_outputs
    from ..spectral import acc_moments, acc_omega

    check_outputs(stats, inputs=[feats, proj])
    if proj:
        acc_moments(feats, proj, stats, job)
    else:
        acc_omega(feats, stats, job)


@command("svd-spectral")
@click.option("-m", "--states", type=click.IntRange(1), default=24,
              help="Hidden states per label (capped per label by the rank the data supports).")
@click.option("--kappa", type=Real(0), default=5.0,
              help="Feature scaling sqrt(N_a / (count_a(f) + kappa)).")
@click.option("--feature-scaling/--no-feature-scaling", default=True,
              help="Scale indicator columns before the SVD (the L-PCFG practice).")
@click.option("--rank-tol", type=Real(0, 1, max_open=True), default=1e-6,
              help="Numerical rank: singular values above rank-tol * the largest.")
@click.option("--seed", type=SEED, default=0, help="Seed of the sparse SVD's start vector.")
@click.option("--workers", type=click.IntRange(1), default=1,
              help="Processes sharing the labels' SVDs (the result does not depend on it).")
@click.argument("stats", nargs=-1, required=True, type=HDF5_INPUT)
@click.argument("projections", type=HDF5_OUTPUT)
def svd_spectral(states, kappa, feature_scaling, rank_tol, seed, workers, stats, projections):
    """Sum pass-1 statistics STATS... (acc-spectral without --projections) -> PROJECTIONS.

    Per label: the (scaled) Omega1/Omega2 from the summed counts, their top-m
    singular vectors, m_a capped at both numerical ranks. The sums are those of
    one process over all the data, so the projections are too.

      rhmmtk svd-spectral -m 24 exp/sp/omega.*.acc exp/sp/proj.h5
    """
    from ..io.text import check_outputs
    from ..spectral import svd_files

    check_outputs(projections, inputs=stats)
    svd_files(list(stats), projections, states, kappa if feature_scaling else None, rank_tol,
              seed, workers=workers)


@command("est-spectral")
@click.option("--smooth", type=Real(0), default=30.0,
              help="Smoothing constant C: lam = sqrt(N_ab) / (C + sqrt(N_ab)); 0 = none.")
@click.option("--smooth-emission", type=Real(0), default=0.0,
              help="Emission smoothing constant C_e: d^a_x backs off to p(x|a) E[d|a]; 0 = none.")
@click.option("--emission-floor", type=Real(0), default=1e-3,
              help="Add eps p(x) E[d|a] to every d^a_x: no label-observation pair is impossible.")
@click.option("--max-cond", type=Real(1), default=1e10,
              help="Pseudo-invert Sigma/Lambda blocks with a larger condition number.")
@click.argument("projections", type=HDF5_INPUT)
@click.argument("stats", nargs=-1, required=True, type=HDF5_INPUT)
@click.argument("model", type=HDF5_OUTPUT)
def est_spectral(smooth, smooth_emission, emission_floor, max_cond, projections, stats, model):
    """PROJECTIONS + summed pass-2 statistics STATS... -> MODEL (the operators).

    STATS are acc-spectral --projections PROJECTIONS outputs; together they must
    cover the data the projections came from (each shard once). Any smoothing
    constant can be estimated from the same statistics.

      rhmmtk est-spectral --smooth 30 exp/sp/proj.h5 exp/sp/moments.*.acc exp/sp/final.h5
    """
    from ..io.text import check_outputs
    from ..spectral import est_files

    check_outputs(model, inputs=[projections, stats])
    est_files(projections, list(stats), model, smooth, max_cond, smooth_emission,
              emission_floor)
