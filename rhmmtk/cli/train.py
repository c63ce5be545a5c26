"""train-spectral, train-em, train-unigram: thin shims over rhmmtk.spectral and rhmmtk.em."""
import click

from .common import command


def _check_same_observations(table, other, path, what="observation symbol table"):
    from ..errors import InputError

    if table != other:
        raise InputError(f"{what} differs from the training data's ({other.fingerprint()} vs "
                         f"{table.fingerprint()}): features made with another table or options",
                         path)


@command("train-spectral")
@click.option("-m", "--states", type=click.IntRange(1), default=24,
              help="Hidden states per label (capped per label by the rank the data supports).")
@click.option("--smooth", type=click.FloatRange(0), default=30.0,
              help="Smoothing constant C: lam = sqrt(N_ab) / (C + sqrt(N_ab)); 0 = none.")
@click.option("--smooth-emission", type=click.FloatRange(0), default=0.0,
              help="Emission smoothing constant C_e: d^a_x backs off to p(x|a) E[d|a]; 0 = none.")
@click.option("--emission-floor", type=click.FloatRange(0), default=1e-3,
              help="Add eps p(x) E[d|a] to every d^a_x: no label-observation pair is impossible.")
@click.option("--kappa", type=click.FloatRange(0), default=5.0,
              help="Feature scaling sqrt(N_a / (count_a(f) + kappa)).")
@click.option("--feature-scaling/--no-feature-scaling", default=True,
              help="Scale indicator columns before the SVD (the L-PCFG practice).")
@click.option("--rank-tol", type=click.FloatRange(0, 1), default=1e-6,
              help="Numerical rank: singular values above rank-tol * the largest.")
@click.option("--max-cond", type=float, default=1e10,
              help="Pseudo-invert Sigma/Lambda blocks with a larger condition number.")
@click.option("--seed", type=int, default=0, help="Seed of the sparse SVD's start vector.")
@click.option("--workers", type=click.IntRange(1), default=1,
              help="Processes sharing the labels' SVDs (the result does not depend on it).")
@click.argument("feats", type=click.Path(dir_okay=False))
@click.argument("model", type=click.Path(dir_okay=False))
def train_spectral(states, smooth, smooth_emission, emission_floor, kappa, feature_scaling,
                   rank_tol, max_cond, seed, workers, feats, model):
    """Spectral estimate (figure 4, every position) from a featurized archive -> MODEL.

    One process: streams the archive twice (Omega counts, SVD, moments, operators), the
    same functions as acc-spectral, svd-spectral and est-spectral run over shards.

      rhmmtk train-spectral -m 24 --smooth 30 train.feats.h5 spectral24.h5
    """
    from ..io.text import check_outputs
    from ..spectral import train_file

    check_outputs(model)
    train_file(feats, model, states, smooth=smooth, kappa=kappa if feature_scaling else None,
               rank_tol=rank_tol, max_cond=max_cond, seed=seed, smooth_emission=smooth_emission,
               emission_floor=emission_floor, workers=workers)


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
@click.option("--dev-every", type=click.IntRange(1), default=1, show_default=True,
              help="Score dev after every K-th iteration (and the last) only: at large m "
                   "decoding dev costs several EM iterations.")
@click.option("--history", type=click.Path(dir_okay=False),
              help="Write the per-iteration log (TSV: iter, loglik, objective, dev_acc) here.")
@click.argument("obs", type=click.Path(dir_okay=False))
@click.argument("ali", type=click.Path(allow_dash=True))
@click.argument("model", type=click.Path(dir_okay=False))
def train_em(states, iters, seed, floor, noise, dev_obs, dev_ali, dev_every, history, obs, ali,
             model):
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
    if dev_every != 1:
        opts["dev_every"] = dev_every          # recorded when it differs from the default
    best, hist, best_it = train(corpus, states, iters, seed, floor, noise, score=score,
                                dev_every=dev_every)
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
