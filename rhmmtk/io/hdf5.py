"""Opening rhmmtk's HDF5 files (models, codebooks) with one clear error for every user mistake."""
import os

from ..errors import InputError


def open_rhmmtk(path, fmt, required=()):
    """Open `path` read-only; it must be an rhmmtk file whose rhmmtk_format is `fmt` and
    that holds every dataset in `required`. Returns the open h5py.File."""
    import h5py

    path = os.fspath(path)
    if not os.path.exists(path):
        raise InputError("no such file", path)
    try:
        f = h5py.File(path, "r")
    except OSError:
        raise InputError(f"not a readable HDF5 {fmt} (corrupt, truncated or another format)",
                         path) from None
    kind = f.attrs.get("rhmmtk_format")
    if kind != fmt or any(r not in f for r in required):
        f.close()
        what = f"an rhmmtk {kind} file" if kind else "an HDF5 file not written by rhmmtk"
        raise InputError(f"expected an rhmmtk {fmt}, found {what}", path)
    return f


def file_format(path):
    """The rhmmtk_format an HDF5 file declares (None for a foreign HDF5 file)."""
    import h5py

    path = os.fspath(path)
    if not os.path.exists(path):
        raise InputError("no such file", path)
    try:
        with h5py.File(path, "r") as f:
            kind = f.attrs.get("rhmmtk_format")
    except OSError:
        raise InputError("not a readable HDF5 file (corrupt, truncated or another format)",
                         path) from None
    return kind.decode() if isinstance(kind, bytes) else kind
