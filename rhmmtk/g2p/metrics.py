"""G2P scores: phoneme error rate (PER) and word error rate (WER), and their paired tests.

Both sides are alignment files (`utt-id label ...`) paired by utterance id: per-letter
labels of a tagger, or plain phoneme strings (of Phonetisaurus, say), which are their
own phoneme strings. Each becomes its phoneme string (rhmmtk.g2p.labels.phonemes:
silent letters dropped, compound labels split); then, per utterance, errors = the
Levenshtein distance (unit costs: substitutions + deletions + insertions of the cheapest
alignment) to the reference phonemes, and the word is wrong when errors > 0:

  PER = 100 sum(errors) / sum(reference phonemes)
  WER = 100 (words with errors) / words

Comparisons resample utterances as rhmmtk.significance does for per-position accuracy.

A word with several reference pronunciations (CMU's `WORD(2)`, NETtalk's two entries of
`ban`) is several utterances spelled alike. Given their spellings (`words`: utt -> word),
they are scored as one word, as Phonetisaurus' and Sequitur's evaluations do: the
hypothesis of the word's first utterance against each of its references, the closest
(fewest errors; ties: the first) counting -- its errors and its phonemes -- so the word
is right when it matches any reference.
"""
from dataclasses import dataclass

import numpy as np

from .. import scoring, significance
from .labels import phonemes


@dataclass(frozen=True)
class PhonemeScore:
    """Per-utterance reference phonemes and errors, in `keys` order."""

    keys: list
    phones: np.ndarray
    errors: np.ndarray

    @property
    def per(self):
        return 100.0 * int(self.errors.sum()) / max(int(self.phones.sum()), 1)

    @property
    def words_wrong(self):
        return int(np.count_nonzero(self.errors))

    @property
    def wer(self):
        return 100.0 * self.words_wrong / len(self.keys)

    def as_dict(self):
        return {"per": self.per, "wer": self.wer, "phonemes": int(self.phones.sum()),
                "phoneme_errors": int(self.errors.sum()), "words": len(self.keys),
                "words_wrong": self.words_wrong}


def levenshtein(r, h):
    """Unit-cost edit distance between phoneme lists."""
    if r == h:
        return 0
    c = scoring.edit_counts(r, h, 1, 1, 1)
    return c.S + c.D + c.I


def word_groups(keys, words=None):
    """`keys` grouped by word (utt -> word; None: each utterance its own word), in order
    of first appearance."""
    if words is None:
        return [[k] for k in keys]
    groups = {}
    for k in keys:
        groups.setdefault(words.get(k, k), []).append(k)
    return list(groups.values())


def words_of_letters(letters):
    """utt -> word of a letters table (utt -> letters): the letters joined."""
    return {k: "".join(v) for k, v in letters.items()}


def phoneme_errors(ref, hyp, groups):
    """(reference phonemes, Levenshtein errors) per word of `groups` (lists of utterance
    ids): the first utterance's hypothesis against the closest of the references."""
    phones = np.zeros(len(groups), dtype=np.int64)
    errors = np.zeros(len(groups), dtype=np.int64)
    for n, group in enumerate(groups):
        h = phonemes(hyp[group[0]])
        scored = [(levenshtein(r, h), len(r)) for r in (phonemes(ref[k]) for k in group)]
        errors[n], phones[n] = min(scored, key=lambda s: s[0])
    return phones, errors


def word_score(ref, hyp, keys, words=None):
    """PhonemeScore of paired `keys`, one row per word (named by its first utterance)."""
    groups = word_groups(keys, words)
    return PhonemeScore([g[0] for g in groups], *phoneme_errors(ref, hyp, groups))


def score(ref, hyp, ref_path=None, hyp_path=None, words=None):
    """PhonemeScore of `hyp` against `ref` (dicts utt -> labels); `words` (utt -> word)
    makes utterances of one word one item, right when matching any reference."""
    keys = scoring.paired_keys(ref, [hyp], ref_path, [hyp_path])
    return word_score(ref, hyp, keys, words)


@dataclass(frozen=True)
class PhonemeComparison:
    a: PhonemeScore
    b: PhonemeScore
    per_bootstrap: significance.BootstrapResult
    per_sign: significance.SignTestResult
    wer_bootstrap: significance.BootstrapResult
    wer_sign: significance.SignTestResult

    def as_dict(self):
        return {"a": self.a.as_dict(), "b": self.b.as_dict(),
                "per": {"difference": self.per_bootstrap.difference,
                        "bootstrap": self.per_bootstrap.as_dict(),
                        "sign_test": self.per_sign.as_dict()},
                "wer": {"difference": self.wer_bootstrap.difference,
                        "bootstrap": self.wer_bootstrap.as_dict(),
                        "sign_test": self.wer_sign.as_dict()}}


def compare(ref, hyp_a, hyp_b, paths=(None, None, None), resamples=10_000, seed=0,
            words=None):
    """PER and WER of two hypotheses and the paired tests of their differences (the
    bootstrap's differences are A - B in points; fewer errors is better; `words` as in
    `score`: words are then the resampled items)."""
    ref_path, a_path, b_path = paths
    keys = scoring.paired_keys(ref, [hyp_a, hyp_b], ref_path, [a_path, b_path])
    a, b = word_score(ref, hyp_a, keys, words), word_score(ref, hyp_b, keys, words)
    keys = a.keys
    wrong_a, wrong_b = (a.errors > 0).astype(np.int64), (b.errors > 0).astype(np.int64)
    ones = np.ones(len(keys), dtype=np.int64)
    return PhonemeComparison(
        a, b,
        significance.paired_bootstrap(a.errors, b.errors, a.phones, resamples, seed),
        significance.sign_test(-a.errors, -b.errors),
        significance.paired_bootstrap(wrong_a, wrong_b, ones, resamples, seed),
        significance.sign_test(-wrong_a, -wrong_b))
