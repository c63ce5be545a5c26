"""Segments with their frames: the training and dev data of HCRF phone classification."""
import dataclasses

import numpy as np

from ...errors import InputError
from ...io.archive import Archive
from ...io.segments import check_inside, check_labels, read_segments
from ...jobs import select


@dataclasses.dataclass
class SegmentData:
    """The frames of every segment, concatenated: X (frames, D), off (segments + 1,)
    segment starts, y (segments,) class ids (-1: a label the model lacks), and the
    utterances they came from."""

    X: np.ndarray
    off: np.ndarray
    y: np.ndarray
    keys: list
    names: list     # each segment's label as written

    @property
    def num_segments(self):
        return len(self.y)


def gather(xs, segs):
    """Frames of every segment of every utterance, concatenated: (X, off, segments per
    utterance). `xs`: (frames, D) arrays; `segs`: their rhmmtk.io.segments.Segments."""
    idx = [np.arange(s, e) + base
           for x, sg, base in zip(xs, segs, np.cumsum([0] + [len(x) for x in xs[:-1]]))
           for s, e in zip(sg.starts, sg.ends)]
    lens = np.array([len(i) for i in idx], dtype=np.int64)
    off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    X = np.concatenate(xs)[np.concatenate(idx)] if idx else np.zeros((0, xs[0].shape[1]))
    return X, off, [len(sg.starts) for sg in segs]


def read_segment_data(feats_path, seg_path, labels, job=None, strict=True, dim=None):
    """Segments of list `seg_path` (the utterances of shard `job`, in the list's order)
    with their frames from features archive `feats_path`. `labels`: the model's classes
    (strict: any other label is an InputError naming the segment); `dim`: the feature
    dimension the model needs."""
    segs = read_segments(seg_path)
    if strict:
        check_labels(segs, labels.index, seg_path)
    keys = select(list(segs), job)
    xs = []
    with Archive(feats_path, expect_kind="features") as ar:
        for k in keys:
            if k not in ar:
                raise InputError(f"utterance has segments but no features in {feats_path}",
                                 seg_path, k)
            x = ar[k]
            if x.ndim != 2 or (dim is not None and x.shape[1] != dim):
                raise InputError(f"features of shape {x.shape}, the model needs (frames, "
                                 f"{dim})", feats_path, k)
            if not np.all(np.isfinite(x)):
                raise InputError("features hold a non-finite number", feats_path, k)
            check_inside(segs[k], len(x), seg_path, k)
            xs.append(x.astype(np.float64))
    X, off, _ = gather(xs, [segs[k] for k in keys])
    names = [lab for k in keys for lab in segs[k].labels]
    y = np.array([labels.index.get(lab, -1) for lab in names], dtype=np.int64)
    return SegmentData(X, off, y, keys, names)


def check_every_class(y, labels, path):
    """InputError naming the first class without a training segment."""
    counts = np.bincount(y[y >= 0], minlength=len(labels))
    empty = np.flatnonzero(counts == 0)
    if len(empty):
        more = f" (and {len(empty) - 1} more)" if len(empty) > 1 else ""
        raise InputError(f"class {labels.symbols[empty[0]]!r} has no training segments"
                         f"{more}: train the HMM on the same phones", path)
    return counts
