"""HDF5 archives: one dataset per utterance under /utts, in insertion order.

Layout (documented for other programs in rhmmtk-formats(5)):
  /                 attrs: rhmmtk_format="archive", kind, created_by, created,
                    options (JSON), versions (JSON), plus kind-specific attrs
  /utts/<utt-id>    one dataset per utterance; shape and dtype depend on `kind`:
                      codes       int32 (N,)        observation ids
                      features    float32 (N, D)    acoustic feature vectors
                      featurized  int64 (N, 2+T)    label id, observation id, T feature ids
  /symbols/<name>   string datasets: symbol tables ("observations", "labels")

Archives are written by rhmmtk.io.output: complete or absent, with the command's other outputs.
"""
import json
import os

import numpy as np

from ..errors import InputError
from ..symbols import SymbolTable
from .hdf5 import convert, open_h5, reading
from .output import write_hdf5

FORMAT = "archive"


def _h5():
    import h5py

    return h5py


class ArchiveWriter:
    """Write an archive atomically: use as a context manager, call add(key, array)."""

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
        f.attrs["kind"] = self.kind
        for k, v in {**self.provenance, **self.attrs}.items():
            f.attrs[k] = v if isinstance(v, (str, int, float, np.ndarray)) else json.dumps(v)
        self.utts = f.create_group("utts", track_order=True)
        g = f.create_group("symbols")
        for name, table in self.symbols.items():
            table.to_hdf5(g, name)
        return self

    def add(self, key, array):
        if not key or "/" in key or key.startswith("."):
            raise InputError(f"invalid utterance id {key!r} (empty, or contains '/')", self.path, key)
        if key in self.seen:
            raise InputError("utterance appears twice", self.path, key)
        self.seen.add(key)
        self.utts.create_dataset(key, data=array)
        self.count += 1
        if self.count % 256 == 0:
            self.file.guard.check()    # a full disk stops the command now, not at the end

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.file.attrs["num_utts"] = self.count
        return self._out.__exit__(exc_type, exc, tb)


class Archive:
    """Read an archive. Iterate keys in stored order; arrays are read on demand."""

    def __init__(self, path, expect_kind=None):
        self.path = os.fspath(path)
        self.file = f = open_h5(self.path, "HDF5 archive")
        try:
            with reading(self.path):
                self._open(expect_kind)
        except BaseException:
            self.close()
            raise

    def _open(self, expect_kind):
        f = self.file
        if f.attrs.get("rhmmtk_format") != FORMAT or "utts" not in f:
            kind = f.attrs.get("rhmmtk_format")
            self.close()
            what = f"an rhmmtk {kind} file" if kind else "an HDF5 file not written by rhmmtk"
            raise InputError(f"expected an rhmmtk archive, found {what}", self.path)
        self.kind = str(f.attrs["kind"])
        if expect_kind is not None and self.kind not in (
                (expect_kind,) if isinstance(expect_kind, str) else expect_kind):
            self.close()
            raise InputError(f"expected an archive of kind {expect_kind}, found kind {self.kind}",
                             self.path)
        self.attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
        try:
            self._keys = list(f["utts"].keys())
            self._keyset = set(self._keys)
            self._gid = f["utts"].id
        except Exception:
            self.close()
            raise InputError("archive index is unreadable (corrupt file)", self.path) from None
        if not self._keys:
            self.close()
            raise InputError("archive holds no utterances", self.path)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()
        convert(self.path, exc, tb)     # the body read a damaged dataset or attribute

    def close(self):
        try:
            self.file.close()
        except Exception:
            pass

    def keys(self):
        return list(self._keys)

    def __len__(self):
        return len(self._keys)

    def __contains__(self, key):
        return key in self._keyset

    def __getitem__(self, key):
        # h5py's low-level calls: half the per-utterance overhead of the high-level API,
        # which matters for corpora of many short utterances (NETtalk: 15,000 words).
        h5py = _h5()
        if key not in self._keyset:
            raise InputError("utterance missing from archive", self.path, key)
        try:
            ds = h5py.h5d.open(self._gid, key.encode())
            arr = np.empty(ds.shape, dtype=ds.dtype)
            if arr.size:
                ds.read(h5py.h5s.ALL, h5py.h5s.ALL, arr)
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

    def options(self):
        with reading(self.path):
            return json.loads(self.attrs.get("options", "{}"))
