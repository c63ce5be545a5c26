"""Max-margin IO-OOM taggers learned as a Hankel matrix of trigram scores (paper 002).

The model is a trigram score table H (rhmmtk.models.trigram: rows bi-symbol pairs (u, a),
columns bi-symbols v), decoded by second-order Viterbi (rule (4)). Training minimises

    g(H) = (1/m) sum_i L_2(x^i, y^i; H) + tau R(H)

with L_2 the Viterbi-hinge loss (Hamming task loss) and R the nuclear norm ||H||_*
(`--reg nuclear`, the spectral regulariser), half the squared Frobenius norm (`l2`), the
Frobenius norm itself (`frobenius`, paper 002's words for its l2 baseline: "replaced
with a Frobenius norm regularizer ||H||_F") or nothing (`none`), by FOBOS (Duchi & Singer 2009; paper 002, algorithm 1): a subgradient
step of size eta_t = c / sqrt(t) from the loss-augmented second-order Viterbi, then the
proximal step of eta_t tau R -- singular-value thresholding for the nuclear norm
(Cai et al. 2010), a shrinkage H / (1 + eta_t tau) for l2, H max(0, 1 - eta_t tau /
||H||_F) for frobenius. The loss is averaged over the
m training words (paper 002 sums it: its tau is ours times m), so c and tau mean the same
at every training-set size. With dev data every iteration is scored and the best kept.

`--update perceptron` trains the same trigram factors by the averaged perceptron
(Collins 2002): the paper's feature-free perceptron counterpart.

`--states n` compresses the learned H to an IO-OOM with n states by the SVD construction
(`compress`): prefix vectors alpha_u, operators A_a and suffix vectors beta_v with
F(u a v) = alpha_u^T A_a beta_v for every trigram; it equals H when rank(H) <= n.
(`recover_iooom` is the paper's section 3.1 construction of <alpha, beta, A> from
Hankel blocks over a basis holding the empty string; the trigram-only H learned with L_2
has no such blocks, so the prefix/suffix vectors take the place of alpha and beta.)
"""
import dataclasses
import os

import click
import numpy as np

from ..errors import InputError
from ..options import option, shared
from ..click_types import Count, Real
from . import Decoded, Model
from .trigram import (BOUNDARIES, PAD, Batch, BiSymbolModel, hinge_subgradient, kernel_layout,
                      kernels, read_dev, read_training, table_from_effective, viterbi)

MODEL_TYPE = "maxmargin"
REGULARISERS = ("nuclear", "l2", "frobenius", "none")
UPDATES = ("fobos", "perceptron")


@dataclasses.dataclass
class MaxMarginOptions:
    """Training options of the max-margin IO-OOM tagger."""

    reg: str = option("--reg", default="nuclear", type=click.Choice(REGULARISERS),
                      help="Regulariser: nuclear norm (spectral), l2 (half the squared "
                           "Frobenius norm), frobenius (the Frobenius norm) or "
                           "none.")
    tau: float = option("--tau", default=3e-3, type=Real(),
                        help="Regularisation constant tau (> 0; ignored with --reg none).")
    rate: float = option("--rate", default=100.0, type=Real(),
                         help="FOBOS initial step c (> 0): eta_t = c / sqrt(t).")
    iters: int = shared("iters", default=8, type=Count(1),
                        help="Iterations (FOBOS steps, or perceptron epochs).")
    update: str = shared("update", default="fobos", type=click.Choice(UPDATES),
                         help="fobos (max-margin) or perceptron (averaged perceptron on the "
                              "same trigram factors; --reg/--tau/--rate unused).")
    states: int = shared("states", default=0, type=Count(0),
                         help="Compress H to an IO-OOM with this many states by the SVD "
                              "construction (0: keep H as learned).")
    boundary: str = option("--boundary", default="padded", type=click.Choice(BOUNDARIES),
                           help="Which n-grams score a word: padded (every trigram of START "
                                "START x END), paper (paper 002's rule (4): the trigrams "
                                "inside the word) or paper-all (its F_[2]: the bigrams and "
                                "trigrams inside the word).")
    steps: int = option("--steps", default=0, type=click.IntRange(0),
                        help="FOBOS: the budget, a number of steps whatever the training "
                             "size, spread evenly over the --iters scorings (0: each "
                             "iteration is one pass over the words).")
    batch_words: int = option("--batch-words", default=500, type=click.IntRange(0),
                              help="FOBOS: words per step (0: all, the paper's batch "
                                   "algorithm; else each iteration is one pass over the "
                                   "shuffled words in steps of this many).")
    average: bool = shared("average",
                           help="FOBOS: score and keep the running average of the iterates "
                                "H_1..H_t (the point subgradient methods' guarantees are "
                                "stated for) instead of the last iterate.")
    average_decay: float = option("--average-decay", default=0.0, type=Real(min=0),
                                  help="FOBOS with --average: iterate t enters the average "
                                       "with weight (g + 1) / (t + g) for this g "
                                       "(polynomial-decay averaging, Shamir & Zhang 2013: "
                                       "early iterates fade, iterate i weighs about i^g; "
                                       "0: the plain mean).")
    seed: int = shared("seed",
                       help="Seed of the word order of each epoch (perceptron, --batch-words).")
    patience: int = shared("patience")


def check_options(opts):
    if opts.update == "fobos":
        if not opts.rate > 0:
            raise InputError(f"--rate must be positive (got {opts.rate})")
        if opts.average_decay and not opts.average:
            raise InputError("--average-decay weighs the average of the iterates: give it "
                             "with --average")
        if opts.reg != "none" and not opts.tau > 0:
            raise InputError(f"--tau must be positive with --reg {opts.reg} (got {opts.tau}); "
                             "use --reg none for the unregularised model")


# --- proximal steps ----------------------------------------------------------------------

def singular_value_threshold(H, t):
    """argmin_X 1/2 ||X - H||_F^2 + t ||X||_* = U max(S - t, 0) V^T (Cai et al. 2010).
    Computed from the eigendecomposition of the small Gram matrix H^T H (H is tall):
    X = H V diag(max(s - t, 0) / s) V^T. Returns (X, rank of X)."""
    w, V = np.linalg.eigh(H.T @ H)
    s = np.sqrt(np.maximum(w, 0.0))
    keep = s > t
    if not keep.any():
        return np.zeros_like(H), 0
    f = (s[keep] - t) / s[keep]
    Vk = V[:, keep]
    return H @ ((Vk * f) @ Vk.T), int(keep.sum())   # one product with H, not two


def prox(H, reg, t):
    """The proximal step of t * R at H; returns (new H, rank or None)."""
    if reg == "nuclear":
        return singular_value_threshold(H, t)
    if reg == "l2":
        return H / (1.0 + t), None
    if reg == "frobenius":
        norm = float(np.linalg.norm(H))
        return H * max(0.0, 1.0 - t / norm) if norm > 0 else H, None
    return H, None


def regulariser(H, reg):
    if reg == "nuclear":
        return float(np.linalg.svd(H, compute_uv=False).sum())
    if reg == "l2":
        return 0.5 * float(np.sum(H * H))
    if reg == "frobenius":
        return float(np.linalg.norm(H))
    return 0.0


# --- IO-OOM recovery ---------------------------------------------------------------------

def recover_iooom(H_eps, H_sym, h_P, h_S, n):
    """Paper 002, section 3.1: with H_eps = U S V^T (top n), A_s = (H_eps V)^+ H_s V,
    alpha^T = h_P^T V, beta = (H_eps V)^+ h_S. H_sym: dict symbol -> block. Returns
    (alpha, beta, {symbol: A_s}); F(s_1..s_t) = alpha^T A_{s_1} .. A_{s_t} beta."""
    V = np.linalg.svd(H_eps)[2][:n].T
    P = np.linalg.pinv(H_eps @ V)
    return h_P @ V, P @ h_S, {s: P @ Hs @ V for s, Hs in H_sym.items()}


def compress(H, nb, n):
    """A rank-n IO-OOM in the trigram basis: alpha (nb, n) prefix vectors, A (nb, n, n)
    operators, beta (nb, n) suffix vectors with F(u a v) = alpha[u] A[a] beta[v]. From the
    top-n left singular vectors (times singular values) of H arranged as rows u, columns
    (a, v), and the top-n right singular vectors V of H (rows (u, a), columns v):
    alpha = L, A_a = L^+ H_a V, beta = V."""
    R = H.reshape(nb, nb * nb)                      # rows u, columns (a, v)
    Ul, sl, _ = np.linalg.svd(R, full_matrices=False)
    L = Ul[:, :n] * sl[:n]
    V = np.linalg.svd(H, full_matrices=False)[2][:n].T      # (nb, n)
    Lp = np.linalg.pinv(L)
    Ha = H.reshape(nb, nb, nb).transpose(1, 0, 2)   # Ha[a] = rows u, columns v
    A = np.einsum("iu,auv,vj->aij", Lp, Ha, V, optimize=True)
    return L, A, V


def expand(alpha, A, beta):
    """The trigram table (rows (u, a), columns v) of a compressed IO-OOM."""
    nb = len(alpha)
    return np.einsum("ui,aij,vj->uav", alpha, A, beta, optimize=True).reshape(nb * nb, nb)


# --- the model ---------------------------------------------------------------------------

class MaxMarginModel(BiSymbolModel, Model):
    model_type = MODEL_TYPE
    decode_options = None

    def __init__(self, labels, observations, bis, H, info=None):
        self.labels, self.observations, self.bis = labels, observations, bis
        self.H = np.asarray(H, dtype=np.float64)
        self.info = dict(info or {})
        if self.H.shape != (bis.nb * bis.nb, bis.nb):
            raise ValueError(f"score table of shape {self.H.shape} does not fit {bis.nb} "
                             "bi-symbols")
        if not np.all(np.isfinite(self.H)):
            raise ValueError("score table holds non-finite numbers")

    def decode(self, seqs, options=None, progress=None):
        batch = Batch(self.bis, seqs)
        paths, _ = viterbi(self.H, self.bis, batch, boundary=self.boundary)
        if progress is not None:
            progress.update(len(seqs))
        return Decoded(batch.split(self.bis.pair_label[paths]), None,
                       {"positions": len(batch.inputs)})

    @property
    def boundary(self):
        return self.info.get("boundary", "padded")

    def describe(self):
        out = self._describe_common()
        for k in ("update", "boundary", "steps", "reg", "tau", "rate", "best_iteration", "rank", "states",
                  "train_utts", "train_positions", "dev_accuracy"):
            if k in self.info:
                out[k] = self.info[k]
        return out

    def save(self, path, provenance):
        extra = {f"iooom/{k}": v for k, v in getattr(self, "iooom", {}).items()} \
            if "alpha" in getattr(self, "iooom", {}) else {}
        self._save(path, provenance, {"H": self.H, **extra}, ("H",))

    @classmethod
    def load(cls, path):
        path = os.fspath(path)
        labels, obs, bis, info, attrs, (H,) = cls._load(path, MODEL_TYPE, ("H",))
        try:
            model = cls(labels, obs, bis, H, info)
        except ValueError as e:
            raise InputError(f"model file is inconsistent: {e}", path) from None
        model.attrs = attrs
        return model


# --- training ----------------------------------------------------------------------------

def accuracy(H, bis, batch, gold_labels, boundary="padded"):
    paths, _ = viterbi(H, bis, batch, boundary=boundary)
    return float(np.mean(bis.pair_label[paths] == gold_labels)) * 100.0


class KeepBest:
    """Both trainers' per-iteration bookkeeping: score the iterate on dev (when there is a
    dev set), keep the best one (without dev scores, the last), record and report the row."""

    def __init__(self, evaluate, on_iter, start=None, patience=0):
        self.evaluate, self.on_iter, self.patience = evaluate, on_iter, patience
        self.best, self.score, self.records = start, -np.inf, []

    @property
    def stalled(self):
        """Early stopping (selection.stalled): `patience` dev scorings without a gain."""
        from ..selection import stalled

        return stalled(self.records, self.patience)

    def __call__(self, t, row, point):
        if self.evaluate is not None:
            row["dev_acc"] = self.evaluate(point)
        score = row.get("dev_acc", t)
        if score > self.score:
            self.best, self.score = point, score
            row["best"] = True
        self.records.append(row)
        if self.on_iter is not None:
            self.on_iter(t, row)


def minibatches(batch, batch_words, rng):
    """The endless stream of FOBOS steps' words: all of them (batch_words 0), or passes over
    the words in a seeded random order cut into steps of `batch_words`."""
    while True:
        if batch_words and batch_words < len(batch):
            order = rng.permutation(len(batch))
            for i in range(0, len(batch), batch_words):
                yield batch.subset(order[i:i + batch_words])
        else:
            yield batch


def grow_rows(rows, new_rows, *compact):
    """Compact row stores of `rows` re-laid for `new_rows` (a sorted superset): the rows
    kept where they now stand, the new ones zero. Returns (new_rows, the stores); a store
    None stays None."""
    at = np.searchsorted(new_rows, rows)
    grown = []
    for c in compact:
        if c is not None:
            g = np.zeros((len(new_rows), c.shape[1]))
            g[at] = c
            c = g
        grown.append(c)
    return new_rows, grown


def fobos(bis, batch, reg, tau, rate, iters, evaluate=None, on_iter=None, batch_words=0,
          seed=0, average=False, patience=0, boundary="padded", steps=0, average_decay=0.0):
    """FOBOS on g(H) = mean Viterbi-hinge loss (convention `boundary`) + tau R(H) from
    H_0 = 0. A step is on all words (batch_words 0, paper 002's algorithm 1) or on the next
    `batch_words` of passes over the words in a seeded random order (the stochastic form;
    t counts steps). An iteration is one pass (steps 0) or, with a budget of `steps` steps,
    its iters-th part, so that the number of updates does not depend on the training size.
    `evaluate(H)` (dev accuracy) selects the best iteration's point; without it the last is
    kept. With `average`, the point is the running mean of all iterates H_1..H_t so far, or
    with `average_decay` g > 0 their polynomial-decay average A_t = A_{t-1} + (H_t -
    A_{t-1}) (g + 1) / (t + g) (Shamir & Zhang 2013; iterate i weighs Gamma(i + g) /
    Gamma(i), i^g for large i), which forgets the poor early iterates sooner.
    `on_iter(t, row)` is called after each iteration; `patience` P > 0 stops once P dev
    scorings in a row bring no gain. Returns (best H, records)."""
    nb = bis.nb
    H = np.zeros((nb * nb, nb))
    stream = minibatches(batch, batch_words, np.random.default_rng(seed))
    per_pass = -(-len(batch) // batch_words) if batch_words and batch_words < len(batch) else 1
    keep, step = KeepBest(evaluate, on_iter, H.copy(), patience), 0
    # Rows (u, a) no step has touched stay zero: every proximal step maps H to H M (nuclear)
    # or a multiple of H, so zero rows stay zero and the steps need only the touched rows
    # (at 15,000 words about a quarter of them; the step is 3-4 times cheaper, same result).
    # The touched rows' values (Hc, and the average Ac) are kept compact, in row order, so
    # that a step gathers and scatters no rows of its own (only the subgradient's); the
    # arithmetic is the same as on H[rows].
    touched = np.zeros(len(H), dtype=bool)
    rows = np.zeros(0, dtype=np.int64)
    Hc = np.zeros((0, nb))
    Ac = np.zeros((0, nb)) if average else None
    # The Viterbi kernels read H in kernel layout; with the padded convention (E(H) = H) it
    # is kept here and only the stepped rows are rewritten (a whole new layout per step cost
    # about as much as the proximal step at 2,000 words). The other conventions read H.
    K = kernel_layout(H, nb) if boundary == "padded" else None
    Gbuf = np.zeros_like(H) if K is not None else None     # all zero between steps
    for t in range(1, iters + 1):
        last = t * per_pass if not steps else round(t * steps / iters)
        loss = errors = words = 0
        while step < last:
            part = next(stream)
            step += 1
            part_loss, part_errors, G = hinge_subgradient(H, bis, part, boundary, K, Gbuf)
            loss += part_loss
            errors += part_errors
            words += len(part)
            eta = rate / np.sqrt(step)
            hit = G.any(axis=1)
            if (hit & ~touched).any():
                touched |= hit
                rows, (Hc, Ac) = grow_rows(rows, np.flatnonzero(touched), Hc, Ac)
            Hc, rank = prox(Hc - (eta / len(part)) * G[rows], reg, eta * tau)
            if Gbuf is not None:
                Gbuf[hit] = 0                           # every nonzero is in a hit row
            if not np.isfinite(Hc).all():
                raise InputError(f"training diverged at step {step} (non-finite scores): "
                                 "lower --rate")
            if K is not None:
                K[rows % nb, :, rows // nb] = Hc        # row (u, a) is K[a, :, u]
            else:
                H[rows] = Hc
            if average:      # g 0: the plain running mean's division by t, exactly
                Ac += (Hc - Ac) / ((step + average_decay) / (average_decay + 1))
        if not words:
            continue                   # a budget of fewer steps than scorings
        row = {"iter": t, "step": step, "loss": loss / words, "train_word_errors": int(errors),
               "eta": eta, "rank": rank}
        point = np.zeros_like(H)
        point[rows] = Ac if average else Hc
        keep(t, row, point)
        if keep.stalled:
            break
    return keep.best, keep.records


def averaged_perceptron(bis, batch, iters, seed, evaluate=None, on_iter=None, patience=0,
                        boundary="padded"):
    """Averaged perceptron on the factors convention `boundary` scores; epochs in a seeded
    random word order (`patience` as fobos'). Returns (best averaged H, records)."""
    nb = bis.nb
    W = np.zeros((nb, nb, nb))               # kernel layout [a, v, u]
    U = np.zeros((nb, nb, nb))
    work = np.zeros(len(batch.inputs), dtype=np.int64)
    rng = np.random.default_rng(seed)
    step = 1.0
    keep = KeepBest(evaluate, on_iter, patience=patience)
    for t in range(1, iters + 1):
        order = rng.permutation(len(batch)).astype(np.int64)
        mistakes, step = kernels()["perceptron_epoch"](
            W, U, nb, step, bis.first, bis.count, bis.pair_label, batch.inputs,
            batch.offsets, batch.max_len, batch.gold, order, work, BOUNDARIES.index(boundary))
        avg = W - U / step
        H = table_from_effective(np.ascontiguousarray(avg.transpose(2, 0, 1)).reshape(
            nb * nb, nb), nb, boundary)
        row = {"iter": t, "train_word_errors": int(mistakes)}
        keep(t, row, H)
        if keep.stalled:
            break
    return keep.best, keep.records


def train(obs_path, ali_path, opts=None, dev_obs=None, dev_ali=None):
    """Train a MaxMarginModel from a codes archive of letters and an alignment; with dev
    data the best iteration on dev is kept. Returns (model, per-iteration records)."""
    from ..progress import log, progress
    from ..selection import require_dev

    opts = opts or MaxMarginOptions()
    check_options(opts)
    if (dev_obs is None) != (dev_ali is None):
        raise InputError("give both --dev-obs and --dev-ali, or neither")
    require_dev(opts.patience, dev_obs is not None)
    corpus, bis, batch = read_training(obs_path, ali_path)
    log.info("%d words, %d positions, %d bi-symbols (%d..%d outputs per input)", len(corpus),
             corpus.num_positions, bis.nb - PAD, bis.count[bis.count > 0].min(),
             bis.count.max())
    evaluate = None
    if dev_obs is not None:
        shell = MaxMarginModel(corpus.label_table, corpus.obs_table, bis,
                               np.zeros((bis.nb ** 2, bis.nb)))
        dev_batch, dev_gold = read_dev(dev_obs, dev_ali, shell)

        def evaluate(H):
            return accuracy(H, bis, dev_batch, dev_gold, opts.boundary)

    with progress(total=opts.iters, desc=opts.update, unit="iter") as bar:
        def on_iter(t, row):
            bar.update(1)
            log.debug("iteration %d: %s", t, row)

        if opts.update == "perceptron":
            H, records = averaged_perceptron(bis, batch, opts.iters, opts.seed, evaluate,
                                             on_iter, opts.patience, opts.boundary)
        else:
            H, records = fobos(bis, batch, opts.reg, opts.tau, opts.rate, opts.iters, evaluate,
                               on_iter, opts.batch_words, opts.seed, opts.average,
                               opts.patience, opts.boundary, opts.steps, opts.average_decay)
    best = max((r for r in records if r.get("best")), key=lambda r: r["iter"])
    info = {"estimator": "maxmargin", "update": opts.update, "reg": opts.reg,
            "tau": opts.tau, "rate": opts.rate, "iters": opts.iters,
            "boundary": opts.boundary, "steps": opts.steps,
            "best_iteration": best["iter"], "train_utts": len(corpus),
            "train_positions": corpus.num_positions}
    if "dev_acc" in best:
        info["dev_accuracy"] = best["dev_acc"]
        log.info("best dev accuracy %.2f at iteration %d", best["dev_acc"], best["iter"])
    s = np.linalg.svd(H, compute_uv=False)
    info["rank"] = int(np.sum(s > s[0] * 1e-9)) if s[0] > 0 else 0
    iooom = None
    if opts.states:
        alpha, A, beta = compress(H, bis.nb, opts.states)
        H2 = expand(alpha, A, beta)
        info["states"] = opts.states
        info["compression_error"] = float(np.abs(H2 - H).max())
        log.info("IO-OOM with %d states: max |F - H| over trigrams %.3g (rank of H %d)",
                 opts.states, info["compression_error"], info["rank"])
        H, iooom = H2, {"alpha": alpha, "A": A, "beta": beta}
    model = MaxMarginModel(corpus.label_table, corpus.obs_table, bis, H, info)
    if iooom:
        model.iooom = iooom
    return model, records


def write_history(records, path):
    from ..io.text import open_output

    cols = ["iter", "step", "loss", "train_word_errors", "eta", "rank", "dev_acc"]
    with open_output(path) as f:
        f.write("\t".join(cols) + "\n")
        for r in records:
            f.write("\t".join("" if r.get(c) is None else
                              (f"{r[c]:.6g}" if isinstance(r[c], float) else str(r[c]))
                              for c in cols) + "\n")
