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
from .hdf5 import OpenFile, open_h5, reading
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


class Archive(OpenFile):
    """Read an archive. Iterate keys in stored order; arrays are read on demand."""

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
