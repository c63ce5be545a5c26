"""Training HCRFs: the conditional log-likelihood, its gradient, and RPROP (paper 003).

The objective is sum_b log p(y_b | x_b) over the training segments (no regulariser, as
in the paper). Its gradient is the observed minus the expected feature counts: the
compiled lattice pass (lattice.py) gives them per frame, class and state, and the
frame-feature part is one matrix product G^T psi. Segments are processed in blocks of
about BLOCK_FRAMES frames, and the sums over blocks, like the sums over `--job`
shards (`acc-hcrf`), are the whole's.

RPROP (Riedmiller & Braun 1993, the variant without backtracking, iRprop-) moves every
weight by its own step in the direction of its gradient's sign; a step grows by 1.2
while the sign holds and halves when it flips (and that weight then rests one
iteration). The stopping point is the iteration with the best dev classification
accuracy (rhmmtk.selection), the converted HMM being iteration 0.
"""
import dataclasses

import click
import numpy as np

from ...errors import InputError
from ...options import option, shared
from ...click_types import Real
from ...progress import log, progress
from .model import CONSTRAINTS, MASKED, NORMALIZE, WEIGHTS, HCRF, moment_features

BLOCK_FRAMES = 1 << 15
ETA_PLUS, ETA_MINUS = 1.2, 0.5


@dataclasses.dataclass
class HcrfOptions:
    """How train-hcrf builds and trains the HCRF."""

    constraints: str = option(
        "--constraints", default="moment", type=click.Choice(CONSTRAINTS),
        help="moment: first- and second-order frame statistics (HCRF-MC); distribution: "
             "each weight a natural cubic spline of its feature (HCRF-DC, --knots).")
    knots: int = option(
        "--knots", default=5, type=click.IntRange(2),
        help="HCRF-DC: knots K of every feature's spline, evenly spaced over its training "
             "range.")
    normalize: str = option(
        "--normalize", default="variance", type=click.Choice(NORMALIZE),
        help="Normalisation of the moment features (paper 003): zero mean and unit "
             "variance, or range [l, h] -> [1, 2].")
    iters: int = shared("iters", default=30,
                        help="RPROP iterations (gradient evaluations over the training data).")
    patience: int = shared("patience")
    mapping: str = shared("mapping", help="Label mapping applied before dev scoring (TIMIT's "
                                          "48 -> 39 folding).")


@dataclasses.dataclass
class RpropOptions:
    """RPROP's step sizes (train-hcrf, est-hcrf)."""

    step: float = option(
        "--step", default=0.01, type=Real(0, min_open=True),
        help="RPROP's initial step for every weight.")
    min_step: float = option(
        "--min-step", default=1e-7, type=Real(0, min_open=True), help="RPROP's smallest step.")
    max_step: float = option(
        "--max-step", default=0.1, type=Real(0, min_open=True), help="RPROP's largest step.")


# --- the objective ---------------------------------------------------------------
def blocks(off, size=BLOCK_FRAMES):
    """Segment index ranges [(b0, b1)] of about `size` frames each."""
    cuts = np.searchsorted(off, np.arange(size, off[-1], size))
    edges = np.unique(np.concatenate([[0], cuts, [len(off) - 1]]))
    return list(zip(edges[:-1], edges[1:]))


def block_features(model, data, size=BLOCK_FRAMES):
    """[(psi, off, y)] per block of segments (features computed once per training)."""
    out = []
    for b0, b1 in blocks(data.off, size):
        lo, hi = data.off[b0], data.off[b1]
        out.append((model.features(data.X[lo:hi]), data.off[b0:b1 + 1] - lo, data.y[b0:b1]))
    return out


def gradient(model, psi, off, y):
    """(sum_b log p(y_b | x_b), gradients {weight name: array}) over one block."""
    _, ll, G, dA, dEntry, dExit, dPrior = model.lattice(psi, off, y)
    C, N, F = model.w["W"].shape
    Gf = G.reshape(len(psi), N * C)           # (frames, N x C): the class is the last axis
    grads = {"prior": dPrior, "entry": dEntry, "trans": dA, "exit": dExit,
             "W": (Gf.T @ psi).reshape(N, C, F).transpose(1, 0, 2),
             "bias": Gf.sum(0).reshape(N, C).T}
    for k, m in MASKED.items():
        grads[k] = np.where(model.masks[m], grads[k], 0.0)
    return ll, grads


def total_gradient(model, feats):
    """The objective and its gradient summed over blocks [(psi, off, y)]."""
    ll, total = 0.0, None
    for psi, off, y in feats:
        l, g = gradient(model, psi, off, y)
        ll += l
        total = g if total is None else {k: total[k] + g[k] for k in WEIGHTS}
    if not np.isfinite(ll) or not all(np.all(np.isfinite(v)) for v in total.values()):
        raise InputError("the conditional likelihood or its gradient is not finite (scores "
                         "out of range): try a smaller --max-step or --normalize range")
    return ll, total


# --- RPROP -----------------------------------------------------------------------
class Rprop:
    """iRprop- state: per-weight steps and the previous gradient (kept in the model file
    between est-hcrf runs)."""

    def __init__(self, weights, options, state=None):
        o = options
        if state is None:
            state = {"steps": {k: np.full(v.shape, o.step) for k, v in weights.items()},
                     "prev": {k: np.zeros(v.shape) for k, v in weights.items()}}
        self.steps = {k: v.copy() for k, v in state["steps"].items()}
        self.prev = {k: v.copy() for k, v in state["prev"].items()}
        self.min_step, self.max_step = o.min_step, o.max_step

    def state(self):
        return {"steps": self.steps, "prev": self.prev}

    def update(self, weights, grads):
        """New weights one step uphill (grads: of the objective to maximise)."""
        out = {}
        for k, w in weights.items():
            g = grads[k].copy()
            same = g * self.prev[k]
            st = self.steps[k]
            st[same > 0] = np.minimum(st[same > 0] * ETA_PLUS, self.max_step)
            st[same < 0] = np.maximum(st[same < 0] * ETA_MINUS, self.min_step)
            g[same < 0] = 0.0
            out[k] = w + np.sign(g) * st
            self.prev[k] = g
        return out


# --- training --------------------------------------------------------------------
def dev_scorer(dev, labels, mapping=None):
    """A function of an HCRF giving its classification accuracy on dev SegmentData (on
    mapped labels with `mapping`); the dev features are computed on first use."""
    fold = (lambda s: mapping.get(s, s)) if mapping else (lambda s: s)
    ref = np.array([fold(s) for s in dev.names])
    hyp_of = np.array([fold(s) for s in labels.symbols])
    cache = {}

    def score(model):
        if "feats" not in cache:
            cache["feats"] = block_features(model, dev)
        pred = np.concatenate([model.classify(psi, off) for psi, off, _ in cache["feats"]])
        return float(np.mean(hyp_of[pred] == ref))

    return score


def init_state(init, model):
    """The RPROP state to continue from: `init`'s, when it is an HCRF of the same shape."""
    st = getattr(init, "rprop", None)
    if st is None or init.w["W"].shape != model.w["W"].shape:
        return None
    return st


def start_model(init, train, options):
    """The model training starts from: `init` (a CDHMM, converted exactly, or an HCRF)
    as an HCRF with the requested constraints."""
    from ..cdhmm import CDHMM
    from .data import check_every_class

    if isinstance(init, CDHMM):
        counts = check_every_class(train.y, init.labels, "the training segments")
        model = HCRF.from_cdhmm(init, counts.astype(np.float64), moment_features(train.X),
                                options.normalize)
    else:
        model = init
    if options.constraints == "distribution" and model.constraints == "moment":
        z = (moment_features(train.X) - model.shift) / model.scale
        model = model.to_distribution(options.knots, z)
    if model.constraints != options.constraints:
        raise InputError(f"the initial model has {model.constraints} constraints; it cannot "
                         f"be trained with {options.constraints} constraints")
    return model


def train_hcrf(init, train, options=None, dev_score=None, rprop_options=None):
    """Train an HCRF by RPROP from `init` (CDHMM or HCRF) on SegmentData `train`; with
    `dev_score` (dev_scorer), keep the iteration with the best dev accuracy. Returns the
    model, whose info holds the per-iteration history."""
    o = options or HcrfOptions()
    model = start_model(init, train, o)
    feats = block_features(model, train)
    rprop = Rprop(model.w, rprop_options or RpropOptions(), init_state(init, model))
    final = rprop_loop(model, lambda m: total_gradient(m, feats), o.iters, rprop, dev_score,
                       train.num_segments, "segment", o.patience)
    final.info.update({"estimator": f"hcrf-{o.constraints}", "train_segments": train.num_segments,
                       "options": dataclasses.asdict(o)})
    return final


def rprop_loop(model, objective, iters, rprop, dev_score, count, unit, patience=0):
    """`iters` RPROP steps uphill on objective(model) -> (value, gradients); returns the
    model of the best dev iteration (the last without dev), its history in info and the
    RPROP state it was reached with in .rprop. With dev, `patience` P > 0 stops once P
    iterations in a row have not beaten the best (selection.stalled)."""
    from ...selection import best_iteration, require_dev, stalled

    require_dev(patience, dev_score is not None)
    history, w, best = [], model.w, None
    for it in range(iters + 1):
        model = model.with_weights(w)
        with progress(total=1, desc=f"iter {it}", unit="pass") as bar:
            ll, g = objective(model)
            bar.update(1)
        dev = dev_score(model) if dev_score else None
        history.append({"iter": it, "loglik": ll / count, "objective": ll, "dev_acc": dev})
        log.info("iteration %d: log p(y|x) per %s %.5f%s", it, unit, ll / count,
                 "" if dev is None else f", dev accuracy {100 * dev:.2f}%")
        if best_iteration(history) == it:
            # the weights and the RPROP state they were reached with (est-hcrf continues)
            best = (w, {k: {n: a.copy() for n, a in v.items()} for k, v in rprop.state().items()})
        if stalled(history, patience):
            log.info("stopping after iteration %d: dev accuracy has not improved in %d "
                     "iterations", it, patience)
            break
        if it < iters:
            w = rprop.update(w, g)
    final = model.with_weights(best[0])
    final.rprop = best[1]
    final.info.update({"history": history, "best_iteration": best_iteration(history)})
    return final


def train_file(init_path, feats, segments, options=None, dev_feats=None, dev_segments=None,
               rprop_options=None):
    """train-hcrf: the HCRF of initial model file `init_path` (an ML CDHMM from
    train-cdhmm, or an HCRF) trained on the segments of list `segments` with frames from
    features archive `feats`; with a dev set, the best iteration on it is kept."""
    from ...io.labelmap import read_label_map
    from .. import load_model
    from .data import read_segment_data

    o = options or HcrfOptions()
    init = load_model(init_path, expect=("cdhmm", "hcrf"))
    train = read_segment_data(feats, segments, init.labels, dim=init.dim)
    log.info("%d training segments (%d frames) of %d utterances, %d classes",
             train.num_segments, train.off[-1], len(train.keys), len(init.labels))
    score = None
    if dev_feats:
        dev = read_segment_data(dev_feats, dev_segments, init.labels, strict=False,
                                dim=init.dim)
        score = dev_scorer(dev, init.labels, read_label_map(o.mapping) if o.mapping else None)
    return train_hcrf(init, train, o, score, rprop_options)


def weights_fingerprint(model):
    """What identifies a model's weights in the statistics made with it."""
    import hashlib

    h = hashlib.sha1()
    for k in WEIGHTS:
        h.update(np.ascontiguousarray(model.w[k], dtype="<f8").tobytes())
    return h.hexdigest()[:16]


def acc_files(model_path, feats, segments, out, job=None):
    """acc-hcrf: the objective and gradient of (shard `job` of) the segments under HCRF
    `model_path` -> a statistics file (kind hcrf-gradient) for est-hcrf."""
    import os

    from ...io.stats import write_stats
    from ...provenance import record
    from .. import load_model
    from .data import read_segment_data

    m = load_model(model_path, expect="hcrf")
    data = read_segment_data(feats, segments, m.labels, job=job, dim=m.dim)
    ll, g = total_gradient(m, block_features(m, data))
    stats = {f"grad_{k}": v for k, v in g.items()}
    stats["loglik"], stats["segments"] = np.array(ll), np.array(float(data.num_segments))
    meta = {"label_fingerprint": m.labels.fingerprint(), "model": weights_fingerprint(m)}
    write_stats(out, "hcrf-gradient", meta, record({"job": str(job or ""), "model": model_path}),
                {"labels": m.labels}, stats, os.path.abspath(segments), job, len(data.keys),
                data.num_segments)
    log.info("%d segments: log p(y|x) per segment %.5f", data.num_segments,
             ll / max(data.num_segments, 1))


def est_files(model_in, stats, out, rprop_options=None):
    """est-hcrf: sum acc-hcrf gradients (made with `model_in`) -> one RPROP step, with the
    RPROP state the model file keeps."""
    from ...io.stats import check_meta
    from ...provenance import record
    from .. import load_model
    from ..cdhmm_train import _sum_stats

    m = load_model(model_in, expect="hcrf")
    meta, st, _, _, _ = _sum_stats(stats, "hcrf-gradient")
    check_meta(meta, {"label_fingerprint": m.labels.fingerprint(),
                      "model": weights_fingerprint(m)}, stats[0], model_in)
    rprop = Rprop(m.w, rprop_options or RpropOptions(), m.rprop)
    new = m.with_weights(rprop.update(m.w, {k: st[f"grad_{k}"] for k in WEIGHTS}))
    new.rprop = rprop.state()
    hist = list(m.info.get("history", []))
    n = float(st["segments"])
    hist.append({"iter": len(hist), "loglik": float(st["loglik"]) / n,
                 "objective": float(st["loglik"]), "dev_acc": None})
    new.info["history"] = hist
    log.info("log p(y|x) per segment %.5f (of %s)", hist[-1]["loglik"], model_in)
    new.save(out, record({"model": str(model_in)}))
    return new
