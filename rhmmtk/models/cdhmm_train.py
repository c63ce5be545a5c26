"""Maximum-likelihood training of CDHMM phone models from frame alignments (HTK-style).

The recipe HTK's tools follow (HInit / HRest / HHEd), on frame-aligned data:

1. boundary initialisation: each labelled segment is cut into S equal parts, one per
   state; each state's single Gaussian and the transitions are estimated from that
   segmentation (HInit's uniform start);
2. re-estimation within the given segments, `iters` times: Baum-Welch (expected state
   and mixture occupancies, rhmmtk.models.phoneloop.forward_backward with every other phone's
   states masked out) or Viterbi (hard state path, hard best component);
3. mixture splitting 1 -> 2 -> 4 -> ... -> M (HHEd's MU): the heaviest component of a
   state is split into two with half its weight each and means moved by +-0.2 standard
   deviations, until the state has the target number; `iters` re-estimations follow
   every split.

Variances are floored at `var_floor` times the global variance of each dimension
(HCompV -f): a floored M-step is still the constrained maximum, so the training
likelihood never decreases. A phone bigram (add-k smoothed) is estimated from the
training transcriptions (runs of equal frame labels) for decoding.
"""
import dataclasses

import click
import numpy as np
import scipy.sparse

from ..errors import InputError
from .frames import read_frames, segment_starts
from .cdhmm import CDHMM, natural_from_gaussians
from ..options import option, shared
from ..click_types import Count, Real
from ..progress import log, progress

MIN_PROB = 1e-5        # transition and mixture-weight floor (keeps every log finite)


@dataclasses.dataclass
class CdhmmOptions:
    """Options of ML CDHMM training (train-cdhmm)."""

    states: int = shared("states", default=3, type=Count(1, 5),
                         help="Emitting states per phone (left to right).")
    mixtures: int = option("--mixtures", default=1, type=click.IntRange(1),
                           help="Gaussians per state, reached by splitting 1 -> 2 -> 4 -> ...")
    iters: int = shared("iters", default=4,
                        help="Re-estimation iterations after initialisation and after each "
                             "mixture split.")
    update: str = shared("update", default="baum-welch",
                         type=click.Choice(["baum-welch", "viterbi"]),
                         help="Re-estimation within the labelled segments: expected "
                              "occupancies (Baum-Welch) or the best path's (Viterbi).")
    var_floor: float = option("--var-floor", default=0.01, type=Real(0),
                              help="Variance floor, as a fraction of each dimension's global "
                                   "variance (0: none; a variance reaching zero is an error).")
    lm_smooth: float = option("--lm-smooth", default=0.5, type=Real(0, min_open=True),
                              help="Add-k smoothing of the phone bigram.")


class Gaussians:
    """ML parameters: means, variances (P, S, M, D), log weights (P, S, M), log
    transitions (P, S, 3) = (stay, advance, exit)."""

    def __init__(self, means, variances, logw, trans):
        self.means, self.variances, self.logw, self.trans = means, variances, logw, trans

    @property
    def shape(self):
        return self.means.shape

    def natural(self):
        return natural_from_gaussians(self.means, self.variances, self.logw)


def _sparse(rows, cols, weights, shape):
    return scipy.sparse.csr_matrix((weights, (rows, cols)), shape=shape)


def moments(index, weights, X, bins):
    """Weighted counts, sums and sums of squares of the rows of X per bin:
    (bins,), (bins, D), (bins, D), as one sparse-dense product."""
    n = len(X)
    W = _sparse(index, np.arange(n), weights, (bins, n))
    return np.asarray(W.sum(axis=1)).ravel(), W @ X, W @ (X * X)


def _transition_logprobs(counts, S):
    """Counts (P, S, 3) -> floored, normalised log-probabilities (advance of the last
    state impossible, stored as 0)."""
    c = counts.copy()
    c[:, S - 1, 1] = 0.0
    tot = c.sum(axis=2, keepdims=True)
    prob = np.where(tot > 0, c / np.where(tot > 0, tot, 1), 1.0)
    allowed = np.ones_like(c, dtype=bool)
    allowed[:, S - 1, 1] = False
    prob = np.where(allowed, np.maximum(prob, MIN_PROB), 0.0)
    prob /= prob.sum(axis=2, keepdims=True)
    out = np.log(np.where(allowed, prob, 1.0))
    return out


def uniform_states(frames, S):
    """Boundary initialisation: local state (0..S-1) of every frame, each segment cut
    into S equal parts; and whether each frame starts a segment."""
    start = segment_starts(frames.y, frames.offsets)
    seg = np.cumsum(start) - 1
    first = np.flatnonzero(start)
    length = np.diff(np.append(first, len(frames.y)))
    k = np.arange(len(frames.y)) - first[seg]
    return (k * S) // length[seg], start


def path_counts(y, local, start, offsets, P, S):
    """Transition counts (P, S, 3) of a state path given as (phone, local state) per
    frame and segment starts; every utterance's last frame exits."""
    counts = np.zeros((P, S, 3))
    prev = np.arange(1, len(y))
    cont = ~start[1:]
    same_utt = np.ones(len(y) - 1, dtype=bool)
    same_utt[offsets[1:-1] - 1] = False
    stay = cont & (local[1:] == local[:-1])
    adv = cont & ~stay
    ext = start[1:] & same_utt
    for kind, sel in ((0, stay), (1, adv), (2, ext)):
        idx = prev[sel] - 1
        np.add.at(counts, (y[idx], local[idx], kind), 1.0)
    last = offsets[1:] - 1
    np.add.at(counts, (y[last], local[last], 2), 1.0)
    return counts


def accumulate_init(frames, S):
    """Statistics of the boundary initialisation (summable over shards): per-state
    moments of the uniform segmentation (M = 1), its transition counts, the phone bigram
    counts and the global moments of the features."""
    P = len(frames.labels)
    local, start = uniform_states(frames, S)
    occ, s1, s2 = moments(frames.y * S + local, np.ones(len(local)), frames.X, P * S)
    first, big, final = bigram_counts(frames)
    D = frames.X.shape[1]
    return {"occ": occ.reshape(P, S, 1), "s1": s1.reshape(P, S, 1, D),
            "s2": s2.reshape(P, S, 1, D),
            "trans": path_counts(frames.y, local, start, frames.offsets, P, S),
            "lm_first": first, "lm_bigram": big, "lm_final": final,
            "global_n": np.array(float(len(frames.X))), "global_sum": frames.X.sum(axis=0),
            "global_sq": (frames.X * frames.X).sum(axis=0)}


def initial_model(stats, labels, var_floor, where=None):
    """(Gaussians, variance floor vector) from summed accumulate_init statistics."""
    P, S = stats["occ"].shape[:2]
    have = stats["occ"].reshape(P, -1).sum(axis=1)
    if np.any(have == 0):
        raise InputError(f"phone {labels.symbols[int(np.flatnonzero(have == 0)[0])]!r} has no "
                         "training frames", where)
    n = float(stats["global_n"])
    mean = stats["global_sum"] / n
    gvar = stats["global_sq"] / n - mean * mean
    if np.any(gvar <= 1e-12 * np.maximum(1.0, mean * mean)):
        raise InputError(f"feature dimension {int(np.flatnonzero(gvar <= 1e-12 * np.maximum(1.0, mean * mean))[0])}"
                         " is constant over the training data (zero variance)", where)
    floor = var_floor * gvar
    D = len(gvar)
    occ = stats["occ"].reshape(-1)
    means, variances = _mean_var(occ, stats["s1"].reshape(-1, D), stats["s2"].reshape(-1, D),
                                 floor, labels, S)
    return Gaussians(means.reshape(P, S, 1, D), variances.reshape(P, S, 1, D),
                     np.zeros((P, S, 1)), _transition_logprobs(stats["trans"], S)), floor


def _mean_var(occ, s1, s2, floor, labels, S, M=1):
    """Means and floored variances from moments (rows with zero occupancy: NaN)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s1 / occ[:, None]
        var = s2 / occ[:, None] - mean * mean
    var = np.maximum(var, 0.0)
    low = (var <= 0) & (occ[:, None] > 0)
    if np.any(low & (floor[None, :] <= 0)):
        g = int(np.flatnonzero(low.any(axis=1))[0])
        p, rest = divmod(g, S * M)
        raise InputError(f"phone {labels.symbols[p]!r} state {rest // M + 1}: a variance "
                         "collapsed to zero (too few distinct frames); use --var-floor > 0")
    return mean, np.maximum(var, floor[None, :])


def phone_scores(g, frames):
    """(N, S, M) log c N(x) of each frame under its own phone's Gaussians (per-phone
    matrix products)."""
    P, S, M, D = g.shape
    nat = g.natural()
    out = np.empty((len(frames.y), S, M))
    F = np.concatenate([frames.X * frames.X, frames.X, np.ones((len(frames.X), 1))], axis=1)
    order = np.argsort(frames.y, kind="stable")
    bounds = np.searchsorted(frames.y[order], np.arange(P + 1))
    for p in range(P):
        idx = order[bounds[p]:bounds[p + 1]]
        if len(idx):
            out[idx] = (F[idx] @ nat[p].reshape(S * M, -1).T).reshape(len(idx), S, M)
    return out


def estep(g, frames, update, bar=None):
    """Occupancies of every (frame, state, component) of the frame's own phone (N, S, M),
    transition counts (P, S, 3) and the total log-likelihood."""
    from .phoneloop import forward_backward, viterbi

    P, S, M, D = g.shape
    logn = phone_scores(g, frames)
    comp = logn + g.logw[frames.y]
    top = comp.max(axis=2, keepdims=True)
    state = (top[..., 0] + np.log(np.exp(comp - top).sum(axis=2)) if update == "baum-welch"
             else top[..., 0])
    zeros_p, zeros_pp = np.zeros(P), np.zeros((P, P))
    loop, nxt, ext = g.trans[:, :, 0].copy(), g.trans[:, :, 1].copy(), g.trans[:, :, 2].copy()
    nxt[:, S - 1] = -np.inf
    occ = np.zeros((len(frames.y), S))
    counts = np.zeros((P, S, 3))
    total = 0.0
    for u in range(len(frames)):
        sl = frames.utterance(u)
        y = frames.y[sl]
        T = len(y)
        E = np.full((T, P * S), -np.inf)
        cols = y[:, None] * S + np.arange(S)[None, :]
        E[np.arange(T)[:, None], cols] = state[sl]
        if update == "baum-welch":
            ll, gamma, c = forward_backward(E, loop, nxt, ext, zeros_p, zeros_pp, zeros_p)
            occ[sl] = np.take_along_axis(gamma, cols, axis=1)
        else:
            from .phoneloop import path_transitions

            ll, path, entered = viterbi(E, loop, nxt, ext, zeros_p, zeros_pp, zeros_p)
            occ[sl][np.arange(T), path % S] = 1.0
            c, _ = path_transitions(path, entered, S, P)
        if not np.isfinite(ll):
            raise InputError("no path through the labelled segments (internal error)",
                             None, frames.keys[u])
        total += ll
        counts += c
        if bar is not None:
            bar.update(1)
    if update == "baum-welch":
        post = np.exp(comp - top)
        post /= post.sum(axis=2, keepdims=True)
    else:
        post = (comp == top).astype(np.float64)
        post /= post.sum(axis=2, keepdims=True)
    return occ[:, :, None] * post, counts, total


def accumulate(g, frames, update, bar=None):
    """One E-step's statistics (summable over shards): per-Gaussian occupancies, first
    and second moments, transition counts and the log-likelihood."""
    P, S, M, D = g.shape
    resp, counts, ll = estep(g, frames, update, bar)
    N = len(frames.y)
    gidx = ((frames.y[:, None, None] * S + np.arange(S)[None, :, None]) * M
            + np.arange(M)[None, None, :])
    cols = np.broadcast_to(np.arange(N)[:, None, None], gidx.shape)
    W = _sparse(gidx.ravel(), cols.ravel(), resp.ravel(), (P * S * M, N))
    occ = np.asarray(W.sum(axis=1)).ravel()
    return {"occ": occ.reshape(P, S, M), "s1": (W @ frames.X).reshape(P, S, M, D),
            "s2": (W @ (frames.X * frames.X)).reshape(P, S, M, D), "trans": counts,
            "loglik": np.array(ll), "frames": np.array(float(N))}


def estimate(g, stats, floor, labels):
    """M-step from summed statistics; components with no occupancy keep their parameters."""
    P, S, M, D = g.shape
    occ = stats["occ"].reshape(-1)
    mean, var = _mean_var(occ, stats["s1"].reshape(-1, D), stats["s2"].reshape(-1, D), floor,
                          labels, S, M)
    used = occ > 0
    means = g.means.reshape(-1, D).copy()
    variances = g.variances.reshape(-1, D).copy()
    means[used], variances[used] = mean[used], var[used]
    occ = occ.reshape(P, S, M)
    tot = occ.sum(axis=2, keepdims=True)
    w = np.where(tot > 0, occ / np.where(tot > 0, tot, 1), np.exp(g.logw))
    w = np.maximum(w, MIN_PROB)
    w /= w.sum(axis=2, keepdims=True)
    return Gaussians(means.reshape(P, S, M, D), variances.reshape(P, S, M, D), np.log(w),
                     _transition_logprobs(stats["trans"], S))


def split_mixtures(g, target):
    """HHEd MU: split each state's heaviest component (weight halved, means +-0.2 sd)
    until every state has `target` components."""
    means, variances, logw = g.means.copy(), g.variances.copy(), g.logw.copy()
    while means.shape[2] < target:
        k = logw.argmax(axis=2)                                     # (P, S)
        pick = lambda a: np.take_along_axis(a, k[:, :, None, None], axis=2)  # noqa: E731
        mu, var = pick(means), pick(variances)
        shift = 0.2 * np.sqrt(var)
        w = np.take_along_axis(logw, k[:, :, None], axis=2) - np.log(2.0)
        np.put_along_axis(means, k[:, :, None, None], mu - shift, axis=2)
        np.put_along_axis(logw, k[:, :, None], w, axis=2)
        means = np.concatenate([means, mu + shift], axis=2)
        variances = np.concatenate([variances, var], axis=2)
        logw = np.concatenate([logw, w], axis=2)
    return Gaussians(means, variances, logw, g.trans)


def bigram_counts(frames):
    """Phone bigram counts of the training transcriptions (runs of equal labels):
    first phones (P,), phone pairs (P, P), last phones (P,)."""
    P = len(frames.labels)
    start = segment_starts(frames.y, frames.offsets)
    first = np.flatnonzero(start)
    phones = frames.y[first]
    utt_first = np.zeros(len(first), dtype=bool)
    utt_first[np.searchsorted(first, frames.offsets[:-1])] = True
    init = np.bincount(phones[utt_first], minlength=P).astype(float)
    big = np.zeros((P, P))
    nxt = np.flatnonzero(~utt_first[1:]) + 1
    np.add.at(big, (phones[nxt - 1], phones[nxt]), 1.0)
    last = phones[np.append(np.flatnonzero(utt_first[1:]), len(phones) - 1)]
    return init, big, np.bincount(last, minlength=P).astype(float)


def bigram_logprobs(first, big, final, k):
    """Add-k log P(first phone), log P(next | phone), log P(end | phone) (the last two
    normalised together per phone)."""
    init = first + k
    big = big + k
    final = final + k
    norm = big.sum(axis=1) + final
    return np.log(init / init.sum()), np.log(big / norm[:, None]), np.log(final / norm)


def stages(M):
    """Mixture counts of the splitting schedule: 1, 2, 4, ..., M."""
    out = [1]
    while out[-1] < M:
        out.append(min(2 * out[-1], M))
    return out


def ml_model(labels, g, lm, floor, info):
    """The CDHMM of ML parameters `g` (its info keeps the variance floor for est-cdhmm)."""
    info = dict(info, var_floor_vector=[float(v) for v in floor],
                floored_variances=int(np.sum(g.variances <= floor * (1 + 1e-12))))
    return CDHMM(labels, g.natural(), g.trans, *lm, "sum",
                 {"means": g.means, "variances": g.variances, "logw": g.logw}, info)


def gaussians_of(model):
    """The ML parameters of a CDHMM (InputError for a model without them)."""
    if model.gaussians is None:
        raise InputError("this CDHMM has no Gaussian parameters (a large-margin model?): "
                         "ML re-estimation needs an ML model")
    return Gaussians(model.gaussians["means"], model.gaussians["variances"],
                     model.gaussians["logw"], model.trans)


def train_cdhmm(feats, ali, options=None, labels=None):
    """Train an ML CDHMM from a features archive and a frame alignment. `labels`: a
    SymbolTable of the phones to model (default: those of the alignment); every one
    needs training frames. Returns a CDHMM whose info holds the per-iteration history
    (mixtures, iteration, log-likelihood per frame). The same steps as
    acc-cdhmm / init-cdhmm / est-cdhmm over shards."""
    o = options or CdhmmOptions()
    frames = read_frames(feats, ali, labels)
    labels = frames.labels
    N = len(frames.y)
    log.info("%d utterances, %d frames, %d phones, dimension %d; %d states x %d Gaussians",
             len(frames), N, len(labels), frames.X.shape[1], o.states, o.mixtures)
    st = accumulate_init(frames, o.states)
    g, floor = initial_model(st, labels, o.var_floor, ali)
    lm = bigram_logprobs(st["lm_first"], st["lm_bigram"], st["lm_final"], o.lm_smooth)
    history = []
    for M in stages(o.mixtures):
        if M > g.shape[2]:
            g = split_mixtures(g, M)
        for it in range(1, o.iters + 1):
            with progress(total=len(frames), desc=f"M={M} iter {it}") as bar:
                st = accumulate(g, frames, o.update, bar)
            g = estimate(g, st, floor, labels)
            ll = float(st["loglik"])
            history.append({"mixtures": M, "iter": it, "loglik_per_frame": ll / N})
            log.info("M=%d iteration %d: log-likelihood per frame %.4f", M, it, ll / N)
    info = {"estimator": "ml", "history": history, "train_utts": len(frames), "train_frames": N,
            "options": dataclasses.asdict(o)}
    m = ml_model(labels, g, lm, floor, info)
    if m.info["floored_variances"]:
        log.info("%d of %d variances are at the floor", m.info["floored_variances"],
                 g.variances.size)
    return m


# --- accumulate / estimate over --job shards (acc-cdhmm, init-cdhmm, est-cdhmm) ---------

def _fingerprint(model):
    import hashlib

    h = hashlib.sha1()
    for v in (model.nat, model.trans):
        h.update(np.ascontiguousarray(v, dtype="<f8").tobytes())
    return h.hexdigest()[:16]


def _sum_stats(paths, kind):
    from ..io.stats import StatsFile, check_set

    meta, utts, frames = check_set(list(paths), kind)
    total, labels = None, None
    for p in paths:
        with StatsFile(p, kind) as sf:
            labels = sf.symbols("labels")
            names = [k for k in sf.file["data"]]
            part = {k: sf[k] for k in names}
        total = part if total is None else {k: total[k] + part[k] for k in total}
    return meta, total, labels, utts, frames


def acc_files(feats, ali, out, job=None, states=None, model=None, update="baum-welch",
              labels=None):
    """acc-cdhmm: statistics of (shard `job` of) the data -> a stats file. With `states`:
    the boundary initialisation's (kind cdhmm-init; labels: `labels` or the whole
    alignment's); with `model` (a path): one E-step's (kind cdhmm-stats)."""
    import os

    from ..io.stats import write_stats
    from ..io.text import read_alignment
    from ..jobs import select
    from . import load_model
    from ..provenance import record

    keys = select(list(read_alignment(ali)), job)
    if model is not None:
        m = load_model(model, expect="cdhmm")
        g = gaussians_of(m)
        frames = read_frames(feats, ali, m.labels, dim=m.dim, keys=keys)
        with progress(total=len(frames), desc="E-step") as bar:
            data = accumulate(g, frames, update, bar)
        kind, meta = "cdhmm-stats", {"label_fingerprint": m.labels.fingerprint(),
                                     "model": _fingerprint(m), "update": update}
        log.info("E-step over %d utterances, %d frames: log-likelihood per frame %.4f",
                 len(frames), len(frames.y), float(data["loglik"]) / max(len(frames.y), 1))
    else:
        frames = read_frames(feats, ali, labels, keys=keys)
        data = accumulate_init(frames, states)
        kind, meta = "cdhmm-init", {"label_fingerprint": frames.labels.fingerprint(),
                                    "states": states, "dim": frames.X.shape[1]}
    write_stats(out, kind, meta, record({"job": str(job or ""), "model": str(model or "")}),
                {"labels": frames.labels}, data, os.path.abspath(feats), job, len(frames),
                len(frames.y))


def init_files(stats, out, var_floor=0.01, lm_smooth=0.5):
    """init-cdhmm: sum cdhmm-init statistics -> the initial single-Gaussian ML model."""
    from ..provenance import record

    meta, st, labels, utts, n = _sum_stats(stats, "cdhmm-init")
    g, floor = initial_model(st, labels, var_floor, stats[0])
    lm = bigram_logprobs(st["lm_first"], st["lm_bigram"], st["lm_final"], lm_smooth)
    info = {"estimator": "ml", "history": [], "train_utts": utts, "train_frames": n,
            "options": {"states": meta["states"], "var_floor": var_floor,
                        "lm_smooth": lm_smooth}}
    m = ml_model(labels, g, lm, floor, info)
    m.save(out, record(info["options"]))
    return m


def est_files(model_in, stats, out, mixtures=None):
    """est-cdhmm: sum one E-step's statistics (made with `model_in`) -> the re-estimated
    model, split to `mixtures` components per state afterwards if given (HHEd MU)."""
    from ..io.stats import check_meta
    from . import load_model
    from ..provenance import record

    m = load_model(model_in, expect="cdhmm")
    g = gaussians_of(m)
    meta, st, labels, utts, n = _sum_stats(stats, "cdhmm-stats")
    check_meta(meta, {"label_fingerprint": m.labels.fingerprint(), "model": _fingerprint(m)},
               stats[0], model_in)
    floor = np.asarray(m.info.get("var_floor_vector"), dtype=np.float64)
    g = estimate(g, st, floor, m.labels)
    hist = list(m.info.get("history", []))
    M = g.shape[2]
    hist.append({"mixtures": M, "iter": sum(h["mixtures"] == M for h in hist) + 1,
                 "loglik_per_frame": float(st["loglik"]) / float(st["frames"])})
    log.info("M=%d: log-likelihood per frame %.4f (of the statistics' model)", M,
             hist[-1]["loglik_per_frame"])
    if mixtures is not None and mixtures > M:
        g = split_mixtures(g, mixtures)
    info = dict(m.info, history=hist)
    new = ml_model(m.labels, g, (m.lm_init, m.lm_bigram, m.lm_final), floor, info)
    new.save(out, record({"model": str(model_in), "mixtures": mixtures}))
    return new
