"""Continuous-density phone HMMs (CDHMMs): the HTK-style acoustic model.

One left-to-right HMM per phone with S emitting states (rhmmtk.models.phoneloop's topology:
stay, advance, or leave from any state) and M diagonal-covariance Gaussians per state,
read directly from the 39-dimensional frames of a "features" archive. Phones are
recognised by Viterbi search over a phone loop weighted by a phone bigram estimated
from the training transcriptions; the output is the frame labelling of the best path.

Parameters are stored in the form in which a path's score is linear (paper 004's w):
every Gaussian g has a row of `nat` (natural parameters plus its log weight)

    nat[g] = [ -1/(2 var_g) (D) | mu_g / var_g (D) | log c_g - 1/2 (D log 2pi
               + sum log var_g + sum mu_g^2 / var_g) ]

so that log c_g N(x; mu_g, var_g) = [x*x, x, 1] . nat[g] and the log-likelihoods of all
Gaussians for all frames are one matrix product. Transitions are log-probabilities
`trans[p, j] = (stay, advance, exit)`. A large-margin model (rhmmtk.models.largemargin)
moves `nat` and `trans` freely, so its rows need not be normalised Gaussians; ML models
also keep their means, variances and weights.

State scores combine a state's Gaussians by log-sum-exp (`mixture = "sum"`, the density
of ML training) or by max (`"max"`, the best-path score of paper 004's NCO-H).
"""
import dataclasses
import json
import os

import numpy as np
from numba import njit

from ..errors import InputError
from ..options import option
from ..click_types import Real
from . import Decoded, Model

FORMAT = "model"
MODEL_TYPE = "cdhmm"
MIXTURE_RULES = ("sum", "max")
LOG2PI = float(np.log(2 * np.pi))


@dataclasses.dataclass
class CdhmmDecodeOptions:
    """Decode-time options of the CDHMM phone-loop Viterbi decoder."""

    lm_scale: float = option(
        "--lm-scale", default=1.0, type=Real(0),
        help="CDHMM: weight of the phone bigram's log-probabilities against the acoustic "
             "scores (HVite's -s).")
    insertion_penalty: float = option(
        "--insertion-penalty", default=0.0, type=Real(),
        help="CDHMM: log-score added at every phone start (HVite's -p; negative: fewer "
             "phones).")


def natural_from_gaussians(means, variances, logw):
    """nat rows [-1/(2 var) | mu/var | const] of Gaussians (..., D) with log weights (...)."""
    prec = 1.0 / variances
    const = logw - 0.5 * (means.shape[-1] * LOG2PI + np.log(variances).sum(-1)
                          + (means * means * prec).sum(-1))
    return np.concatenate([-0.5 * prec, means * prec, const[..., None]], axis=-1)


def frame_features(X):
    """[x*x, x, 1] per frame (T, 2D+1): the sufficient statistics the scores are linear in."""
    X = np.asarray(X, dtype=np.float64)
    return np.concatenate([X * X, X, np.ones((len(X), 1))], axis=1)


def combine_mixtures(scores, M, rule, with_best=False):
    """(T, G) Gaussian scores -> (T, G/M) state scores (and, `with_best`, each state's
    best component (T, G/M))."""
    if M == 1:
        return (scores, np.zeros(scores.shape, dtype=np.int64)) if with_best else scores
    out, best = mixture_combine(np.ascontiguousarray(scores, dtype=np.float64), M,
                                rule == "sum")
    return (out, best) if with_best else out


@njit(cache=True)
def mixture_combine(Z, M, use_sum):
    """(T, G) Gaussian scores, G = states x M components in order -> (state scores (T, G/M):
    log-sum-exp over components if `use_sum` else max, best component (T, G/M): the
    first of equals). One pass over Z, where numpy needs one strided pass per component."""
    T, G = Z.shape
    n = G // M
    out = np.empty((T, n))
    best = np.empty((T, n), dtype=np.int64)
    for t in range(T):
        for s in range(n):
            base = s * M
            top = Z[t, base]
            b = 0
            for m in range(1, M):
                v = Z[t, base + m]
                if v > top:
                    top = v
                    b = m
            best[t, s] = b
            if use_sum and top > -np.inf:
                acc = 0.0
                for m in range(M):
                    acc += np.exp(Z[t, base + m] - top)
                top += np.log(acc)
            out[t, s] = top
    return out, best


class CDHMM(Model):
    model_type = MODEL_TYPE
    input_kinds = ("features",)
    decode_options = CdhmmDecodeOptions

    def __init__(self, labels, nat, trans, lm_init, lm_bigram, lm_final, mixture="sum",
                 gaussians=None, info=None):
        self.labels = labels
        self.nat = np.asarray(nat, dtype=np.float64)          # (P, S, M, 2D+1)
        self.trans = np.asarray(trans, dtype=np.float64)      # (P, S, 3) log
        self.lm_init = np.asarray(lm_init, dtype=np.float64)  # (P,) log
        self.lm_bigram = np.asarray(lm_bigram, dtype=np.float64)  # (P, P) log
        self.lm_final = np.asarray(lm_final, dtype=np.float64)    # (P,) log
        self.mixture = mixture
        self.gaussians = gaussians   # ML models: dict means, variances, logw
        self.info = dict(info or {})
        self.check()

    @property
    def num_phones(self):
        return self.nat.shape[0]

    @property
    def states(self):
        return self.nat.shape[1]

    @property
    def mixtures(self):
        return self.nat.shape[2]

    @property
    def dim(self):
        return (self.nat.shape[3] - 1) // 2

    def check(self):
        """Shapes agree and every number is finite (ValueError naming what is not)."""
        if self.nat.ndim != 4 or self.nat.shape[3] % 2 != 1:
            raise ValueError(f"nat has shape {self.nat.shape}, want (P, S, M, 2D+1)")
        P, S, M = self.nat.shape[:3]
        if len(self.labels) != P:
            raise ValueError(f"{len(self.labels)} labels but {P} phone models")
        for name, arr, shape in (("trans", self.trans, (P, S, 3)), ("lm_init", self.lm_init, (P,)),
                                 ("lm_bigram", self.lm_bigram, (P, P)),
                                 ("lm_final", self.lm_final, (P,))):
            if arr.shape != shape:
                raise ValueError(f"{name} has shape {arr.shape}, want {shape}")
        if self.mixture not in MIXTURE_RULES:
            raise ValueError(f"mixture rule must be one of {MIXTURE_RULES}")
        # the advance move of the last state does not exist; stored as 0, never used
        t = self.trans.copy()
        t[:, S - 1, 1] = 0.0
        for name, arr in (("nat", self.nat), ("trans", t), ("lm_init", self.lm_init),
                          ("lm_bigram", self.lm_bigram), ("lm_final", self.lm_final)):
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"{name} holds a non-finite number")

    # --- scoring ------------------------------------------------------------------
    def gaussian_scores(self, X):
        """(T, G) scores [x*x, x, 1] @ nat.T of every Gaussian g = (p*S + j)*M + m."""
        return frame_features(X) @ self.nat.reshape(-1, self.nat.shape[3]).T

    def state_scores(self, X):
        """(T, P*S) state log-scores (mixture rule applied)."""
        return combine_mixtures(self.gaussian_scores(X), self.mixtures, self.mixture)

    def graph(self, lm_scale=1.0, insertion_penalty=0.0):
        """The phone-loop arguments (loop, nxt, ext, init, bigram, final) for phoneloop."""
        t = self.trans
        nxt = t[:, :, 1].copy()
        nxt[:, -1] = -np.inf
        return (np.ascontiguousarray(t[:, :, 0]), nxt, np.ascontiguousarray(t[:, :, 2]),
                lm_scale * self.lm_init + insertion_penalty,
                lm_scale * self.lm_bigram + insertion_penalty, lm_scale * self.lm_final)

    # --- the model interface ------------------------------------------------------
    def check_input(self, archive):
        pass

    def input_sequence(self, archive, key, x):
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise InputError(f"features of shape {x.shape}, the model needs (frames, {self.dim})",
                             archive.path, key)
        if not np.all(np.isfinite(x)):
            raise InputError("features hold a non-finite number", archive.path, key)
        return x

    def decode(self, seqs, options=None, progress=None):
        from .phoneloop import viterbi

        options = options or CdhmmDecodeOptions()
        g = self.graph(options.lm_scale, options.insertion_penalty)
        labels, frames = [], 0
        for x in seqs:
            E = self.state_scores(x)
            _, path, _ = viterbi(E, *g)
            labels.append(path // self.states)
            frames += len(x)
            if progress is not None:
                progress.update(1)
        return Decoded(labels, None, {"positions": frames})

    def describe(self):
        attrs = getattr(self, "attrs", {})
        out = {
            "kind": "model", "model_type": MODEL_TYPE, "estimator": self.info.get("estimator"),
            "created_by": attrs.get("created_by"), "created": attrs.get("created"),
            "options": json.loads(attrs.get("options", "{}")),
            "versions": json.loads(attrs.get("versions", "{}")),
            "num_labels": self.num_phones, "labels": self.labels.symbols,
            "states": self.states, "mixtures": self.mixtures, "dim": self.dim,
            "mixture_rule": self.mixture,
        }
        for k in ("history", "train_utts", "train_frames", "floored_variances",
                  "best_iteration", "lambda"):
            if k in self.info:
                out[k] = self.info[k]
        return out

    # --- files --------------------------------------------------------------------
    def save(self, path, provenance):
        """Write the model (HDF5) atomically. See rhmmtk-formats(5)."""
        from ..io.model_file import write_model

        self.check()
        datasets = {"nat": self.nat, "trans": self.trans, "lm/init": self.lm_init,
                    "lm/bigram": self.lm_bigram, "lm/final": self.lm_final}
        for k, v in (self.gaussians or {}).items():
            datasets[f"gaussians/{k}"] = v
        write_model(path, MODEL_TYPE, self.labels, None, self.info, provenance, datasets,
                    attrs={"mixture": self.mixture})

    @classmethod
    def load(cls, path):
        from ..io.model_file import ModelFile

        path = os.fspath(path)
        with ModelFile(path, MODEL_TYPE) as mf:
            labels, info, attrs = mf.labels, mf.info, mf.attrs
            args = [mf.array(n) for n in ("nat", "trans", "lm/init", "lm/bigram", "lm/final")]
            mixture = str(attrs["mixture"])
            gauss = ({k: mf.array(f"gaussians/{k}") for k in mf.file["gaussians"]}
                     if "gaussians" in mf else None)
        try:
            m = cls(labels, *args, mixture=mixture, gaussians=gauss, info=info)
        except ValueError as e:
            raise InputError(f"model file is inconsistent: {e}", path) from None
        m.attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in attrs.items()}
        return m
