"""The spectral estimator's commands (thin shims over rhmmtk.models.rhmm.spectral_files):
acc-spectral, svd-spectral, est-spectral as accumulate/estimate steps over shards, and
train-spectral, the same functions in one process."""
import click

from ..options import click_options, take
from ..click_types import HDF5_INPUT, HDF5_OUTPUT
from ..models.rhmm.spectral import EstimateOptions, SvdOptions
from .common import arguments, command, job_option


@command("acc-spectral")
@job_option
@click.option("--projections", "proj", type=HDF5_INPUT,
              help="Projections from svd-spectral: accumulate the moments (pass 2). "
                   "Without it: the Omega counts (pass 1).")
@arguments(("feats", HDF5_INPUT), ("stats", HDF5_OUTPUT))
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
    from ..models.rhmm.spectral_files import acc_moments, acc_omega

    check_outputs(stats, inputs=[feats, proj])
    if proj:
        acc_moments(feats, proj, stats, job)
    else:
        acc_omega(feats, stats, job)


@command("svd-spectral")
@click_options(SvdOptions)
@arguments(("stats...", HDF5_INPUT), ("projections", HDF5_OUTPUT))
def svd_spectral(stats, projections, **kw):
    """Sum pass-1 statistics STATS... (acc-spectral without --projections) -> PROJECTIONS.

    Per label: the (scaled) Omega1/Omega2 from the summed counts, their top-m
    singular vectors, m_a capped at both numerical ranks. The sums are those of
    one process over all the data, so the projections are too.

      rhmmtk svd-spectral -m 24 exp/sp/omega.*.acc exp/sp/proj.h5
    """
    from ..io.text import check_outputs
    from ..models.rhmm.spectral_files import svd_files

    check_outputs(projections, inputs=stats)
    svd_files(list(stats), projections, take(SvdOptions, kw))


@command("est-spectral")
@click_options(EstimateOptions)
@arguments(("projections", HDF5_INPUT), ("stats...", HDF5_INPUT), ("model", HDF5_OUTPUT))
def est_spectral(projections, stats, model, **kw):
    """PROJECTIONS + summed pass-2 statistics STATS... -> MODEL (the operators).

    STATS are acc-spectral --projections PROJECTIONS outputs; together they must
    cover the data the projections came from (each shard once). Any smoothing
    constant can be estimated from the same statistics.

      rhmmtk est-spectral --smooth 30 exp/sp/proj.h5 exp/sp/moments.*.acc exp/sp/final.h5
    """
    from ..io.text import check_outputs
    from ..models.rhmm.spectral_files import est_files

    check_outputs(model, inputs=[projections, stats])
    est_files(projections, list(stats), model, take(EstimateOptions, kw))


@command("train-spectral")
@click_options(SvdOptions, EstimateOptions)
@arguments(("feats", HDF5_INPUT), ("model", HDF5_OUTPUT))
def train_spectral(feats, model, **kw):
    """Spectral estimate (figure 4, every position) from a featurized archive -> MODEL.

    One process: streams the archive twice (Omega counts, SVD, moments, operators), the
    same functions as acc-spectral, svd-spectral and est-spectral run over shards.

      rhmmtk train-spectral -m 24 --smooth 30 train.feats.h5 spectral24.h5
    """
    from ..io.text import check_outputs
    from ..models.rhmm.spectral_files import train_file

    check_outputs(model, inputs=[feats])
    train_file(feats, model, take(SvdOptions, kw), take(EstimateOptions, kw))
