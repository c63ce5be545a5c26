"""Is system A really better than system B? Paired tests over utterances.

Both systems label the same utterances and are scored against one reference,
so the tests are paired and the unit of resampling is the utterance (positions
within an utterance are not independent):

- paired bootstrap (Efron and Tibshirani 1993; Koehn 2004): draw the test set's
  utterances with replacement `resamples` times and recompute the difference
  in per-position accuracy, acc(A) - acc(B) = (correct_A - correct_B) / positions,
  on each draw. The 95% interval is the percentile interval of those
  differences. The p-value is two-sided, for the null "no difference", from the
  bootstrap distribution shifted to mean zero:
  p = (1 + #{|d* - d| >= |d|}) / (resamples + 1), so p = 1 when d = 0 and
  never less than 1 / (resamples + 1).
- sign test: count the utterances where A gets more positions right than B and
  those where B gets more than A (ties dropped); the two-sided exact binomial
  p-value (scipy.stats.binomtest, success probability 1/2) of that split.

The same two tests are run on the phone error rate, on each utterance's phone
strings (runs of equal frame labels, after the mapping): the bootstrap resamples
utterances and recomputes PER(A) - PER(B) = 100 (errors_A - errors_B) / reference
phones, errors = substitutions + deletions + insertions of the HResults alignment
(rhmmtk.scoring.edit_counts); the sign test counts the utterances where A makes fewer
errors than B and those where B makes fewer.

Accuracies, error rates and differences are percentages (points).
"""
from dataclasses import dataclass

import numpy as np

from . import scoring

# index draws per block of resamples: bounds memory for large test sets
_DRAWS_PER_BLOCK = 4_000_000


@dataclass(frozen=True)
class BootstrapResult:
    difference: float  # acc(A) - acc(B) on the test set, points
    ci_low: float
    ci_high: float
    p_value: float
    resamples: int
    seed: int
    confidence: float

    def as_dict(self):
        return {"difference": self.difference, "ci": [self.ci_low, self.ci_high],
                "confidence": self.confidence, "p_value": self.p_value,
                "resamples": self.resamples, "seed": self.seed}


def paired_bootstrap(correct_a, correct_b, lengths, resamples=10_000, seed=0, confidence=0.95):
    """Paired bootstrap over utterances of the difference in per-position accuracy.

    correct_a, correct_b: correctly labelled positions per utterance for the
    two systems; lengths: positions per utterance. Returns a BootstrapResult.
    """
    delta = np.asarray(correct_a, dtype=np.int64) - np.asarray(correct_b, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    n_utt = len(lengths)
    diff = 100.0 * delta.sum() / lengths.sum()
    rng = np.random.default_rng(seed)
    draws = np.empty(resamples)
    block = max(1, _DRAWS_PER_BLOCK // n_utt)
    for start in range(0, resamples, block):
        b = min(block, resamples - start)
        idx = rng.integers(0, n_utt, size=(b, n_utt), dtype=np.int32)
        draws[start:start + b] = 100.0 * delta[idx].sum(axis=1) / lengths[idx].sum(axis=1)
    tail = (1.0 - confidence) / 2
    lo, hi = np.quantile(draws, [tail, 1.0 - tail])
    p = (1 + np.count_nonzero(np.abs(draws - diff) >= abs(diff))) / (resamples + 1)
    return BootstrapResult(difference=float(diff), ci_low=float(lo), ci_high=float(hi),
                           p_value=float(p), resamples=int(resamples), seed=int(seed),
                           confidence=float(confidence))


@dataclass(frozen=True)
class SignTestResult:
    a_better: int
    b_better: int
    ties: int
    p_value: float

    def as_dict(self):
        return {"a_better": self.a_better, "b_better": self.b_better, "ties": self.ties,
                "p_value": self.p_value}


def sign_test(score_a, score_b):
    """Two-sided exact sign test on per-utterance scores (higher is better)."""
    from scipy.stats import binomtest

    score_a, score_b = np.asarray(score_a), np.asarray(score_b)
    a = int(np.count_nonzero(score_a > score_b))
    b = int(np.count_nonzero(score_b > score_a))
    p = 1.0 if a + b == 0 else float(binomtest(a, a + b, 0.5).pvalue)
    return SignTestResult(a_better=a, b_better=b, ties=len(score_a) - a - b, p_value=p)


@dataclass(frozen=True)
class Comparison:
    keys: list
    lengths: np.ndarray
    correct_a: np.ndarray
    correct_b: np.ndarray
    bootstrap: BootstrapResult
    sign: SignTestResult
    phones: np.ndarray       # reference phones per utterance
    errors_a: np.ndarray     # S + D + I per utterance
    errors_b: np.ndarray
    per_bootstrap: BootstrapResult
    per_sign: SignTestResult

    @property
    def per_a(self):
        return 100.0 * int(self.errors_a.sum()) / int(self.phones.sum())

    @property
    def per_b(self):
        return 100.0 * int(self.errors_b.sum()) / int(self.phones.sum())

    @property
    def positions(self):
        return int(self.lengths.sum())

    @property
    def accuracy_a(self):
        return 100.0 * int(self.correct_a.sum()) / self.positions

    @property
    def accuracy_b(self):
        return 100.0 * int(self.correct_b.sum()) / self.positions

    def as_dict(self):
        return {
            "sequences": len(self.keys),
            "positions": self.positions,
            "a": {"position_accuracy": self.accuracy_a, "positions_correct": int(self.correct_a.sum())},
            "b": {"position_accuracy": self.accuracy_b, "positions_correct": int(self.correct_b.sum())},
            "difference": self.bootstrap.difference,
            "bootstrap": self.bootstrap.as_dict(),
            "sign_test": self.sign.as_dict(),
            "per": {"phones": int(self.phones.sum()),
                    "a": {"per": self.per_a, "errors": int(self.errors_a.sum())},
                    "b": {"per": self.per_b, "errors": int(self.errors_b.sum())},
                    "difference": self.per_bootstrap.difference,
                    "bootstrap": self.per_bootstrap.as_dict(),
                    "sign_test": self.per_sign.as_dict()},
        }


def compare(ref, hyp_a, hyp_b, paths=(None, None, None), mapping=None, mapping_path=None,
            resamples=10_000, seed=0):
    """Score two hypotheses (dicts utt -> labels) against `ref` and test their difference."""
    ref_path, a_path, b_path = paths
    keys = scoring.paired_keys(ref, [hyp_a, hyp_b], ref_path, [a_path, b_path])
    scoring.check_lengths(ref, hyp_a, keys, a_path, ref_path)
    scoring.check_lengths(ref, hyp_b, keys, b_path, ref_path)
    _, (r, a, b), (offsets, _, _) = scoring.encode([ref, hyp_a, hyp_b], keys, mapping,
                                                   paths, mapping_path)
    correct_a = scoring.position_counts(r, a, offsets)
    correct_b = scoring.position_counts(r, b, offsets)
    lengths = np.diff(offsets)
    phones, errors_a, errors_b = phone_errors(r, a, b, offsets)
    return Comparison(keys=keys, lengths=lengths, correct_a=correct_a, correct_b=correct_b,
                      bootstrap=paired_bootstrap(correct_a, correct_b, lengths, resamples, seed),
                      sign=sign_test(correct_a, correct_b), phones=phones, errors_a=errors_a,
                      errors_b=errors_b,
                      per_bootstrap=paired_bootstrap(errors_a, errors_b, phones, resamples, seed),
                      # fewer errors is better: the sign test compares negated counts
                      per_sign=sign_test(-errors_a, -errors_b))


def phone_errors(ref_ids, a_ids, b_ids, offsets):
    """Per utterance: reference phones (runs of equal frame labels) and the S + D + I
    errors of the two hypotheses' phone strings against them."""
    bounds = list(zip(offsets[:-1], offsets[1:]))
    ref = [scoring.collapse(ref_ids[lo:hi]) for lo, hi in bounds]

    def errors(ids):
        counts = [scoring.edit_counts(r, scoring.collapse(ids[lo:hi]))
                  for r, (lo, hi) in zip(ref, bounds)]
        return np.array([c.S + c.D + c.I for c in counts], dtype=np.int64)

    return np.array([len(r) for r in ref], dtype=np.int64), errors(a_ids), errors(b_ids)
