"""The blocked schedule: one long general-form sequence, with each label's
C^{b|a}(c^a_x) computed for a block of positions at once (one matrix product per
label and block), then the compiled forward and backward loops over the block."""
import numpy as np

from . import kernels


class BlockedSchedule:
    """`Decoder`'s blocked schedule (a mixin over `DecoderBase`)."""

    BLOCK_BYTES = 128 * 2**20      # memory for one block of precomputed C^{b|a}(c^a_x)

    def _blocked(self, x):
        """One long general-form sequence: for a block of positions, each label's
        C^{b|a}(c^a_x) for all the block's positions where it can emit, by one matrix
        product; then the compiled forward (backward) loops over the block."""
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
