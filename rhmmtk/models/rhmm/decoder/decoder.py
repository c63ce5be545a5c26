"""`Decoder`: the batch, the choice among the exact schedules by cost, and batching
by length within a memory budget; `decode`, the labels of highest posterior."""
import numpy as np

from .blocked import BlockedSchedule
from .common import DEFAULT_BATCH_MB, DecoderBase
from .compiled import CompiledSchedule
from .gemm import GemmSchedule
from .products import ProductsSchedule


class Decoder(CompiledSchedule, BlockedSchedule, GemmSchedule, ProductsSchedule, DecoderBase):
    """Operators compiled for batched forward-backward."""

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

    # The schedule's thresholds (`_schedule`), each measured on NETtalk and festival-timit
    # models: bench/README.md (`bench_core.py --cases recipe`); the timings each was set
    # from are in the history of these lines (git log -S MIN_GEMM_ROWS_LONG).
    # operators up to this size (bytes of all labels' stacked C^{b|a}) stay in cache
    SMALL_STACK_BYTES = 2 * 2**20
    # a general-form batch goes to matrix products from this many rows per label product
    MIN_GEMM_ROWS = 16
    # the general form's precomputed products beat blocked from this many running rows
    MIN_CACHED_ROWS = 1.5
    # long sequences whose products do not fit: blocked below MIN_GEMM_ROWS_LONG rows
    LONG_SEQUENCE = 100
    MIN_GEMM_ROWS_LONG = 48
    # mean stacked-operator entries up to which the compiled loops win whatever the batch
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


def decode(op, seqs, batch_mb=DEFAULT_BATCH_MB, progress=None, beam=0.0, precision="float64"):
    """Labels of highest estimated posterior mu(a, i) / sum_b mu(b, i), with statistics.

    For a probabilistic model (EM, HMM) sum_b mu(b, i) = p(x) > 0 and this is the
    paper's argmax_a mu(a, i). Spectral estimates are signed: over a long sequence
    the estimate of p(x) = sum_b mu(b, i) (the same at every i) can come out
    negative, and then argmax_a mu(a, i) would pick the *least* likely label at
    every position. Dividing by the estimate of p(x) first is the consistent
    estimate of the posterior and picks the same label whenever p(x) > 0.

    precision: the dtype of the matrix-product schedule's products (`Decoder`).

    Returns (labels, stats, mus): stats counts positions whose sequence had a
    non-positive estimated p(x) ("negative_sequences"), positions whose best
    posterior was still not positive, and positions with no path at all.
    """
    mus, ll = Decoder(op, beam, batch_mb, precision).marginals(seqs, progress=progress)
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
