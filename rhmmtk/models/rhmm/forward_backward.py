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

In the general form the batch's C^{b|a}(c^a_x) (m_a, sum_b m_b) are usually computed
first, once per distinct (label, observation), and both passes then take m_a instead of
m_a^2 multiply-adds per successor state (`Decoder._batch_products`).

alpha and beta are rescaled per position by their sum of absolute values; the
scales are kept (as logs) for the likelihood and do not change any argmax.
"""
import functools

import numpy as np


class _FloorOps:
    """An EmissionFloor laid out for the decoder: scale, seen and g as given, M[a] and
    (built on first use) all labels' M side by side."""

    def __init__(self, scale, seen, g, M):
        self.scale, self.seen, self.g, self.M = scale, seen, g, M
        self.dense = None


# Labels whose forward mass times emission mass is below this share of the best
# label's at a position are not extended (the CLI default; the library default is exact).
DEFAULT_BEAM = 1e-8
# Memory for one batch of sequences (MB; mostly alpha, positions x sequences x joint
# states). Larger batches give the per-label products more rows, and a general-form
# label's stacked operator (m_a^2 x sum_b m_b: 10 MB at m = 32 on TIMIT) is read once per
# position whatever the rows, so its cost per row falls with them. On festival-timit's
# 48,668 dev frames (one core, idle, 2026-11-24): SPECTRAL(32, with the floor's rank-one
# path) 38.2 s at 1024 MB, 32.1 s at 2048 (the whole set in one batch, 1.7 GB peak);
# EM(32) about 10 s at either.
DEFAULT_BATCH_MB = 2048


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


class Decoder:
    """Operators compiled for batched forward-backward."""

    # Share of the memory budget (batch_mb, --batch-mb) for the general form's precomputed
    # C^{b|a}(c^a_x) (`_batch_products`): 512 MB at the default 2048 MB
    CACHE_SHARE = 0.25

    def __init__(self, op, beam=0.0, batch_mb=DEFAULT_BATCH_MB):
        """beam: at each position, labels whose forward mass (sum of |alpha_a|) is below
        beam times the largest label's are not extended (0: exact, only labels with
        zero mass are skipped). Marginals of pruned labels are 0. A negative beam (which
        would extend labels without forward mass, and which the blocked schedule's
        superset of labels does not cover) is refused. batch_mb: the memory budget of one
        batch (`marginals`), of which CACHE_SHARE goes to precomputed products."""
        if not (np.isfinite(beam) and beam >= 0):
            raise ValueError(f"the decoder's beam must be a finite number >= 0, got {beam}")
        self.op = op
        self.beam = beam
        self.batch_mb = batch_mb
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

    def batch(self, seqs):
        """Marginals for a list of observation-id arrays.

        Returns (mu, loglik): mu a list of (N_s, l) arrays of marginals divided by
        a positive per-position constant (argmax-equivalent to the paper's mu), and
        loglik the log of sum_a mu(a, i) (log p(x) for a probabilistic model; nan
        when that sum is not positive, as can happen with spectral estimates).

        Exact schedules of the same arithmetic, chosen by cost (see `_schedule`):
        compiled per-sequence loops (small operators, or the diagonal form, few
        sequences); matrix products over the sequences of the batch at each position
        (many sequences; for the general form, from two on, with C^{b|a}(c^a_x)
        precomputed for groups of sequences, `_product_groups`, each group scheduled
        again on its own); and for one long general-form sequence the same contraction
        with c^a_x done first for a block of positions at once, then compiled
        per-position loops over the blocked results.
        """
        if not len(seqs):
            return [], np.zeros(0)
        if any(len(s) == 0 for s in seqs):
            return self._batch_with_empty(seqs)
        groups = self._product_groups(seqs) if self.form == "general" else None
        how = self._schedule(seqs, groups)
        if how != "gemm" or groups is None or len(groups) == 1:
            return self._run(how, seqs)
        # one buffer for every group's C(c) (fresh memory costs the kernel's page zeroing
        # each time, about 0.2 ms per MB: 35 groups on festival-timit's dev set); a group
        # of one sequence goes blocked, as a batch of one would
        scratch = {}
        out = []
        for g in groups:
            part = [seqs[i] for i in g]
            out.append(self._run(self._schedule(part, [np.arange(len(g))]), part, scratch))
        return [mu for o in out for mu in o[0]], np.concatenate([o[1] for o in out])

    def _run(self, how, seqs, scratch=None):
        """(mu, loglik) of seqs by the schedule `how` (scratch: see `_batch_products`)."""
        if how == "gemm":
            return self._batch_gemm(seqs, scratch)
        if how == "blocked":
            out = [self._blocked(np.asarray(s, dtype=np.int64)) for s in seqs]
            return [o[0] for o in out], np.array([o[1] for o in out])
        return self._batch_compiled(seqs)

    def _batch_with_empty(self, seqs):
        """An empty sequence has no marginals and a nan loglik; the others as usual (the
        compiled loops assume at least one position)."""
        full = [i for i, s in enumerate(seqs) if len(s)]
        mu = [np.zeros((0, self.op.num_labels)) for _ in seqs]
        ll = np.full(len(seqs), np.nan)
        if full:
            got, got_ll = self.batch([seqs[i] for i in full])
            for j, i in enumerate(full):
                mu[i], ll[i] = got[j], got_ll[j]
        return mu, ll

    # Operators up to this size (bytes of all labels' stacked C^{b|a}) stay in cache: the
    # compiled loops beat a matrix product's call overhead there, whatever the batch.
    SMALL_STACK_BYTES = 2 * 2**20
    # A general-form batch goes to per-position matrix products when each label's product
    # has at least this many rows (sequences) on average; fewer: blocked over positions.
    MIN_GEMM_ROWS = 16
    # The general form's products with C^{b|a}(c^a_x) precomputed for the batch
    # (`_batch_products`, the sequences in groups whose products fit cache_bytes) beat the
    # blocked schedule from two sequences on (1.5 running on average), long or short:
    # SPECTRAL(32), festival-timit dev frames, beam 1e-8, one core, blocked / products: 2
    # utterances 0.62 / 0.39 s, 4: 1.0 / 0.6, 16: 2.7 / 2.2, 50: 7.6 / 4.6-5.8; synthetic
    # frames, 32 utterances 2.7 / 2.2-2.3. One sequence stays blocked: what the products
    # cost more is a Python step per position each way, which the compiled loops do not
    # pay (blocked / products: 20,000 NETtalk letters as one 0.27 / 2.5 s; 284 windows at
    # m = 32, 0.20 / 0.26 s).
    MIN_CACHED_ROWS = 1.5
    # Long sequences whose products do not fit (one sequence's alone would pass
    # cache_bytes): the blocked schedule costs the same per position whatever the batch,
    # the plain products get cheaper per position with more rows. SPECTRAL(32) on
    # festival-timit dev frames, beam 1e-8, plain products / blocked: 31 rows (50
    # utterances) 15.3 / 11.2 s, 56 rows (100) 22.8 / 21.8 s, 109 rows (199) 32 / ~44 s
    # (with the precomputed products: 16 s); synthetic frames, 24 rows (32 utterances): 9.6
    # / 4.7 s.
    LONG_SEQUENCE = 100
    MIN_GEMM_ROWS_LONG = 48
    BLOCK_BYTES = 128 * 2**20      # memory for one block of precomputed C^{b|a}(c^a_x)

    # Labels whose stacked operator has at most this many entries (K_a x sum_b m_b, on
    # average over labels) are decoded by the compiled loops whatever the batch: a matrix
    # product that small costs less than numpy's call overhead. (Measured again with the
    # dense product below, 1,034 NETtalk dev words, gemm vs compiled: EM(4) 356 entries
    # 0.16 / 0.18 s, EM(8) 1,400: 0.21 / 0.60 s, SPECTRAL(4) 1,400: 0.25 / 0.54 s.)
    TINY_STACK = 512

    def _schedule(self, seqs, groups=None):
        """Which exact schedule is fastest for this batch (measured on NETtalk models:
        bench/README.md). Many sequences: matrix products over them, unless the operators
        are tiny; a few: compiled loops, blocked for the general form when its operators
        are large or its sequences long (blocked computes C^{b|a}(c^a_x) once per distinct
        observation and then m_a instead of m_a^2 multiply-adds per successor state: 10
        sequences of 128 NETtalk letters, SPECTRAL(24) compiled / blocked 59 / 31 ms,
        SPECTRAL(8) 25 / 28; 20,000 letters as one: 0.95 / 0.26 s, 0.41 / 0.22 s; of 8
        letters, 3.5 / 13 ms: blocked costs about 1 ms per sequence). groups: the
        general form's sequences grouped so that their C^{b|a}(c^a_x) fit cache_bytes
        (`_product_groups`; None: they do not, or there is nothing to precompute), with
        which the products win from 1.5 running sequences on."""
        sizes = [s for s in self._stack_sizes() if s]
        if not sizes:
            return "compiled"
        lens = np.array([len(s) for s in seqs])
        # mean number of sequences still running per position (rows of each product)
        rows = lens.sum() / max(int(lens.max()), 1)
        if np.mean(sizes) <= self.TINY_STACK:
            # the diagonal form's one product per position with all labels side by side
            # (`_diagonal_rows`: no per-label step) beats the compiled loops from about
            # 16 rows on, whatever m (NETtalk dev words, EM(4): 300 words compiled / gemm
            # 22.5 / 15.9 ms, 32 words 2.4 / 2.3, 16 words 1.4 / 1.6)
            if (self.form == "diagonal" and rows >= self.MIN_GEMM_ROWS
                    and self._dense_ops()[0] is not None):
                return "gemm"
            return "compiled"
        stack_bytes = 8 * sum(sizes)
        big = self.form == "general" and stack_bytes > self.SMALL_STACK_BYTES
        if rows >= self.MIN_GEMM_ROWS:
            if (big and groups is None and lens.mean() >= self.LONG_SEQUENCE
                    and rows < self.MIN_GEMM_ROWS_LONG):
                return "blocked"
            return "gemm"
        if self.form == "diagonal" or (stack_bytes <= self.SMALL_STACK_BYTES
                                       and lens.mean() < self.LONG_SEQUENCE):
            return "compiled"
        if big and groups is not None and rows >= self.MIN_CACHED_ROWS:
            return "gemm"
        return "blocked"

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

    def _batch_compiled(self, seqs):
        from .decoder import kernels

        f = self._flat_stacks()
        lens = np.array([len(s) for s in seqs], dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(lens)])[:-1].astype(np.int64)
        X, enorm, E = self._observed(
            np.concatenate([np.asarray(s, dtype=np.int64) for s in seqs]))
        mu = np.zeros((int(lens.sum()), self.op.num_labels))
        ll = np.zeros(len(seqs))
        mode = kernels.GENERAL if f["general"] else kernels.DIAGONAL
        kernels.decode_sequences(X, starts, lens, self.init, f["off"], enorm, E,
                                 float(self.beam), mode, f["general"], f["stop"], f["stptr"],
                                 f["stk"], f["sptr"], f["K"], f["N"], f["rs"], f["rl"], f["rptr"],
                                 mu, ll)
        return np.split(mu, starts[1:]), ll

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
        from .decoder import kernels

        ma = int(self.m[a])
        succ = self.succ[a]
        if self._wstack[a] is None and self._transposed[a] + len(v) > ma:
            w = np.empty((ma, ma, len(self.cols[a])))
            at = 0
            for b in succ:
                kernels.c_index_first(np.ascontiguousarray(self.op.trans[(a, b)]), w, at)
                at += int(self.m[b])
            self._wstack[a] = w.reshape(ma, -1)
        if self._wstack[a] is not None:
            np.matmul(v, self._wstack[a], out=out)
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

    def _blocked(self, x):
        """One long general-form sequence: for a block of positions, each label's
        C^{b|a}(c^a_x) for all the block's positions where it can emit, by one matrix
        product; then the compiled forward (backward) loops over the block."""
        from .decoder import kernels

        f = self._flat_ops()
        l, T, S = self.op.num_labels, len(x), self.S
        xc, enorm, E = self._observed(np.asarray(x, dtype=np.int64))   # for the kernels
        can_emit = enorm > 0                                            # (l, u)
        size = self._cc_sizes()
        blocks, cap = self._position_blocks(x, size, enorm)
        alpha = np.zeros((T, S))
        alpha[0] = self.init
        keep = np.zeros((T, l), dtype=bool)
        mu = np.zeros((T, l))
        mode = kernels.PER_POSITION
        unused = np.zeros(l, dtype=np.int64)        # the stacks' starts: PER_POSITION reads wptr

        # a floor-only row's C(c) is scale[x] C(g_a): one C(g_a) per label at the start of
        # buf, shared by all positions (the kernels apply the scale); the rest of buf holds
        # each block's other rows
        mptr, fixed = self._floor_products()
        start = len(fixed)
        buf = np.empty(start + cap)
        buf[:start] = fixed

        def transfer(t0, t1, want):
            """C^{b|a}(c^a_x) for positions t0..t1-1 (not the last) where want[t - t0, a],
            written into buf (floor-only rows: C(g_a), already there); returns their starts
            wptr[t - t0, a] and scales wscale[t - t0, a]."""
            t1 = min(t1, T - 1)
            wptr = np.zeros((max(t1 - t0, 1), l), dtype=np.int64)
            wscale = np.ones((max(t1 - t0, 1), l))
            at = start
            for a in range(l):
                if size[a] == 0 or t1 <= t0:
                    continue
                ts = np.flatnonzero(want[: t1 - t0, a])
                if not ts.size:
                    continue
                xs = x[t0 + ts]
                fl = self._floor_rows(a, xs)
                if fl is not None:
                    wptr[ts[fl], a] = mptr[a]
                    wscale[ts[fl], a] = self._floor.scale[xs[fl]]
                    ts, xs = ts[~fl], xs[~fl]
                    if not ts.size:
                        continue
                # once per distinct observation: positions that repeat one share its
                # C(c) (single letters: 26 observations for 20,000 positions)
                u, inv = np.unique(xs, return_inverse=True)
                out = buf[at: at + u.size * size[a]].reshape(u.size, size[a])
                self._cc(a, self.emit[a][u], out)
                wptr[ts, a] = at + inv.reshape(-1) * size[a]
                at += u.size * size[a]
            return wptr, wscale

        succ, sptr = self._successors()
        for t0, t1 in blocks:
            # C(c) only where the label can be extended: it can emit x_t and is reachable
            # from the labels with forward mass at t0 through such labels (a superset of
            # what the forward pass keeps, at any beam)
            want = np.zeros((t1 - t0, l), dtype=bool)
            reach = np.add.reduceat(np.abs(alpha[t0]), self.off[:-1]) > 0
            kernels.extendable(xc, t0, reach, can_emit, succ, sptr, want)
            wptr, wscale = transfer(t0, t1, want)
            kernels.forward_block(xc, t0, t1, T, alpha, keep, f["off"], enorm, E,
                                  float(self.beam), mode, buf, unused, wptr, wscale, f["K"],
                                  f["N"], f["rs"], f["rl"], f["rptr"])
        beta = np.zeros(S)
        logscale = 0.0
        for t0, t1 in reversed(blocks):
            if (t0, t1) != blocks[-1]:
                wptr, wscale = transfer(t0, t1, keep[t0:t1])
            # else: buf still holds the forward pass's last block, computed for a superset
            # of the labels kept (most sequences are one block: half the products)
            logscale += kernels.backward_block(
                xc, t0, t1, T, alpha, keep, beta, mu, f["off"], E, mode, f["general"],
                f["stop"], f["stptr"], buf, unused, wptr, wscale, f["K"], f["N"], f["rs"],
                f["rl"], f["rptr"])
        total = mu[0].sum()
        loglik = np.log(total) + logscale if total > 0 else np.nan
        return mu, loglik

    def _successors(self):
        """The label pairs as lists of successors: label a's are succ[sptr[a]: sptr[a + 1]]."""
        a, b = np.nonzero(self.pair)
        sptr = np.searchsorted(a, np.arange(self.op.num_labels + 1)).astype(np.int64)
        return b.astype(np.int64), sptr

    def _position_blocks(self, x, size, enorm=None):
        """Blocks of positions [t0, t1) whose precomputed C(c) fit in BLOCK_BYTES (at least
        one position each), and the buffer entries the largest needs. C(c) is computed once
        per distinct (label, observation) of a block, for the pairs `_wanted` names; a
        block takes positions while the distinct ones it adds fit (when all of the
        sequence's fit, one block: no recomputation in the backward pass; single letters:
        26 observations). enorm: |c^a_x|_1 of x's distinct observations, if at hand."""
        from .decoder import kernels

        u, xc = np.unique(np.asarray(x, dtype=np.int64), return_inverse=True)
        if enorm is None:
            enorm = self._abs_sums([np.take(e, u, axis=0) for e in self.emit])
        own, _ = self._wanted(u, enorm)                                   # (l, u)
        cap = max(self.BLOCK_BYTES // 8, int((size @ own).max(initial=1)))
        ends = np.zeros(len(x) + 1, dtype=np.int64)
        nb, used = kernels.distinct_blocks(xc.reshape(-1).astype(np.int64),
                                           np.arange(len(x) + 1, dtype=np.int64), own,
                                           size.astype(np.int64), cap, ends)
        starts = np.concatenate([[0], ends[: nb - 1]])
        return list(zip(starts.tolist(), ends[:nb].tolist())), max(int(used), 1)

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
        from .decoder import kernels

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
                kernels.scatter_add(nxt, sel, *self.runs[a], z @ self.stack[a])
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
                g = np.empty((sel.size, self.cols[a].size))
                kernels.gather(beta, sel, *self.runs[a], g)
                new[sel, off[a]: off[a] + ma] = self._unz(g @ self.stack[a].T,
                                                          self.emit[a][xt[sel]], ma)
            kernels.rescale_rows(new, logscale)
            kernels.label_sums(new, alpha[t], off, mu[:, t])
            beta = new
        total = mu[:, 0].sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            loglik = np.where(total > 0, np.log(np.where(total > 0, total, 1)) + logscale, np.nan)
        return [mu[i, : L[i]] for i in range(B)], loglik

    def _batch_products(self, X, L, Xc, enorm, scratch=None):
        """The general form's C^{b|a}(c^a_x) (m_a x N_a) once for each distinct (label,
        observation) of the batch that a continuing position may extend (c^a_x != 0, not
        the floor alone), by one product per label. Both passes then cost m_a instead of
        m_a^2 multiply-adds per successor state and row, and read m_a N_a numbers per row
        instead of the label's m_a^2 N_a stacked operator per position (300 NETtalk words
        at m = 32: about 9 rows per label and position shared each 6.6 MB read).

        Returns (ptr, fptr, fscale, buf) as `kernels.cached_forward` reads them: label a's
        matrix for the batch's distinct observation u (Xc's numbering) at buf[ptr[a, u]]
        (-1: none); where the emission is the floor alone, ptr[a, u] = fptr[a], the start
        of C(g_a), and fscale[u] the observation's scale. None when they would pass
        cache_bytes, or when there is nothing to precompute. scratch: a dict whose "buf"
        is reused when large enough (and replaced when not), so that the groups of one
        batch share their memory."""
        l = self.op.num_labels
        u = np.unique(X)
        cont = np.arange(X.shape[1])[None, :] < (L - 1)[:, None]
        at_cont = np.zeros(len(u), dtype=bool)
        at_cont[Xc[cont]] = True
        size = self._cc_sizes()
        own, fl = self._wanted(u, enorm)
        own &= at_cont[None, :]
        mptr, fixed = self._floor_products()
        total = len(fixed) + int(size @ own.sum(axis=1))
        if not total or 8 * total > self.cache_bytes:
            return None
        if scratch is None:
            scratch = {}
        if len(scratch.get("buf", ())) < total:
            scratch["buf"] = np.empty(total)
        buf = scratch["buf"][:total]
        buf[:len(fixed)] = fixed
        ptr = np.full((l, len(u)), -1, dtype=np.int64)
        fptr = np.full(l, -1, dtype=np.int64)
        fscale = np.ones(len(u))
        if fl is not None:
            fptr[size > 0] = mptr[size > 0]
            a_, u_ = np.nonzero(fl & at_cont[None, :])
            ptr[a_, u_] = fptr[a_]
            fscale = self._floor.scale[u]
        at = len(fixed)
        for a in np.flatnonzero(own.any(axis=1)):
            us = np.flatnonzero(own[a])
            n = us.size * int(size[a])
            self._cc(a, self.emit[a][u[us]], buf[at: at + n].reshape(us.size, -1))
            ptr[a, us] = at + np.arange(us.size) * size[a]
            at += n
        return ptr, fptr, fscale, buf

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

    def _product_groups(self, seqs):
        """The general form's matrix-product batch as groups of consecutive sequences whose
        C(c) (`_batch_products`) fit cache_bytes each: one group when all fit, None when
        one sequence's alone would not (then no group takes the precomputed products) or
        when there is nothing to precompute."""
        from .decoder import kernels

        cont = [np.asarray(s[:-1], dtype=np.int64) for s in seqs]
        bounds = np.concatenate([[0], np.cumsum([len(c) for c in cont])]).astype(np.int64)
        u, xc = np.unique(np.concatenate(cont), return_inverse=True)
        own, _ = self._wanted(u, self._abs_sums([np.take(e, u, axis=0) for e in self.emit]))
        fixed = len(self._floor_products()[1])
        cap = self.cache_bytes // 8 - fixed
        ends = np.zeros(len(seqs) + 1, dtype=np.int64)
        nb, most = kernels.distinct_blocks(xc.reshape(-1).astype(np.int64), bounds, own,
                                           self._cc_sizes(), cap, ends)
        if most > cap or most + fixed == 0:
            return None
        return np.split(np.arange(len(seqs)), ends[: nb - 1])

    # The gemm schedule does each position one of two ways (`_dense_is_cheaper`): one
    # product with ALL labels' operators side by side (W: zeros where no label pair is),
    # rows x sum_a K_a x S multiply-adds whatever the beam kept; or, per extended label,
    # a product with its own stacked operator (K_a x N_a per row) whose N_a results per
    # row are then added into its successors' states, plus a Python round trip per label.
    # The two costs below are in multiply-adds, fitted to the times of both ways on the
    # recipes' models (bench/README.md, "Decoder: dense or per label").
    DENSE_MAX_BYTES = 64 * 2**20
    SCATTER_COST = 16              # one result moved into a successor's column
    LABEL_COST = 40000             # one label's round trip (flatnonzero, gather, call)

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
                W = np.zeros((int(koff[-1]), self.S))
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

    def _floor_rows(self, a, xs):
        """Which of the observations xs give label a the floor alone (None: none do)."""
        if self._floor is None or self._floor.M[a] is None:
            return None
        fl = ~self._floor.seen[a, xs]
        return fl if fl.any() else None

    # Memory for the floor's M of all labels side by side (S x S); larger: no floor path.
    FLOOR_MAX_BYTES = 256 * 2**20

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

    def _dense_forward(self, W, koff, run, cur, nxt, xt, keep, diag=None, t=None):
        """alpha[t + 1] of the running sequences `run` by one product with W."""
        if diag is not None:
            nxt[run] = (cur[run] * diag.c(t, run, keep)) @ W
            return
        Z = np.zeros((len(run), W.shape[0]))
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
        Y = beta[run] @ W.T
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

    def marginals(self, seqs, batch_mb=None, progress=None):
        """Marginals for any number of sequences, batched by length within a memory budget
        (MB; the decoder's batch_mb unless given)."""
        batch_mb = self.batch_mb if batch_mb is None else batch_mb
        order = np.argsort([-len(s) for s in seqs], kind="stable")
        out, ll = [None] * len(seqs), np.zeros(len(seqs))
        per_pos = 8 * 2 * self.S + 8 * self.op.num_labels
        i = 0
        while i < len(order):
            T = len(seqs[order[i]])
            B = max(1, int(batch_mb * 2**20 // (per_pos * max(T, 1))))   # T = 0: empty ones
            idx = order[i: i + B]
            mus, lls = self.batch([seqs[j] for j in idx])
            for j, mu_, l_ in zip(idx, mus, lls):
                out[j], ll[j] = mu_, l_
            if progress is not None:
                progress.update(len(idx))
            i += B
        return out, ll


def decode(op, seqs, batch_mb=DEFAULT_BATCH_MB, progress=None, beam=0.0):
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
    mus, ll = Decoder(op, beam, batch_mb).marginals(seqs, progress=progress)
    stats = {"positions": 0, "negative_sequences": 0, "nonpositive_best": 0, "no_path": 0,
             "loglik": float(np.nansum(ll))}
    labels = []
    # many sequences at once (per sequence, a few numpy calls cost more than decoding a
    # short word with a small model), in chunks of about LABEL_CHUNK marginals so the
    # temporaries stay small next to the marginals themselves
    ends = np.cumsum([mu.size for mu in mus])
    i = 0
    while i < len(mus):
        j = max(i + 1, int(np.searchsorted(ends, ends[i] + LABEL_CHUNK, side="right")))
        mu = np.concatenate(mus[i:j])
        z = mu.sum(axis=1, keepdims=True)
        post = mu * np.where(z < 0, -1.0, 1.0)
        best = post.max(axis=1, initial=-np.inf)
        labels += np.split(post.argmax(axis=1) if len(post) else np.zeros(0, np.int64),
                           np.cumsum([len(m_) for m_ in mus[i:j]])[:-1])
        stats["positions"] += int(best.size)
        stats["negative_sequences"] += int((z <= 0).sum())
        stats["nonpositive_best"] += int((best <= 0).sum())
        stats["no_path"] += int(np.all(mu == 0, axis=1).sum())
        i = j
    return labels, stats, mus


# marginals per chunk of decode's label pass (8 MB of temporaries per copy)
LABEL_CHUNK = 2**20
