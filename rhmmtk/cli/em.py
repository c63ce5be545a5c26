"""acc-em, init-em, est-em: EM as accumulate/estimate steps over shards (thin shims over
rhmmtk.em). train-em runs the same functions in one process."""
import click

from .common import command, job_option
from .params import HDF5_INPUT, HDF5_OUTPUT, Real, SEED, TEXT_INPUT, TEXT_OUTPUT


def _dev_score(dev_obs, dev_ali, labels, obs):
    """A function of an RHMM giving its dev accuracy (train-em's), or None."""
    if bool(dev_obs) != bool(dev_ali):
        raise click.UsageError("--dev-obs and --dev-ali go together")
    if not dev_obs:
        return None
    from ..corpus import Corpus, read_corpus
    from .train import _check_same_observations, _dev_scorer

    dev = read_corpus(dev_obs, dev_ali, labels, strict=False)
    _check_same_observations(dev.obs_table, obs, dev_obs)
    return _dev_scorer(Corpus([], [], [], labels, obs), dev)


def _dev_options(func):
    func = click.option("--history", type=TEXT_OUTPUT,
                        help="Write the per-iteration log so far (TSV: iter, loglik, objective, "
                             "dev_acc) here.")(func)
    func = click.option("--dev-ali", type=TEXT_INPUT,
                        help="Dev alignment: the new model's dev accuracy is logged and kept "
                             "in its history.")(func)
    func = click.option("--dev-obs", type=HDF5_INPUT,
                        help="Dev observations archive.")(func)
    return func


@command("acc-em")
@job_option
@click.option("--init", "counts", is_flag=True,
              help="Accumulate label-level counts for init-em (no model).")
@click.option("--model", type=HDF5_INPUT,
              help="Accumulate an E-step's expected counts under this model (for est-em).")
@click.argument("obs", type=HDF5_INPUT)
@click.argument("ali", type=TEXT_INPUT)
@click.argument("stats", type=HDF5_OUTPUT)
def acc_em(job, counts, model, obs, ali, stats):
    """Accumulate EM statistics of (shard --job K/N of) observations OBS + labels ALI.

    With --init: label-level counts (bigrams, emissions, first and last labels),
    which init-em sums into the initial model. With --model: one E-step's
    expected counts and log-likelihood under MODEL, which est-em sums into the
    next model. Shards split the alignment's utterance order. Example, 4 jobs:

    \b
      $cmd JOB=1:4 log/acc.0.JOB.log rhmmtk acc-em --init --job JOB/4 obs.h5 ali 0.JOB.acc
      rhmmtk init-em -m 4 --seed 1 0.*.acc 0.h5
      $cmd JOB=1:4 log/acc.1.JOB.log rhmmtk acc-em --model 0.h5 --job JOB/4 obs.h5 ali 1.JOB.acc
      rhmmtk est-em 0.h5 1.*.acc 1.h5
    """
    from ..em import acc_counts, acc_estep
    from ..io.text import check_outputs

    if counts == bool(model):
        raise click.UsageError("give exactly one of --init (counts) or --model (E-step)")
    check_outputs(stats, inputs=[obs, ali, model])
    if counts:
        acc_counts(obs, ali, stats, job)
    else:
        acc_estep(model, obs, ali, stats, job)


@command("init-em")
@click.option("-m", "--states", type=click.IntRange(1), default=4,
              help="Hidden states per label.")
@click.option("--seed", type=SEED, default=0, help="Seed of the random initialisation.")
@click.option("--floor", type=Real(0), default=1e-3,
              help="Pseudo-count added to every event the training labels allow, and to "
                   "every (label, observation) pair (used by every est-em after).")
@click.option("--noise", type=Real(0), default=0.5,
              help="Symmetry-breaking multiplicative noise of the initial parameters.")
@_dev_options
@click.argument("stats", nargs=-1, required=True, type=HDF5_INPUT)
@click.argument("model", type=HDF5_OUTPUT)
def init_em(states, seed, floor, noise, dev_obs, dev_ali, history, stats, model):
    """Sum count statistics STATS... (acc-em --init) -> the initial EM model (iteration 0).

    The count-based HMM split into m states with seeded noise, exactly train-em's
    starting point for the same seed.

      rhmmtk init-em -m 4 --seed 1 exp/em/0.*.acc exp/em/0.h5
    """
    from ..em import init_files, write_history
    from ..io.stats import StatsFile
    from ..io.text import check_outputs

    check_outputs(model, history, inputs=[stats, dev_obs, dev_ali])
    score = None
    if dev_obs or dev_ali:
        with StatsFile(stats[0], "em-counts") as sf:
            labels, obs = sf.symbols("labels"), sf.symbols("observations")
        score = _dev_score(dev_obs, dev_ali, labels, obs)
    _, info = init_files(list(stats), model, states, seed, noise, floor, score=score)
    if history:
        write_history(history, info["history"])


@command("est-em")
@click.option("--floor", type=Real(0), default=None,
              help="Pseudo-count of the M-step.  [default: the model's, from init-em]")
@_dev_options
@click.argument("model_in", type=HDF5_INPUT)
@click.argument("stats", nargs=-1, required=True, type=HDF5_INPUT)
@click.argument("model_out", type=HDF5_OUTPUT)
def est_em(floor, dev_obs, dev_ali, history, model_in, stats, model_out):
    """Sum one E-step's statistics STATS... (acc-em --model MODEL_IN) -> MODEL_OUT (M-step).

    The statistics must all come from MODEL_IN and cover its training data once
    (each shard once). MODEL_OUT records the iteration and the history so far.

      rhmmtk est-em exp/em/3.h5 exp/em/4.*.acc exp/em/4.h5
    """
    from ..em import est_files, load_model, write_history
    from ..io.text import check_outputs

    check_outputs(model_out, history, inputs=[model_in, stats, dev_obs, dev_ali])
    score = None
    if dev_obs or dev_ali:
        _, op = load_model(model_in)
        score = _dev_score(dev_obs, dev_ali, op.labels, op.observations)
    _, info = est_files(model_in, list(stats), model_out, floor, score=score)
    if history:
        write_history(history, info["history"])
