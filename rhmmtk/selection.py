"""Choosing an iteration on development data, for every iterative trainer.

The paper's protocol (and paper 002's) trains for a fixed number of iterations, decodes the
dev set after each and keeps the best. This module owns that bookkeeping once, as
hmmlearn's ConvergenceMonitor does: the shared `--dev-obs/--dev-ali/--history` options,
the dev scorer, the history file, and which iteration is best.

A history is a list of dicts, one per iteration: {"iter", "loglik", "objective",
"dev_acc"} (None where unknown); trainers may add keys of their own.
"""
import dataclasses

import click
import numpy as np

from .errors import InputError
from .options import option, shared
from .params import HDF5_INPUT, TEXT_INPUT

HISTORY_COLUMNS = ("iter", "loglik", "objective", "dev_acc")


@dataclasses.dataclass
class DevOptions:
    """Dev-set selection, shared by every iterative trainer."""

    dev_obs: str = option("--dev-obs", default=None, type=HDF5_INPUT,
                          help="Dev observations archive.")
    dev_ali: str = option("--dev-ali", default=None, type=TEXT_INPUT,
                          help="Dev alignment: every iteration is scored on it and the best "
                               "one is kept.")
    history: str = shared("history",
                          help="Write the per-iteration log here (TSV, a row per iteration: "
                               "the trainer's figures and dev_acc).")

    def check(self):
        if bool(self.dev_obs) != bool(self.dev_ali):
            raise click.UsageError("--dev-obs and --dev-ali go together")
        return self


def best_iteration(history):
    """The iteration with the highest dev accuracy (the first of equals); without dev
    scores, the last one."""
    scored = [(h["dev_acc"], -h["iter"]) for h in history if h.get("dev_acc") is not None]
    if not scored:
        return history[-1]["iter"]
    return -max(scored)[1]


def rhmm_dev_scorer(dev_obs, dev_ali, labels, observations, beam=None):
    """A function of an RHMM giving its per-position accuracy on the dev set (None without
    one). The dev observations must use the training observation table."""
    if not dev_obs:
        return None
    from .corpus import read_corpus
    from .models.rhmm.forward_backward import decode
    from .models.rhmm.operators import RhmmDecodeOptions

    dev = read_corpus(dev_obs, dev_ali, labels, strict=False)
    if dev.obs_table != observations:
        raise InputError("observation symbol table differs from the training data's "
                         f"({dev.obs_table.fingerprint()} vs {observations.fingerprint()}): "
                         "features made with another table or options", dev_obs)
    ref = np.concatenate(dev.labels)
    beam = RhmmDecodeOptions.beam if beam is None else beam

    def score(rhmm):
        hyp, _, _ = decode(rhmm.operators(labels, observations), dev.obs, beam=beam)
        return float(np.mean(np.concatenate(hyp) == ref))

    return score


def write_history(path, history):
    """The per-iteration log as TSV: iter, loglik, objective, dev_acc (empty when unknown)."""
    from .io.text import open_output

    with open_output(path) as f:
        f.write("\t".join(HISTORY_COLUMNS) + "\n")
        for h in history:
            f.write("\t".join("" if h.get(k) is None else f"{h[k]:.6f}" if k != "iter"
                              else str(h[k]) for k in HISTORY_COLUMNS) + "\n")
