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

Modules: `common` (the operators laid out once per decoder, what every schedule
reads), one per exact schedule (`compiled`, `blocked`, `gemm` and its precomputed
`products`), `decoder` (`Decoder`: the choice among them, batching; `decode`) and
`kernels` (their compiled loops).
"""
from .common import DEFAULT_BATCH_MB, DEFAULT_BEAM
from .decoder import LABEL_CHUNK, Decoder, decode

__all__ = ["DEFAULT_BATCH_MB", "DEFAULT_BEAM", "LABEL_CHUNK", "Decoder", "decode"]
