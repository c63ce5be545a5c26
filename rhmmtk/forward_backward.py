"""Max-marginal decoding: the tensor forward-backward of figure 2 (corrected).

  alpha_a^1 = c^1_a;            alpha_b^{i+1} = sum_a C^{b|a}(c^a_{x_i}) alpha_a^i
  beta_a^N  = C^{*|a}(c^a_{x_N}); beta_a^i   = sum_b beta_b^{i+1} C^{b|a}(c^a_{x_i})
  mu(a, i)  = beta_a^i alpha_a^i

Sequences are decoded in batches, one time step at a time, so that every label's
contraction is a matrix-matrix product over all sequences of the batch that are
still running and whose observation that label can emit (c^a_x != 0). Each
label's outgoing operators are stacked into one matrix:

  general form   z = alpha_a (x) c^a_x  (m_a^2)   times  [C^{b|a} reshaped]_b  (m_a^2, sum_b m_b)
  diagonal form  z = alpha_a * c^a_x    (m_a)     times  [T^{b|a}]_b           (m_a,   sum_b m_b)

alpha and beta are rescaled per position by their sum of absolute values; the
scales are kept (as logs) for the likelihood and do not change any argmax.
"""
import numpy as np

# Labels whose forward mass times emission mass is below this share of the best
# label's at a position are not extended (the CLI default; the library default is exact).
DEFAULT_BEAM = 1e-8


class Decoder:
    """Operators compiled for batched forward-backward."""

    def __init__(self, op, beam=0.0):
        """beam: at each position, labels whose forward mass (sum of |alpha_a|) is below
        beam times the largest label's are not extended (0: exact, only labels with
        zero mass are skipped). Marginals of pruned labels are 0."""
        self.op = op
        self.beam = beam
        self.form = op.form
        self.m = op.m
        l = op.num_labels
        # all labels' states side by side: label a owns columns off[a] .. off[a] + m_a - 1
        self.off = np.concatenate([[0], np.cumsum(self.m)])
        self.S = int(self.off[-1])
        self.init = np.concatenate(op.init)
        self.emit = op.emit
        # support[a, x]: can label a emit x at all? Skips dead work and dead labels.
        self.enorm = np.stack([np.abs(e).sum(axis=1) for e in op.emit])   # (l, n)
        self.support = self.enorm > 0
        self.cols, self.stack = [], []
        for a in range(l):
            succ = sorted(b for (aa, b) in op.trans if aa == a)
            if not succ:
                self.cols.append(None)
                self.stack.append(None)
                continue
            self.cols.append(np.concatenate([self.off[b] + np.arange(self.m[b]) for b in succ]))
            if self.form == "general":
                mats = [op.trans[(a, b)].reshape(self.m[b], -1).T for b in succ]
            else:
                mats = [op.trans[(a, b)].T for b in succ]
            self.stack.append(np.ascontiguousarray(np.hstack(mats)))

    def _emission(self, a, x):
        return self.emit[a][x]

    def _stop(self, a, v):
        s = self.op.stop[a]
        return v @ s.T if self.form == "general" else v * s

    def batch(self, seqs):
        """Marginals for a list of observation-id arrays.

        Returns (mu, loglik): mu a list of (N_s, l) arrays of marginals divided by
        a positive per-position constant (argmax-equivalent to the paper's mu), and
        loglik the log of sum_a mu(a, i) (log p(x) for a probabilistic model; nan
        when that sum is not positive, as can happen with spectral estimates).
        """
        l, m, off, S = self.op.num_labels, self.m, self.off, self.S
        B = len(seqs)
        L = np.array([len(s) for s in seqs])
        T = int(L.max())
        X = np.zeros((B, T), dtype=np.int64)
        for i, s in enumerate(seqs):
            X[i, : len(s)] = s
        alpha = np.zeros((T, B, S))
        alpha[0] = self.init
        keep = np.zeros((T, B, l), dtype=bool)     # labels extended at each position
        for t in range(T - 1):
            go = L > t + 1
            cur, nxt, xt = alpha[t], alpha[t + 1], X[:, t]
            keep[t] = self._keep(cur, xt)
            for a in range(l):
                if self.stack[a] is None:
                    continue
                sel = np.flatnonzero(go & keep[t, :, a])
                if not sel.size:
                    continue
                ma = m[a]
                al = cur[sel, off[a]: off[a] + ma]
                v = self.emit[a][xt[sel]]
                if self.form == "general":
                    z = (al[:, :, None] * v[:, None, :]).reshape(len(sel), ma * ma)
                else:
                    z = al * v
                nxt[np.ix_(sel, self.cols[a])] += z @ self.stack[a]
            _rescale(nxt)
        keep[T - 1] = self._keep(alpha[T - 1], X[:, T - 1])
        mu = np.zeros((B, T, l))
        logscale = np.zeros(B)
        beta = np.zeros((B, S))
        for t in range(T - 1, -1, -1):
            new = np.zeros((B, S))
            xt = X[:, t]
            ending, cont = L == t + 1, L > t + 1
            for a in range(l):
                ma = m[a]
                sup = keep[t, :, a]
                sel = np.flatnonzero(ending & sup)
                if sel.size:
                    new[sel, off[a]: off[a] + ma] = self._stop(a, self.emit[a][xt[sel]])
                if self.stack[a] is None:
                    continue
                sel = np.flatnonzero(cont & sup)
                if not sel.size:
                    continue
                v = self.emit[a][xt[sel]]
                y = beta[np.ix_(sel, self.cols[a])] @ self.stack[a].T
                if self.form == "general":
                    new[sel, off[a]: off[a] + ma] = np.einsum("kjl,kl->kj", y.reshape(-1, ma, ma), v)
                else:
                    new[sel, off[a]: off[a] + ma] = y * v
            logscale += _rescale(new)
            mu[:, t] = np.add.reduceat(new * alpha[t], off[:-1], axis=1)
            beta = new
        total = mu[:, 0].sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            loglik = np.where(total > 0, np.log(np.where(total > 0, total, 1)) + logscale, np.nan)
        return [mu[i, : L[i]] for i in range(B)], loglik

    def _keep(self, alpha, x):
        """Labels to extend at one position: mass |alpha_a|_1 |c^a_x|_1 > beam * the best,
        and the best label always (so no beam in [0, 1], 1 included, prunes every label)."""
        mass = np.add.reduceat(np.abs(alpha), self.off[:-1], axis=1) * self.enorm[:, x].T
        best = mass.max(axis=1, keepdims=True)
        return (mass > self.beam * best) | ((mass == best) & (best > 0))

    def marginals(self, seqs, batch_mb=256, progress=None):
        """Marginals for any number of sequences, batched by length within a memory budget."""
        order = np.argsort([-len(s) for s in seqs], kind="stable")
        out, ll = [None] * len(seqs), np.zeros(len(seqs))
        per_pos = 8 * 2 * self.S + 8 * self.op.num_labels
        i = 0
        while i < len(order):
            T = len(seqs[order[i]])
            B = max(1, int(batch_mb * 2**20 // (per_pos * T)))
            idx = order[i: i + B]
            mus, lls = self.batch([seqs[j] for j in idx])
            for j, mu_, l_ in zip(idx, mus, lls):
                out[j], ll[j] = mu_, l_
            if progress is not None:
                progress.update(len(idx))
            i += B
        return out, ll


def _rescale(v):
    """Divide each row by its sum of absolute values; return the logs (0 for dead rows)."""
    s = np.abs(v).sum(axis=1)
    dead = s == 0
    s[dead] = 1.0
    v /= s[:, None]
    return np.log(s)


def decode(op, seqs, batch_mb=256, progress=None, beam=0.0):
    """Labels of highest estimated posterior mu(a, i) / sum_b mu(b, i), with statistics.

    For a probabilistic model (EM, HMM) sum_b mu(b, i) = p(x) > 0 and this is the
    paper's argmax_a mu(a, i). Spectral estimates are signed: over a long sequence
    the estimate of p(x) = sum_b mu(b, i) (the same at every i) can come out
    negative, and then argmax_a mu(a, i) would pick the *least* likely label at
    every position. Dividing by the estimate of p(x) first is the consistent
    estimate of the posterior and picks the same label whenever p(x) > 0.

    Returns (labels, stats, mus): stats counts positions whose sequence had a
    non-positive estimated p(x) ("negative_sequences"), positions whose best
    posterior was still not positive, and positions with no path at all.
    """
    mus, ll = Decoder(op, beam).marginals(seqs, batch_mb, progress)
    labels, best, neg, dead = [], [], 0, 0
    for mu in mus:
        z = mu.sum(axis=1, keepdims=True)
        post = mu * np.where(z < 0, -1.0, 1.0)
        labels.append(post.argmax(axis=1))
        best.append(post.max(axis=1))
        neg += int((z <= 0).sum())
        dead += int(np.all(mu == 0, axis=1).sum())
    best = np.concatenate(best)
    stats = {"positions": int(best.size), "negative_sequences": neg,
             "nonpositive_best": int((best <= 0).sum()), "no_path": dead,
             "loglik": float(np.nansum(ll))}
    return labels, stats, mus
