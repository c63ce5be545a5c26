"""The operators <C^{b|a}, C^{*|a}, c^1_a, c^a_x> every R-HMM is decoded from.

Both estimators produce this one object (docs/RHMM.md, "One set of operators for both
estimators"); `decode` needs nothing else. Each label a has its own number of
hidden states m_a, so everything is stored per label (ragged):

  init[a]        c^1_a            (m_a,)
  emit[a]        rows c^a_x       (n, m_a)
  trans[(a, b)]  C^{b|a}          general: (m_b, m_a, m_a), C[h, j, k] with j the
                                  index contracted with alpha and k with c^a_x;
                                  diagonal: (m_b, m_a), i.e. C^{b|a}(v) = T diag(v)
  stop[a]        C^{*|a}          general: (m_a, m_a); diagonal: (m_a,)

Pairs (a, b) absent from `trans` have C^{b|a} = 0 (never seen in training).
The diagonal form is what EM's parameters give (proposition 4.1) and lets the
decoder use m^2 instead of m^3 work per label pair.

A diagonal-form model may carry an emission backoff (eps, p(x)): it is decoded with
(o(x | a, h) + eps p(x)) / (1 + eps), every emission interpolated with the observation's
training frequency (`train-em --emission-floor`), while `emit` keeps EM's own estimate,
which the next EM iteration needs.

A general-form model may carry its emission floor apart (`EmissionFloor`): the spectral
estimator adds eps p(x) E[d|a] Lambda_a^-1 to every c^a_x (`est-spectral
--emission-floor`), so a row c^a_x of a pair (a, x) never seen in training is exactly
scale[x] g_a. `emit` holds the full rows, and the floor only tells the decoder which rows
are rank one, where C^{b|a}(c^a_x) alpha costs m_a instead of m_a^2 multiply-adds per
successor state (most of the pairs a beam keeps on speech frames are such pairs).
"""
import dataclasses
import json
import os

import click
import numpy as np

from ...errors import InputError
from .. import Decoded, Model
from ...options import option
from ...click_types import Real
from .decoder import DEFAULT_BATCH_MB, DEFAULT_BEAM

FORMAT = "model"
MODEL_TYPE = "rhmm"
FORMS = ("general", "diagonal")
DECODERS = ("maxmarginal", "viterbi")


@dataclasses.dataclass
class RhmmDecodeOptions:
    """Decode-time options of the R-HMM max-marginal decoder."""

    beam: float = option(
        "--beam", default=DEFAULT_BEAM, type=Real(0, 1),
        help="R-HMM: do not extend labels whose forward x emission mass is below beam times "
             "the best label's at that position (0: exact; 1: only the best label, which is "
             "always kept).")
    batch_mb: float = option(
        "--batch-mb", default=float(DEFAULT_BATCH_MB), type=Real(0, min_open=True),
        help="R-HMM: memory budget of one batch of sequences (MB), and a quarter of it "
             "more for the matrices a spectral model's decoding precomputes.")
    precision: str = option(
        "--precision", default="float64", type=click.Choice(["float64", "float32"]),
        help="R-HMM: dtype of the decoder's matrix products over a batch of sequences "
             "(alpha and beta stay float64, rescaled at every position; a general-form "
             "model's precomputed products stay float64). float32: EM(32)'s dev scoring "
             "1.5x faster at TIMIT's size (bench/README.md); labels can differ at near "
             "ties.")


@dataclasses.dataclass
class RhmmDecodingOptions(RhmmDecodeOptions):
    """`rhmmtk decode`'s R-HMM options: the dev scorers' above, and the decoder."""

    rhmm_decode: str = option(
        "--rhmm-decode", default="maxmarginal", type=click.Choice(DECODERS),
        help="R-HMM: each position's label of highest posterior (maxmarginal), or the "
             "labels of the best path over refined (label, hidden state) states (viterbi, "
             "whole words; EM models only: a spectral model's signed operators give a "
             "path no probability). The best label sequence itself is not offered: its "
             "probability sums over the hidden states, and maximising that sum is "
             "intractable in general (NP-hard).")
    change_penalty: float = option(
        "--change-penalty", default=0.0, type=Real(0),
        help="R-HMM, maxmarginal: the labels maximising the sum of their posteriors over "
             "the positions minus this penalty per label change (a Viterbi pass over the "
             "posteriors: expected frame accuracy traded against spurious short runs, "
             "i.e. phone insertions; EM and spectral models alike, signed posteriors "
             "included). 0: each position's label of highest posterior.")


@dataclasses.dataclass
class EmissionFloor:
    """Rows c^a_x = scale[x] g[a] of the pairs (a, x) with seen[a, x] False."""

    scale: np.ndarray        # (n,) eps p(x)
    g: list                  # per label (m_a,): E[d|a] Lambda_a^-1
    seen: np.ndarray         # (l, n) bool: pairs whose row is not the floor alone

    def __post_init__(self):
        self.scale = np.asarray(self.scale, dtype=np.float64)
        self.g = [np.asarray(v, dtype=np.float64) for v in self.g]
        self.seen = np.asarray(self.seen, dtype=bool)

    def check(self, emit):
        """Shapes, and every unseen row equal to scale[x] g_a (to rounding)."""
        l, n = len(emit), len(self.scale)
        if self.seen.shape != (l, n) or len(self.g) != l:
            raise ValueError(f"emission floor: want {l} labels and {n} observations")
        if not np.isfinite(self.scale).all() or (self.scale < 0).any():
            raise ValueError("emission floor: scale must be finite and >= 0")
        for a, e in enumerate(emit):
            if self.g[a].shape != (e.shape[1],):
                raise ValueError(f"emission floor: g[{a}] has shape {self.g[a].shape}")
            rows = ~self.seen[a]
            want = self.scale[rows, None] * self.g[a][None, :]
            tol = 1e-12 * max(float(np.abs(want).max(initial=0.0)), 1e-300)
            if not np.allclose(e[rows], want, rtol=1e-12, atol=tol):
                raise ValueError(f"emission floor: rows of label {a} that are not seen "
                                 "differ from scale[x] g_a")

    def nonfinite(self):
        return not (np.isfinite(self.scale).all() and all(np.isfinite(v).all() for v in self.g))


class Operators(Model):
    model_type = MODEL_TYPE
    input_kinds = ("codes", "featurized")
    decode_options = RhmmDecodingOptions

    def __init__(self, labels, observations, form, init, emit, trans, stop, info=None,
                 backoff=None, floor=None):
        """backoff: None, or (eps, p(x)) for the diagonal form; floor: None, or an
        EmissionFloor of the general form's `emit` (see the module's doc)."""
        if form not in FORMS:
            raise ValueError(f"form must be one of {FORMS}")
        self.labels = labels
        self.observations = observations
        self.form = form
        self.init = [np.asarray(v, dtype=np.float64) for v in init]
        self.emit = [np.asarray(v, dtype=np.float64) for v in emit]
        self.trans = {k: np.asarray(v, dtype=np.float64) for k, v in trans.items()}
        self.stop = [np.asarray(v, dtype=np.float64) for v in stop]
        self.info = dict(info or {})
        self.backoff = None
        if backoff is not None and backoff[0] != 0:      # eps = 0 is no backoff
            self.backoff = (float(backoff[0]), np.asarray(backoff[1], dtype=np.float64))
        self.floor = floor
        self._decoding_emit = None
        self.check()

    @property
    def num_labels(self):
        return len(self.labels)

    @property
    def m(self):
        return np.array([len(v) for v in self.init], dtype=np.int64)

    def check(self):
        """Shapes must agree; raises ValueError naming the first operator that does not."""
        l, n, m = len(self.labels), len(self.observations), self.m
        if not len(self.init) == len(self.emit) == len(self.stop) == l:
            raise ValueError("init, emit and stop need one entry per label")
        for a in range(l):
            if self.emit[a].shape != (n, m[a]):
                raise ValueError(f"emit[{a}] has shape {self.emit[a].shape}, want {(n, m[a])}")
            want = (m[a], m[a]) if self.form == "general" else (m[a],)
            if self.stop[a].shape != want:
                raise ValueError(f"stop[{a}] has shape {self.stop[a].shape}, want {want}")
        for (a, b), C in self.trans.items():
            want = (m[b], m[a], m[a]) if self.form == "general" else (m[b], m[a])
            if C.shape != want:
                raise ValueError(f"trans[{a},{b}] has shape {C.shape}, want {want}")
        if self.backoff is not None:
            eps, px = self.backoff
            if self.form != "diagonal":
                raise ValueError("an emission backoff needs the diagonal form")
            if px.shape != (n,) or not np.isfinite(eps) or eps < 0 or (px < 0).any():
                raise ValueError(f"emission backoff: want a finite eps > 0 and p(x) >= 0 of "
                                 f"shape {(n,)}")
        if self.floor is not None:
            if self.form != "general":
                raise ValueError("an emission floor kept apart needs the general form")
            self.floor.check(self.emit)

    @property
    def decoding_emit(self):
        """The emission rows the decoder uses: `emit`, interpolated with the backoff's
        eps p(x) when the model has one (computed once)."""
        if self.backoff is None:
            return self.emit
        if self._decoding_emit is None:
            eps, px = self.backoff
            self._decoding_emit = [(e + eps * px[:, None]) / (1 + eps) for e in self.emit]
        return self._decoding_emit

    def to_general(self):
        """The same operators in the general (tensor) form."""
        if self.form == "general":
            return self
        trans = {k: np.einsum("hj,jk->hjk", T, np.eye(T.shape[1])) for k, T in self.trans.items()}
        stop = [np.diag(f) for f in self.stop]
        # the backoff is applied here: the general form decodes as this model does
        return Operators(self.labels, self.observations, "general", self.init,
                         self.decoding_emit, trans, stop, self.info)

    def transformed(self, G, H):
        """Theorem 4.1: operators under invertible G^a, H^a; marginals must not change."""
        op = self.to_general()
        Gi = [np.linalg.inv(g) for g in G]
        Hi = [np.linalg.inv(h) for h in H]
        init = [G[a] @ op.init[a] for a in range(op.num_labels)]
        emit = [op.emit[a] @ Hi[a] for a in range(op.num_labels)]
        floor = None
        if op.floor is not None:
            # still rank one on the unseen rows: scale[x] (g_a H_a^-1), written so exactly
            fl = op.floor
            floor = EmissionFloor(fl.scale, [fl.g[a] @ Hi[a] for a in range(op.num_labels)],
                                  fl.seen)
            for a, e in enumerate(emit):
                rows = ~fl.seen[a]
                e[rows] = fl.scale[rows, None] * floor.g[a][None, :]
        trans = {(a, b): np.einsum("Hh,hjk,Kk,jJ->HJK", G[b], C, H[a], Gi[a])
                 for (a, b), C in op.trans.items()}
        stop = [np.einsum("jk,Kk,jJ->JK", op.stop[a], H[a], Gi[a]) for a in range(op.num_labels)]
        return Operators(op.labels, op.observations, "general", init, emit, trans, stop, op.info,
                         floor=floor)

    # --- the model interface (rhmmtk.models.Model) -------------------------------
    def check_input(self, archive):
        self.check_observations(archive, "observations made with another table or options")
        if archive.kind == "featurized":
            want = self.info.get("template_fingerprint")
            got = archive.attrs.get("template_fingerprint")
            if want is not None and got != want:
                raise InputError("features come from another template set than the model's "
                                 f"(templates {got} vs {want})", archive.path)

    def input_sequence(self, archive, key, x):
        x = x[:, 1] if archive.kind == "featurized" else x
        if x.ndim != 1 or x.min() < 0 or x.max() >= len(self.observations):
            raise InputError("observation ids out of range or of the wrong shape",
                             archive.path, key)
        return x.astype(np.int64)

    def bind_options(self, options):
        if options is not None and getattr(options, "rhmm_decode", None) == "viterbi":
            from .viterbi import check_decodable

            if getattr(options, "change_penalty", 0.0) > 0:
                raise InputError("--change-penalty applies to --rhmm-decode maxmarginal "
                                 "(it smooths the posteriors' labels), not to viterbi")
            check_decodable(self, getattr(self, "path", None))

    def decode(self, seqs, options=None, progress=None):
        """Max-marginal decoding (rhmmtk.models.rhmm.decoder.decode; posteriors are the
        marginals normalised per position), or with options.rhmm_decode "viterbi" the
        labels of the best refined-state path (rhmmtk.models.rhmm.viterbi; no
        posteriors)."""
        from .decoder import decode

        options = options or RhmmDecodingOptions()
        if getattr(options, "rhmm_decode", None) == "viterbi":
            return self._decode_viterbi(seqs, options, progress)
        labels, stats, mus = decode(self, seqs, options.batch_mb, progress, options.beam,
                                    options.precision)
        stats.pop("loglik", None)
        post = []
        for mu in mus:
            z = mu.sum(axis=1, keepdims=True)
            post.append(np.divide(mu, z, out=np.zeros_like(mu), where=z != 0))
        penalty = getattr(options, "change_penalty", 0.0)
        if penalty > 0:
            from .viterbi import penalised_labels

            labels = [penalised_labels(p, penalty) for p in post]
        return Decoded(labels, post, stats)

    def _decode_viterbi(self, seqs, options, progress):
        from .viterbi import check_decodable, refined_viterbi

        check_decodable(self, getattr(self, "path", None))
        labels, scores = refined_viterbi(self, seqs, options.beam)
        if progress is not None:
            progress.update(len(seqs))
        no_path = sum(len(s) for s, v in zip(seqs, scores) if v == -np.inf)
        return Decoded(labels, None, {"positions": sum(len(s) for s in seqs),
                                      "no_path": no_path})

    def report(self, totals):
        from ...progress import log

        n = totals.get("positions", 0)
        if totals.get("negative_sequences"):
            log.warning("%d of %d positions lie in sequences whose estimated p(x) is not "
                        "positive (a signed spectral estimate): labels chosen by mu / p(x)",
                        totals["negative_sequences"], n)
        if totals.get("nonpositive_best"):
            log.warning("%d of %d positions had a non-positive best posterior (argmax taken "
                        "anyway)", totals["nonpositive_best"], n)
        if totals.get("no_path"):
            log.warning("%d positions had no label sequence with nonzero weight",
                        totals["no_path"])

    def describe(self):
        info = self.info
        attrs = getattr(self, "attrs", {})
        out = {
            "kind": "model", "model_type": MODEL_TYPE, "estimator": info.get("estimator"),
            "form": self.form, "created_by": attrs.get("created_by"),
            "created": attrs.get("created"),
            "options": json.loads(attrs.get("options", "{}")),
            "versions": json.loads(attrs.get("versions", "{}")),
            "num_labels": self.num_labels, "num_observations": len(self.observations),
            "labels": self.labels.symbols, "observations": self.observations.symbols,
            "m_per_label": self.m.tolist(), "mean_m": float(self.m.mean()),
            "label_pairs": len(self.trans),
        }
        if self.backoff is not None:
            out["emission_floor"] = self.backoff[0]
        if self.floor is not None:
            # share of (label, observation) pairs whose emission is more than the floor
            out["floor_pairs_seen"] = float(self.floor.seen.mean())
        for k in ("best_iteration", "train_utts", "train_positions", "template_fingerprint",
                  "ill_conditioned", "templates", "singular_values", "history"):
            if k in info:
                out[k] = info[k]
        return out

    def nonfinite(self):
        """Names of the operators holding a NaN or an infinity (empty when all are finite)."""
        sym = self.labels.symbols
        bad = [f"{what} of label {sym[a]}" for a in range(self.num_labels)
               for what, v in (("init", self.init[a]), ("emission", self.emit[a]),
                               ("stop", self.stop[a])) if not np.isfinite(v).all()]
        bad += [f"transition {sym[a]} -> {sym[b]}" for (a, b), C in sorted(self.trans.items())
                if not np.isfinite(C).all()]
        if self.backoff is not None and not np.isfinite(self.backoff[1]).all():
            bad.append("the emission backoff's p(x)")
        if self.floor is not None and self.floor.nonfinite():
            bad.append("the emission floor")
        return bad

    def check_finite(self, path=None):
        """A model never holds a non-finite number: refuse to write one, saying where."""
        bad = self.nonfinite()
        if bad:
            more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
            raise InputError("refusing to write a model with non-finite values (NaN or inf) in "
                             f"{', '.join(bad[:3])}{more}: check the numeric options "
                             "(e.g. --floor, --smooth) and the training data", path)

    # --- model files ------------------------------------------------------------
    def save(self, path, provenance):
        """Write a self-describing model file (HDF5), atomically. See rhmmtk-formats(5)."""
        from ...io.model_file import write_model

        self.check_finite(path)
        datasets = {"m": self.m}
        for a in range(self.num_labels):
            datasets.update({f"init/{a}": self.init[a], f"emit/{a}": self.emit[a],
                             f"stop/{a}": self.stop[a]})
        for (a, b), C in sorted(self.trans.items()):
            datasets[f"trans/{a}/{b}"] = C
        attrs = {"form": self.form}
        if self.backoff is not None:
            attrs["emission_floor"] = self.backoff[0]
            datasets["backoff_px"] = self.backoff[1]
        if self.floor is not None:
            fl = self.floor
            datasets.update({"floor/scale": fl.scale, "floor/seen": fl.seen.astype(np.uint8)})
            datasets.update({f"floor/g/{a}": fl.g[a] for a in range(self.num_labels)})
        write_model(path, MODEL_TYPE, self.labels, self.observations, self.info, provenance,
                    datasets, compress=("emit", "floor/seen"), attrs=attrs)

    @classmethod
    def load(cls, path):
        from ...io.model_file import ModelFile

        path = os.fspath(path)
        with ModelFile(path, MODEL_TYPE) as mf:
            labels, obs, info, attrs = mf.labels, mf.observations, mf.info, mf.attrs
            l = len(labels)
            init = [mf.array(f"init/{a}") for a in range(l)]
            emit = [mf.array(f"emit/{a}") for a in range(l)]
            stop = [mf.array(f"stop/{a}") for a in range(l)]
            groups = mf.file["trans"] if "trans" in mf else {}
            try:
                trans = {(int(a), int(b)): mf.array(f"trans/{a}/{b}")
                         for a in groups for b in groups[a]}
                form = str(attrs["form"])
                backoff = None
                if "emission_floor" in attrs:
                    backoff = (float(attrs["emission_floor"]), mf.array("backoff_px"))
                floor = None
                if "floor" in mf:
                    floor = EmissionFloor(mf.array("floor/scale"),
                                          [mf.array(f"floor/g/{a}") for a in range(l)],
                                          mf.array("floor/seen") != 0)
            except (KeyError, ValueError, TypeError, AttributeError) as e:  # a misnamed group
                raise InputError(f"{mf.WHAT} ({e})", path) from None
        try:
            op = cls(labels, obs, form, init, emit, trans, stop, info, backoff, floor)
        except (ValueError, TypeError, AttributeError) as e:
            raise InputError(f"model file is inconsistent: {e}", path) from None
        if op.nonfinite():
            raise InputError("model holds non-finite values (NaN or inf) in "
                             f"{', '.join(op.nonfinite()[:3])}: corrupt, or made by an old "
                             "version without the check", path)
        op.attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in attrs.items()}
        op.path = path          # named by decode's refusals
        return op


def observation_prior(counts, positions):
    """p(x) of the emission backoff from each observation's training count: every
    observation counts at least once, so one never seen in training (possible when the
    codebook was learnt on other frames) still gets some mass, or every sequence holding
    it would be impossible; seen observations keep their relative frequency."""
    return np.maximum(np.asarray(counts, dtype=np.float64), 1.0) / max(int(positions), 1)
