"""The Hsu-Kakade-Zhang spectral HMM on joint (input, output) symbols: paper 002's
"spectral IO-HMM" baseline (paper 001 explains the operators).

Each word becomes the joint-symbol string # (x_1,y_1) .. (x_T,y_T) #, with # a boundary
symbol (bi-symbol id START; END is never used). From every position of every such string
(not only the first three, so the moments are those of the stationary stream) we count
P_1[i] = Pr[s_t = i], P_21[i, j] = Pr[s_{t+1} = i, s_t = j] and
P_3x1[x][i, j] = Pr[s_{t+2} = i, s_{t+1} = x, s_t = j]; with U the top-m left singular
vectors of P_21,

  b_1 = U^T P_1,   b_inf = (P_21^T U)^+ P_1,   B_x = U^T P_3x1[x] (U^T P_21)^+,

and Pr[s_1 .. s_t] = b_inf^T B_{s_t} .. B_{s_1} b_1 (Hsu et al. 2009, lemma 3).

Decoding (options `--hkz-decode`):
- maxmarginal: for each position the output maximising the sign-corrected marginal
  mu(t, c) / sum_c' mu(t, c'), where mu(t, c) sums the score of # x #, over every output
  sequence the letters allow, with position t's bi-symbol fixed to c (the R-HMM decoder's
  rule; a spectral estimate can be negative, and the ratio is what stays meaningful);
- viterbi: the trigram scores F(u a v) = b_inf^T B_v B_a B_u b_1 maximised in sum by
  second-order Viterbi, as paper 002 used every model (rule (4)).
"""
import dataclasses
import os

import click
import numpy as np

from ..errors import InputError
from ..options import option, shared
from . import Decoded, Model
from .trigram import END, PAD, START, BiSymbolModel, read_training, viterbi

MODEL_TYPE = "hkz"
DECODERS = ("maxmarginal", "viterbi")


@dataclasses.dataclass
class HkzOptions:
    """Training options of the HKZ spectral HMM."""

    m: int = shared("states", default=32,
                    help="Number of hidden states: the top-m singular vectors of P_21 "
                         "(capped at the number of joint symbols).")
    decode: str = option("--decode", default="viterbi", type=click.Choice(DECODERS),
                         help="The model's default decoder (rhmmtk decode --hkz-decode "
                              "overrides it).")


@dataclasses.dataclass
class HkzDecodeOptions:
    """Decode-time options of the HKZ spectral HMM."""

    hkz_decode: str = option(
        "--hkz-decode", default="model", type=click.Choice(("model",) + DECODERS),
        help="HKZ: maxmarginal (sign-corrected max-marginals over the outputs each letter "
             "allows), viterbi (trigram probabilities, second-order Viterbi), or the model "
             "file's default.")


def moments(bis, batch):
    """Empirical P_1 (n,), P_21 (n, n) and P_3x1 (n, n, n) over every position of the
    joint strings # w #; n = bis.nb. P_3x1[x, i, j] = Pr[s3 = i, s2 = x, s1 = j]."""
    n = bis.nb
    words = len(batch)
    # one stream: # w_1 # w_2 # ... w_N #  (windows crossing a # are genuine stream windows)
    stream = np.full(len(batch.gold) + words + 1, START, dtype=np.int64)
    pos = batch.offsets[:-1] + np.arange(words) + 1
    idx = np.repeat(pos - batch.offsets[:-1], np.diff(batch.offsets)) + np.arange(len(batch.gold))
    stream[idx] = batch.gold
    P1 = np.bincount(stream, minlength=n).astype(np.float64)
    P21 = np.bincount(stream[1:] * n + stream[:-1], minlength=n * n).reshape(n, n).astype(float)
    key = (stream[1:-1] * n + stream[2:]) * n + stream[:-2]
    P3 = np.bincount(key, minlength=n ** 3).reshape(n, n, n).astype(np.float64)
    return P1 / P1.sum(), P21 / P21.sum(), P3 / P3.sum()


def operators_from_moments(P1, P21, P3x1, m):
    """HKZ's b_1, b_inf, B (n, m, m) from moments; m capped at rank(P_21)'s dimension."""
    U, s, _ = np.linalg.svd(P21)
    m = min(m, int(np.sum(s > s[0] * 1e-12)) if s[0] > 0 else 1)
    U = U[:, :m]
    b1 = U.T @ P1
    binf = np.linalg.pinv(P21.T @ U) @ P1
    W = np.linalg.pinv(U.T @ P21)                               # (n, m)
    B = np.einsum("iu,xij,jk->xuk", U, P3x1, W, optimize=True)
    return b1, binf, B


def string_probability(b1, binf, B, s):
    """b_inf^T B_{s_t} .. B_{s_1} b_1."""
    v = b1
    for x in s:
        v = B[x] @ v
    return float(binf @ v)


class HkzModel(BiSymbolModel, Model):
    model_type = MODEL_TYPE
    decode_options = HkzDecodeOptions

    def __init__(self, labels, observations, bis, b1, binf, B, info=None):
        self.labels, self.observations, self.bis = labels, observations, bis
        self.b1 = np.asarray(b1, dtype=np.float64)
        self.binf = np.asarray(binf, dtype=np.float64)
        self.B = np.asarray(B, dtype=np.float64)
        self.info = dict(info or {})
        m = len(self.b1)
        if self.B.shape != (bis.nb, m, m) or self.binf.shape != (m,):
            raise ValueError(f"operators of shape {self.B.shape}, b_inf {self.binf.shape} do "
                             f"not fit {bis.nb} joint symbols and m = {m}")
        for name, a in (("b_1", self.b1), ("b_inf", self.binf), ("B", self.B)):
            if not np.all(np.isfinite(a)):
                raise ValueError(f"{name} holds non-finite numbers")

    @property
    def m(self):
        return len(self.b1)

    def boundary_operators(self):
        """B_# b_1 (start of every word) and B_#^T b_inf (its end)."""
        return self.B[START] @ self.b1, self.B[START].T @ self.binf

    def trigram_table(self):
        """H[(u, a), v] = Pr[u a v] = b_inf^T B_v B_a B_u b_1 (START, END read as #); the
        row (START, START) holds Pr[# v] (a word's first letter follows one #)."""
        n = self.bis.nb
        B = self.B.copy()
        B[END] = B[START]
        left = B @ self.b1                                      # (n, m): B_u b_1
        two = np.einsum("aij,uj->uai", B, left, optimize=True)   # (n, n, m): B_a B_u b_1
        right = np.einsum("vij,i->vj", B, self.binf)            # (n, m): B_v^T b_inf
        H = np.einsum("uai,vi->uav", two, right, optimize=True).reshape(n * n, n)
        H[START * n + START] = right @ B[START] @ self.b1
        return H

    def decode(self, seqs, options=None, progress=None):
        from .trigram import Batch

        how = (options.hkz_decode if options else "model")
        how = self.info.get("decode", "maxmarginal") if how == "model" else how
        batch = Batch(self.bis, seqs)
        stats = {"positions": len(batch.inputs)}
        if how == "viterbi":
            paths, _ = viterbi(self.trigram_table(), self.bis, batch)
        else:
            paths, nonpos = self.max_marginal_paths(batch)
            stats["zero_mass_positions"] = nonpos
        labels = self.bis.pair_label[paths]
        if progress is not None:
            progress.update(len(seqs))
        return Decoded(batch.split(labels), None, stats)

    def max_marginal_paths(self, batch):
        """Per position, the bi-symbol c of the letter maximising mu(t, c) / sum_c' mu(t, c')."""
        bis = self.bis
        S = np.zeros((bis.num_inputs, self.m, self.m))
        for x in range(bis.num_inputs):                 # sum of each letter's operators
            S[x] = self.B[bis.first[x]:bis.first[x] + bis.count[x]].sum(axis=0)
        start, end = self.boundary_operators()
        out = np.zeros(len(batch.inputs), dtype=np.int64)
        # contiguous operators: a model built in Python (a change of basis) may hold a view,
        # for which numba would compile a second, slower version of the kernel
        zero = _max_marginal_kernel()(np.ascontiguousarray(self.B), S,
                                      np.ascontiguousarray(S.transpose(0, 2, 1)),
                                      start, end, bis.first, bis.count,
                                      batch.inputs, batch.offsets, batch.max_len, out)
        return out, int(zero)

    def report(self, totals):
        from ..progress import log

        if totals.get("zero_mass_positions"):
            log.warning("%d of %d positions had zero total mass (plain argmax taken)",
                        totals["zero_mass_positions"], totals.get("positions", 0))

    def describe(self):
        out = self._describe_common()
        out.update(m=self.m, decode=self.info.get("decode", "maxmarginal"))
        for k in ("singular_values", "train_utts", "train_positions"):
            if k in self.info:
                out[k] = self.info[k]
        return out

    def save(self, path, provenance):
        self._save(path, provenance, {"b1": self.b1, "binf": self.binf, "B": self.B}, ("B",))

    @classmethod
    def load(cls, path):
        path = os.fspath(path)
        labels, obs, bis, info, attrs, (b1, binf, B) = cls._load(path, MODEL_TYPE,
                                                                ("b1", "binf", "B"))
        try:
            model = cls(labels, obs, bis, b1, binf, B, info)
        except ValueError as e:
            raise InputError(f"model file is inconsistent: {e}", path) from None
        model.attrs = attrs
        return model


_KERNEL = []


def _max_marginal_kernel():
    if _KERNEL:
        return _KERNEL[0]
    import numba

    @numba.njit(cache=True, nogil=True)
    def kernel(B, S, ST, start, end, first, count, inputs, offsets, max_len, out):
        m = len(start)
        F = np.empty((max_len + 1, m))
        G = np.empty((max_len + 2, m))
        zero = 0
        for w in range(len(offsets) - 1):
            lo, hi = offsets[w], offsets[w + 1]
            T = hi - lo
            # forward (and backward) vectors, rescaled by positive numbers: the ratio
            # mu / sum(mu) at a position is unchanged by them
            F[0] = start / max(np.abs(start).sum(), 1e-300)
            for t in range(1, T + 1):
                f = S[inputs[lo + t - 1]] @ F[t - 1]
                F[t] = f / max(np.abs(f).sum(), 1e-300)
            G[T + 1] = end / max(np.abs(end).sum(), 1e-300)
            for t in range(T, 0, -1):
                g = ST[inputs[lo + t - 1]] @ G[t + 1]
                G[t] = g / max(np.abs(g).sum(), 1e-300)
            for t in range(1, T + 1):
                x = inputs[lo + t - 1]
                z = G[t + 1] @ (S[x] @ F[t - 1])
                best = -np.inf
                arg = first[x]
                for c in range(first[x], first[x] + count[x]):
                    mu = G[t + 1] @ (B[c] @ F[t - 1])
                    v = mu / z if z != 0.0 else mu
                    if v > best:
                        best = v
                        arg = c
                if z == 0.0:
                    zero += 1
                out[lo + t - 1] = arg
        return zero

    _KERNEL.append(kernel)
    return kernel


def train(obs_path, ali_path, opts=None):
    """Estimate an HkzModel from a codes archive of letters and an alignment."""
    from ..progress import log

    opts = opts or HkzOptions()
    corpus, bis, batch = read_training(obs_path, ali_path)
    P1, P21, P3 = moments(bis, batch)
    b1, binf, B = operators_from_moments(P1, P21, P3, opts.m)
    s = np.linalg.svd(P21, compute_uv=False)
    if len(b1) < opts.m:
        log.warning("m = %d capped at %d (the rank of P_21)", opts.m, len(b1))
    info = {"estimator": "hkz", "m": len(b1), "decode": opts.decode,
            "train_utts": len(corpus), "train_positions": corpus.num_positions,
            "singular_values": s[:len(b1) + 1].tolist()}
    log.info("%d words, %d joint symbols, m = %d", len(corpus), bis.nb - PAD, len(b1))
    return HkzModel(corpus.label_table, corpus.obs_table, bis, b1, binf, B, info)
