"""The general form's C^{b|a}(c^a_x) precomputed once per distinct (label,
observation) of a matrix-product batch, and the groups of sequences whose products fit
the decoder's memory budget."""
import numpy as np

from . import kernels


class ProductsSchedule:
    """`Decoder`'s precomputed products (a mixin over `DecoderBase`)."""

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
        cache_bytes, or when there is nothing to precompute. buf is in the products' dtype
        (--precision float32: half the bytes each row reads, and the C(c) in single
        precision; alpha and beta stay float64). scratch: a dict whose "buf"
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
            scratch["buf"] = np.empty(total, dtype=self.dtype)
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

    def _product_groups(self, seqs):
        """The general form's matrix-product batch as groups of consecutive sequences whose
        C(c) (`_batch_products`) fit cache_bytes each: one group when all fit, None when
        one sequence's alone would not (then no group takes the precomputed products) or
        when there is nothing to precompute."""
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
