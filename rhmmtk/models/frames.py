"""Feature frames paired with frame labels: the training data of the CDHMM trainers."""
import numpy as np

from ..errors import InputError
from ..io.archive import Archive
from ..io.text import read_alignment
from ..symbols import SymbolTable


class Frames:
    """All utterances concatenated: X (N, D) float64, y (N,) label ids (-1: a label the
    table lacks, allowed only when not strict), offsets (U+1,) utterance starts."""

    def __init__(self, keys, X, y, offsets, labels):
        self.keys, self.X, self.y, self.offsets, self.labels = keys, X, y, offsets, labels

    def __len__(self):
        return len(self.keys)

    def utterance(self, i):
        lo, hi = self.offsets[i], self.offsets[i + 1]
        return slice(lo, hi)


def read_frames(feats_path, ali_path, labels=None, dim=None, strict=True, keys=None):
    """Read a features archive and a frame alignment (one label per frame), in the
    alignment's utterance order (or `keys`'). `labels`: the model's table (an unknown
    label is an InputError naming it, or id -1 when not `strict`); None: the sorted
    labels of the alignment. `dim`: the feature dimension required."""
    ali = read_alignment(ali_path)
    if labels is None:
        labels = SymbolTable(sorted({s for syms in ali.values() for s in syms}))
    keys = list(ali) if keys is None else list(keys)
    xs, ys = [], []
    with Archive(feats_path, expect_kind="features") as ar:
        for k in ar.keys():
            if k not in ali:
                raise InputError(f"utterance has features but no labels in {ali_path}",
                                 feats_path, k)
        for k in keys:
            if k not in ar:
                raise InputError(f"utterance has labels but no features in {feats_path}",
                                 ali_path, k)
            x = ar[k]
            if x.ndim != 2:
                raise InputError(f"expected a (frames, dim) array, found shape {x.shape}",
                                 feats_path, k)
            if dim is None:
                dim = x.shape[1]
            if x.shape[1] != dim:
                raise InputError(f"features of dimension {x.shape[1]}, expected {dim}",
                                 feats_path, k)
            if not np.all(np.isfinite(x)):
                raise InputError("features hold a non-finite number", feats_path, k)
            syms = ali[k]
            if len(syms) != len(x):
                raise InputError(f"{len(syms)} labels but {len(x)} frames", ali_path, k)
            if strict:
                for s in syms:
                    if s not in labels:
                        raise InputError(f"phone {s!r} is not among the model's "
                                         f"{len(labels)} phones", ali_path, k)
            ys.append(np.fromiter((labels.index.get(s, -1) for s in syms), dtype=np.int64,
                                  count=len(syms)))
            xs.append(x)
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in xs])]).astype(np.int64)
    return Frames(keys, np.concatenate(xs).astype(np.float64), np.concatenate(ys), offsets,
                  labels)


def segment_starts(y, offsets):
    """Boolean (N,): a new labelled segment starts here (label change or utterance start)."""
    start = np.ones(len(y), dtype=bool)
    start[1:] = y[1:] != y[:-1]
    start[offsets[:-1]] = True
    return start
