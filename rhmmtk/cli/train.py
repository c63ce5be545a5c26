"""train-spectral, train-em, train-unigram: thin shims over rhmmtk.spectral and rhmmtk.em."""
import click

from .common import command


def _check_same_observations(table, other, path, what="observation symbol table"):
    from ..errors import InputError

    if table != other:
        raise InputError(f"{what} differs from the training data's ({other.fingerprint()} vs "
                         f"{table.fingerprint()}): features made with another table or options",
                         path)


@command("train-em")
@click.option("-m", "--states", type=click.IntRange(1), default=4,
              help="Hidden states per label; 1 gives the supervised HMM (counts).")
@click.option("--iters", type=click.IntRange(0), default=50, help="EM iterations.")
@click.option("--seed", type=int, default=0, help="Seed of the random initialisation.")
@click.option("--floor", type=click.FloatRange(0), default=1e-3,
              help="Pseudo-count added to every event the training labels allow, and to "
                   "every (label, observation) pair.")
@click.option("--noise", type=click.FloatRange(0), default=0.5,
              help="Symmetry-breaking multiplicative noise of the initial parameters.")
@click.option("--dev-obs", type=click.Path(dir_okay=False), help="Dev observations archive.")
@click.option("--dev-ali", type=click.Path(dir_okay=False, allow_dash=True),
              help="Dev alignment: every iteration is scored and the best one is kept.")
@click.option("--history", type=click.Path(dir_okay=False),
              help="Write the per-iteration log (TSV: iter, loglik, objective, dev_acc) here.")
@click.argument("obs", type=click.Path(dir_okay=False))
@click.argument("ali", type=click.Path(allow_dash=True))
@click.argument("model", type=click.Path(dir_okay=False))
def train_em(states, iters, seed, floor, noise, dev_obs, dev_ali, history, obs, ali, model):
    """EM for the R-HMM from observations OBS and labels ALI -> MODEL.

    Logs the training log-likelihood every iteration; with --dev-obs/--dev-ali it
    decodes the dev set after every iteration and keeps the best (the paper's
    protocol). --states 1 --iters 0 is the supervised HMM baseline.

      rhmmtk train-em -m 4 --iters 50 --seed 1 --dev-obs dev.obs.h5 --dev-ali dev.ali \\
          train.obs.h5 train.ali em4.h5
    """
    from ..corpus import read_corpus
    from ..em import train, write_history
    from ..io.text import check_outputs
    from ..progress import log
    from ..provenance import record

    check_outputs(model, history)
    if bool(dev_obs) != bool(dev_ali):
        raise click.UsageError("--dev-obs and --dev-ali go together")
    corpus = read_corpus(obs, ali)
    score = None
    if dev_obs:
        dev = read_corpus(dev_obs, dev_ali, corpus.label_table, strict=False)
        _check_same_observations(dev.obs_table, corpus.obs_table, dev_obs)
        score = _dev_scorer(corpus, dev)
    opts = dict(m=states, iters=iters, seed=seed, floor=floor, noise=noise)
    best, hist, best_it = train(corpus, states, iters, seed, floor, noise, score=score)
    if score is not None:
        log.info("best dev accuracy %.2f%% at iteration %d", 100 * hist[best_it]["dev_acc"],
                 best_it)
    if history:
        write_history(history, hist)
    info = {"estimator": "em" if states > 1 or iters > 0 else "hmm", "options": opts,
            "best_iteration": best_it, "history": hist, "m": [states] * len(corpus.label_table),
            "train_utts": len(corpus), "train_positions": corpus.num_positions}
    best.operators(corpus.label_table, corpus.obs_table, info).save(model, record(opts))


def _dev_scorer(corpus, dev):
    import numpy as np

    from ..forward_backward import DEFAULT_BEAM, decode

    ref = np.concatenate(dev.labels)

    def score(rhmm):
        op = rhmm.operators(corpus.label_table, corpus.obs_table)
        hyp, _, _ = decode(op, dev.obs, beam=DEFAULT_BEAM)
        return float(np.mean(np.concatenate(hyp) == ref))

    return score


@command("train-unigram")
@click.argument("obs", type=click.Path(dir_okay=False))
@click.argument("ali", type=click.Path(allow_dash=True))
@click.argument("model", type=click.Path(dir_okay=False))
def train_unigram(obs, ali, model):
    """UNIGRAM baseline, argmax_a p(a | x) per position, as a model for `decode`.

      rhmmtk train-unigram train.obs.h5 train.ali unigram.h5
    """
    from ..corpus import read_corpus
    from ..em import unigram_operators
    from ..provenance import record

    corpus = read_corpus(obs, ali)
    info = {"estimator": "unigram", "m": [1] * len(corpus.label_table),
            "train_utts": len(corpus), "train_positions": corpus.num_positions}
    unigram_operators(corpus, info).save(model, record({}))
