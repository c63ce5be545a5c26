"""The input checks of rhmmtk's scikit-learn estimators (rhmmtk.estimator): X and y as
sequences of symbols or ids, or of frames, refused with a message that names the argument
and the sequence, as `InvalidInput` (an InputError that is also a ValueError, as
scikit-learn expects of bad input)."""
import numpy as np

from .errors import InputError


class InvalidInput(InputError, ValueError):
    """Bad input to the Python API: the InputError the command line would report, and a
    ValueError as scikit-learn expects. Names the argument (X, y, dev, a hyperparameter)
    and the sequence index instead of a file and an utterance."""

    def describe(self):
        where = [self.path] if self.path is not None else []
        if self.utt is not None:
            where.append(f"sequence {self.utt}")
        return (": ".join(where) + ": " if where else "") + self.problem


def is_id_array(seq):
    return isinstance(seq, np.ndarray) and seq.dtype.kind in "iu"


def check_sequences(X, name="X"):
    """X as a list of sequences, each a non-empty `str`, list/tuple of `str` symbols, or
    1-d integer array of ids, all symbols or all ids: InvalidInput naming `name` and the
    sequence otherwise."""
    if isinstance(X, (str, bytes)) or not hasattr(X, "__len__"):
        raise InvalidInput(f"{name} must be a list of sequences, not {type(X).__name__}")
    X = list(X)
    if not X:
        raise InvalidInput(f"{name} is empty: no sequences")
    kinds = set()
    for i, s in enumerate(X):
        if isinstance(s, str):
            kind = "symbols"
        elif isinstance(s, np.ndarray):
            if s.ndim != 1 or s.dtype.kind not in "iuUO":
                raise InvalidInput(f"{name}[{i}]: expected a 1-d array of ids or symbols, "
                                   f"found shape {s.shape} of {s.dtype}")
            kind = "ids" if s.dtype.kind in "iu" else "symbols"
        elif isinstance(s, (list, tuple)):
            types = {type(t) for t in s}
            if not types <= {str, np.str_}:
                bad = sorted(t.__name__ for t in types - {str, np.str_})
                raise InvalidInput(f"{name}[{i}]: symbols must be strings, found "
                                   f"{', '.join(bad)} (give ids as a numpy integer array)")
            kind = "symbols"
        else:
            raise InvalidInput(f"{name}[{i}]: expected a str, a list of symbols or an array "
                               f"of ids, not {type(s).__name__}")
        if len(s) == 0:
            raise InvalidInput(f"{name}[{i}] is empty")
        kinds.add(kind)
    if len(kinds) > 1:
        raise InvalidInput(f"{name} mixes symbol sequences and arrays of ids")
    return X


def check_labels(X, y, name="y", lengths=None):
    """y as sequences (check_sequences) paired with X: as many, and one label per
    position (`lengths`: X's sequence lengths when they are not len(X[i]))."""
    y = check_sequences(y, name)
    if len(y) != len(X):
        raise InvalidInput(f"{len(X)} sequences in X but {len(y)} in {name}")
    lengths = [len(x) for x in X] if lengths is None else lengths
    for i, (n, s) in enumerate(zip(lengths, y)):
        if len(s) != n:
            raise InvalidInput(f"{name}[{i}] has {len(s)} labels but X[{i}] has {n} "
                               "positions")
    return y


def check_frames(X, name="X", dim=None):
    """X as a non-empty list of (frames, dim) arrays of numbers of one dim, every value
    finite: InvalidInput naming `name`, the sequence and the frame otherwise. The arrays
    are the caller's (no copy) unless they are not numeric arrays already."""
    if isinstance(X, np.ndarray) and X.ndim == 2:
        raise InvalidInput(f"{name} must be a list of (frames, dim) arrays, one per sequence, "
                           "not one 2-d array")
    if not hasattr(X, "__len__") or isinstance(X, (str, bytes)):
        raise InvalidInput(f"{name} must be a list of (frames, dim) arrays")
    out = []
    for i, x in enumerate(X):
        a = np.asarray(x)                 # the caller's array itself, not a copy
        if a.dtype.kind not in "fiu":
            try:
                a = a.astype(np.float64)
            except (TypeError, ValueError):
                raise InvalidInput(f"{name}[{i}]: not an array of numbers") from None
        if a.ndim != 2 or not len(a) or not a.shape[1]:
            raise InvalidInput(f"{name}[{i}]: expected a non-empty (frames, dim) array, found "
                               f"shape {a.shape}")
        dim = a.shape[1] if dim is None else dim
        if a.shape[1] != dim:
            raise InvalidInput(f"{name}[{i}]: {a.shape[1]} features per frame, expected {dim}")
        bad = ~np.isfinite(a).all(axis=1)
        if bad.any():
            raise InvalidInput(f"{name}[{i}]: NaN or infinity at frame {int(np.argmax(bad))}")
        out.append(a)
    if not out:
        raise InvalidInput(f"{name} is empty: no sequences")
    return out
