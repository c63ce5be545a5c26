"""Opening rhmmtk's HDF5 files (models, codebooks, archives, statistics) with one clear
error for every user mistake and every kind of damage.

A damaged file (truncated, bytes overwritten in the middle, attributes or datasets
missing or of the wrong type) makes h5py raise one of many exception types, from
its own code or from the HDF5 library. `reading(path)` turns every exception that
comes out of h5py while a file is read into the one-line "corrupt" InputError;
exceptions raised by our own code pass through unchanged.
"""
import contextlib
import json
import os

from ..errors import InputError

CORRUPT = "corrupt or damaged HDF5 file"
# raised by reading a damaged file even where no h5py frame is on the traceback
DAMAGE = (KeyError, OSError, json.JSONDecodeError, UnicodeDecodeError)


def _from_h5py(tb):
    """Did the exception pass through h5py (or numpy reading an h5py value)?"""
    sep = os.sep
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if f"{sep}h5py{sep}" in name or name.startswith("h5py/"):
            return True
        tb = tb.tb_next
    return False


@contextlib.contextmanager
def reading(path, what=CORRUPT):
    """Inside: exceptions from h5py become InputError(`what`, path)."""
    try:
        yield
    except InputError:
        raise
    except (OSError, RuntimeError, KeyError, ValueError, TypeError, AttributeError,
            IndexError) as e:
        if not (_from_h5py(e.__traceback__) or isinstance(e, DAMAGE)):
            raise
        raise InputError(f"{what} ({_short(e)})", path) from None


def convert(path, exc, tb, what=CORRUPT):
    """For a with-statement's __exit__: raise the corrupt-file error if `exc` came from
    h5py (the body read a damaged file); otherwise return and let it propagate."""
    if exc is not None and not isinstance(exc, InputError) and isinstance(exc, Exception) \
            and _from_h5py(tb):
        raise InputError(f"{what} ({_short(exc)})", path) from None


class OpenFile:
    """An rhmmtk HDF5 file opened for reading (`self.file`, `self.path`), as a context:
    closing never raises, and an h5py error raised inside the block is reported as damage
    to the file (`DAMAGED` says what kind of file)."""

    DAMAGED = CORRUPT

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()
        convert(self.path, exc, tb, self.DAMAGED)

    def close(self):
        try:
            self.file.close()
        except Exception:
            pass


def _short(e):
    text = str(e).split("\n")[0].strip().strip('"')
    return (text[:100] + "...") if len(text) > 100 else text or type(e).__name__


def open_h5(path, what="HDF5 file"):
    """h5py.File(path, "r"), or an InputError: '-' (HDF5 cannot be streamed), no such
    file, a directory, not HDF5 / truncated."""
    import h5py

    path = os.fspath(path)
    if path == "-":
        raise InputError(f"an {what} cannot be read from standard input ('-'): HDF5 needs "
                         "to seek; give a file name", path)
    if not os.path.exists(path):
        raise InputError("no such file", path)
    if os.path.isdir(path):
        raise InputError("is a directory, expected a file", path)
    try:
        return h5py.File(path, "r")
    except PermissionError:
        raise InputError("permission denied", path) from None
    except Exception:
        raise InputError(f"not a readable {what} (corrupt, truncated or another format)",
                         path) from None


def open_rhmmtk(path, fmt, required=()):
    """Open `path` read-only; it must be an rhmmtk file whose rhmmtk_format is `fmt` and
    that holds every dataset in `required`. Returns the open h5py.File."""
    path = os.fspath(path)
    f = open_h5(path, f"HDF5 {fmt}")
    try:
        with reading(path):
            kind = f.attrs.get("rhmmtk_format")
            ok = kind == fmt and all(r in f for r in required)
    except InputError:
        f.close()
        raise
    if not ok:
        f.close()
        if kind == fmt:
            missing = ", ".join(r for r in required if r not in f) if f else ", ".join(required)
            raise InputError(f"{fmt} file is incomplete or corrupt (no {missing})", path)
        if isinstance(kind, bytes):
            kind = kind.decode(errors="replace")
        what = f"an rhmmtk {kind} file" if kind else "an HDF5 file not written by rhmmtk"
        raise InputError(f"expected an rhmmtk {fmt}, found {what}", path)
    return f


def file_format(path):
    """The rhmmtk_format an HDF5 file declares (None for a foreign HDF5 file)."""
    with open_h5(path) as f, reading(path):
        kind = f.attrs.get("rhmmtk_format")
    return kind.decode(errors="replace") if isinstance(kind, bytes) else kind


def create_checked(group, name, data, **kw):
    """A dataset with a CRC-32 of its bytes in its attribute `crc32`, so bytes damaged in
    the middle of a model, statistics file or codebook are found when read (`read_checked`:
    "corrupt") instead of silently becoming other numbers. HDF5's own Fletcher-32 filter
    was measured 3x slower to write and read (a 92 MB model: +2.6 s to write, +0.9 s to
    read, vs 0.3 s for zlib.crc32). Per-utterance archive datasets are not checksummed
    (an attribute each would cost more than the data); their ids and shapes are checked."""
    import numpy as np

    data = np.asarray(data)
    ds = group.create_dataset(name, data=data, **kw)
    if data.dtype.kind in "biuf" and data.size:
        ds.attrs["crc32"] = _crc(data)
    return ds


def read_checked(ds, path):
    """ds[()], refused as corrupt when it does not match its stored checksum."""
    arr = ds[()]
    want = ds.attrs.get("crc32")
    if want is not None and _crc(arr) != int(want):
        raise InputError(f"corrupt: the data of {ds.name} do not match their checksum", path)
    return arr


def _crc(arr):
    import zlib

    import numpy as np

    return zlib.crc32(np.ascontiguousarray(arr).view(np.uint8).reshape(-1))
