"""The matrix-product schedule: at each position, one product over all the batch's
sequences per label (or one with every label's operators side by side, `_dense_ops`),
or, for the general form, compiled steps over C^{b|a}(c^a_x) precomputed for the
batch (`products.py`)."""
import numpy as np

from . import kernels


class _DiagonalRows:
    """The diagonal form's emissions for one gemm batch: every label's c^a_x side by side
    (E, one row per distinct observation of the batch; Xc (B, T) the batch's observations
    renumbered to those rows) and every label's stop vector side by side, so that z, beta
    and the stop rows of all labels are one elementwise product per position (per label
    in numpy: 51 labels x positions x 2 round trips cost EM(8) 40% of its decode of 300
    NETtalk words)."""

    def __init__(self, Xc, E, stop, state_label):
        self.Xc, self.E, self.stop, self.state_label = Xc, E, stop, state_label

    def c(self, t, rows, keep_t):
        """c^a_x at position t of the sequences `rows`, zero for the labels not kept in
        keep_t (B, l): (rows, S)."""
        return self.E[self.Xc[rows, t]] * keep_t[rows][:, self.state_label]


class GemmSchedule:
    """`Decoder`'s matrix-product schedule (a mixin over `DecoderBase`)."""

    # Each position is done one of two ways (`_dense_is_cheaper`): one product with ALL
    # labels' operators side by side (W: zeros where no label pair is), rows x sum_a K_a x
    # S multiply-adds whatever the beam kept; or, per extended label, a product with its
    # own stacked operator (K_a x N_a per row) whose N_a results per row are then added
    # into its successors' states, plus a Python round trip per label. The two costs are
    # in multiply-adds, fitted in bench/README.md ("Decoder: dense or per label").
    DENSE_MAX_BYTES = 64 * 2**20
    SCATTER_COST = 16              # one result moved into a successor's column
    LABEL_COST = 40000             # one label's round trip (flatnonzero, gather, call)
    # Memory for the floor's M of all labels side by side (S x S); larger: no floor path.
    FLOOR_MAX_BYTES = 256 * 2**20

    def _batch_gemm(self, seqs, scratch=None):
        """Marginals for a list of observation-id arrays (see `batch`).

        Returns (mu, loglik): mu a list of (N_s, l) arrays of marginals divided by
        a positive per-position constant (argmax-equivalent to the paper's mu), and
        loglik the log of sum_a mu(a, i) (log p(x) for a probabilistic model; nan
        when that sum is not positive, as can happen with spectral estimates).

        The general form, when the batch's C^{b|a}(c^a_x) fit cache_bytes: those first
        (`_batch_products`), then at each position one compiled step over all (sequence,
        label) rows each way (`kernels.cached_forward`, `cached_backward`). Otherwise, at
        each position either one product with every label's operators side by side
        (`_dense_ops`) or one product per extended label and a scatter into its
        successors' states, whichever `_dense_is_cheaper` says costs less; the backward
        pass does at that position what the forward pass did. With an emission floor, the
        per-label products take only the rows whose c^a_x is not the floor alone; all the
        others go through one product with the floor's M (`_floor_matrix`). scratch: see
        `_batch_products`.
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
        unused = np.zeros(B)                       # the forward pass's log scales
        dense_at = np.zeros(T, dtype=bool)       # positions done by one product with W
        Xc, enorm, E = self._observed(X, side_by_side=self.form == "diagonal")
        Xc = Xc.reshape(X.shape)
        # the general form's C(c) for the whole batch, when they fit (floor rows included)
        cache = self._batch_products(X, L, Xc, enorm, scratch) \
            if self.form == "general" else None
        W, koff = self._dense_ops() if cache is None else (None, None)
        Mf = self._floor_matrix() if cache is None else None
        f = self._flat_ops()
        diag = None
        if self.form == "diagonal":
            diag = _DiagonalRows(Xc, E, np.concatenate(self.op.stop),
                                 np.repeat(np.arange(l), m))
        for t in range(T - 1):
            go = L > t + 1
            cur, nxt, xt = alpha[t], alpha[t + 1], X[:, t]
            kernels.keep_rows(cur, self.off, enorm, Xc[:, t], float(self.beam), keep[t])
            run = np.flatnonzero(go)
            dense_at[t] = (cache is None and W is not None
                           and self._dense_is_cheaper(keep[t, run], xt[run]))
            if dense_at[t]:
                self._dense_forward(W, koff, run, cur, nxt, xt, keep[t], diag, t)
                kernels.rescale_rows(nxt, unused)
                continue
            full = keep[t] & go[:, None]
            if Mf is not None:
                floor = full & ~self._floor.seen[:, xt].T
                full &= ~floor
                rows = np.flatnonzero(floor.any(axis=1))
                if rows.size:
                    nxt[rows] += self._floor_z(cur[rows], floor[rows], xt[rows]) @ Mf
            if cache is not None:
                kernels.cached_forward(cur, nxt, full, Xc[:, t], *cache, f["off"], f["N"],
                                       f["rs"], f["rl"], f["rptr"])
                kernels.rescale_rows(nxt, unused)
                continue
            for a in range(l):
                if self.stack[a] is None:
                    continue
                sel = np.flatnonzero(full[:, a])
                if not sel.size:
                    continue
                z = self._z(cur[sel, off[a]: off[a] + m[a]], self.emit[a][xt[sel]])
                kernels.scatter_add(nxt, sel, *self.runs[a],
                                    z.astype(self.dtype, copy=False) @ self.gemm_stack[a])
            kernels.rescale_rows(nxt, unused)
        kernels.keep_rows(alpha[T - 1], self.off, enorm, Xc[:, T - 1], float(self.beam),
                          keep[T - 1])
        mu = np.zeros((B, T, l))
        logscale = np.zeros(B)
        beta = np.zeros((B, S))
        for t in range(T - 1, -1, -1):
            new = np.zeros((B, S))
            xt = X[:, t]
            ending, cont = L == t + 1, L > t + 1
            full = keep[t] & cont[:, None]
            if dense_at[t]:
                self._dense_backward(W, koff, np.flatnonzero(cont), beta, new, xt, keep[t],
                                     diag, t)
            elif Mf is not None:
                floor = full & ~self._floor.seen[:, xt].T
                full &= ~floor
                rows = np.flatnonzero(floor.any(axis=1))
                if rows.size:
                    # the transpose of the forward step: beta_a = scale[x] (beta M^T)_a
                    new[rows] = self._floor_z(beta[rows] @ Mf.T, floor[rows], xt[rows])
            if cache is not None:
                kernels.cached_backward(beta, new, full, Xc[:, t], *cache, f["off"], f["N"],
                                        f["rs"], f["rl"], f["rptr"])
            if diag is not None:
                e = np.flatnonzero(ending)
                if e.size:
                    new[e] = diag.stop * diag.c(t, e, keep[t])
            # the diagonal form at a dense position: stop rows and beta all done above
            per_label = range(0 if diag is not None and dense_at[t] else l)
            for a in per_label:
                ma = m[a]
                if diag is None:
                    sel = np.flatnonzero(ending & keep[t, :, a])
                    if sel.size:
                        new[sel, off[a]: off[a] + ma] = self._stop(a, self.emit[a][xt[sel]])
                if cache is not None or dense_at[t] or self.stack[a] is None:
                    continue
                sel = np.flatnonzero(full[:, a])
                if not sel.size:
                    continue
                g = np.empty((sel.size, self.cols[a].size), dtype=self.dtype)
                kernels.gather(beta, sel, *self.runs[a], g)
                new[sel, off[a]: off[a] + ma] = self._unz(g @ self.gemm_stack[a].T,
                                                          self.emit[a][xt[sel]], ma)
            kernels.rescale_rows(new, logscale)
            kernels.label_sums(new, alpha[t], off, mu[:, t])
            beta = new
        total = mu[:, 0].sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            loglik = np.where(total > 0, np.log(np.where(total > 0, total, 1)) + logscale, np.nan)
        return [mu[i, : L[i]] for i in range(B)], loglik

    def _dense_ops(self):
        """(W, koff): W (sum_a K_a, S), rows koff[a]:koff[a+1] label a's stacked operator
        (K_a = m_a^2 general, m_a diagonal) in its successors' columns; (None, None) when
        W would be larger than DENSE_MAX_BYTES. Also the per-label costs it is weighed
        against."""
        if self._dense is None:
            K = [int(mm * mm) if self.form == "general" else int(mm) for mm in self.m]
            koff = np.concatenate([[0], np.cumsum(K)]).astype(np.int64)
            size = int(koff[-1]) * self.S
            if size == 0 or 8 * size > self.DENSE_MAX_BYTES:
                self._dense = (None, None)
            else:
                W = np.zeros((int(koff[-1]), self.S), dtype=self.dtype)
                for a, st in enumerate(self.stack):
                    if st is not None:
                        W[koff[a]: koff[a + 1], self.cols[a]] = st
                self._dense = (W, koff)
                N = np.array([0 if c is None else len(c) for c in self.cols])
                self._label_cost = (np.array(K) + self.SCATTER_COST) * N
                self._has_stack = N > 0
        return self._dense

    def _dense_is_cheaper(self, keep, xt):
        """At one position, keep (running sequences, l) and their observations xt: is one
        product with W cheaper than one product per extended label (cost model above)?"""
        if self._floor_matrix() is not None:
            # rows whose c^a_x is the floor alone: one product with M (S x S) per row
            floor = keep & ~self._floor.seen[:, xt].T
            keep = keep & ~floor
            fixed = np.count_nonzero(floor.any(axis=1)) * self.S * self.S
        else:
            fixed = 0
        n = keep.sum(axis=0)
        per_label = fixed + n @ self._label_cost + \
            self.LABEL_COST * np.count_nonzero(n * self._has_stack)
        return keep.shape[0] * self._dense[0].size <= per_label

    def _floor_matrix(self):
        """(S, S): rows of label a's states hold M_a in its successors' columns, so that
        one product gives every floor-only label's share of alpha_{t+1} (None without a
        floor, or when too large)."""
        if self._floor is None or 8 * self.S * self.S > self.FLOOR_MAX_BYTES:
            return None
        if self._floor.dense is None:
            Mf = np.zeros((self.S, self.S))
            for a, M in enumerate(self._floor.M):
                if M is not None:
                    Mf[self.off[a]: self.off[a + 1], self.cols[a]] = M
            self._floor.dense = Mf
            self._state_label = np.repeat(np.arange(self.op.num_labels), self.m)
        return self._floor.dense

    def _floor_z(self, v, floor, xs):
        """v (rows, S) times scale[x] in the states of the labels marked in floor (rows, l),
        0 in the others."""
        return v * floor[:, self._state_label] * self._floor.scale[xs, None]

    def _dense_forward(self, W, koff, run, cur, nxt, xt, keep, diag=None, t=None):
        """alpha[t + 1] of the running sequences `run` by one product with W."""
        if diag is not None:
            nxt[run] = (cur[run] * diag.c(t, run, keep)).astype(W.dtype, copy=False) @ W
            return
        Z = np.zeros((len(run), W.shape[0]), dtype=W.dtype)
        for a in range(self.op.num_labels):
            idx = np.flatnonzero(keep[run, a])
            if idx.size and self.stack[a] is not None:
                rows = run[idx]
                o, ma = self.off[a], self.m[a]
                Z[idx, koff[a]: koff[a + 1]] = self._z(cur[rows, o: o + ma],
                                                         self.emit[a][xt[rows]])
        nxt[run] = Z @ W

    def _dense_backward(self, W, koff, run, beta, new, xt, keep, diag=None, t=None):
        """beta_t of the continuing sequences `run` (not ending at t) by one product with W^T."""
        if not run.size:
            return
        Y = beta[run].astype(W.dtype, copy=False) @ W.T
        if diag is not None:
            new[run] = Y * diag.c(t, run, keep)
            return
        for a in range(self.op.num_labels):
            idx = np.flatnonzero(keep[run, a])
            if not idx.size or self.stack[a] is None:
                continue
            rows = run[idx]
            o, ma = self.off[a], self.m[a]
            v = self.emit[a][xt[rows]]
            new[rows, o: o + ma] = self._unz(Y[idx, koff[a]: koff[a + 1]], v, ma)
