"""Model files: the part every model type shares (rhmmtk-formats(5), "model").

  /                     attrs: rhmmtk_format="model", model_type, label_fingerprint,
                        observation_fingerprint, info (JSON), provenance (created_by,
                        created, options, versions)
  /symbols/labels       the output label table
  /symbols/observations the input symbol table (absent for models of continuous features)
  /...                  the family's own datasets, each with a CRC-32 (io.hdf5.create_checked)

`write_model` refuses non-finite numbers (a model never holds one) and writes through the
one writer (io.output.write_hdf5: complete or absent); `read_header` checks the type and
reads the shared part, every damage turned into the one-line "corrupt" error.
"""
import json
import os

import numpy as np

from ..errors import InputError
from .hdf5 import OpenFile

FORMAT = "model"


def _jsonable(x):
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    return str(x)


def nonfinite(datasets):
    """Names of the float datasets holding a NaN or an infinity."""
    return [name for name, v in datasets.items()
            if np.asarray(v).dtype.kind in "fc" and not np.isfinite(v).all()]


def refuse_nonfinite(bad, path):
    if bad:
        more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
        raise InputError("refusing to write a model with non-finite values (NaN or inf) in "
                         f"{', '.join(bad[:3])}{more}: check the numeric options and the "
                         "training data", path)


def write_model(path, model_type, labels, observations, info, provenance, datasets,
                compress=(), attrs=None):
    """Write a model file: the shared header (and the family's own `attrs`), then
    `datasets` (name -> array; names in `compress`, or under a group named there,
    gzip-compressed). Refuses a non-finite value before anything is written."""
    from .hdf5 import create_checked
    from .output import write_hdf5

    refuse_nonfinite(nonfinite(datasets), path)
    with write_hdf5(path) as f:
        f.attrs["rhmmtk_format"] = FORMAT
        f.attrs["model_type"] = model_type
        f.attrs["label_fingerprint"] = labels.fingerprint()
        if observations is not None:
            f.attrs["observation_fingerprint"] = observations.fingerprint()
        for k, v in provenance.items():
            f.attrs[k] = v
        for k, v in (attrs or {}).items():
            f.attrs[k] = v
        f.attrs["info"] = json.dumps(info, sort_keys=True, default=_jsonable)
        g = f.create_group("symbols")
        labels.to_hdf5(g, "labels")
        if observations is not None:
            observations.to_hdf5(g, "observations")
        for name, v in datasets.items():
            packed = name in compress or name.split("/")[0] in compress
            kw = {"compression": "gzip", "compression_opts": 1} if packed else {}
            create_checked(f, name, v, **kw)


class ModelFile(OpenFile):
    """An open model file of one type: .labels, .observations (or None), .info, .attrs and
    `array(name)` (checksummed read). Use as a context manager; an exception from h5py
    inside (a damaged file) becomes the one-line corrupt-file InputError."""

    WHAT = DAMAGED = "model file is incomplete or corrupt"

    def __init__(self, path, model_type):
        from ..symbols import SymbolTable
        from .hdf5 import open_rhmmtk, reading

        self.path = os.fspath(path)
        self.file = f = open_rhmmtk(self.path, FORMAT)
        try:
            with reading(self.path, self.WHAT):
                kind = f.attrs.get("model_type", "rhmm")
                kind = kind.decode() if isinstance(kind, bytes) else str(kind)
                if kind != model_type:
                    raise InputError(f"this is a {kind} model; a {model_type} model is needed "
                                     "here", self.path)
                self.labels = SymbolTable.from_hdf5(f["symbols/labels"])
                self.observations = (SymbolTable.from_hdf5(f["symbols/observations"])
                                     if "observations" in f["symbols"] else None)
                self.info = json.loads(f.attrs.get("info", "{}"))
                self.attrs = {k: (v.decode() if isinstance(v, bytes) else v)
                              for k, v in f.attrs.items()}
        except BaseException:
            self.close()
            raise

    def array(self, name):
        from .hdf5 import read_checked

        if name not in self.file:
            raise InputError(f"{self.WHAT} (no {name})", self.path)
        return read_checked(self.file[name], self.path)

    def __contains__(self, name):
        return name in self.file
