"""Hidden conditional random fields for phone classification (paper 003).

A segment x_1..x_L (frames with known boundaries) is classified among C phone classes.
Each class has N hidden states (one per state-Gaussian pair of the ML phone HMM it was
converted from, N = S M) and

    p(c | x) = sum over state paths s of class c of exp(w . f(c, s, x)) / z(x)

with the paper's features: the class (its "LM" weight, `prior`), entering, moving between
and leaving states (`entry`, `trans`, `exit`; the HMM's topology is kept as a mask), the
state occupation (`bias`) and the frame features psi(x_t) of the occupied state (`W`).

Frame features. The moment features are the first- and second-order statistics
phi(x) = [x*x, x] (2D values), normalised to zero mean and unit variance on the training
frames (paper 003's second normalisation; `--normalize range` is its first, [l, h] ->
[1, 2]). Moment constraints (MC): psi = z, the normalised phi. Distribution constraints
(DC): every z_i is expanded into K features a_k(z_i) z_i on the natural cubic spline
basis over K evenly spaced knots spanning z_i's training range (spline.py), so each
weight becomes a function of its feature. A DC model whose K weights per feature are
equal is the MC model (the basis sums to 1); `to_distribution` builds it.

Conversion (`from_cdhmm`) is exact: an HCRF state's emission weights are its Gaussian's
natural parameters mapped through the normalisation, stay/advance/exit weights are the
HMM's log transition probabilities and the class weights the log class frequencies, so
before training p(c | x) equals the HMM's Bayes posterior P(c) p(x | c) / p(x).
"""
import dataclasses
import json
import os

import numpy as np

from ...errors import InputError
from ...options import option
from ...click_types import TEXT_INPUT
from .. import Decoded, Model
from . import spline

MODEL_TYPE = "hcrf"
CONSTRAINTS = ("moment", "distribution")
NORMALIZE = ("variance", "range")
# the weights RPROP trains, in a fixed order (masks: which entries exist)
WEIGHTS = ("prior", "entry", "trans", "exit", "W", "bias")
MASKED = {"entry": "entry_ok", "trans": "trans_ok", "exit": "exit_ok"}


@dataclasses.dataclass
class HcrfDecodeOptions:
    """Decode-time options of HCRF phone classification."""

    phone_segments: str = option(
        "--phone-segments", default=None, type=TEXT_INPUT,
        help="HCRF: the phone segment list to classify (`utt start end label` lines, "
             "frames; data/<set>/phone_segments); the output has one label per segment.")


def moment_features(X):
    """phi(x) = [x*x, x] per frame (T, 2D)."""
    X = np.asarray(X, dtype=np.float64)
    return np.concatenate([X * X, X], axis=1)


def normalisation(phi, how="variance"):
    """(shift, scale) with z = (phi - shift) / scale: zero mean and unit variance, or
    paper 003's [l, h] -> [1, 2] (shift 2l - h, scale h - l)."""
    if how == "variance":
        shift, scale = phi.mean(0), phi.std(0)
    else:
        lo, hi = phi.min(0), phi.max(0)
        shift, scale = 2 * lo - hi, hi - lo
    # a constant feature (a zero-variance dimension) is left unscaled
    return shift, np.where(scale > 0, scale, 1.0)


def expand_features(model, X):
    """psi(x_t) (T, F) of frames X (T, D) for a model with shift, scale, constraints,
    knots and knot_range (HCRF and HcrfTagger)."""
    z = (moment_features(X) - model.shift) / model.scale
    if model.constraints == "moment":
        return z
    lo, hi = model.knot_range
    return spline.expand(z, lo, hi, model.knots)


def check_frames(archive, key, x, dim):
    """InputError unless utterance `key`'s features are finite (frames, dim)."""
    if x.ndim != 2 or x.shape[1] != dim:
        raise InputError(f"features of shape {x.shape}, the model needs (frames, {dim})",
                         archive.path, key)
    if not np.all(np.isfinite(x)):
        raise InputError("features hold a non-finite number", archive.path, key)


def describe_common(model, model_type, info_keys):
    """The `info` fields every HCRF file reports, and the info entries `info_keys`."""
    attrs = getattr(model, "attrs", {})
    out = {"kind": "model", "model_type": model_type, "estimator": model.info.get("estimator"),
           "created_by": attrs.get("created_by"), "created": attrs.get("created"),
           "options": json.loads(attrs.get("options", "{}")), "num_labels": len(model.labels),
           "labels": model.labels.symbols, "dim": model.dim,
           "constraints": model.constraints, "knots": model.knots}
    out.update({k: model.info[k] for k in info_keys if k in model.info})
    return out


def norm_datasets(model):
    data = {"norm/shift": model.shift, "norm/scale": model.scale}
    if model.knot_range is not None:
        data["norm/knots_lo"], data["norm/knots_hi"] = model.knot_range
    return data


def read_norm(mf):
    """(shift, scale, knot range or None) of an open ModelFile."""
    kr = ((mf.array("norm/knots_lo"), mf.array("norm/knots_hi"))
          if "norm/knots_lo" in mf else None)
    return mf.array("norm/shift"), mf.array("norm/scale"), kr


class HCRF(Model):
    model_type = MODEL_TYPE
    input_kinds = ("features",)
    decode_options = HcrfDecodeOptions

    def __init__(self, labels, weights, masks, shift, scale, constraints="moment", knots=None,
                 knot_range=None, states=1, info=None):
        self.labels = labels
        self.w = {k: np.asarray(weights[k], dtype=np.float64) for k in WEIGHTS}
        self.masks = {k: np.asarray(masks[k], dtype=bool) for k in MASKED.values()}
        self.shift = np.asarray(shift, dtype=np.float64)
        self.scale = np.asarray(scale, dtype=np.float64)
        self.constraints = constraints
        self.knots = knots
        self.knot_range = (None if knot_range is None
                           else tuple(np.asarray(a, dtype=np.float64) for a in knot_range))
        self.states = states        # HMM states per phone (N = states x mixtures)
        self.info = dict(info or {})
        self.segments = None        # set by bind_options when decoding
        self.rprop = None           # RPROP's state {"steps": {...}, "prev": {...}} if kept
        self.check()

    @property
    def num_classes(self):
        return self.w["W"].shape[0]

    @property
    def num_states(self):
        return self.w["W"].shape[1]

    @property
    def dim(self):
        return len(self.shift) // 2

    def check(self):
        """Shapes agree, the masks are respected and every number is finite."""
        C, N, F = self.w["W"].shape
        want = {"prior": (C,), "entry": (C, N), "trans": (C, N, N), "exit": (C, N),
                "bias": (C, N)}
        for k, shape in want.items():
            if self.w[k].shape != shape:
                raise ValueError(f"{k} has shape {self.w[k].shape}, want {shape}")
        for k, m in MASKED.items():
            if self.masks[m].shape != self.w[k].shape:
                raise ValueError(f"{m} has shape {self.masks[m].shape}, want {self.w[k].shape}")
        if len(self.labels) != C:
            raise ValueError(f"{len(self.labels)} labels but {C} classes")
        if self.constraints not in CONSTRAINTS:
            raise ValueError(f"constraints must be one of {CONSTRAINTS}")
        per = self.knots if self.constraints == "distribution" else 1
        if self.constraints == "distribution" and (self.knots is None or self.knots < 2):
            raise ValueError("distribution constraints need at least 2 knots")
        if F != len(self.shift) * per or self.scale.shape != self.shift.shape:
            raise ValueError(f"W has {F} features per state, want {len(self.shift)} x {per}")
        for k, v in self.w.items():
            if not np.all(np.isfinite(v)):
                raise ValueError(f"{k} holds a non-finite number")

    # --- features and scores ------------------------------------------------------
    def features(self, X):
        """psi(x_t) for frames X (T, D): (T, F)."""
        return expand_features(self, X)

    def emissions(self, psi):
        """Log emission scores (T, N, C) = psi W^T + bias: one matrix product (the class
        is the last axis, as the lattice kernel wants it)."""
        C, N, F = self.w["W"].shape
        E = psi @ self.w["W"].transpose(1, 0, 2).reshape(N * C, F).T
        E += self.w["bias"].T.reshape(1, N * C)
        return E.reshape(len(psi), N, C)

    def moves(self):
        """exp of the entry, transition and exit weights, 0 where a move does not exist."""
        return tuple(np.where(self.masks[MASKED[k]], np.exp(self.w[k]), 0.0)
                     for k in ("trans", "entry", "exit"))

    def lattice(self, psi, off, y=None):
        """The compiled lattice pass over segments `off` of features psi (lattice.py):
        (log Z (B, C), sum log p(y|x), G (T, N, C), and the gradients of the trans (C, N,
        N), entry, exit (C, N) and prior weights) -- the gradients only with labels y."""
        from .lattice import move_pairs, segment_lattice

        A, entry, exitw = self.moves()
        src, dst = move_pairs(A)
        Ap = np.ascontiguousarray(A[:, src, dst].T)
        want = y is not None
        y = np.full(len(off) - 1, -1, dtype=np.int64) if y is None else y
        logZ, ll, G, dAp, dEntry, dExit, dPrior = segment_lattice(
            self.emissions(psi), off, y, self.w["prior"], Ap, src, dst,
            np.ascontiguousarray(entry.T), np.ascontiguousarray(exitw.T), want)
        dA = np.zeros(A.shape)
        dA[:, src, dst] = dAp.T
        return logZ, ll, G, dA, dEntry.T, dExit.T, dPrior

    def log_partitions(self, psi, off):
        """log Z (segments, C): unnormalised log class scores of every segment."""
        return self.lattice(psi, off)[0]

    def posteriors(self, psi, off):
        """p(c | segment) (segments, C)."""
        z = self.log_partitions(psi, off)
        z = np.exp(z - z.max(1, keepdims=True))
        return z / z.sum(1, keepdims=True)

    def classify(self, psi, off):
        return np.argmax(self.log_partitions(psi, off), axis=1)

    # --- conversion -------------------------------------------------------------
    @classmethod
    def from_cdhmm(cls, hmm, class_counts, phi, normalize="variance", info=None):
        """The exact HCRF of ML CDHMM `hmm` (mixture rule "sum"), with class weights log
        class_counts / total and the normalisation of training moment features `phi`."""
        if hmm.mixture != "sum":
            raise InputError("an HCRF is converted from an ML model (mixture rule 'sum'), "
                             "not a large-margin one")
        P, S, M, _ = hmm.nat.shape
        D, N = hmm.dim, S * M
        nat = hmm.nat.reshape(P, N, 2 * D + 1)
        Wphi, const = nat[:, :, :2 * D], nat[:, :, 2 * D]
        shift, scale = normalisation(phi, normalize)
        # w . phi + const = (w * scale) . z + (const + w . shift)
        weights = {"W": Wphi * scale, "bias": const + Wphi @ shift,
                   "prior": np.log(class_counts / class_counts.sum())}
        st = np.repeat(np.arange(S), M)       # HMM state of each HCRF state
        stay = st[:, None] == st[None, :]
        adv = st[None, :] == st[:, None] + 1
        masks = {"trans_ok": np.broadcast_to(stay | adv, (P, N, N)).copy(),
                 "entry_ok": np.broadcast_to(st == 0, (P, N)).copy(),
                 "exit_ok": np.ones((P, N), dtype=bool)}
        t = hmm.trans[:, st, :]                                        # (P, N, 3)
        weights["trans"] = np.where(stay, t[:, :, None, 0], 0.0) + np.where(adv, t[:, :, None, 1], 0.0)
        weights["entry"] = np.zeros((P, N))
        weights["exit"] = t[:, :, 2].copy()
        return cls(hmm.labels, weights, masks, shift, scale, "moment", states=S,
                   info={**(info or {}), "mixtures": M})

    def to_distribution(self, knots, z):
        """The DC model equal to this MC model: K equal weights per feature; knots span the
        range of normalised training features z (T, 2D)."""
        if self.constraints != "moment":
            raise ValueError("only a moment-constraint model converts")
        if knots < 2:
            raise InputError(f"--knots must be at least 2 (got {knots})")
        lo, hi = z.min(0), z.max(0)
        hi = np.where(hi > lo, hi, lo + 1.0)
        w = dict(self.w)
        w["W"] = np.repeat(self.w["W"], knots, axis=2)
        return HCRF(self.labels, w, self.masks, self.shift, self.scale, "distribution", knots,
                    (lo, hi), self.states, self.info)

    def with_weights(self, w):
        return HCRF(self.labels, w, self.masks, self.shift, self.scale, self.constraints,
                    self.knots, self.knot_range, self.states, self.info)

    # --- the model interface ------------------------------------------------------
    def bind_options(self, options):
        from ...io.segments import read_segments

        path = options.phone_segments if options is not None else None
        if path is None:
            raise InputError("an HCRF classifies segments: give --phone-segments "
                             "(data/<set>/phone_segments)")
        self.segments = (path, read_segments(path))

    def input_sequence(self, archive, key, x):
        from ...io.segments import check_inside

        check_frames(archive, key, x, self.dim)
        path, segs = self.segments
        if key not in segs:
            raise InputError(f"utterance has no segments in {path}", archive.path, key)
        check_inside(segs[key], len(x), path, key)
        return x, segs[key]

    def decode(self, seqs, options=None, progress=None):
        from .data import gather

        X, off, counts = gather([x for x, _ in seqs], [s for _, s in seqs])
        post = self.posteriors(self.features(X), off)
        cuts = np.cumsum(counts)[:-1]
        if progress is not None:
            progress.update(len(seqs))
        return Decoded(np.split(np.argmax(post, 1), cuts), np.split(post, cuts),
                       {"positions": len(post), "frames": int(off[-1])})

    def describe(self):
        out = describe_common(self, MODEL_TYPE, ("history", "best_iteration",
                                                 "train_segments", "mixtures"))
        out.update({"states_per_class": self.num_states, "hmm_states": self.states,
                    "features_per_state": int(self.w["W"].shape[2]),
                    "parameters": int(sum(v.size for v in self.w.values()))})
        return out

    # --- files --------------------------------------------------------------------
    def save(self, path, provenance):
        """Write the model (HDF5) atomically. See rhmmtk-formats(5)."""
        from ...io.model_file import write_model

        self.check()
        data = {f"weights/{k}": v for k, v in self.w.items()}
        data.update({f"masks/{k}": v.astype(np.uint8) for k, v in self.masks.items()})
        data.update(norm_datasets(self))
        for part, arrays in (self.rprop or {}).items():
            data.update({f"rprop/{part}/{k}": v for k, v in arrays.items()})
        write_model(path, MODEL_TYPE, self.labels, None, self.info, provenance, data,
                    compress=("weights", "rprop"),
                    attrs={"constraints": self.constraints, "knots": int(self.knots or 0),
                           "hmm_states": int(self.states)})

    @classmethod
    def load(cls, path):
        from ...io.model_file import ModelFile

        path = os.fspath(path)
        with ModelFile(path, MODEL_TYPE) as mf:
            w = {k: mf.array(f"weights/{k}") for k in WEIGHTS}
            masks = {k: mf.array(f"masks/{k}") for k in MASKED.values()}
            shift, scale, kr = read_norm(mf)
            attrs, labels, info = mf.attrs, mf.labels, mf.info
            rprop = ({part: {k: mf.array(f"rprop/{part}/{k}") for k in WEIGHTS}
                      for part in ("steps", "prev")} if "rprop" in mf else None)
        try:
            m = cls(labels, w, masks, shift, scale, str(attrs["constraints"]),
                    int(attrs["knots"]) or None, kr, int(attrs["hmm_states"]), info)
        except (ValueError, KeyError) as e:
            raise InputError(f"model file is inconsistent: {e}", path) from None
        m.attrs, m.rprop = attrs, rprop
        return m
