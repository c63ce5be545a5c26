"""The EM estimator's commands (thin shims over rhmmtk.models.rhmm.em_files): train-em
in one process; acc-em, init-em, est-em as accumulate/estimate steps over shards; and
train-unigram."""
import click

from ..models.rhmm.em import EmOptions
from ..models.rhmm.operators import RhmmDecodeOptions
from ..options import click_options, shared_option, take
from ..click_types import HDF5_INPUT, HDF5_OUTPUT
from ..selection import DevOptions
from .common import arguments, command, job_option, training_data


def _dev(kw, tables):
    """(DevOptions, dev scorer or None) from a command's options (the dev set, and the
    decoder's --beam/--batch-mb it is decoded with); `tables()` gives the model's (labels,
    observations), asked only when there is a dev set."""
    from ..models.rhmm.dev_scoring import rhmm_dev_scorer

    dev = take(DevOptions, kw).check()
    dec = take(RhmmDecodeOptions, kw)
    if not dev.dev_obs:
        return dev, None
    return dev, rhmm_dev_scorer(dev.dev_obs, dev.dev_ali, *tables(), options=dec)


@command("train-em")
@click_options(EmOptions)
@shared_option("iters", default=50, help="EM iterations.")
@click_options(DevOptions, RhmmDecodeOptions)
@click.option("--dev-every", type=click.IntRange(1), default=1,
              help="Score dev after every K-th iteration (and the last) only: at large m "
                   "decoding dev costs several EM iterations.")
@shared_option("patience", help="Stop once P dev scorings in a row have not beaten the "
                                 "best one (with --dev-every K: P x K iterations); 0 runs "
                                 "every iteration.")
@training_data()
def train_em(iters, dev_every, patience, obs, ali, model, **kw):
    """EM for the R-HMM from observations OBS and labels ALI -> MODEL.

    Logs the training log-likelihood every iteration; with --dev-obs/--dev-ali it
    decodes the dev set after every iteration and keeps the best (the paper's
    protocol), with the decoder's --beam and --batch-mb as `rhmmtk decode` takes them;
    --patience stops early once dev has stopped improving.
    --states 1 --iters 0 is the supervised HMM baseline.

      rhmmtk train-em -m 4 --iters 50 --seed 1 --dev-obs dev.obs.h5 --dev-ali dev.ali \\
          train.obs.h5 train.ali em4.h5
    """
    from ..training_data import read_corpus
    from ..models.rhmm.em_files import train_file
    from ..io.text import check_outputs

    opts = take(EmOptions, kw)
    check_outputs(model, kw["history"], inputs=[obs, ali, kw["dev_obs"], kw["dev_ali"]])
    corpus = read_corpus(obs, ali)
    dev, score = _dev(kw, lambda: (corpus.label_table, corpus.obs_table))
    train_file(corpus, model, opts, iters, score, dev.history, dev_every=dev_every,
               patience=patience)


@command("train-unigram")
@training_data()
def train_unigram(obs, ali, model):
    """UNIGRAM baseline, argmax_a p(a | x) per position, as a model for `decode`.

      rhmmtk train-unigram train.obs.h5 train.ali unigram.h5
    """
    from ..training_data import read_corpus
    from ..models.rhmm.em_files import unigram_file
    from ..io.text import check_outputs

    check_outputs(model, inputs=[obs, ali])
    unigram_file(read_corpus(obs, ali), model)


@command("acc-em")
@job_option
@shared_option("init", "counts", help="Accumulate label-level counts for init-em (no model).")
@shared_option("model", help="Accumulate an E-step's expected counts under this model (for "
                             "est-em).")
@training_data("stats")
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
    from ..models.rhmm.em_files import acc_counts, acc_estep
    from ..io.text import check_outputs

    if counts == bool(model):
        raise click.UsageError("give exactly one of --init (counts) or --model (E-step)")
    check_outputs(stats, inputs=[obs, ali, model])
    if counts:
        acc_counts(obs, ali, stats, job)
    else:
        acc_estep(model, obs, ali, stats, job)


@command("init-em")
@click_options(EmOptions, DevOptions, RhmmDecodeOptions)
@arguments(("stats...", HDF5_INPUT), ("model", HDF5_OUTPUT))
def init_em(stats, model, **kw):
    """Sum count statistics STATS... (acc-em --init) -> the initial EM model (iteration 0).

    The count-based HMM split into m states with seeded noise, exactly train-em's
    starting point for the same seed.

      rhmmtk init-em -m 4 --seed 1 exp/em/0.*.acc exp/em/0.h5
    """
    from ..models.rhmm.em_files import init_files
    from ..io.stats import stats_tables
    from ..io.text import check_outputs
    from ..selection import write_history

    opts = take(EmOptions, kw)
    check_outputs(model, kw["history"], inputs=[stats, kw["dev_obs"], kw["dev_ali"]])
    dev, score = _dev(kw, lambda: stats_tables(stats[0], "em-counts"))
    _, info = init_files(list(stats), model, opts.m, opts.seed, opts.noise, opts.floor,
                         score=score, emission_floor=opts.emission_floor)
    if dev.history:
        write_history(dev.history, info["history"])


@command("est-em")
@shared_option("floor", help="Pseudo-count of the M-step.  [default: the model's, from "
                             "init-em]")
@click_options(DevOptions, RhmmDecodeOptions)
@arguments(("model_in", HDF5_INPUT), ("stats...", HDF5_INPUT), ("model_out", HDF5_OUTPUT))
def est_em(floor, model_in, stats, model_out, **kw):
    """Sum one E-step's statistics STATS... (acc-em --model MODEL_IN) -> MODEL_OUT (M-step).

    The statistics must all come from MODEL_IN and cover its training data once
    (each shard once). MODEL_OUT records the iteration and the history so far.

      rhmmtk est-em exp/em/3.h5 exp/em/4.*.acc exp/em/4.h5
    """
    from ..models.rhmm.em_files import est_files, load_model
    from ..io.text import check_outputs
    from ..selection import write_history

    check_outputs(model_out, kw["history"],
                  inputs=[model_in, stats, kw["dev_obs"], kw["dev_ali"]])
    dev, score = _dev(kw, lambda: _tables_of(load_model(model_in)[1]))
    _, info = est_files(model_in, list(stats), model_out, floor, score=score)
    if dev.history:
        write_history(dev.history, info["history"])


def _tables_of(op):
    return op.labels, op.observations
