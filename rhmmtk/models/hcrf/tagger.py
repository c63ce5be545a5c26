"""Frame tagging with a hidden CRF: the discriminative rival of the R-HMM on the same task.

Every frame of an utterance gets a phone label. The hidden states refine each phone: a
state is a (phone, HMM state, Gaussian) triple of the ML CDHMM the model is converted
from, and a path moves through the phone loop of rhmmtk.models.phoneloop (stay,
advance or leave a phone's HMM state; entering a phone adds the bigram weight). As in
the HMM, the Gaussian is chosen afresh at every frame, so the weights of moving between
HMM states are shared by their Gaussians and the sum over Gaussians is a log-sum-exp per
frame. The model is log-linear in its weights: frame features psi(x_t) per state-Gaussian
pair (moment or distribution constraints, exactly as in model.py), stay / advance / exit
weights per HMM state, and the phone bigram with the first- and last-phone weights
(converted from the HMM's language model at scale 1, then trained with the rest: the
discriminative counterpart of tuning an LM scale and insertion penalty).

    p(y | x) = sum over paths whose phone at every frame is y_t  /  sum over all paths

Training maximises sum log p(y | x) over the training utterances by RPROP (train.py);
the gradient is the difference of two forward-backward passes of the compiled phone
loop: with every state of another phone than y_t masked out at t, and without masks;
each gives the expected feature counts, the phone-to-phone moves (the bigram's) among
them.
Decoding labels each frame with the phone of highest posterior (max-marginals), or
(`decode --tagger-decode viterbi`) with the phones of the best path, as the CDHMM's
decoder does. Before training the posteriors and the best path are the HMM's (tested).
"""
import dataclasses
import os

import click
import numpy as np

from ...errors import InputError
from ...options import option
from .. import Decoded, Model
from .model import (CONSTRAINTS, check_frames, describe_common, expand_features,
                    moment_features, norm_datasets, normalisation, read_norm)

MODEL_TYPE = "hcrf-tagger"
WEIGHTS = ("W", "bias", "loop", "nxt", "ext", "init", "bigram", "final")
LM = ("init", "bigram", "final")    # stored as lm/<name>
DECODERS = ("maxmarginal", "viterbi")


@dataclasses.dataclass
class HcrfTaggerDecodeOptions:
    """Decode-time options of the frame-tagging HCRF."""

    tagger_decode: str = option(
        "--tagger-decode", default="maxmarginal", type=click.Choice(DECODERS),
        help="HCRF tagger: each frame's most probable phone (maxmarginal), or the phones "
             "of the best path through the phone loop (viterbi, as the CDHMM decoder).")


class HcrfTagger(Model):
    model_type = MODEL_TYPE
    input_kinds = ("features",)
    decode_options = HcrfTaggerDecodeOptions

    def __init__(self, labels, weights, shift, scale, constraints="moment", knots=None,
                 knot_range=None, info=None):
        self.labels = labels
        self.w = {k: np.asarray(weights[k], dtype=np.float64) for k in WEIGHTS}
        self.shift, self.scale = np.asarray(shift, float), np.asarray(scale, float)
        self.constraints, self.knots = constraints, knots
        self.knot_range = (None if knot_range is None
                           else tuple(np.asarray(a, dtype=np.float64) for a in knot_range))
        self.info = dict(info or {})
        self.rprop = None
        self.check()

    @property
    def dim(self):
        return len(self.shift) // 2

    def check(self):
        P, S, M, F = self.w["W"].shape
        for k, shape in (("bias", (P, S, M)), ("loop", (P, S)), ("nxt", (P, S)),
                         ("ext", (P, S)), ("init", (P,)), ("bigram", (P, P)), ("final", (P,))):
            if self.w[k].shape != shape:
                raise ValueError(f"{k} has shape {self.w[k].shape}, want {shape}")
        if len(self.labels) != P or self.constraints not in CONSTRAINTS:
            raise ValueError("labels or constraints do not fit the weights")
        for k, v in self.w.items():
            if not np.all(np.isfinite(v)):
                raise ValueError(f"{k} holds a non-finite number")

    def with_weights(self, w):
        m = HcrfTagger(self.labels, w, self.shift, self.scale, self.constraints,
                       self.knots, self.knot_range, self.info)
        return m

    # --- scores -------------------------------------------------------------------
    def features(self, X):
        return expand_features(self, X)

    def scores(self, psi):
        """(state scores (T, P*S): log-sum-exp over Gaussians, component posteriors
        (T, P*S, M))."""
        P, S, M, F = self.w["W"].shape
        g = (psi @ self.w["W"].reshape(-1, F).T + self.w["bias"].reshape(1, -1))
        g = g.reshape(len(psi), P * S, M)
        top = g.max(2, keepdims=True)
        e = np.exp(g - top)
        tot = e.sum(2, keepdims=True)
        return (top + np.log(tot))[:, :, 0], e / tot

    def graph(self):
        nxt = self.w["nxt"].copy()
        nxt[:, -1] = -np.inf
        return (self.w["loop"], nxt, self.w["ext"], *(self.w[k] for k in LM))

    def frame_posteriors(self, psi):
        """p(phone at t | x) (T, P) by the unmasked forward-backward."""
        from ..phoneloop import forward_backward

        E, _ = self.scores(psi)
        _, gamma, _ = forward_backward(E, *self.graph())
        P, S = self.w["loop"].shape
        return gamma.reshape(len(psi), P, S).sum(2)

    def utterance_gradient(self, psi, y):
        """(log p(y | x), gradients) of one utterance with phone ids y (T,)."""
        from ..phoneloop import forward_backward_pairs

        P, S, M, F = self.w["W"].shape
        E, r = self.scores(psi)
        g = self.graph()
        mask = np.repeat(np.arange(P), S)[None, :] != y[:, None]
        num = forward_backward_pairs(np.where(mask, -np.inf, E), *g)
        den = forward_backward_pairs(E, *g)
        if not np.isfinite(num[0]) or not np.isfinite(den[0]):
            return -np.inf, None
        dgam = num[1] - den[1]
        G = (dgam[:, :, None] * r).reshape(len(psi), -1)     # (T, P*S*M)
        dc = num[2] - den[2]
        grads = {"W": (G.T @ psi).reshape(P, S, M, F), "bias": G.sum(0).reshape(P, S, M),
                 "loop": dc[:, :, 0], "nxt": dc[:, :, 1], "ext": dc[:, :, 2],
                 # the first phone is entered at its state 0; the last ends anywhere
                 "init": dgam[0].reshape(P, S)[:, 0], "bigram": num[3] - den[3],
                 "final": dgam[-1].reshape(P, S).sum(1)}
        grads["nxt"][:, -1] = 0.0
        return num[0] - den[0], grads

    # --- conversion -------------------------------------------------------------
    @classmethod
    def from_cdhmm(cls, hmm, X, normalize="variance", constraints="moment", knots=None,
                   lm=None):
        """The exact tagger of ML CDHMM `hmm`, normalising with training frames X; with
        `lm` (CdhmmDecodeOptions), its LM weighted as the Viterbi decoder weights it."""
        if hmm.mixture != "sum":
            raise InputError("an HCRF is converted from an ML model (mixture rule 'sum')")
        D = hmm.dim
        phi = moment_features(X)
        shift, scale = normalisation(phi, normalize)
        nat = hmm.nat
        Wphi, const = nat[..., :2 * D], nat[..., 2 * D]
        w = {"W": Wphi * scale, "bias": const + Wphi @ shift, "loop": hmm.trans[:, :, 0],
             "nxt": hmm.trans[:, :, 1].copy(), "ext": hmm.trans[:, :, 2],
             **dict(zip(LM, hmm.graph(*((lm.lm_scale, lm.insertion_penalty) if lm else ()))[3:]))}
        w["nxt"][:, -1] = 0.0
        kr = None
        if constraints == "distribution":
            if knots is None or knots < 2:
                raise InputError(f"--knots must be at least 2 (got {knots})")
            z = (phi - shift) / scale
            lo, hi = z.min(0), z.max(0)
            kr = (lo, np.where(hi > lo, hi, lo + 1.0))
            w["W"] = np.repeat(w["W"], knots, axis=3)
        return cls(hmm.labels, w, shift, scale, constraints, knots if kr else None, kr, {"states": hmm.states})

    # --- the model interface ------------------------------------------------------
    def input_sequence(self, archive, key, x):
        check_frames(archive, key, x, self.dim)
        return x

    def best_path(self, psi):
        """The phone of every frame on the best phone-loop path (T,)."""
        from ..phoneloop import viterbi

        E, _ = self.scores(psi)
        _, path, _ = viterbi(E, *self.graph())
        return path // self.w["loop"].shape[1]

    def decode(self, seqs, options=None, progress=None):
        by_path = (options or HcrfTaggerDecodeOptions()).tagger_decode == "viterbi"
        labels, posts, frames = [], [], 0
        for x in seqs:
            if by_path:
                labels.append(self.best_path(self.features(x)))
            else:
                post = self.frame_posteriors(self.features(x))
                labels.append(np.argmax(post, 1))
                posts.append(post)
            frames += len(x)
            if progress is not None:
                progress.update(1)
        return Decoded(labels, posts or None, {"positions": frames})

    def describe(self):
        out = describe_common(self, MODEL_TYPE, ("history", "best_iteration"))
        P, S, M, F = self.w["W"].shape
        out.update({"states": S, "mixtures": M, "features_per_state": F})
        return out

    def save(self, path, provenance):
        from ...io.model_file import write_model

        self.check()
        data = {(f"lm/{k}" if k in LM else f"weights/{k}"): v for k, v in self.w.items()}
        data.update(norm_datasets(self))
        write_model(path, MODEL_TYPE, self.labels, None, self.info, provenance, data,
                    compress=("weights",),
                    attrs={"constraints": self.constraints, "knots": int(self.knots or 0)})

    @classmethod
    def load(cls, path):
        from ...io.model_file import ModelFile

        path = os.fspath(path)
        with ModelFile(path, MODEL_TYPE) as mf:
            w = {k: mf.array(f"lm/{k}" if k in LM else f"weights/{k}") for k in WEIGHTS}
            shift, scale, kr = read_norm(mf)
            attrs, labels, info = mf.attrs, mf.labels, mf.info
        try:
            m = cls(labels, w, shift, scale, str(attrs["constraints"]),
                    int(attrs["knots"]) or None, kr, info)
        except (ValueError, KeyError) as e:
            raise InputError(f"model file is inconsistent: {e}", path) from None
        m.attrs = attrs
        return m


# --- training ------------------------------------------------------------------------
def utterance_features(model, frames):
    """[(psi, phone ids)] per utterance of rhmmtk.models.frames.Frames."""
    return [(model.features(frames.X[frames.utterance(i)]), frames.y[frames.utterance(i)])
            for i in range(len(frames))]


def total_gradient(model, feats):
    """sum log p(y | x) over utterances [(psi, y)] and its gradient."""
    ll, total = 0.0, {k: np.zeros(v.shape) for k, v in model.w.items()}
    for psi, y in feats:
        l, g = model.utterance_gradient(psi, y)
        if g is None:
            raise InputError("an utterance's frame labelling has no path in the phone loop "
                             "(or its scores are out of range)")
        ll += l
        for k in total:
            total[k] += g[k]
    return ll, total


def frame_scorer(frames, labels, mapping=None):
    """A function of a tagger giving its frame accuracy on dev Frames (mapped labels)."""
    fold = (lambda s: mapping.get(s, s)) if mapping else (lambda s: s)
    hyp_of = np.array([fold(s) for s in labels.symbols])
    ref = hyp_of[frames.y]
    cache = {}

    def score(model):
        if "feats" not in cache:
            cache["feats"] = utterance_features(model, frames)
        pred = np.concatenate([np.argmax(model.frame_posteriors(psi), 1)
                               for psi, _ in cache["feats"]])
        return float(np.mean(hyp_of[pred] == ref))

    return score


def train_tagger_file(init_path, feats, ali, options=None, dev_feats=None, dev_ali=None,
                      rprop_options=None, lm_options=None):
    """train-hcrf-tagger: the frame-tagging HCRF of ML CDHMM `init_path`, trained by RPROP
    on features `feats` with frame alignment `ali`; the best dev iteration is kept. The
    bigram starts as the HMM's LM at `lm_options`' (CdhmmDecodeOptions) scale and
    insertion penalty (default 1 and 0: the tagger before training is the HMM)."""
    import dataclasses

    from ...io.labelmap import read_label_map
    from ...progress import log
    from .. import load_model
    from ..frames import read_frames
    from .train import HcrfOptions, Rprop, RpropOptions, rprop_loop

    o = options or HcrfOptions()
    hmm = load_model(init_path, expect="cdhmm")
    train = read_frames(feats, ali, hmm.labels, dim=hmm.dim)
    log.info("%d training utterances, %d frames, %d phones", len(train), len(train.y),
             len(hmm.labels))
    model = HcrfTagger.from_cdhmm(hmm, train.X, o.normalize, o.constraints, o.knots,
                                  lm_options)
    score = None
    if dev_feats:
        dev = read_frames(dev_feats, dev_ali, hmm.labels, dim=hmm.dim, strict=False)
        score = frame_scorer(dev, hmm.labels, read_label_map(o.mapping) if o.mapping else None)
    data = utterance_features(model, train)
    rprop = Rprop(model.w, rprop_options or RpropOptions())
    final = rprop_loop(model, lambda m: total_gradient(m, data), o.iters, rprop, score,
                       len(train.y), "frame", o.patience)
    final.info.update({"estimator": f"hcrf-tagger-{o.constraints}",
                       "options": dataclasses.asdict(o)})
    return final
