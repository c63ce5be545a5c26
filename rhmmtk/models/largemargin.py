"""Large-margin training of CDHMMs (paper 004, NCO-H) by the non-convex bundle method.

Objective, with w the CDHMM's parameters started from the ML model w_ML:

    f(w) = lambda/2 ||w - w_ML||^2 + sum_i max_y [F(x_i, y, w) + Delta(y_i, y)] - F(x_i, y_i, w)

F(x, y, w) is the best-path score (NCO-H): the maximum over the state path and the
mixture component of every frame of the phone-loop score of frame labelling y (acoustic
log-scores, within-phone transitions, and the phone bigram at the training LM scale
and insertion penalty, which are constants of the search and not parameters). Delta is
the Hamming loss over frames. The references y_i are frame labellings, so the hidden
part is the state path inside each labelled phone and the components.

w is `nat` (one row [-1/(2 var) | mu/var | const] per Gaussian, see
rhmmtk.models.cdhmm) and the within-phone log-transitions `trans`; along a fixed path
the score is then linear in w: the sum over frames of [x*x, x, 1] . nat[g_t] plus the
transitions taken. That makes F a maximum of linear functions (convex) and gives its
subgradient at w: the features of the best path. The max over y is the same search
with each frame's states scored +1 where their phone differs from the reference
(loss-augmented Viterbi), and F(x_i, y_i, w) the search with other phones masked out;
the subgradient of the risk is the difference of the two paths' features. Both searches
contain the reference path, so each term is >= 0.

The parameters are free: a quadratic coefficient may become non-negative (the state's
score then no longer falls off away from its mean) and rows no longer normalise; the
trained model is a discriminant function, decoded exactly like the ML one with the
max over components.
"""
import dataclasses

import click
import numpy as np
from numba import njit

from ..errors import InputError
from ..options import option, shared
from ..click_types import HDF5_INPUT, Real
from ..progress import log, progress
from .cdhmm import CDHMM, CdhmmDecodeOptions, combine_mixtures, frame_features


OBJECTIVES = ("nco-h", "nco-s")
SCALINGS = ("moments", "none")
SEGMENTATIONS = ("fixed", "hidden")


@dataclasses.dataclass
class LargeMarginOptions:
    """Options of large-margin CDHMM training (train-largemargin)."""

    lam: float = option("--lambda", default=1000.0, type=Real(0, min_open=True),
                        help="Weight lambda of the regulariser lambda/2 ||w - w_ML||^2 "
                             "(the risk is summed over training utterances).")
    tol: float = option("--tol", default=0.01, type=Real(0, min_open=True),
                        help="Stop when the bundle gap is at most this fraction of the best "
                             "objective (the paper: 1%).")
    max_iter: int = option("--max-iter", default=200, type=click.IntRange(1),
                           help="At most this many bundle iterations (the gap at the stop "
                                "is logged and kept in the model's info).")
    restarts: int = option("--restarts", default=0, type=click.IntRange(0),
                           help="When the gap is met, begin a new cutting-plane model at "
                                "the best point, at most this many times; stop once a "
                                "model lowers the best objective by at most --tol. The "
                                "non-convex method can stop near its start after a "
                                "normal-plane conflict; 0: the paper's method as "
                                "written.")
    objective: str = option("--objective", default="nco-h", type=click.Choice(OBJECTIVES),
                            help="nco-h: F is the best-path score (Viterbi); nco-s: the "
                                 "log-sum over paths and components (forward), and the "
                                 "risk's max over labellings a log-sum too (paper 004).")
    scaling: str = option("--scaling", default="moments", type=click.Choice(SCALINGS),
                          help="Coordinates of the regulariser: moments: w = w_ML + D v "
                               "and lambda/2 ||v||^2, where D scales each natural "
                               "parameter of Gaussian g by 1/sqrt(E_g[phi^2]) (phi its "
                               "feature x*x, x or 1, under g's ML mean and variance) and "
                               "log-transitions by 1, so a unit of v moves a Gaussian's "
                               "score by one RMS unit on its own frames; none: the raw "
                               "natural parameters (lambda/2 ||w - w_ML||^2).")
    segmentation: str = option("--segmentation", default="fixed",
                               type=click.Choice(SEGMENTATIONS),
                               help="fixed: F(x_i, y_i, w) is the best path inside the "
                                    "alignment's phone boundaries; hidden: the best path "
                                    "over every segmentation of the reference phone "
                                    "sequence (paper 004's S(y)), re-found at each "
                                    "iteration. The loss stays the Hamming loss against "
                                    "the alignment.")
    select: str = option("--select", default="accuracy",
                         type=click.Choice(["accuracy", "per", "objective"]),
                         help="Which iteration to keep: best dev frame accuracy, best dev "
                              "phone error rate, or best objective (the only choice without "
                              "a dev set).")


@dataclasses.dataclass
class FrameDevOptions:
    """The dev set the large-margin trainers score after every iteration (frames)."""

    dev_feats: str = option("--dev-feats", default=None, type=HDF5_INPUT,
                            help="Dev features: scored (frame accuracy, PER) after every "
                                 "iteration.")
    dev_ali: str = shared("dev_ali", help="Dev frame alignment.")
    mapping: str = shared("mapping", help="Label mapping applied before dev scoring (e.g. "
                                          "TIMIT's 48 -> 39 folding).")

    def check(self):
        if bool(self.dev_feats) != bool(self.dev_ali):
            raise click.UsageError("--dev-feats and --dev-ali go together")
        return self

    @property
    def dev(self):
        """(features, alignment), or None without a dev set."""
        return (self.dev_feats, self.dev_ali) if self.dev_feats else None

    def label_map(self):
        from ..io.labelmap import read_label_map

        return read_label_map(self.mapping) if self.mapping else None


class Problem:
    """The risk R(w) and its subgradient over a training set (rhmmtk.models.frames.Frames).

    `objective` "nco-h": F is the best path over states and components (Viterbi);
    "nco-s": F is the log-sum over them (forward), and the max over labellings y in the
    risk becomes the log-sum over y as well (paper 004, eqs. 4 and 9), so each term is
    log sum_paths exp(g + Delta) - log sum_{reference paths} exp(g): the loss-augmented
    forward total minus the forced one. The sum runs over every labelling, the reference
    included (whose Delta is 0): the term is then >= 0 by itself and smooth, where the
    paper's eq. 4 excludes y_i and clips at 0. Its gradient is the difference of the two
    passes' expected features (state posteriors x component responsibilities, and the
    expected transition counts)."""

    def __init__(self, model, frames, lm_scale=1.0, insertion_penalty=0.0,
                 objective="nco-h", scaling="none", segmentation="fixed"):
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}")
        if segmentation not in SEGMENTATIONS:
            raise ValueError(f"segmentation must be one of {SEGMENTATIONS}")
        self.model = model
        self.objective = objective
        self.hidden = segmentation == "hidden"
        self.rule = "max" if objective == "nco-h" else "sum"
        self.P, self.S, self.M, self.K = model.nat.shape
        self.frames = frames          # None: only packing and unpacking (est-largemargin)
        self.feat = None if frames is None else frame_features(frames.X)
        self.lm = model.graph(lm_scale, insertion_penalty)[3:]
        self.phone_of_state = np.repeat(np.arange(self.P), self.S)
        self.w0 = self.pack(model.nat, model.trans)
        self.scale = parameter_scale(model, scaling)

    @property
    def dim(self):
        return len(self.w0)

    def point(self, u):
        """The parameters w = w_ML + D u at the bundle's coordinates u."""
        return self.w0 + self.scale * u

    def objective_terms(self, u, bar=None):
        """The bundle's oracle at u: (R(w_ML + D u), its subgradient in u, D a)."""
        R, a = self.risk(self.point(u), bar)
        return R, self.scale * a

    def pack(self, nat, trans):
        return np.concatenate([nat.ravel(), trans.ravel()])

    def unpack(self, w):
        n = self.P * self.S * self.M * self.K
        return w[:n].reshape(self.P, self.S, self.M, self.K), w[n:].reshape(self.P, self.S, 3)

    def model_at(self, w, info=None):
        nat, trans = self.unpack(w)
        m = self.model
        return CDHMM(m.labels, nat, trans, m.lm_init, m.lm_bigram, m.lm_final, self.rule, None,
                     info)

    def _graph(self, trans):
        nxt = trans[:, :, 1].copy()
        nxt[:, -1] = -np.inf
        return (np.ascontiguousarray(trans[:, :, 0]), nxt,
                np.ascontiguousarray(trans[:, :, 2])) + self.lm

    def _searches(self, Z, y):
        """State scores of an utterance's Gaussian scores Z (T, G): (loss-augmented,
        forced to the labels y, Z's state scores, best component per state or None)."""
        if self.rule == "max":
            E, best = combine_mixtures(Z, self.M, "max", with_best=True)
        else:
            E, best = combine_mixtures(Z, self.M, "sum"), None
        wrong = self.phone_of_state[None, :] != y[:, None]
        return E + wrong, np.where(wrong, -np.inf, E), E, best

    def paths(self, w, i, augmented):
        """Best path of utterance i: masked to its labels (augmented False) or
        loss-augmented. Returns (score, states, entered, Gaussian index per frame)."""
        from .phoneloop import viterbi

        nat, trans = self.unpack(w)
        sl = self.frames.utterance(i)
        y = self.frames.y[sl]
        aug, forced, E, best = self._searches(self.feat[sl] @ nat.reshape(-1, self.K).T, y)
        g = self._graph(trans)
        if augmented:
            score, path, entered = viterbi(aug, *g)
        else:
            E_ref, g_ref, cols = self._reference(forced, E, y, g)
            score, path, entered = viterbi(E_ref, *g_ref)
            path = cols[path]
        return score, path, entered, path * self.M + best[np.arange(len(y)), path]

    def _reference(self, forced, E, y, g):
        """The search of F(x_i, y_i, w): (state scores, graph, the model state of each
        of the search's states). Fixed segmentation: the phone loop with every state
        outside the frame's reference phone masked (`forced`). Hidden: a chain of the
        reference phone sequence's HMMs (runs of equal frame labels collapsed), each
        position entered only from the one before, so its paths are exactly the
        segmentations of the sequence, S(y_i) in paper 004's eq. 8."""
        if not self.hidden:
            return forced, g, np.arange(E.shape[1])
        return sequence_chain(E, y[np.r_[True, y[1:] != y[:-1]]], g)

    def utterance_terms(self, w, i):
        """Utterance i's risk term and its subgradient: (r, the part in nat (G, K), the
        transition counts (P, S, 3))."""
        from .phoneloop import forward_backward, path_transitions, viterbi

        nat, trans = self.unpack(w)
        sl = self.frames.utterance(i)
        y = self.frames.y[sl]
        feat = self.feat[sl]
        Z = feat @ nat.reshape(-1, self.K).T
        aug, forced, E, best = self._searches(Z, y)
        g = self._graph(trans)
        T = len(y)
        E_ref, g_ref, cols = self._reference(forced, E, y, g)
        if self.rule == "max":
            s_aug, p_aug, e_aug = viterbi(aug, *g)
            s_ref, p_ref, e_ref = viterbi(E_ref, *g_ref)
            p_ref = cols[p_ref]
            rows = np.arange(T)
            grad = _path_difference(feat, p_aug * self.M + best[rows, p_aug],
                                    p_ref * self.M + best[rows, p_ref], Z.shape[1])
            counts = (path_transitions(p_aug, e_aug, self.S, self.P)[0]
                      - path_transitions(p_ref, e_ref, self.S, self.P)[0])
        else:
            s_aug, gam_aug, c_aug = forward_backward(aug, *g)
            s_ref, gam_ref, c_ref = forward_backward(E_ref, *g_ref)
            if self.hidden:     # back from the chain's positions to the model's states
                gam_ref, c_ref = _scatter_states(gam_ref, c_ref, cols, E.shape[1],
                                                 (self.P, self.S, 3))
            # d/dnat[g] = sum_t (posterior of g's state, augmented - forced) x
            # (g's share of its state's score) x features; the share is the same in both
            # passes because the loss adds a constant per state
            resp = np.exp(Z - np.repeat(E, self.M, axis=1))
            grad = (np.repeat(gam_aug - gam_ref, self.M, axis=1) * resp).T @ feat
            counts = c_aug - c_ref
        if not np.isfinite(s_ref):
            raise InputError("no path through the labelled segments", None,
                             self.frames.keys[i])
        return max(s_aug - s_ref, 0.0), grad, counts

    def risk(self, w, bar=None, utts=None):
        """(R(w), subgradient) summed over the training utterances (or those in `utts`)."""
        G = self.P * self.S * self.M
        grad_nat = np.zeros((G, self.K))
        tcounts = np.zeros((self.P, self.S, 3))
        R = 0.0
        for i in range(len(self.frames)) if utts is None else utts:
            r, grad, counts = self.utterance_terms(w, i)
            R += r
            grad_nat += grad
            tcounts += counts
            if bar is not None:
                bar.update(1)
        tcounts[:, -1, 1] = 0.0
        return R, np.concatenate([grad_nat.ravel(), tcounts.ravel()])


def sequence_chain(E, seq, graph):
    """The phone loop `graph` (phoneloop's loop, nxt, ext, init, bigram, final) restricted
    to the phone sequence `seq`: a chain of len(seq) positions, position l a copy of phone
    seq[l]'s HMM entered only from position l-1 (with the bigram's score), the first
    with init's and the last left with final's. Its paths are the segmentations of seq.
    Returns (state scores (T, len(seq) S) taken from E, the chain's graph, the loop's
    state of each chain state)."""
    loop, nxt, ext, init, bigram, final = graph
    L, S = len(seq), loop.shape[1]
    cols = (seq[:, None] * S + np.arange(S)).ravel()
    c_init, c_final = np.full(L, -np.inf), np.full(L, -np.inf)
    c_init[0], c_final[-1] = init[seq[0]], final[seq[-1]]
    c_bigram = np.full((L, L), -np.inf)
    c_bigram[np.arange(L - 1), np.arange(1, L)] = bigram[seq[:-1], seq[1:]]
    return (np.ascontiguousarray(E[:, cols]),
            (loop[seq], nxt[seq], ext[seq], c_init, c_bigram, c_final), cols)


@njit(cache=True)
def _path_difference(feat, g_plus, g_minus, G):
    """(G, K): the features of frame t added to row g_plus[t] and taken from g_minus[t]
    (the two best paths' Gaussians). O(T K) where frames agree cost nothing; a scipy
    sparse product did the same sums but its construction cost more than the sums
    (profiled: ~10% of an NCO-H risk evaluation)."""
    out = np.zeros((G, feat.shape[1]))
    for t in range(feat.shape[0]):
        a, b = g_plus[t], g_minus[t]
        if a != b:
            for k in range(feat.shape[1]):
                out[a, k] += feat[t, k]
                out[b, k] -= feat[t, k]
    return out


def _scatter_states(gam, counts, cols, n, shape):
    """Posteriors (T, n) and transition counts `shape` of the model's states from those of
    a chain whose state k is the model's state cols[k] (phones may recur in the chain)."""
    g = np.zeros((gam.shape[0], n))
    np.add.at(g.T, cols, gam.T)
    c = np.zeros(shape)
    np.add.at(c, cols[::shape[1]] // shape[1], counts)
    return g, c


def parameter_scale(model, how="moments"):
    """The diagonal D of w = w_ML + D v, in which the regulariser is lambda/2 ||v||^2.

    "moments": the natural parameter of Gaussian g on feature phi (x*x, x or 1) is scaled
    by 1/sqrt(E_g[phi^2]), the moments taken under g's own ML mean and variance
    (E[x^2] = mu^2 + var, E[x^4] = mu^4 + 6 mu^2 var + 3 var^2); a unit step of v then
    changes g's log-score by one RMS unit on the frames g itself generates, so every
    coordinate is measured in the same unit as a log-transition (scale 1), whatever the
    feature's range. Without it the x*x coefficients of narrow Gaussians move the score
    far more per unit than the constant does. "none": D = 1."""
    P, S, M, K = model.nat.shape
    n_trans = model.trans.size
    if how == "none":
        return np.ones(P * S * M * K + n_trans)
    if how != "moments":
        raise ValueError(f"scaling must be one of {SCALINGS}")
    D = (K - 1) // 2
    q, lin = model.nat[..., :D], model.nat[..., D:2 * D]
    with np.errstate(divide="ignore", invalid="ignore"):
        var = -0.5 / q
    ok = np.isfinite(var) & (var > 0)      # an ML model's always are; else left unscaled
    var = np.where(ok, var, 1.0)
    mu = np.where(ok, lin * var, 0.0)
    m2, mu2 = mu ** 2 + var, mu ** 2
    m4 = mu2 ** 2 + 6 * mu2 * var + 3 * var ** 2
    scale = np.concatenate([np.where(ok, 1 / np.sqrt(m4), 1.0),
                            np.where(ok, 1 / np.sqrt(m2), 1.0),
                            np.ones(q.shape[:-1] + (1,))], axis=-1)
    return np.concatenate([scale.ravel(), np.ones(n_trans)])


def dev_scorer(frames, mapping=None, decode_options=None):
    """A function of a CDHMM giving its dev (frame accuracy %, PER %) (labels folded by
    `mapping` first, if given)."""
    from ..scoring import score

    sym = frames.labels.symbols
    ref = {}
    for i, k in enumerate(frames.keys):
        ref[k] = frames.ref_symbols[i] if hasattr(frames, "ref_symbols") else \
            [sym[j] for j in frames.y[frames.utterance(i)]]
    seqs = [frames.X[frames.utterance(i)] for i in range(len(frames))]

    def run(model):
        out = model.decode(seqs, decode_options)
        hyp = {k: [sym[j] for j in lab] for k, lab in zip(frames.keys, out.labels)}
        rep = score(ref, hyp, mapping=mapping)
        return rep.position_accuracy, rep.segments.per

    return run


def train_largemargin(ml_model, feats, ali, options=None, decode_options=None, dev=None,
                      mapping=None):
    """Large-margin training from an ML CDHMM `ml_model` on features + frame alignment.
    `dev`: (features, alignment) scored after every bundle iteration (frame accuracy and
    PER, labels folded by `mapping`). Returns the CDHMM of the iteration `options.select`
    picks; its info holds the per-iteration history."""
    from ..bundle import minimise
    from ..selection import SELECT_KEYS, best_iteration
    from .frames import read_frames

    o = options or LargeMarginOptions()
    d = decode_options or CdhmmDecodeOptions()
    if o.select != "objective" and dev is None:
        raise InputError(f"--select {o.select} needs a dev set (--dev-feats, --dev-ali)")
    frames = read_frames(feats, ali, ml_model.labels, dim=ml_model.dim)
    prob = Problem(ml_model, frames, d.lm_scale, d.insertion_penalty, o.objective,
                   o.scaling, o.segmentation)
    score_dev = None
    if dev is not None:
        dframes = _read_dev(dev, ml_model)
        score_dev = dev_scorer(dframes, mapping, d)
    N = len(frames.y)
    log.info("%d utterances, %d frames; %d parameters; lambda %g", len(frames), N, prob.dim,
             o.lam)
    points = []       # u of every iteration, to keep the one the selection picks
    scored = _iteration_scorer(score_dev, N)

    def oracle(u):
        with progress(total=len(frames), desc="loss-augmented search") as bar:
            return prob.objective_terms(u, bar)

    def callback(t, u, entry):
        points.append(u.copy())
        return scored(prob, u, entry)

    res = minimise(oracle, prob.dim, o.lam, o.tol, o.max_iter, callback,
                   restarts=o.restarts)
    it = best_iteration(res.history, *SELECT_KEYS[o.select])
    return _kept_model(prob, points[it - 1], it, res.history, o, d, len(frames), N)


def _iteration_scorer(score_dev, N):
    """What every iteration adds to its history entry: risk and gap per frame and, with
    a dev scorer, the dev frame accuracy and PER of the point just evaluated."""

    def scored(prob, u, entry):
        out = {"risk_per_frame": entry["risk"] / N, "gap_per_frame": entry["gap"] / N}
        if score_dev is not None:
            acc, per = score_dev(prob.model_at(prob.point(u)))
            out.update(dev_acc=acc, dev_per=per)
        return out

    return scored


def bundle_stop(history, tol, frames):
    """Where the bundle method stopped: iterations, the last gap (absolute, as a fraction
    of the best objective, per training frame) and whether it is within `tol`."""
    last = history[-1]
    frac = last["gap"] / max(abs(last["best_objective"]), 1e-300)
    return {"iterations": last["iter"], "gap": last["gap"], "gap_fraction": frac,
            "gap_per_frame": last["gap"] / frames, "converged": bool(frac <= tol)}


def _kept_model(prob, u, it, history, o, d, utts, N):
    """The trained model: the point of iteration `it`, with the run's record in its info."""
    stop = bundle_stop(history, o.tol, N)
    info = {"estimator": "largemargin", "lambda": o.lam, "best_iteration": it,
            "history": history, "train_utts": utts, "train_frames": N, "stop": stop,
            "options": {**dataclasses.asdict(o), **dataclasses.asdict(d)},
            "ml_model": prob.model.info.get("estimator")}
    log.info("bundle stopped after %d iterations, %s: gap %.4g (%.3g%% of the best "
             "objective, %.3g per frame)", stop["iterations"],
             "converged" if stop["converged"] else "not converged (--max-iter)", stop["gap"],
             100 * stop["gap_fraction"], stop["gap_per_frame"])
    model = prob.model_at(prob.point(u), info)
    nat = model.nat
    pos = int(np.sum(nat[..., :model.dim] >= 0))
    if pos:
        log.warning("%d of %d quadratic coefficients are non-negative (no longer Gaussian "
                    "shaped)", pos, nat[..., :model.dim].size)
    log.info("kept iteration %d (%s)", it, o.select)
    return model


# --- over --job shards: acc-largemargin at a point, est-largemargin steps -----------------

RISK_KIND, BUNDLE_KIND = "largemargin-risk", "largemargin-bundle"


def _search_meta(o, d):
    """What the risk depends on besides the point: must agree between acc and est."""
    return {"objective": o.objective, "segmentation": o.segmentation,
            "lm_scale": d.lm_scale, "insertion_penalty": d.insertion_penalty}


def acc_files(point, feats, ali, out, job=None, options=None, decode_options=None):
    """acc-largemargin: the risk and its subgradient at the CDHMM `point` (a path: the ML
    model at the first iteration, then est-largemargin's next point) over shard `job`
    of the training data -> a statistics file (kind largemargin-risk). Shards sum to
    Problem.risk over all the data."""
    import os

    from ..io.stats import write_stats
    from ..io.text import read_alignment
    from ..jobs import select
    from ..provenance import record
    from . import load_model
    from .cdhmm_train import _fingerprint
    from .frames import read_frames

    o, d = options or LargeMarginOptions(), decode_options or CdhmmDecodeOptions()
    m = load_model(point, expect="cdhmm")
    keys = select(list(read_alignment(ali)), job)
    frames = read_frames(feats, ali, m.labels, dim=m.dim, keys=keys)
    prob = Problem(m, frames, d.lm_scale, d.insertion_penalty, o.objective,
                   segmentation=o.segmentation)
    with progress(total=len(frames), desc="loss-augmented search") as bar:
        R, a = prob.risk(prob.w0, bar)
    meta = {"label_fingerprint": m.labels.fingerprint(), "model": _fingerprint(m),
            **_search_meta(o, d)}
    write_stats(out, RISK_KIND, meta, record({"job": str(job or ""), "point": str(point)}),
                {"labels": m.labels}, {"risk": np.array([R]), "subgradient": a},
                os.path.abspath(feats), job, len(frames), len(frames.y))
    return R


def est_files(ml_model, stats, state_in, state_out, next_out, model_out, options=None,
              decode_options=None, dev=None, mapping=None):
    """est-largemargin: sum acc-largemargin's statistics at the current point, take one
    bundle step from the state `state_in` (None at the first iteration) and write the
    new state, the next point to evaluate and the model the selection keeps so far.
    Returns the iteration's history entry plus "done" (converged or --max-iter)."""
    from ..bundle import Bundle
    from ..io.stats import check_meta
    from ..provenance import record
    from ..selection import SELECT_KEYS, best_iteration
    from .cdhmm_train import _fingerprint, _sum_stats

    o, d = options or LargeMarginOptions(), decode_options or CdhmmDecodeOptions()
    if o.select != "objective" and dev is None:
        raise InputError(f"--select {o.select} needs a dev set (--dev-feats, --dev-ali)")
    prob = Problem(ml_model, None, d.lm_scale, d.insertion_penalty, o.objective, o.scaling)
    want = {"ml_model": _fingerprint(ml_model), **_search_meta(o, d), "lam": o.lam,
            "tol": o.tol, "scaling": o.scaling, "restarts": o.restarts}
    if state_in is None:
        bundle, kept = Bundle(prob.dim, o.lam, o.tol, o.restarts), np.zeros(prob.dim)
    else:
        bundle, kept = _read_bundle(state_in, want)
    meta, st, _, utts, N = _sum_stats(stats, RISK_KIND)
    point = prob.model_at(prob.point(bundle.u))
    check_meta(meta, {"model": _fingerprint(point), **_search_meta(o, d)}, stats[0],
               "the bundle state's next point")
    score_dev = dev_scorer(_read_dev(dev, ml_model), mapping, d) if dev else None
    u = bundle.u.copy()
    entry = bundle.step(float(st["risk"][0]), prob.scale * st["subgradient"],
                        lambda t, u, e: _iteration_scorer(score_dev, N)(prob, u, e))
    it = best_iteration(bundle.history, *SELECT_KEYS[o.select])
    if it == entry["iter"]:
        kept = u
    done = bundle.converged or entry["iter"] >= o.max_iter
    prov = record({**dataclasses.asdict(o), **dataclasses.asdict(d)})
    _write_bundle(state_out, bundle, kept, it, want, ml_model.labels, prov, utts, N)
    prob.model_at(prob.point(bundle.u)).save(next_out, prov)
    _kept_model(prob, kept, it, bundle.history, o, d, utts, N).save(model_out, prov)
    return {**entry, "kept_iteration": it, "done": bool(done)}


def _write_bundle(path, bundle, kept, it, meta, labels, prov, utts, N):
    import json

    from ..io.stats import write_stats

    arrays, scalars, history = bundle.state()
    write_stats(path, BUNDLE_KIND, meta, prov, {"labels": labels},
                {**arrays, "kept_u": kept}, "", None, utts, N,
                attrs={"bundle": json.dumps({**scalars, "kept_iteration": it}),
                       "history": json.dumps(history)})


def _read_bundle(path, want):
    """(Bundle, kept u) from a state file, checked against `want` (the ML model, the
    search's options, lambda and tol)."""
    import json

    from ..bundle import Bundle
    from ..io.stats import StatsFile, check_meta

    with StatsFile(path, BUNDLE_KIND) as sf:
        check_meta(sf.meta, want, path, "this run's ML model and options")
        arrays = {k: sf[k] for k in Bundle.ARRAYS + ("kept_u",)}
        scalars = json.loads(sf.attrs["bundle"])
        history = json.loads(sf.attrs["history"])
    return Bundle.from_state(arrays, scalars, history), arrays["kept_u"]


def _read_dev(dev, model):
    """Dev frames: labels the model lacks are kept for scoring (never a match)."""
    from .frames import read_frames
    from ..io.text import read_alignment

    feats, ali = dev
    frames = read_frames(feats, ali, model.labels, dim=model.dim, strict=False)
    table = read_alignment(ali)
    frames.ref_symbols = [table[k] for k in frames.keys]
    return frames
