"""What every schedule of the R-HMM decoder reads: the operators laid out once per
decoder (all labels' states side by side, each label's stacked outgoing operators,
their flat copies for the compiled loops, the emission floor's M), the emissions of a
batch's observations, and the C^{b|a}(c^a_x) products the blocked and precomputed
schedules share.
"""
import functools

import numpy as np

from . import kernels

# Labels whose forward mass times emission mass is below this share of the best
# label's at a position are not extended (the CLI default; the library default is exact).
DEFAULT_BEAM = 1e-8
# Memory for one batch of sequences (MB; mostly alpha: positions x sequences x joint
# states); measured in bench/README.md (`bench_core.py --cases recipe`, batch sizes).
DEFAULT_BATCH_MB = 2048


class _FloorOps:
    """An EmissionFloor laid out for the decoder: scale, seen and g as given, M[a] and
    (built on first use) all labels' M side by side."""

    def __init__(self, scale, seen, g, M):
        self.scale, self.seen, self.g, self.M = scale, seen, g, M
        self.dense = None


def _successor_runs(pair, off):
    """Per label a, its successors' states (the columns of `Decoder.cols`) as maximal runs
    of consecutive states: (first states, lengths) per label, None without successors.
    Consecutive successor labels own consecutive states, so a run of successor labels
    b0..b1 is one run of states off[b0] .. off[b1 + 1] - 1: found for all labels at once
    from where each row of pair steps up or down."""
    l = len(pair)
    if not l:
        return []
    step = np.diff(np.pad(pair, ((0, 0), (1, 1))), axis=1)
    a, first = np.nonzero(step == 1)       # row-major: by label, then by successor
    _, end = np.nonzero(step == -1)        # one past each run's last successor
    starts = off[first].astype(np.int64)
    lens = (off[end] - off[first]).astype(np.int64)
    cut = np.cumsum(np.bincount(a, minlength=l))[:-1]
    return [(s, n) if s.size else None
            for s, n in zip(np.split(starts, cut), np.split(lens, cut))]


class DecoderBase:
    """The layout of the operators (built once per decoder) and the helpers every
    schedule shares; `Decoder` adds the schedules and the choice among them."""

    # Share of the memory budget (batch_mb, --batch-mb) for the general form's precomputed
    # C^{b|a}(c^a_x) (`_batch_products`): 512 MB at the default 2048 MB
    CACHE_SHARE = 0.25

    def __init__(self, op, beam=0.0, batch_mb=DEFAULT_BATCH_MB, precision="float64"):
        """beam: at each position, labels whose forward mass (sum of |alpha_a|) is below
        beam times the largest label's are not extended (0: exact, only labels with
        zero mass are skipped). Marginals of pruned labels are 0. A negative beam (which
        would extend labels without forward mass, and which the blocked schedule's
        superset of labels does not cover) is refused. batch_mb: the memory budget of one
        batch (`marginals`), of which CACHE_SHARE goes to precomputed products.
        precision: the dtype of the matrix-product schedule's per-label and dense products
        (`_products_dtype`); alpha, beta, their scales and the marginals stay float64."""
        if not (np.isfinite(beam) and beam >= 0):
            raise ValueError(f"the decoder's beam must be a finite number >= 0, got {beam}")
        self.op = op
        self.beam = beam
        self.batch_mb = batch_mb
        self.dtype = np.dtype(precision)
        self.cache_bytes = int(batch_mb * 2**20 * self.CACHE_SHARE)
        self.form = op.form
        self.m = op.m
        l = op.num_labels
        # all labels' states side by side: label a owns columns off[a] .. off[a] + m_a - 1
        self.off = np.concatenate([[0], np.cumsum(self.m)])
        self.S = int(self.off[-1])
        self.init = np.concatenate(op.init)
        self.emit = op.decoding_emit
        # pair[a, b]: is (a, b) a label pair of the model (1) or not (0)
        self.pair = np.zeros((l, l), dtype=np.int64)
        if op.trans:
            self.pair[tuple(np.array(list(op.trans)).T)] = 1
        # label a's successors, their states side by side (N_a columns of alpha), and
        # those columns as runs of consecutive states (for the compiled scatter); built
        # with a few whole-matrix steps, not one per label and successor (2.5 ms of a
        # 20 ms decode of 300 NETtalk words with EM(4))
        self.succ = [np.flatnonzero(row) for row in self.pair]
        state_of = self.pair[:, np.repeat(np.arange(l), self.m)]
        self.cols = [np.flatnonzero(r) if r.any() else None for r in state_of]
        self.runs = _successor_runs(self.pair, self.off)
        self._flat = None
        self._wstack = [None] * l          # per label, the stack with the c index first
        self._transposed = np.zeros(l, dtype=np.int64)   # rows `_cc` took without it
        self._fixed = None
        self._dense = None
        self._floor = self._floor_ops(op.floor) if self.form == "general" else None

    @functools.cached_property
    def stack(self):
        """Each label's outgoing operators stacked, (K_a, N_a) (None: no successors): the
        C^{b|a} (m_b, m_a, m_a) as rows (m_b, K_a), successors one under the other, give
        (N_a, K_a) in C order; the stack is its transpose, a view (the products take it as
        it is; a C-order copy cost 0.2 s per decoder at m = 32 on NETtalk). Built on first
        use: the precomputed products (`_batch_products`) never read it (its copy of all
        operators cost 0.07 s per decoder there)."""
        return [None if not succ.size else np.concatenate(
            [self.op.trans[(a, b)].reshape(self.m[b], -1) for b in succ]).T
            for a, succ in enumerate(self.succ)]

    @functools.cached_property
    def gemm_stack(self):
        """`stack` in the products' dtype (the same arrays at float64). float32 halves
        the matrix-product schedule's time at m = 32 (bench/README.md, "EM at TIMIT's
        size"); alpha and beta are rescaled at every position, so single precision loses
        only the last digits of each step's sums."""
        if self.dtype == np.float64:
            return self.stack
        return [None if st is None else st.astype(self.dtype) for st in self.stack]

    def _stack_sizes(self):
        """Entries of each label's stack, K_a N_a (0: no successors)."""
        K = self.m * self.m if self.form == "general" else self.m
        return np.array([0 if c is None else int(K[a]) * len(c)
                         for a, c in enumerate(self.cols)], dtype=np.int64)

    def _floor_ops(self, floor):
        """For an EmissionFloor: its scale, seen and g, and M[a] (m_a, N_a) = sum_k g_a[k]
        stack_a[j m_a + k, :], so that a row alpha_a (x) scale[x] g_a of z times stack_a is
        scale[x] alpha_a M_a (m_a instead of m_a^2 multiply-adds per successor state)."""
        if floor is None:
            return None
        M = []
        for a, succ in enumerate(self.succ):
            M.append(None if not succ.size else np.concatenate(
                [np.einsum("njk,k->jn", self.op.trans[(a, b)], floor.g[a]) for b in succ],
                axis=1))
        return _FloorOps(floor.scale, floor.seen, floor.g, M)

    @staticmethod
    def _abs_sums(emit):
        """|c^a_x|_1 of every row of each label's emissions: (l, rows). A product, not
        .sum(axis=1): numpy sums a few columns per row slowly."""
        return np.stack([np.abs(e) @ np.ones(e.shape[1]) for e in emit])

    def _stop(self, a, v):
        s = self.op.stop[a]
        return v @ s.T if self.form == "general" else v * s

    def _flat_ops(self):
        """The layout the compiled loops read (built once): state offsets, stop operators,
        K_a, and each label's N_a successor states as runs of consecutive ones (run k of
        label a, rptr[a] <= k < rptr[a + 1]: rl[k] states from rs[k]). The stacked
        operators themselves are `_flat_stacks`: the blocked schedule computes C(c) per
        position and never reads them (at m = 32 on NETtalk they are 600 MB to lay out)."""
        if self._flat is None:
            l, m = self.op.num_labels, self.m
            general = self.form == "general"
            K = np.array([(m[a] * m[a] if general else m[a]) for a in range(l)], dtype=np.int64)
            stops = [np.asarray(s, dtype=np.float64).ravel() for s in self.op.stop]
            stptr = np.concatenate([[0], np.cumsum([len(s) for s in stops])])[:-1].astype(np.int64)
            N = np.array([0 if c is None else len(c) for c in self.cols], dtype=np.int64)
            none = np.zeros(0, np.int64)
            runs = [(none, none) if r is None else r for r in self.runs] or [(none, none)]
            rptr = np.concatenate([[0], np.cumsum([len(r[0]) for r in runs])]).astype(np.int64)
            self._flat = dict(
                off=self.off.astype(np.int64),
                stop=np.concatenate(stops) if stops else np.zeros(0), stptr=stptr, K=K,
                general=general, N=N, rptr=rptr,
                rs=np.concatenate([r[0] for r in runs]).astype(np.int64),
                rl=np.concatenate([r[1] for r in runs]).astype(np.int64))
        return self._flat

    def _flat_stacks(self):
        """`_flat_ops` plus every label's stacked operator, flat (stk; label a's from
        sptr[a]), as the compiled schedule reads them (built once)."""
        f = self._flat_ops()
        if "stk" not in f:
            stk = [np.zeros(0) if st is None else st.ravel() for st in self.stack]
            sptr = np.concatenate([[0], np.cumsum([len(s) for s in stk])])[:-1].astype(np.int64)
            f.update(stk=np.concatenate(stk) if stk else np.zeros(0), sptr=sptr)
        return f

    def _observed(self, X, side_by_side=True):
        """The compiled loops' emissions for the observations in X only: (X renumbered
        0..u-1, enorm (l, u), E (u, S) with every label's c^a_x side by side, or None).
        Built per batch: all n observations (n x S, 33 MB for NETtalk's letter windows at
        m = 4; their norms alone, `enorm`, 10 ms per decode of 300 words with EM(4))
        would cost more than decoding a few hundred words."""
        u, Xc = np.unique(X, return_inverse=True)
        rows = [np.take(e, u, axis=0) for e in self.emit]
        E = None
        if side_by_side:
            E = np.concatenate(rows, axis=1) if rows else np.empty((len(u), 0))
        return (Xc.astype(np.int64).reshape(-1), self._abs_sums(rows), E)

    def _cc_sizes(self):
        """Entries of one C^{b|a}(c^a_x), m_a * sum_b m_b, per label (0: no successors)."""
        return np.array([0 if c is None else int(self.m[a]) * len(c)
                         for a, c in enumerate(self.cols)], dtype=np.int64)

    def _cc(self, a, v, out):
        """out (P, m_a * sum_b m_b) = the P matrices C^{b|a}(v_p) of the rows v (P, m_a),
        each (m_a, sum_b m_b) flat. Two ways to the same numbers: each successor's
        C^{b|a} as it is (rows (n, j, k): n successor state, j alpha index, k c^a_x index)
        times v^T, which leaves the result in (n, j, p) order to be transposed into out;
        or a copy of all of them with k first (`_wstack`), made once per label, after
        which one product lands in out as it is. The copy costs m_a^2 sum_b m_b once, the
        transposes P m_a sum_b m_b each time: a label takes the copy once its transposes
        would have cost more (the copies of all labels took 0.24 of 0.5 s decoding 284
        NETtalk letter windows as one sequence at m = 32, where each label has a few
        distinct rows)."""
        ma = int(self.m[a])
        succ = self.succ[a]
        if self._wstack[a] is None and self._transposed[a] + len(v) > ma:
            w = np.empty((ma, ma, len(self.cols[a])), dtype=out.dtype)
            at = 0
            for b in succ:
                kernels.c_index_first(np.ascontiguousarray(self.op.trans[(a, b)]), w, at)
                at += int(self.m[b])
            self._wstack[a] = w.reshape(ma, -1)
        w = self._wstack[a]
        if w is not None:
            # in out's dtype (float32: sgemm, twice dgemm's rate) unless the copy was made
            # for another out (the blocked schedule's are float64)
            np.matmul(v.astype(w.dtype, copy=False), w, out=out)
            return
        self._transposed[a] += len(v)
        out3 = out.reshape(len(v), ma, -1)
        at = 0
        for b in succ:
            mb = int(self.m[b])
            rows = self.op.trans[(a, b)].reshape(mb * ma, ma)
            out3[:, :, at: at + mb] = (rows @ v.T).reshape(mb, ma, len(v)).transpose(2, 1, 0)
            at += mb

    def _floor_products(self):
        """C^{b|a}(g_a) of every label, flat, and where each starts, as the blocked
        schedule and the precomputed products (`_batch_products`) hold them
        (built once per decoder: per sequence it cost 0.3 of 4 s on 32 TIMIT-layout
        utterances at m = 32)."""
        if self._fixed is None:
            l = self.op.num_labels
            mptr = np.zeros(l, dtype=np.int64)
            parts, at = [], 0
            if self._floor is not None:
                for a, M in enumerate(self._floor.M):
                    if M is not None:                       # M_a = C^{b|a}(g_a)
                        mptr[a] = at
                        parts.append(M.ravel())
                        at += len(parts[-1])
            self._fixed = (mptr, np.concatenate(parts) if parts else np.zeros(0))
        return self._fixed

    def _wanted(self, u, enorm):
        """Over the distinct observations u (enorm (l, len(u)) their |c^a_x|_1): own[a, j],
        label a's C(c^a_{u_j}) is to be computed (it can emit u_j, has successors, and its
        emission there is not the floor alone), and fl[a, j], its emission is the floor
        alone (C(g_a) serves; None without a floor)."""
        own = (enorm > 0) & (self._cc_sizes() > 0)[:, None]
        if self._floor is None:
            return own, None
        seen = self._floor.seen[:, u]
        return own & seen, own & ~seen

    def _floor_rows(self, a, xs):
        """Which of the observations xs give label a the floor alone (None: none do)."""
        if self._floor is None or self._floor.M[a] is None:
            return None
        fl = ~self._floor.seen[a, xs]
        return fl if fl.any() else None

    def _z(self, al, v):
        """alpha_a (x) c^a_x (general) or alpha_a * c^a_x (diagonal), one row per sequence."""
        if self.form == "general":
            return (al[:, :, None] * v[:, None, :]).reshape(len(al), -1)
        return al * v

    def _unz(self, y, v, ma):
        """beta_a from y = beta_{t+1} times a's stacked operators (rows of K_a): contract
        the c^a_x index with v (general form) or multiply by v (diagonal)."""
        if self.form == "general":
            return np.einsum("kjl,kl->kj", y.reshape(-1, ma, ma), v)
        return y * v
