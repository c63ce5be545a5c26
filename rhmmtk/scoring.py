"""Scoring label sequences against a reference, as HTK's HResults does.

Inputs are alignments as read by `rhmmtk.io.text.read_alignment`: dicts
utt-id -> list of labels, one label per position. Reference and hypothesis are
paired by utterance id, never by order. Three views of the same data:

- positions: per-position label accuracy (the two sides of an utterance must
  have the same length), per-label accuracy by reference label, and the
  confusion matrix (rows: reference label, columns: hypothesised label);
- sequences: the fraction of utterances labelled entirely correctly (HResults' SENT);
- segments: runs of equal labels collapse to one segment (a frame alignment
  becomes a phone string), then reference and hypothesis segment strings are
  aligned by a weighted Levenshtein distance with HResults' fixed penalties,
  substitution 10, deletion 7, insertion 7 (HTK's HResults.c, SUBPEN/DELPEN/
  INSPEN), and counted as HResults does: H hits, D deletions, S substitutions,
  I insertions, N = H + D + S reference segments, %Corr = H/N*100 and
  Acc = (H-I)/N*100; phone error rate PER = 100 - Acc = (S+D+I)/N*100.
  Where several alignments cost the same, HResults' preference is kept:
  hit/substitution first, then insertion, then deletion.

An optional label mapping (dict from -> to, e.g. TIMIT's 48 -> 39 folding) is
applied to both sides before anything is counted, so folded labels that become
equal merge into one segment. All rates are percentages.

This module does no I/O; every problem a user can cause is an InputError that
names the file, the utterance and what is wrong.
"""
from dataclasses import dataclass

import numpy as np

from .errors import InputError

SUB_PENALTY = 10
DEL_PENALTY = 7
INS_PENALTY = 7


def _name(path, default):
    if path is None:
        return default
    return "stdin" if str(path) == "-" else str(path)


def _reference(path):
    return "the reference" if path is None else "reference " + _name(path, None)


# --- pairing and encoding ----------------------------------------------------

def paired_keys(ref, hyps, ref_path=None, hyp_paths=None):
    """Utterance ids of `ref` (in its order), checked to be exactly those of every hypothesis.

    `hyps` is a list of alignment dicts and `hyp_paths` their file names (for
    messages). An utterance on one side only is an InputError naming the
    hypothesis file, the utterance and how many more are unmatched.
    """
    hyp_paths = list(hyp_paths) if hyp_paths is not None else [None] * len(hyps)
    if not ref:
        raise InputError("no utterances to score", ref_path)
    ref_name = _reference(ref_path)
    for hyp, hyp_path in zip(hyps, hyp_paths):
        missing = [k for k in ref if k not in hyp]
        extra = [k for k in hyp if k not in ref]
        for keys, problem in ((missing, f"in {ref_name} but missing from this file"),
                              (extra, f"not in {ref_name}")):
            if keys:
                more = f" (and {len(keys) - 1} more unmatched)" if len(keys) > 1 else ""
                raise InputError(problem + more, hyp_path, keys[0])
    return list(ref)


def check_lengths(ref, hyp, keys, hyp_path=None, ref_path=None):
    """Per-position scoring needs one hypothesis label per reference label."""
    for k in keys:
        if len(ref[k]) != len(hyp[k]):
            raise InputError(f"length mismatch: {len(ref[k])} labels in {_reference(ref_path)}, "
                             f"{len(hyp[k])} in the hypothesis", hyp_path, k)


def encode(sides, keys, mapping=None, paths=None, mapping_path=None):
    """Turn labels into integer ids shared by all sides, after the mapping.

    `sides` is a list of alignment dicts (reference first). Returns
    (labels, ids, offsets): `labels` the sorted label names, `ids[s]` one flat
    int array per side (utterances concatenated in `keys` order), and
    `offsets[s]` the start of each utterance in it, plus the end.
    """
    paths = list(paths) if paths is not None else [None] * len(sides)
    flat, lengths = [], []
    for ali in sides:
        lens = np.fromiter((len(ali[k]) for k in keys), dtype=np.int64, count=len(keys))
        lengths.append(lens)
        flat.extend(s for k in keys for s in ali[k])
    raw, ids = np.unique(np.array(flat, dtype=str), return_inverse=True)
    ids = ids.reshape(-1)
    if mapping is not None:
        if any(lab not in mapping for lab in raw):
            _unmapped_error(sides, keys, mapping, paths, mapping_path)
        labels, remap = np.unique(np.array([mapping[lab] for lab in raw], dtype=str),
                                  return_inverse=True)
        ids = remap.reshape(-1)[ids]
    else:
        labels = raw
    side_ends = np.cumsum([lens.sum() for lens in lengths])
    per_side = np.split(ids, side_ends[:-1])
    offsets = [np.concatenate(([0], np.cumsum(lens))) for lens in lengths]
    return [str(x) for x in labels], per_side, offsets


def _unmapped_error(sides, keys, mapping, paths, mapping_path):
    """Name the first label the mapping lacks, where it occurs, and in which file."""
    for side, (ali, path) in enumerate(zip(sides, paths)):
        for k in keys:
            label = next((lab for lab in ali[k] if lab not in mapping), None)
            if label is not None:
                where = _name(path, "the reference" if side == 0 else "a hypothesis")
                raise InputError(f"label {label!r} (in {where}) is not in the label mapping",
                                 _name(mapping_path, None), k)


def collapse(ids):
    """Runs of equal labels become one segment: [a a b b b a] -> [a b a]."""
    ids = np.asarray(ids)
    if len(ids) == 0:
        return ids
    return ids[np.concatenate(([True], ids[1:] != ids[:-1]))]


# --- segment scoring ------------------------------------------------------------

@dataclass(frozen=True)
class SegmentCounts:
    """HResults' counts: hits, deletions, substitutions, insertions, reference length."""

    H: int = 0
    D: int = 0
    S: int = 0
    I: int = 0  # noqa: E741 (HResults' name)
    N: int = 0

    def __add__(self, other):
        return SegmentCounts(self.H + other.H, self.D + other.D, self.S + other.S,
                             self.I + other.I, self.N + other.N)

    @property
    def corr(self):
        """%Corr = H / N * 100 (ignores insertions)."""
        return 100.0 * self.H / self.N if self.N else 0.0

    @property
    def acc(self):
        """Acc = (H - I) / N * 100; can be negative."""
        return 100.0 * (self.H - self.I) / self.N if self.N else 0.0

    @property
    def per(self):
        """Phone (segment) error rate = 100 - Acc = (S + D + I) / N * 100."""
        return 100.0 - self.acc

    def cost(self, sub=SUB_PENALTY, dele=DEL_PENALTY, ins=INS_PENALTY):
        return sub * self.S + dele * self.D + ins * self.I

    def as_dict(self):
        return {"H": self.H, "D": self.D, "S": self.S, "I": self.I, "N": self.N,
                "corr": self.corr, "acc": self.acc, "per": self.per}


def edit_counts(ref, hyp, sub=SUB_PENALTY, dele=DEL_PENALTY, ins=INS_PENALTY):
    """Align two label strings by minimum weighted edit cost; return SegmentCounts.

    The same alignment, with the same tie-breaking, as the plain dynamic programme of
    the tests (tests/references.py), by a compiled dynamic programme restricted to a
    band of diagonals around the one from (0, 0) to (n, m) (Ukkonen): cells with
    min(0, m - n) - w <= j - i <= max(0, m - n) + w.
    An alignment through a cell outside the band makes at least |m - n| + 2 (w + 1)
    insertions and deletions, so costs at least that times min(ins, dele); when the
    band's best alignment costs less, it is the optimum and every cell where a tie could
    be decided lies in the band. Otherwise the band's cost C, an upper bound on the
    optimum, gives the width that is sure to be enough (|m - n| + 2 (w + 1) > C / gap)
    for a second and last pass. Work about n (|m - n| + 2w), not n m: near-linear for
    hypotheses close to the reference in length and content.
    """
    from .edit_distance import banded_edit_counts

    ref, hyp = np.asarray(ref), np.asarray(hyp)
    n, m = len(ref), len(hyp)
    if not (np.issubdtype(ref.dtype, np.integer) and np.issubdtype(hyp.dtype, np.integer)):
        _, ids = np.unique(np.concatenate([ref.astype(str), hyp.astype(str)]),
                           return_inverse=True)        # any labels: compare as ids
        ref, hyp = ids[:n], ids[n:]
    ref = np.ascontiguousarray(ref, dtype=np.int64)
    hyp = np.ascontiguousarray(hyp, dtype=np.int64)
    gap = max(min(ins, dele), 1)
    w = max(32, abs(m - n) // 2)       # usually enough at once: cost ~ gap |m - n| + a bit
    while True:
        full = w >= max(n, m)
        cost, H, S = banded_edit_counts(ref, hyp, sub, dele, ins, min(0, m - n) - w,
                                        max(0, m - n) + w)
        if full or cost < gap * (abs(m - n) + 2 * (w + 1)):
            break
        w = max(2 * w, (int(cost) // gap - abs(m - n)) // 2 + 1)
    H, S = int(H), int(S)
    return SegmentCounts(H=H, D=n - H - S, S=S, I=m - H - S, N=n)


# --- the whole report ------------------------------------------------------------

@dataclass
class ScoreReport:
    """Everything `rhmmtk score` reports; per-utterance arrays are in `keys` order."""

    keys: list
    labels: list
    lengths: np.ndarray  # positions per utterance
    correct: np.ndarray  # correctly labelled positions per utterance
    confusion: np.ndarray  # [ref label, hyp label] -> positions
    utt_segments: list  # SegmentCounts per utterance

    @property
    def positions(self):
        return int(self.lengths.sum())

    @property
    def positions_correct(self):
        return int(self.correct.sum())

    @property
    def position_accuracy(self):
        return 100.0 * self.positions_correct / self.positions

    @property
    def sequences(self):
        return len(self.keys)

    @property
    def sequences_correct(self):
        return int((self.correct == self.lengths).sum())

    @property
    def sequence_accuracy(self):
        return 100.0 * self.sequences_correct / self.sequences

    @property
    def segments(self):
        return sum(self.utt_segments, SegmentCounts())

    def per_label(self):
        """label -> (reference positions, correct, %accuracy), for labels in the reference."""
        n = self.confusion.sum(axis=1)
        hit = np.diag(self.confusion)
        return {lab: (int(n[i]), int(hit[i]), float(100.0 * hit[i] / n[i]))
                for i, lab in enumerate(self.labels) if n[i]}

    def as_dict(self, per_label=False, confusion=False, per_utt=False):
        out = {
            "sequences": self.sequences,
            "sequences_correct": self.sequences_correct,
            "sequence_accuracy": self.sequence_accuracy,
            "positions": self.positions,
            "positions_correct": self.positions_correct,
            "position_accuracy": self.position_accuracy,
            "segments": self.segments.as_dict(),
        }
        if per_label:
            out["per_label"] = {lab: {"N": n, "correct": c, "accuracy": a}
                                for lab, (n, c, a) in self.per_label().items()}
        if confusion:
            out["confusion"] = {"labels": list(self.labels), "counts": self.confusion.tolist()}
        if per_utt:
            out["per_utt"] = {
                k: {"positions": int(n), "correct": int(c), "accuracy": float(100.0 * c / n),
                    "sequence_correct": bool(c == n), "segments": seg.as_dict()}
                for k, n, c, seg in zip(self.keys, self.lengths, self.correct, self.utt_segments)}
        return out


def position_counts(ref_ids, hyp_ids, offsets):
    """Correct positions per utterance, from flat id arrays and utterance offsets."""
    return np.add.reduceat((ref_ids == hyp_ids).astype(np.int64), offsets[:-1])


def score(ref, hyp, ref_path=None, hyp_path=None, mapping=None, mapping_path=None):
    """Score hypothesis `hyp` against reference `ref` (dicts utt -> labels): a ScoreReport."""
    keys = paired_keys(ref, [hyp], ref_path, [hyp_path])
    check_lengths(ref, hyp, keys, hyp_path, ref_path)
    labels, (r, h), (offsets, _) = encode([ref, hyp], keys, mapping, [ref_path, hyp_path],
                                          mapping_path)
    k = len(labels)
    confusion = np.bincount(r * k + h, minlength=k * k).reshape(k, k)
    utt_segments = [edit_counts(collapse(r[a:b]), collapse(h[a:b]))
                    for a, b in zip(offsets[:-1], offsets[1:])]
    return ScoreReport(keys=keys, labels=labels, lengths=np.diff(offsets),
                       correct=position_counts(r, h, offsets), confusion=confusion,
                       utt_segments=utt_segments)
