"""Maximum-likelihood training of CDHMM phone models from frame alignments (HTK-style).

The recipe HTK's tools follow (HInit / HRest / HHEd), on frame-aligned data:

1. boundary initialisation: each labelled segment is cut into S equal parts, one per
   state; each state's single Gaussian and the transitions are estimated from that
   segmentation (HInit's uniform start);
2. re-estimation within the given segments, `iters` times: Baum-Welch (expected state
   and mixture occupancies, rhmmtk.phoneloop.forward_backward with every other phone's
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

from .errors import InputError
from .frames import read_frames, segment_starts
from .models.cdhmm import CDHMM, natural_from_gaussians
from .options import option
from .progress import log, progress

MIN_PROB = 1e-5        # transition and mixture-weight floor (keeps every log finite)


@dataclasses.dataclass
class CdhmmOptions:
    """Options of ML CDHMM training (train-cdhmm)."""

    states: int = option("--states", default=3, type=click.IntRange(1, 5),
                         help="Emitting states per phone (left to right).")
    mixtures: int = option("--mixtures", default=1, type=click.IntRange(1),
                           help="Gaussians per state, reached by splitting 1 -> 2 -> 4 -> ...")
    iters: int = option("--iters", default=4, type=click.IntRange(0),
                        help="Re-estimation iterations after initialisation and after each "
                             "mixture split.")
    update: str = option("--update", default="baum-welch",
                         type=click.Choice(["baum-welch", "viterbi"]),
                         help="Re-estimation within the labelled segments: expected "
                              "occupancies (Baum-Welch) or the best path's (Viterbi).")
    var_floor: float = option("--var-floor", default=0.01, type=click.FloatRange(0),
                              help="Variance floor, as a fraction of each dimension's global "
                                   "variance (0: none; a variance reaching zero is an error).")
    lm_smooth: float = option("--lm-smooth", default=0.5, type=click.FloatRange(0, min_open=True),
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


def initialise(frames, S, floor):
    """Single-Gaussian states and transitions from the uniform segmentation."""
    P, D = len(frames.labels), frames.X.shape[1]
    local, start = uniform_states(frames, S)
    state = frames.y * S + local
    occ, s1, s2 = moments(state, np.ones(len(state)), frames.X, P * S)
    empty = np.flatnonzero(occ == 0)
    if len(empty):
        p, j = divmod(int(empty[0]), S)
        raise InputError(f"phone {frames.labels.symbols[p]!r} state {j + 1} has no training "
                         "frames (the phone has none)")
    means, variances = _mean_var(occ, s1, s2, floor, frames.labels, S)
    trans = _transition_logprobs(path_counts(frames.y, local, start, frames.offsets, P, S), S)
    return Gaussians(means.reshape(P, S, 1, D), variances.reshape(P, S, 1, D),
                     np.zeros((P, S, 1)), trans)


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


def mstep(g, frames, resp, counts, floor):
    """New Gaussians from occupancies resp (N, S, M); components with no occupancy keep
    their parameters."""
    P, S, M, D = g.shape
    N = len(frames.y)
    gidx = ((frames.y[:, None, None] * S + np.arange(S)[None, :, None]) * M
            + np.arange(M)[None, None, :])
    cols = np.broadcast_to(np.arange(N)[:, None, None], gidx.shape)
    W = _sparse(gidx.ravel(), cols.ravel(), resp.ravel(), (P * S * M, N))
    occ = np.asarray(W.sum(axis=1)).ravel()
    s1, s2 = W @ frames.X, W @ (frames.X * frames.X)
    mean, var = _mean_var(occ, s1, s2, floor, frames.labels, S, M)
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
                     _transition_logprobs(counts, S))


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


def phone_bigram(frames, k):
    """Add-k phone bigram from the training transcriptions (runs of equal labels):
    log P(first phone), log P(next | phone) and log P(end | phone), normalised
    together per phone."""
    P = len(frames.labels)
    start = segment_starts(frames.y, frames.offsets)
    first = np.flatnonzero(start)
    phones = frames.y[first]
    utt_first = np.zeros(len(first), dtype=bool)
    utt_first[np.searchsorted(first, frames.offsets[:-1])] = True
    init = np.bincount(phones[utt_first], minlength=P) + k
    big = np.zeros((P, P))
    nxt = np.flatnonzero(~utt_first[1:]) + 1
    np.add.at(big, (phones[nxt - 1], phones[nxt]), 1.0)
    last = phones[np.append(np.flatnonzero(utt_first[1:]), len(phones) - 1)]
    final = np.bincount(last, minlength=P).astype(float)
    big += k
    final += k
    norm = big.sum(axis=1) + final
    return np.log(init / init.sum()), np.log(big / norm[:, None]), np.log(final / norm)


def stages(M):
    """Mixture counts of the splitting schedule: 1, 2, 4, ..., M."""
    out = [1]
    while out[-1] < M:
        out.append(min(2 * out[-1], M))
    return out


def train_cdhmm(feats, ali, options=None, labels=None):
    """Train an ML CDHMM from a features archive and a frame alignment. `labels`: a
    SymbolTable of the phones to model (default: those of the alignment); every one
    needs training frames. Returns a CDHMM whose info holds the per-iteration history
    (mixtures, iteration, log-likelihood per frame)."""
    o = options or CdhmmOptions()
    frames = read_frames(feats, ali, labels)
    labels = frames.labels
    P = len(labels)
    have = np.bincount(frames.y, minlength=P)
    if np.any(have == 0):
        raise InputError(f"phone {labels.symbols[int(np.flatnonzero(have == 0)[0])]!r} has no "
                         "training frames", ali)
    gvar = frames.X.var(axis=0)
    if np.any(gvar <= 0):
        raise InputError(f"feature dimension {int(np.flatnonzero(gvar <= 0)[0])} is constant "
                         "over the training data (zero variance)", feats)
    floor = o.var_floor * gvar
    N = len(frames.y)
    log.info("%d utterances, %d frames, %d phones, dimension %d; %d states x %d Gaussians",
             len(frames), N, P, frames.X.shape[1], o.states, o.mixtures)
    g = initialise(frames, o.states, floor)
    history = []
    for M in stages(o.mixtures):
        if M > g.shape[2]:
            g = split_mixtures(g, M)
        for it in range(1, o.iters + 1):
            with progress(total=len(frames), desc=f"M={M} iter {it}") as bar:
                resp, counts, ll = estep(g, frames, o.update, bar)
            g = mstep(g, frames, resp, counts, floor)
            history.append({"mixtures": M, "iter": it, "loglik_per_frame": ll / N})
            log.info("M=%d iteration %d: log-likelihood per frame %.4f", M, it, ll / N)
    floored = int(np.sum(g.variances <= floor[None, None, None, :] * (1 + 1e-12)))
    if floored:
        log.info("%d of %d variances are at the floor", floored, g.variances.size)
    init, big, final = phone_bigram(frames, o.lm_smooth)
    info = {"estimator": "ml", "history": history, "train_utts": len(frames), "train_frames": N,
            "floored_variances": floored, "options": dataclasses.asdict(o)}
    return CDHMM(labels, g.natural(), g.trans, init, big, final, "sum",
                 {"means": g.means, "variances": g.variances, "logw": g.logw}, info)

