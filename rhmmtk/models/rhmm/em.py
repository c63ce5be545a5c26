"""EM for the R-HMM, and the supervised baselines HMM (m = 1) and UNIGRAM.

Labels are observed in training, so the E-step runs forward-backward over the m
hidden states of each position only (m^2 work per position, not (l m)^2),
vectorised over a bucket of sequences of similar length, one time step at a time.
Expected counts are accumulated with sparse indicator products. The M-step
normalises them; `floor` adds a pseudo-count to every event the labels allow
(a label pair, a label-observation pair, a first or last label seen in
training), which is MAP estimation under a Dirichlet prior: the objective
loglik + floor * sum(log parameters) never decreases, and with floor = 0 the
log-likelihood itself never decreases. By default the floor also reaches every
(label, observation) pair never seen together, so no observation is impossible.

Accumulate, then estimate (the gmm-acc-stats / gmm-est pattern): the expected
counts (Stats) and the label-level counts (Counts) are sums over sequences, so
they are computed per shard (`rhmmtk acc-em`) and added (`init-em`, `est-em`);
`train` (train-em) composes the same functions in one process:

  Counts.from_corpus -> sum -> Support.from_counts -> initial_model   (iteration 0)
  e_step (per shard) -> Stats.add -> m_step                           (each iteration)

In one process `train` runs the same iteration on a compact iterate (em_iteration:
Emissions keeps the emission rows of the pairs the corpus visits and one default per
label, so an iteration costs the E-step, not l n m), and builds the dense RHMM only
for dev scoring and the model it keeps.

A model file carries everything the next iteration needs: its label-level support
is read back from the zero pattern of its parameters (Support.from_model), which is
the training support by construction (every allowed event gets expected or floor
mass, every other event none).
"""
import dataclasses

import numpy as np

from ...errors import InputError
from ...options import option, shared
from ...click_types import Real
from ...progress import log, progress
from .params import RHMM


@dataclasses.dataclass
class EmOptions:
    """The EM model and its start: train-em and init-em (est-em keeps the model's)."""

    m: int = shared("states", default=4,
                    help="Hidden states per label; 1 gives the supervised HMM (counts).")
    seed: int = shared("seed", help="Seed of the random initialisation.")
    floor: float = shared("floor", default=1e-3,
                          help="Pseudo-count added to every event the training labels allow, "
                               "and to every (label, observation) pair.")
    noise: float = option("--noise", default=0.5, type=Real(0),
                          help="Symmetry-breaking multiplicative noise of the initial "
                               "parameters.")
    emission_floor: float = shared(
        "emission_floor", default=0.0,
        help="Decode with every emission interpolated with the observation's training "
             "frequency, (o(x|a,h) + eps p(x)) / (1 + eps); EM itself re-estimates the "
             "model's own o. Dev scoring and the model file use it; 0 = none.")


BUCKET_BYTES = 256 * 2**20


class Counts:
    """Label-level event counts of skeletal sequences (int64; they add across shards):
    pair[a, b] bigrams, emit[a, x] emissions, first[a] / last[a] sequence ends, and the
    numbers of sequences and positions. The m = 1 expected counts are these counts."""

    def __init__(self, l, n):
        self.l, self.n = l, n
        self.pair = np.zeros((l, l), dtype=np.int64)
        self.emit = np.zeros((l, n), dtype=np.int64)
        self.first = np.zeros(l, dtype=np.int64)
        self.last = np.zeros(l, dtype=np.int64)
        self.utts = 0
        self.positions = 0

    @classmethod
    def from_corpus(cls, corpus):
        l, n = len(corpus.label_table), len(corpus.obs_table)
        out = cls(l, n)
        if not len(corpus):
            return out
        A = np.concatenate(corpus.labels)
        X = np.concatenate(corpus.obs)
        out.emit += np.bincount(A * n + X, minlength=l * n).reshape(l, n)
        out.first += np.bincount([a[0] for a in corpus.labels], minlength=l)
        out.last += np.bincount([a[-1] for a in corpus.labels], minlength=l)
        prev = np.concatenate([a[:-1] for a in corpus.labels])
        nxt = np.concatenate([a[1:] for a in corpus.labels])
        out.pair += np.bincount(prev * l + nxt, minlength=l * l).reshape(l, l)
        out.utts, out.positions = len(corpus), len(A)
        return out

    def add(self, other):
        for name in ("pair", "emit", "first", "last"):
            getattr(self, name).__iadd__(getattr(other, name))
        self.utts += other.utts
        self.positions += other.positions
        return self

    def to_data(self):
        return {"pair": self.pair, "emit": self.emit, "first": self.first, "last": self.last}

    @classmethod
    def from_file(cls, sf, l, n):
        out = cls(l, n)
        for name, shape in (("pair", (l, l)), ("emit", (l, n)), ("first", (l,)), ("last", (l,))):
            arr = sf[name]
            if arr.shape != shape:
                raise InputError(f"{name} counts have shape {arr.shape}, the symbol tables "
                                 f"need {shape}", sf.path)
            setattr(out, name, arr.astype(np.int64))
        out.utts, out.positions = sf.utts, sf.positions
        return out


class Support:
    """Which label-level events occur in training (pairs, emissions, first, last)."""

    def __init__(self, corpus=None, pair=None, emit=None, first=None, last=None):
        if corpus is not None:
            c = Counts.from_corpus(corpus)
            pair, emit, first, last = c.pair > 0, c.emit > 0, c.first > 0, c.last > 0
        self.pair = np.asarray(pair, dtype=bool)
        self.emit = np.asarray(emit, dtype=bool)
        self.first = np.asarray(first, dtype=bool)
        self.last = np.asarray(last, dtype=bool)
        self.l, self.n = self.emit.shape
        self.pairs = np.argwhere(self.pair)            # (P, 2) in row-major order
        self.pair_id = np.full((self.l, self.l), -1, dtype=np.int64)
        self.pair_id[self.pairs[:, 0], self.pairs[:, 1]] = np.arange(len(self.pairs))
        # the pairs come grouped by their first label: its runs, for the M-step's sums
        self.pair_from, self.pair_from_start = np.unique(self.pairs[:, 0], return_index=True)

    @classmethod
    def from_counts(cls, counts, all_emissions=False):
        """The events seen in training; with `all_emissions`, every (label, observation)
        pair (the floor then reaches them all)."""
        emit = np.ones_like(counts.emit, dtype=bool) if all_emissions else counts.emit > 0
        return cls(pair=counts.pair > 0, emit=emit, first=counts.first > 0,
                   last=counts.last > 0)

    @classmethod
    def from_model(cls, model):
        """The support a model was trained on, from its parameters' zero pattern."""
        return cls(pair=np.any(model.t != 0, axis=(2, 3)), emit=np.any(model.o > 0, axis=2),
                   first=model.pi.sum(axis=1) > 0, last=model.f.sum(axis=1) > 0)

    def check(self, counts, path=None):
        """Refuse data with events outside the support (another corpus than the model's)."""
        for name, what in (("pair", "label pairs"), ("emit", "label-observation pairs"),
                           ("first", "first labels"), ("last", "last labels")):
            bad = (getattr(counts, name) > 0) & ~getattr(self, name)
            if bad.any():
                raise InputError(f"{int(bad.sum())} {what} the model gives probability 0 "
                                 f"(e.g. {np.argwhere(bad)[0].tolist()}): data other than "
                                 "the model was initialised from", path)


class Bucket:
    """Sequences of similar length, padded: labels A, observations X, lengths L."""

    def __init__(self, labels, obs, support):
        self.B = len(labels)
        self.L = np.array([len(a) for a in labels])
        self.T = int(self.L.max())
        self.A = np.zeros((self.B, self.T), dtype=np.int64)
        self.X = np.zeros((self.B, self.T), dtype=np.int64)
        for i, (a, x) in enumerate(zip(labels, obs)):
            self.A[i, : len(a)] = a
            self.X[i, : len(x)] = x
        self.valid = np.arange(self.T)[None, :] < self.L[:, None]
        self.trans_valid = np.arange(self.T - 1)[None, :] < (self.L - 1)[:, None]
        pid = support.pair_id[self.A[:, :-1], self.A[:, 1:]]
        self.pair = np.where(self.trans_valid, pid, 0)
        self.last = self.A[np.arange(self.B), self.L - 1]
        # the same sequences concatenated, for the compiled forward-backward
        self.flat_A = self.A[self.valid]
        self.flat_X = self.X[self.valid]
        pf = np.zeros((self.B, self.T), dtype=np.int64)
        pf[:, :-1] = self.pair
        self.flat_pair = pf[self.valid]
        self.starts = np.concatenate([[0], np.cumsum(self.L)[:-1]]).astype(np.int64)
        self.flat_rows = self.flat_A * support.n + self.flat_X      # emission row a * n + x
        self._compact = (None, None)

    def emission_rows(self, row_of):
        """Each flat position's emission row: a * n + x, or row_of of it (compact rows).
        Kept for the last row_of, which `train` passes unchanged at every iteration."""
        if row_of is None:
            return self.flat_rows
        if self._compact[0] is not row_of:
            self._compact = (row_of, row_of[self.flat_rows])
        return self._compact[1]


def make_buckets(corpus, support, m):
    order = np.argsort([len(a) for a in corpus.labels], kind="stable")
    buckets, cur, cur_T = [], [], 0
    per_pos = 8 * (m * m + 4 * m)
    for i in order:
        T = len(corpus.labels[i])
        if cur and (len(cur) + 1) * max(cur_T, T) * per_pos > BUCKET_BYTES:
            buckets.append(Bucket([corpus.labels[j] for j in cur], [corpus.obs[j] for j in cur],
                                  support))
            cur, cur_T = [], 0
        cur.append(i)
        cur_T = max(cur_T, T)
    if cur:
        buckets.append(Bucket([corpus.labels[j] for j in cur], [corpus.obs[j] for j in cur],
                              support))
    return buckets


class Stats:
    """Expected counts: the sufficient statistics of EM (they add across shards)."""

    def __init__(self, l, n, P, m, num_rows=None):
        """num_rows: how many emission rows (default l * n, row a * n + x; `train` keeps
        only the pairs its corpus visits, see Emissions)."""
        self.pi = np.zeros((l, m))
        self.o = np.zeros((l * n if num_rows is None else num_rows, m))
        self.t = np.zeros((P, m, m))       # [pair, h2, h]
        self.f = np.zeros((l, m))
        self.loglik = 0.0
        self.positions = 0

    def add(self, other):
        for name in ("pi", "o", "t", "f"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine.shape != theirs.shape:
                raise ValueError(f"Stats.{name}: shapes {mine.shape} and {theirs.shape}")
            mine += theirs
        self.loglik += other.loglik
        self.positions += other.positions
        return self

    def to_data(self):
        return {"pi": self.pi, "o": self.o, "t": self.t, "f": self.f,
                "loglik": np.float64(self.loglik)}

    @classmethod
    def from_file(cls, sf, l, n, P, m):
        out = cls(l, n, P, m)
        for name in ("pi", "o", "t", "f"):
            arr = sf[name]
            if arr.shape != getattr(out, name).shape:
                raise InputError(f"expected counts {name} have shape {arr.shape}, the model "
                                 f"needs {getattr(out, name).shape}", sf.path)
            setattr(out, name, arr.astype(np.float64))
        out.loglik = float(sf["loglik"])
        out.positions = sf.positions
        return out


def e_step(model, tp, buckets, support, bar=None):
    """Expected counts and the log-likelihood of `model` (tp: (P, m, m) pair transitions).
    The forward-backward runs compiled (rhmmtk.models.rhmm.kernels_em.em_forward_backward), one sequence
    at a time, and adds every expected count in place."""
    l, m, n = model.shape
    return _e_step(model.pi, model.o.reshape(l * n, m), model.f, tp, buckets, support, None,
                   bar)


def _e_step(pi, o, f, tp, buckets, support, row_of, bar=None):
    """The E-step on emission rows o: (l * n, m) when row_of is None, else o[row_of[a * n
    + x]] is o(x | a) (Emissions' compact rows)."""
    from .kernels_em import em_forward_backward

    l, n, m = support.l, support.n, pi.shape[1]
    stats = Stats(l, n, len(support.pairs), m, num_rows=len(o))
    pi, o, f, tp = (np.ascontiguousarray(v) for v in (pi, o, f, tp))
    for bk in buckets:
        stats.loglik += em_forward_backward(bk.flat_A, bk.emission_rows(row_of), bk.starts,
                                            bk.L, bk.flat_pair, pi, o, tp, f, stats.pi,
                                            stats.o, stats.t, stats.f)
        stats.positions += len(bk.flat_A)
        if bar is not None:
            bar.update(bk.B)
    if not np.isfinite(stats.loglik):
        # the kernel divides without checks: a sequence of probability 0 gives inf/nan
        raise InputError("a sequence has probability 0 under the model (an event its "
                         "parameters exclude, e.g. a model trained with --floor 0 on other "
                         "data): its expected counts are undefined")
    return stats


class EmissionRows:
    """The emission rows an iterate keeps (flat ids a * n + x, increasing) and what
    normalising them needs. All of it depends only on the rows and the support, so
    `train` computes it once, not at every iteration."""

    def __init__(self, ids, allowed):
        l, n = allowed.shape
        self.ids, self.allowed = ids, allowed
        self.label = ids // n
        self.allowed_ids = allowed.reshape(-1)[ids].astype(np.float64)
        # per label, the allowed pairs without a row of their own (they hold the default)
        self.others = allowed.sum(axis=1) - np.bincount(self.label, weights=self.allowed_ids,
                                                        minlength=l)


class Emissions:
    """EM's emissions as the M-step makes them, without the l n m array: the rows (a, x)
    of `layout` (an EmissionRows) hold their own values (m of them); every other pair
    the support allows holds its label's `default` (floor / the label's total, per
    state), the rest 0. After an M-step, every pair without expected counts has its
    label's default, so keeping only the pairs the corpus visits is exact. At NETtalk's
    i-2..i+2 windows that is 25,521 rows instead of l n = 1,045,449."""

    def __init__(self, layout, values, default):
        self.layout, self.values, self.default = layout, values, default

    def dense(self):
        """o (l, n, m)."""
        allowed = self.layout.allowed
        l, n = allowed.shape
        o = np.where(allowed[:, :, None], self.default[:, None, :], 0.0)
        o.reshape(l * n, -1)[self.layout.ids] = self.values
        return o

    def log_sum(self):
        """sum of log o over the allowed pairs (-inf if one is 0)."""
        others = self.layout.others
        with np.errstate(divide="ignore"):
            return float(np.log(self.values).sum()
                         + (others[:, None] * np.log(np.where(others[:, None] > 0,
                                                              self.default, 1.0))).sum())


def normalise_emissions(counts, layout, floor):
    """The M-step of the emissions: o(x | a, h) = (counts + floor [allowed]) / the sum over
    x, for the rows of `layout` (EmissionRows), counts (len(rows), m); every other allowed
    pair gets floor / that sum (a total of 0 is taken as 1)."""
    from .kernels_em import normalise_emission_rows

    l = layout.allowed.shape[0]
    counts = np.ascontiguousarray(counts, dtype=np.float64)
    values = np.empty_like(counts)
    tot = np.empty((l, counts.shape[1]))
    normalise_emission_rows(counts, layout.label, layout.allowed_ids, layout.others,
                            float(floor), values, tot)
    return Emissions(layout, values, floor / tot)


class Iterate:
    """One EM iterate (pi, Emissions, the pair transitions tp, f); the RHMM (and its
    l x l x m x m transitions) is built when asked for (dev scoring, the model kept), not
    at every iteration."""

    def __init__(self, pi, em, tp, f, pairs):
        self.pi, self.em, self.tp, self.f, self.pairs = pi, em, tp, f, pairs
        self._rhmm = None

    def rhmm(self, backoff=None):
        """The RHMM, decoded with the emission `backoff` (eps, p(x)) if given."""
        if self._rhmm is None:
            l, m = self.pi.shape
            tfull = np.zeros((l, l, m, m))
            tfull[self.pairs[:, 0], self.pairs[:, 1]] = self.tp
            self._rhmm = RHMM(self.pi, self.em.dense(), tfull, self.f)
        self._rhmm.backoff = backoff
        return self._rhmm


def m_step_rows(stats, support, floor, rows):
    """Normalise expected counts (plus `floor` on every allowed event) into an Iterate;
    stats.o holds the emission rows of `rows` (an EmissionRows), or all l * n rows, of
    which those are kept."""
    pi = stats.pi + floor * support.first[:, None]
    counts = stats.o if len(stats.o) == len(rows.ids) else stats.o[rows.ids]
    em = normalise_emissions(counts, rows, float(floor))
    t = stats.t + floor
    f = stats.f + floor * support.last[:, None]
    out = f.copy()
    if len(support.pairs):
        out[support.pair_from] += np.add.reduceat(t.sum(axis=1), support.pair_from_start,
                                                  axis=0)
    out[out == 0] = 1.0
    tp = t / out[support.pairs[:, 0]][:, None, :]
    return Iterate(pi / pi.sum(), em, tp, f / out, support.pairs)


def m_step(stats, support, floor):
    """Normalise expected counts (plus `floor` on every allowed event) into parameters:
    (RHMM, tp)."""
    # rows without counts get their label's default
    rows = EmissionRows(np.flatnonzero(stats.o.any(axis=1)), support.emit)
    it = m_step_rows(stats, support, floor, rows)
    return it.rhmm(), it.tp


def _prior_terms(pi, tp, f, support):
    with np.errstate(divide="ignore"):
        return (np.log(pi[support.first]).sum() + np.log(tp).sum()
                + np.log(f[support.last]).sum())


def log_prior(model, tp, support, floor):
    """floor * sum of log parameters over allowed events (the MAP objective's prior)."""
    from .kernels_em import support_log_sum

    if floor == 0:
        return 0.0
    emissions = support_log_sum(np.ascontiguousarray(model.o), support.emit)
    return floor * float(_prior_terms(model.pi, tp, model.f, support) + emissions)


def iterate_log_prior(it, support, floor):
    """log_prior of an Iterate, from its compact emissions."""
    if floor == 0:
        return 0.0
    return floor * float(_prior_terms(it.pi, it.tp, it.f, support) + it.em.log_sum())


def counts_to_stats(counts, support):
    """The m = 1 expected counts are plain counts."""
    l, n = support.l, support.n
    st = Stats(l, n, len(support.pairs), 1)
    st.pi[:, 0] = counts.first
    st.f[:, 0] = counts.last
    st.o[:, 0] = counts.emit.reshape(-1)
    st.t[:, 0, 0] = counts.pair[support.pairs[:, 0], support.pairs[:, 1]]
    st.positions = counts.positions
    return st


def count_stats(corpus, support):
    """The m = 1 expected counts of a corpus."""
    return counts_to_stats(Counts.from_corpus(corpus), support)


def initial_stats(counts, support, m, rng, noise):
    """The counts split into m states, with multiplicative noise to break symmetry."""
    base = counts_to_stats(counts, support)
    st = Stats(support.l, support.n, len(support.pairs), m)
    jitter = (lambda shape: 1.0 + noise * rng.random(shape)) if m > 1 else (lambda s: 1.0)
    st.pi = base.pi * jitter((support.l, m)) / m
    st.o = base.o * jitter((support.l * support.n, m)) / m
    st.t = base.t * jitter((len(support.pairs), m, m)) / (m * m)
    st.f = base.f * jitter((support.l, m)) / m
    return st


def initial_model(counts, support, m, rng, noise, floor):
    """The count-based HMM split into m states, with multiplicative noise to break symmetry.
    `counts`: Counts (summed over shards) or a Corpus."""
    if not isinstance(counts, Counts):
        counts = Counts.from_corpus(counts)
    return m_step(initial_stats(counts, support, m, rng, noise), support, floor)


def visited_rows(counts):
    """The emission rows a * n + x of the (label, observation) pairs the corpus visits (the
    only ones the E-step gives expected counts), and row_of: l * n -> their index or -1.
    The iterates keep those rows and a default per label (Emissions), not l n m numbers."""
    rows = np.flatnonzero(counts.emit.reshape(-1) > 0)
    row_of = np.full(counts.emit.size, -1, dtype=np.int64)
    row_of[rows] = np.arange(len(rows))
    return rows, row_of


def em_iteration(cur, buckets, support, rows, row_of, floor, bar=None):
    """One EM iteration from the Iterate `cur`: (its expected counts, the next Iterate).
    rows: the kept emission rows (an EmissionRows, which `train` makes once), row_of:
    visited_rows' map from a * n + x to them."""
    stats = _e_step(cur.pi, cur.em.values, cur.f, cur.tp, buckets, support, row_of, bar)
    return stats, m_step_rows(stats, support, floor, rows)


def emission_backoff(counts, emission_floor):
    """(eps, p(x)) of `--emission-floor` eps from a corpus's Counts, or None for eps = 0."""
    from .operators import observation_prior

    if emission_floor <= 0:
        return None
    return float(emission_floor), observation_prior(counts.emit.sum(axis=0), counts.positions)


def train(corpus, m, iters, seed=EmOptions.seed, floor=EmOptions.floor, noise=EmOptions.noise,
          score=None, on_iteration=None, all_emissions=True, dev_every=1, patience=0,
          emission_floor=EmOptions.emission_floor):
    """EM from a seeded random start. Returns (best RHMM, history, best iteration).

    With `score` (a function of a model giving dev accuracy,
    rhmmtk.models.rhmm.dev_scoring.rhmm_dev_scorer), iterations are scored and the best-scoring one is
    kept (the paper's protocol); without it, the last iteration is kept. `dev_every` k
    scores every k-th iteration and the last (decoding dev costs several E-steps at large
    m: the decoder runs over l m joint states, the E-step over m); the others have dev_acc
    None. `patience` P > 0 stops early once P scored iterations in a row have not beaten
    the best (selection.stalled): on small corpora EM's dev accuracy peaks early and
    the remaining iterations, each with its dev decoding, cannot change the choice.
    `emission_floor` eps > 0: the models scored and returned are decoded with the
    emission backoff (eps, p(x)) (Operators); the iterations re-estimate EM's own o.
    """
    from ...selection import require_dev, stalled

    require_dev(patience, score is not None)
    rng = np.random.default_rng(seed)
    counts = Counts.from_corpus(corpus)
    # with all_emissions the floor reaches every (label, observation) pair: an observation
    # never seen with the labels its neighbours allow must not make a whole sequence impossible
    support = Support.from_counts(counts, all_emissions)
    buckets = make_buckets(corpus, support, m)
    ids, row_of = visited_rows(counts)
    rows = EmissionRows(ids, support.emit)
    cur = m_step_rows(initial_stats(counts, support, m, rng, noise), support, floor, rows)
    backoff = emission_backoff(counts, emission_floor)
    history = []
    best, best_acc, best_it = cur, -1.0, 0
    if score is not None:
        best_acc = score(cur.rhmm(backoff))
    history.append({"iter": 0, "loglik": None, "objective": None, "dev_acc": best_acc
                    if score else None})
    for it in range(1, iters + 1):
        with progress(total=len(corpus), desc=f"EM iteration {it}") as bar:
            stats, nxt = em_iteration(cur, buckets, support, rows, row_of, floor, bar)
        # stats were computed under the previous model: record its log-likelihood
        history[-1]["loglik"] = stats.loglik
        history[-1]["objective"] = stats.loglik + iterate_log_prior(cur, support, floor)
        cur = nxt
        scored = score is not None and (it % max(dev_every, 1) == 0 or it == iters)
        acc = score(cur.rhmm(backoff)) if scored else None
        history.append({"iter": it, "loglik": None, "objective": None, "dev_acc": acc})
        log.info("iteration %d: train log-likelihood %.4f (%.5f per position) before "
                 "re-estimation%s", it, stats.loglik, stats.loglik / stats.positions,
                 "" if acc is None else f"; dev accuracy after {100 * acc:.2f}%")
        if on_iteration is not None:
            on_iteration(it, cur.rhmm(backoff), history)
        if acc is not None and acc > best_acc:
            best, best_acc, best_it = cur, acc, it
        if score is None:
            best, best_it = cur, it
        elif stalled(history, patience):
            log.info("stopping after iteration %d: dev accuracy has not improved in %d "
                     "evaluations (best %.2f%% at iteration %d)", it, patience,
                     100 * best_acc, best_it)
            break
    return best.rhmm(backoff), history, best_it


def unigram_operators(corpus, info=None, floor=1e-3):
    """UNIGRAM as an m = 1 R-HMM whose transitions ignore the previous label:
    t(b | a) = (1 - s) p(b), f(* | a) = s, pi = p(a), o = p(x | a). Then
    mu(a, i) is proportional to p(a) p(x_i | a), so max-marginal decoding is
    argmax_a p(a | x_i), and one decoder serves every model."""
    l, n = len(corpus.label_table), len(corpus.obs_table)
    A = np.concatenate(corpus.labels)
    X = np.concatenate(corpus.obs)
    pa = np.bincount(A, minlength=l).astype(float)
    o = np.bincount(A * n + X, minlength=l * n).reshape(l, n).astype(float) + floor
    o /= o.sum(axis=1, keepdims=True)
    pa /= pa.sum()
    s = 0.5
    t = np.zeros((l, l, 1, 1))
    t[:, :, 0, 0] = (1 - s) * pa[None, :]
    model = RHMM(pa[:, None], o[:, :, None], t, np.full((l, 1), s))
    return model.operators(corpus.label_table, corpus.obs_table, info)
