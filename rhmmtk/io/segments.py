"""Phone segment lists: `utt-id start end label`, one segment per line.

Frames start..end-1 of utterance utt-id (end exclusive, frame indices of the features
archive) carry `label`. The TIMIT preparation writes them (data/<set>/phone_segments); phone
classification (rhmmtk.models.hcrf) reads them. Within an utterance, segments are in
order and do not overlap; every problem is one InputError naming the file, the
utterance and the segment (its line number).
"""
import dataclasses

import numpy as np

from ..errors import InputError
from .text import open_input


@dataclasses.dataclass
class Segments:
    """One utterance's segments: start and end frames (int arrays), labels, and the line
    of the file each came from (for messages)."""

    starts: np.ndarray
    ends: np.ndarray
    labels: list
    lines: list


def read_segments(path):
    """Ordered dict utt-id -> Segments, with the format checks of the module doc."""
    raw = {}
    with open_input(path) as f:
        for lineno, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 4:
                raise InputError(f"line {lineno}: expected 'utterance start end label'", path,
                                 parts[0])
            utt, s, e, lab = parts
            try:
                s, e = int(s), int(e)
            except ValueError:
                raise InputError(f"line {lineno}: start and end must be frame numbers",
                                 path, utt) from None
            if s < 0:
                raise InputError(f"line {lineno}: segment starts before frame 0 ({s})", path, utt)
            if e <= s:
                raise InputError(f"line {lineno}: empty segment (frames {s}..{e}, end "
                                 "exclusive)", path, utt)
            prev = raw.setdefault(utt, [])
            if prev and s < prev[-1][1]:
                raise InputError(f"line {lineno}: segment {s}..{e} overlaps or precedes the "
                                 f"previous one ({prev[-1][0]}..{prev[-1][1]})", path, utt)
            prev.append((s, e, lab, lineno))
    if not raw:
        raise InputError("no segments", path)
    return {u: Segments(np.array([r[0] for r in rows], dtype=np.int64),
                        np.array([r[1] for r in rows], dtype=np.int64),
                        [r[2] for r in rows], [r[3] for r in rows])
            for u, rows in raw.items()}


def check_inside(seg, frames, path, utt):
    """InputError unless every segment of `seg` lies within an utterance of `frames` frames."""
    bad = np.flatnonzero(seg.ends > frames)
    if len(bad):
        i = bad[0]
        raise InputError(f"line {seg.lines[i]}: segment {seg.starts[i]}..{seg.ends[i]} lies "
                         f"outside the utterance ({frames} frames)", path, utt)


def check_labels(segs, known, path, what="the model's classes"):
    """InputError naming the first segment whose label is not in `known`."""
    for utt, seg in segs.items():
        for lab, line in zip(seg.labels, seg.lines):
            if lab not in known:
                raise InputError(f"line {line}: label {lab!r} is not one of {what}", path, utt)
