"""EM for the R-HMM, and the supervised baselines HMM (m = 1) and UNIGRAM.

Labels are observed in training, so the E-step runs forward-backward over the m
hidden states of each position only (m^2 work per position, not (l m)^2),
vectorised over a bucket of sequences of similar length, one time step at a time.
Expected counts are accumulated with sparse indicator products. The M-step
normalises them; `floor` adds a pseudo-count to every event the labels allow
(a label pair, a label-observation pair, a first or last label seen in
training), which is MAP estimation under a Dirichlet prior: the objective
loglik + floor * sum(log parameters) never decreases, and with floor = 0 the
log-likelihood itself never decreases.
"""
import numpy as np
import scipy.sparse as sp

from .progress import log, progress
from .rhmm import RHMM

BUCKET_BYTES = 256 * 2**20


class Support:
    """Which label-level events occur in training (pairs, emissions, first, last)."""

    def __init__(self, corpus):
        l, n = len(corpus.label_table), len(corpus.obs_table)
        self.l, self.n = l, n
        self.pair = np.zeros((l, l), dtype=bool)
        self.emit = np.zeros((l, n), dtype=bool)
        self.first = np.zeros(l, dtype=bool)
        self.last = np.zeros(l, dtype=bool)
        for a, x in zip(corpus.labels, corpus.obs):
            self.pair[a[:-1], a[1:]] = True
            self.emit[a, x] = True
            self.first[a[0]] = True
            self.last[a[-1]] = True
        self.pairs = np.argwhere(self.pair)            # (P, 2) in row-major order
        self.pair_id = np.full((l, l), -1, dtype=np.int64)
        self.pair_id[self.pairs[:, 0], self.pairs[:, 1]] = np.arange(len(self.pairs))


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
        # sparse scatter matrices for the expected counts (built once, reused every iteration)
        K = int(self.valid.sum())
        self.emit_scatter = sp.csr_matrix(
            (np.ones(K), ((self.A * support.n + self.X)[self.valid], np.arange(K))),
            shape=(support.l * support.n, K))
        Kt = int(self.trans_valid.sum())
        self.trans_scatter = sp.csr_matrix(
            (np.ones(Kt), (self.pair[self.trans_valid], np.arange(Kt))),
            shape=(len(support.pairs), Kt))


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

    def __init__(self, l, n, P, m):
        self.pi = np.zeros((l, m))
        self.o = np.zeros((l * n, m))
        self.t = np.zeros((P, m, m))       # [pair, h2, h]
        self.f = np.zeros((l, m))
        self.loglik = 0.0
        self.positions = 0


def e_step(model, tp, buckets, support, bar=None):
    """Expected counts and the log-likelihood of `model` (tp: (P, m, m) pair transitions)."""
    l, m, n = model.shape
    stats = Stats(l, n, len(support.pairs), m)
    for bk in buckets:
        B, T = bk.B, bk.T
        em = model.o[bk.A, bk.X] * bk.valid[:, :, None]          # (B, T, m)
        Tm = tp[bk.pair]                                          # (B, T-1, m, m)
        alpha = np.zeros((B, T, m))
        c = np.ones((B, T))
        a0 = model.pi[bk.A[:, 0]] * em[:, 0]
        c[:, 0] = a0.sum(1)
        alpha[:, 0] = a0 / c[:, :1]
        for t in range(1, T):
            act = bk.valid[:, t]
            v = np.einsum("bij,bj->bi", Tm[:, t - 1], alpha[:, t - 1]) * em[:, t]
            s = v.sum(1)
            c[:, t] = np.where(act, s, 1.0)
            alpha[:, t] = np.where(act[:, None], v / c[:, t, None], 0.0)
        fl = model.f[bk.last]                                     # (B, m)
        aL = alpha[np.arange(B), bk.L - 1]
        z_end = (aL * fl).sum(1)
        stats.loglik += float(np.log(c).sum() + np.log(z_end).sum())
        beta = np.zeros((B, T, m))
        for t in range(T - 1, -1, -1):
            ends = bk.L - 1 == t
            if t < T - 1:
                v = np.einsum("bi,bij->bj", beta[:, t + 1] * em[:, t + 1], Tm[:, t]) / c[:, t + 1, None]
                beta[:, t] = np.where(bk.trans_valid[:, t, None], v, 0.0)
            beta[ends, t] = fl[ends] / z_end[ends, None]
        gamma = alpha * beta                                      # (B, T, m), rows sum to 1
        stats.pi += np.asarray(sp.csr_matrix((np.ones(B), (bk.A[:, 0], np.arange(B))),
                                             shape=(l, B)) @ gamma[:, 0])
        stats.o += bk.emit_scatter @ gamma[bk.valid]
        if T > 1:
            xi = (beta[:, 1:, :, None] * em[:, 1:, :, None] * Tm * alpha[:, :-1, None, :]
                  / c[:, 1:, None, None])                         # (B, T-1, m2, m)
            stats.t += (bk.trans_scatter @ xi[bk.trans_valid].reshape(-1, m * m)).reshape(-1, m, m)
        stats.f += np.asarray(sp.csr_matrix((np.ones(B), (bk.last, np.arange(B))),
                                            shape=(l, B)) @ gamma[np.arange(B), bk.L - 1])
        stats.positions += int(bk.valid.sum())
        if bar is not None:
            bar.update(B)
    return stats


def m_step(stats, support, floor):
    """Normalise expected counts (plus `floor` on every allowed event) into parameters."""
    l, n = support.l, support.n
    m = stats.pi.shape[1]
    pi = stats.pi + floor * support.first[:, None]
    o = stats.o.reshape(l, n, m) + floor * support.emit[:, :, None]
    t = stats.t + floor
    f = stats.f + floor * support.last[:, None]
    out = np.zeros((l, m))
    np.add.at(out, support.pairs[:, 0], t.sum(axis=1))
    out += f
    out[out == 0] = 1.0
    tp = t / out[support.pairs[:, 0]][:, None, :]
    tfull = np.zeros((l, l, m, m))
    tfull[support.pairs[:, 0], support.pairs[:, 1]] = tp
    osum = o.sum(axis=1, keepdims=True)
    osum[osum == 0] = 1.0
    model = RHMM(pi / pi.sum(), o / osum, tfull, f / out)
    return model, tp


def log_prior(model, tp, support, floor):
    """floor * sum of log parameters over allowed events (the MAP objective's prior)."""
    if floor == 0:
        return 0.0
    with np.errstate(divide="ignore"):
        terms = [np.log(model.pi[support.first]).sum(), np.log(tp).sum(),
                 np.log(model.f[support.last]).sum(),
                 np.log(model.o[support.emit]).sum()]
    return floor * float(sum(terms))


def count_stats(corpus, support):
    """The m = 1 expected counts are plain counts."""
    l, n = support.l, support.n
    st = Stats(l, n, len(support.pairs), 1)
    for a, x in zip(corpus.labels, corpus.obs):
        st.pi[a[0], 0] += 1
        st.f[a[-1], 0] += 1
    A = np.concatenate(corpus.labels)
    X = np.concatenate(corpus.obs)
    st.o[:, 0] = np.bincount(A * n + X, minlength=l * n)
    prev = np.concatenate([a[:-1] for a in corpus.labels])
    nxt = np.concatenate([a[1:] for a in corpus.labels])
    st.t[:, 0, 0] = np.bincount(support.pair_id[prev, nxt], minlength=len(support.pairs))
    return st


def initial_model(corpus, support, m, rng, noise, floor):
    """The count-based HMM split into m states, with multiplicative noise to break symmetry."""
    base = count_stats(corpus, support)
    st = Stats(support.l, support.n, len(support.pairs), m)
    jitter = (lambda shape: 1.0 + noise * rng.random(shape)) if m > 1 else (lambda s: 1.0)
    st.pi = base.pi * jitter((support.l, m)) / m
    st.o = base.o * jitter((support.l * support.n, m)) / m
    st.t = base.t * jitter((len(support.pairs), m, m)) / (m * m)
    st.f = base.f * jitter((support.l, m)) / m
    return m_step(st, support, floor)


def train(corpus, m, iters, seed=0, floor=1e-3, noise=0.5, dev=None, score=None,
          on_iteration=None):
    """EM from a seeded random start. Returns (best RHMM, history).

    With `dev` (keys, obs seqs, label seqs) and `score` (a function of a model giving
    dev accuracy), every iteration is scored and the best-scoring one is kept (the
    paper's protocol); without it, the last iteration is kept.
    """
    rng = np.random.default_rng(seed)
    support = Support(corpus)
    buckets = make_buckets(corpus, support, m)
    model, tp = initial_model(corpus, support, m, rng, noise, floor)
    history = []
    best, best_acc, best_it = model, -1.0, 0
    if score is not None:
        best_acc = score(model)
    history.append({"iter": 0, "loglik": None, "objective": None, "dev_acc": best_acc
                    if score else None})
    for it in range(1, iters + 1):
        with progress(total=len(corpus), desc=f"EM iteration {it}") as bar:
            stats = e_step(model, tp, buckets, support, bar)
        objective = stats.loglik + log_prior(model, tp, support, floor)
        # stats were computed under the previous model: record its log-likelihood
        history[-1]["loglik"] = stats.loglik
        history[-1]["objective"] = objective
        model, tp = m_step(stats, support, floor)
        acc = score(model) if score is not None else None
        history.append({"iter": it, "loglik": None, "objective": None, "dev_acc": acc})
        log.info("iteration %d: train log-likelihood %.4f (%.5f per position) before "
                 "re-estimation%s", it, stats.loglik, stats.loglik / stats.positions,
                 "" if acc is None else f"; dev accuracy after {100 * acc:.2f}%")
        if on_iteration is not None:
            on_iteration(it, model, history)
        if score is not None and acc > best_acc:
            best, best_acc, best_it = model, acc, it
        if score is None:
            best, best_it = model, it
    return best, history, best_it


def unigram_operators(corpus, info=None):
    """UNIGRAM as an m = 1 R-HMM whose transitions ignore the previous label:
    t(b | a) = (1 - s) p(b), f(* | a) = s, pi = p(a), o = p(x | a). Then
    mu(a, i) is proportional to p(a) p(x_i | a), so max-marginal decoding is
    argmax_a p(a | x_i), and one decoder serves every model."""
    l, n = len(corpus.label_table), len(corpus.obs_table)
    A = np.concatenate(corpus.labels)
    X = np.concatenate(corpus.obs)
    pa = np.bincount(A, minlength=l).astype(float)
    o = np.bincount(A * n + X, minlength=l * n).reshape(l, n).astype(float)
    o /= pa[:, None]
    pa /= pa.sum()
    s = 0.5
    t = np.zeros((l, l, 1, 1))
    t[:, :, 0, 0] = (1 - s) * pa[None, :]
    model = RHMM(pa[:, None], o[:, :, None], t, np.full((l, 1), s))
    return model.operators(corpus.label_table, corpus.obs_table, info)
