"""HDF5 archives: every utterance's rows concatenated in one dataset, with an index.

Layout (documented for other programs in rhmmtk-formats(5)):
  /                 attrs: rhmmtk_format="archive", layout="flat", kind, num_utts,
                    created_by, created, options (JSON), versions (JSON), kind attrs
  /data             (total rows, ...) every utterance's rows, in insertion order
                      codes       int32 (N,)        observation ids
                      features    float32 (N, D)    acoustic feature vectors
                      featurized  int64 (N, 2+T)    label id, observation id, T feature ids
                      posteriors  float64 (N, l)    per-position marginals
  /keys             (U,) UTF-8 strings: the utterance ids, in order
  /offsets          (U+1,) int64: utterance u is rows offsets[u]:offsets[u+1] of /data
  /symbols/<name>   string datasets: symbol tables ("observations", "labels")

One dataset for the whole archive, not one per utterance: HDF5 spends ~0.3 ms creating
and ~0.15 ms opening a dataset, which was most of make-obs and featurize on 15,000
NETtalk words (bench/README.md). Archives of the earlier layout, one dataset per
utterance under /utts, are still read.

Archives are written by rhmmtk.io.output: complete or absent, with the command's other outputs.
"""
import json
import os

import numpy as np

from ..errors import InputError
from ..symbols import SymbolTable
from .hdf5 import OpenFile, open_h5, reading
from .output import write_hdf5

FORMAT = "archive"
LAYOUT = "flat"
WRITE_BYTES = 1 << 23       # rows buffered before they are appended to /data
READ_BYTES = 1 << 22        # rows read ahead when utterances are read in order
CHUNK_BYTES = 1 << 20       # HDF5 chunk of /data when it is written in several pieces


def _h5():
    import h5py

    return h5py


def check_key(key, path):
    if not key or "/" in key or key.startswith(".") or any(c.isspace() for c in key):
        raise InputError(f"invalid utterance id {key!r} (empty, or contains '/' or "
                         "white space)", path, key)


class ArchiveWriter:
    """Write an archive atomically: use as a context manager, call add(key, array).
    Every utterance's array has the first one's trailing shape and dtype kind."""

    def __init__(self, path, kind, provenance, symbols=None, attrs=None):
        self.path = os.fspath(path)
        self.kind = kind
        self.provenance = provenance
        self.symbols = symbols or {}
        self.attrs = attrs or {}
        self.count = 0
        self.seen = set()

    def __enter__(self):
        self._out = write_hdf5(self.path)
        self.file = f = self._out.__enter__()
        f.attrs["rhmmtk_format"] = FORMAT
        f.attrs["layout"] = LAYOUT
        f.attrs["kind"] = self.kind
        for k, v in {**self.provenance, **self.attrs}.items():
            f.attrs[k] = v if isinstance(v, (str, int, float, np.ndarray)) else json.dumps(v)
        g = f.create_group("symbols")
        for name, table in self.symbols.items():
            table.to_hdf5(g, name)
        self._keys, self._offsets = [], [0]
        self._buf, self._buf_bytes = [], 0
        self._data = self._dtype = self._trail = None
        return self

    def add(self, key, array):
        check_key(key, self.path)
        if key in self.seen:
            raise InputError("utterance appears twice", self.path, key)
        array = np.asarray(array)
        if array.ndim == 0:
            raise InputError("expected an array of rows, found a scalar", self.path, key)
        if self._dtype is None:
            self._dtype, self._trail = array.dtype, array.shape[1:]
        elif array.shape[1:] != self._trail:
            raise InputError(f"rows of shape {array.shape[1:]}, but the archive's are "
                             f"{self._trail}", self.path, key)
        elif array.dtype != self._dtype:
            if not np.can_cast(array.dtype, self._dtype, "same_kind"):
                raise InputError(f"{array.dtype} rows, but the archive's are {self._dtype}",
                                 self.path, key)
            array = array.astype(self._dtype)
        self.seen.add(key)
        self._keys.append(key)
        self._offsets.append(self._offsets[-1] + len(array))
        self._buf.append(array)
        self._buf_bytes += array.nbytes
        self.count += 1
        if self._buf_bytes >= WRITE_BYTES:
            self._flush()

    def rewrite(self, fn):
        """Replace the rows of every utterance added so far by fn(key, rows), of the same
        shape: a second pass over what was written (per-speaker normalisation)."""
        def new(key, rows):
            out = np.asarray(fn(key, rows), dtype=self._dtype)
            if out.shape != rows.shape:
                raise ValueError(f"rewrite changed the shape of {key}")
            return out

        if self._data is None:         # everything is still in the buffer
            self._buf = [new(k, a) for k, a in zip(self._keys, self._buf)]
            return
        if self._buf:
            self._flush()
        for i, key in enumerate(self._keys):
            lo, hi = self._offsets[i], self._offsets[i + 1]
            self._data[lo:hi] = new(key, self._data[lo:hi])

    def _flush(self):
        """Append the buffered rows to /data (created chunked and resizable the first
        time: the archive's size is not known in advance)."""
        block = np.concatenate(self._buf)
        self._buf, self._buf_bytes = [], 0
        if self._data is None:
            row = max(1, int(np.prod(self._trail, dtype=np.int64)) * self._dtype.itemsize)
            self._data = self.file.create_dataset(
                "data", shape=(0,) + self._trail, maxshape=(None,) + self._trail,
                dtype=self._dtype, chunks=(max(1, CHUNK_BYTES // row),) + self._trail)
        n = self._data.shape[0]
        self._data.resize(n + len(block), axis=0)
        self._data[n:] = block
        self.file.guard.check()        # a full disk stops the command now, not at the end

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            f = self.file
            if self._data is not None:
                if self._buf:
                    self._flush()
            elif self._buf:            # small archive: one contiguous dataset
                f.create_dataset("data", data=np.concatenate(self._buf))
            else:
                f.create_dataset("data", shape=(0,), dtype=np.int32)
            f.create_dataset("keys", data=np.array(self._keys, dtype=object),
                             dtype=_h5().string_dtype())
            f.create_dataset("offsets", data=np.array(self._offsets, dtype=np.int64))
            f.attrs["num_utts"] = self.count
        return self._out.__exit__(exc_type, exc, tb)


class _Flat:
    """The flat layout's index; rows read ahead when utterances are read in order, so a
    pass over the archive costs a few large reads instead of one per utterance."""

    def __init__(self, f, path):
        self.path = path
        self.data = f["data"]
        self.keys = list(f["keys"].asstr()[()])
        off = np.asarray(f["offsets"][()])
        if off.ndim != 1 or off.dtype.kind not in "iu" or len(off) != len(self.keys) + 1 \
                or off[0] != 0 or off[-1] != self.data.shape[0] or np.any(np.diff(off) < 0):
            raise InputError("archive index is corrupt (offsets do not match the keys "
                             "and the data)", path)
        self.offsets = off.astype(np.int64)
        self.trail = self.data.shape[1:]
        row = max(1, int(np.prod(self.trail, dtype=np.int64)) * self.data.dtype.itemsize)
        self.ahead = max(1, READ_BYTES // row)
        self.cache, self.lo, self.hi, self.last = None, 0, 0, -1

    def shape(self, i):
        return (int(self.offsets[i + 1] - self.offsets[i]),) + self.trail

    def read(self, i):
        lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
        if not (self.lo <= lo and hi <= self.hi):
            # in order (the next utterance, or the first): read ahead; otherwise just this one
            end = max(hi, min(len(self.data), lo + self.ahead)) if i in (0, self.last + 1) else hi
            self.cache, self.lo, self.hi = self.data[lo:end], lo, end
        self.last = i
        return self.cache[lo - self.lo: hi - self.lo].copy()


class _PerUtterance:
    """The earlier layout: one dataset per utterance under /utts (h5py's low-level calls:
    half the per-utterance overhead of the high-level API)."""

    def __init__(self, f, path):
        self.path = path
        self.keys = list(f["utts"].keys())
        self.gid = f["utts"].id

    def _open(self, i):
        return _h5().h5d.open(self.gid, self.keys[i].encode())

    def shape(self, i):
        return self._open(i).shape

    def read(self, i):
        h5py = _h5()
        ds = self._open(i)
        arr = np.empty(ds.shape, dtype=ds.dtype)
        if arr.size:
            ds.read(h5py.h5s.ALL, h5py.h5s.ALL, arr)
        return arr


class Archive(OpenFile):
    """Read an archive. Iterate keys in stored order; arrays are read on demand (in
    stored order they are read ahead in large blocks)."""

    def __init__(self, path, expect_kind=None):
        self.path = os.fspath(path)
        self.file = open_h5(self.path, "HDF5 archive")
        try:
            with reading(self.path):
                self._open(expect_kind)
        except BaseException:
            self.close()
            raise

    def _open(self, expect_kind):
        f = self.file
        if f.attrs.get("rhmmtk_format") != FORMAT or ("utts" not in f and "data" not in f):
            kind = f.attrs.get("rhmmtk_format")
            what = f"an rhmmtk {kind} file" if kind else "an HDF5 file not written by rhmmtk"
            raise InputError(f"expected an rhmmtk archive, found {what}", self.path)
        self.kind = str(f.attrs["kind"])
        if expect_kind is not None and self.kind not in (
                (expect_kind,) if isinstance(expect_kind, str) else expect_kind):
            raise InputError(f"expected an archive of kind {expect_kind}, found kind {self.kind}",
                             self.path)
        self.attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
        try:
            self._index = _Flat(f, self.path) if "data" in f else _PerUtterance(f, self.path)
        except InputError:
            raise
        except Exception:
            raise InputError("archive index is unreadable (corrupt file)", self.path) from None
        self._keys = self._index.keys
        self._pos = {k: i for i, k in enumerate(self._keys)}
        if not self._keys:
            raise InputError("archive holds no utterances", self.path)

    def keys(self):
        return list(self._keys)

    def __len__(self):
        return len(self._keys)

    def __contains__(self, key):
        return key in self._pos

    def _position(self, key):
        try:
            return self._pos[key]
        except KeyError:
            raise InputError("utterance missing from archive", self.path, key) from None

    def shape(self, key):
        """The utterance's array shape, from the index (no data read)."""
        i = self._position(key)
        try:
            return self._index.shape(i)
        except Exception:
            raise InputError("dataset is unreadable (corrupt file)", self.path, key) from None

    def __getitem__(self, key):
        i = self._position(key)
        try:
            arr = self._index.read(i)
        except Exception:
            raise InputError("dataset is unreadable (corrupt file)", self.path, key) from None
        if arr.size == 0:
            raise InputError("empty utterance (no frames)", self.path, key)
        return arr

    def items(self, keys=None):
        for k in self._keys if keys is None else keys:
            yield k, self[k]

    def symbols(self, name):
        try:
            group = self.file["symbols"]
            if name not in group:
                raise KeyError(name)
        except KeyError:
            raise InputError(f"archive has no {name} symbol table", self.path) from None
        with reading(self.path):
            return SymbolTable.from_hdf5(group[name])


# attributes that must agree for archives to be one archive
SAME = ("kind", "template_fingerprint", "view_slices", "columns", "observation_fingerprint",
        "label_fingerprint", "feature_config", "cmvn", "dim", "codebook", "num_codes",
        "sample_rate", "frame_shift", "frame_length")
KEEP = SAME + ("templates", "feature_type", "frame_length_samples", "frame_shift_samples")


def _scalar(v):
    return v.item() if hasattr(v, "item") else v


def _check_shard(ar, first_path, kind, attrs, symbols):
    """Refuse an archive that is not a shard of the same archive as the first one."""
    for k in SAME:
        mine = kind if k == "kind" else attrs.get(k)
        theirs = _scalar(ar.attrs.get(k))
        if theirs != mine:
            raise InputError(f"{k} differs from {first_path}'s ({theirs} vs {mine}): not "
                             "shards of one archive", ar.path)
    names = list(ar.file["symbols"]) if "symbols" in ar.file else []
    if names != list(symbols) or any(ar.symbols(n) != symbols[n] for n in names):
        raise InputError(f"symbol tables differ from {first_path}'s", ar.path)


def merge_archives(out, archives):
    """merge-archives: concatenate `archives` (shards of one archive: one kind, the same
    symbol tables and making options, different utterances) into `out`, in order, one
    utterance at a time in memory. Returns the number of utterances."""
    from ..progress import log, progress
    from ..provenance import record
    from .text import check_outputs

    check_outputs(out, inputs=archives)
    with Archive(archives[0]) as first:
        attrs = {k: _scalar(v) for k, v in first.attrs.items() if k in KEEP}
        names = list(first.file["symbols"]) if "symbols" in first.file else []
        symbols = {name: first.symbols(name) for name in names}
        kind = first.kind
    for path in archives[1:]:
        with Archive(path) as ar:
            _check_shard(ar, archives[0], kind, attrs, symbols)
    attrs.pop("kind", None)
    total = 0
    with ArchiveWriter(out, kind, record({"archives": list(archives)}), symbols, attrs) as w:
        for path in progress(archives, desc="merge", unit="archive"):
            with Archive(path) as ar:
                for key, arr in ar.items():
                    if key in w.seen:
                        raise InputError("utterance is in more than one of the archives",
                                         path, key)
                    w.add(key, arr)
                    total += 1
    log.info("merged %d archives, %d utterances, into %s", len(archives), total, out)
    return total
