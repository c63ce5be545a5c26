"""The model interface every system implements, and the registry of model types.

A model file is HDF5 with `rhmmtk_format = "model"` and `model_type` naming its family
(files written before model types existed are R-HMMs). `rhmmtk decode`, `rhmmtk info` and
the Python API reach every family through `load_model`, so adding a system means one
module implementing `Model` and one line in MODEL_TYPES -- never another decode command.
docs/ARCHITECTURE.md has the checklist.
"""
import importlib
import os

from ..errors import InputError

# model_type -> "module:Class"; the one place a model family is registered.
MODEL_TYPES = {
    "rhmm": "rhmmtk.models.rhmm.operators:Operators",
    "hkz": "rhmmtk.models.hkz:HkzModel",
    "maxmargin": "rhmmtk.models.maxmargin:MaxMarginModel",
    "crf": "rhmmtk.models.crf:CrfModel",
    "subpat": "rhmmtk.models.subpat:SubpatModel",
    "cdhmm": "rhmmtk.models.cdhmm:CDHMM",
    "hcrf": "rhmmtk.models.hcrf.model:HCRF",
    "hcrf-tagger": "rhmmtk.models.hcrf.tagger:HcrfTagger",
}


class Model:
    """What `decode`, `info` and the Python API need of a trained model.

    Subclasses set `model_type` (a MODEL_TYPES key), `input_kinds` (the archive kinds
    `decode` accepts, see rhmmtk.io.archive) and optionally `decode_options` (a dataclass of
    rhmmtk.options fields: the family's decode-time options, which `rhmmtk decode` offers),
    and have a `labels` SymbolTable (the output labels).
    """

    model_type = None
    input_kinds = ()
    decode_options = None

    def check_input(self, archive):
        """Raise InputError if `archive` (an open rhmmtk.io.archive.Archive) was not made
        for this model (symbol tables, template set, feature dimension)."""

    def bind_options(self, options):
        """Called once before decoding with the decode options (e.g. to read a file an
        option names); raises InputError for options the model cannot use."""

    def check_observations(self, archive, hint=""):
        """Raise InputError if `archive`'s observation symbol table is not the model's
        (`hint`: what usually causes it, for the message)."""
        table = archive.symbols("observations")
        if table != self.observations:
            raise InputError("observation symbol table differs from the model's "
                             f"({table.fingerprint()} vs {self.observations.fingerprint()})"
                             + (f": {hint}" if hint else ""), archive.path)

    def input_sequence(self, archive, key, array):
        """The decoder's input for utterance `key`'s stored array (default: as stored);
        raises InputError naming the utterance if the array does not fit the model."""
        return array

    def decode(self, seqs, options=None, progress=None):
        """Decode a list of input sequences. Returns a Decoded."""
        raise NotImplementedError

    def report(self, totals):
        """Log what the decode counters in `totals` (summed Decoded.stats) mean."""

    def describe(self):
        """A dict summarising the model for `rhmmtk info` (JSON-serialisable)."""
        raise NotImplementedError

    def save(self, path, provenance):
        raise NotImplementedError

    @classmethod
    def load(cls, path):
        raise NotImplementedError


class Decoded:
    """What Model.decode returns: label ids per sequence, optional per-position label
    posteriors (N x labels), and counters the decode command logs (name -> int)."""

    def __init__(self, labels, posteriors=None, stats=None):
        self.labels = labels
        self.posteriors = posteriors
        self.stats = dict(stats or {})


def model_type_of(path):
    """The model_type recorded in model file `path` (InputError if it is not a model)."""
    from ..io.hdf5 import open_rhmmtk

    with open_rhmmtk(path, "model") as f:
        t = f.attrs.get("model_type", "rhmm")
    t = t.decode() if isinstance(t, bytes) else str(t)
    if t not in MODEL_TYPES:
        raise InputError(f"unknown model type {t!r} (this rhmmtk knows "
                         f"{', '.join(sorted(MODEL_TYPES))})", path)
    return t


def model_class(model_type):
    module, name = MODEL_TYPES[model_type].split(":")
    return getattr(importlib.import_module(module), name)


def load_model(path, expect=None):
    """Load any model file. `expect`: a model type (or tuple) the caller requires."""
    path = os.fspath(path)
    t = model_type_of(path)
    if expect is not None and t not in ((expect,) if isinstance(expect, str) else expect):
        want = expect if isinstance(expect, str) else " or ".join(expect)
        raise InputError(f"this is a {t} model; this command needs a {want} model", path)
    return model_class(t).load(path)


def decode_option_classes():
    """Every registered family's decode-option dataclass (for the decode command)."""
    out = []
    for t in MODEL_TYPES:
        cls = model_class(t).decode_options
        if cls is not None and cls not in out:
            out.append(cls)
    return out
