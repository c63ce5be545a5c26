"""The compiled schedule: every sequence of the batch decoded by the compiled
per-sequence, per-position loops (small operators, or few sequences)."""
import numpy as np

from . import kernels


class CompiledSchedule:
    """`Decoder`'s per-sequence compiled loops (a mixin over `DecoderBase`)."""

    def _batch_compiled(self, seqs):
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
