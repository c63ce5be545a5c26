"""A CRF peer through CRFsuite (python-crfsuite): the feature-based tagger a user would
pick instead of our models (paper 002's CRF baseline).

Features of position i: the letters at offsets -w..+w (w = `--window`, '<b>' past either
end), the letter bigrams and trigrams inside that window, and a bias; CRFsuite adds the
label-bigram transition features (a first-order linear-chain CRF). Trained by L-BFGS with
L1 (`--c1`) and L2 (`--c2`) penalties. The trained CRFsuite model is stored inside the
rhmmtk model file, so `decode`, `score` and `compare` treat it like every other model.
"""
import dataclasses
import os
import tempfile

import click
import numpy as np

from ..errors import InputError
from ..options import option, shared
from ..click_types import Count, Real
from . import Decoded, Model

MODEL_TYPE = "crf"
BOUNDARY = "<b>"


@dataclasses.dataclass
class CrfOptions:
    """Training options of the CRF peer."""

    window: int = option("--window", default=3, type=click.IntRange(0),
                         help="Letter window half-width of the features.")
    c1: float = option("--c1", default=0.0, type=Real(0), help="L1 penalty.")
    c2: float = option("--c2", default=0.1, type=Real(0), help="L2 penalty.")
    iters: int = shared("iters", default=100, type=Count(1), help="L-BFGS iterations.")


def features(symbols, window):
    """CRFsuite feature lists of a word given as a list of letter strings."""
    T = len(symbols)
    pad = [BOUNDARY] * window + list(symbols) + [BOUNDARY] * window
    out = []
    for i in range(T):
        w = pad[i:i + 2 * window + 1]
        f = ["bias"]
        f += [f"u{k - window}={w[k]}" for k in range(len(w))]
        f += [f"b{k - window}={w[k]}{w[k + 1]}" for k in range(len(w) - 1)]
        f += [f"t{k - window}={w[k]}{w[k + 1]}{w[k + 2]}" for k in range(len(w) - 2)]
        out.append(f)
    return out


class CrfModel(Model):
    model_type = MODEL_TYPE
    input_kinds = ("codes",)

    def __init__(self, labels, observations, blob, info=None):
        self.labels, self.observations = labels, observations
        self.blob = bytes(blob)
        self.info = dict(info or {})
        self._tagger = None

    def __getstate__(self):
        # CRFsuite's tagger cannot be pickled; it is rebuilt from the blob when next needed
        return {**self.__dict__, "_tagger": None}

    def tagger(self):
        import pycrfsuite

        if self._tagger is None:
            fd, tmp = tempfile.mkstemp(suffix=".crfsuite")
            with os.fdopen(fd, "wb") as f:
                f.write(self.blob)
            t = pycrfsuite.Tagger()
            t.open(tmp)              # CRFsuite reads the file into memory
            os.unlink(tmp)
            self._tagger = t
        return self._tagger

    def check_input(self, archive):
        self.check_observations(archive)

    def input_sequence(self, archive, key, x):
        if x.ndim != 1 or len(x) == 0 or x.min() < 0 or x.max() >= len(self.observations):
            raise InputError("observation ids out of range, empty or of the wrong shape",
                             archive.path, key)
        return x.astype(np.int64)

    def decode(self, seqs, options=None, progress=None):
        t = self.tagger()
        w = self.info["window"]
        index = self.labels.index
        out = []
        for x in seqs:           # CRFsuite tags one sequence per call
            out.append(np.array([index[y] for y in
                                 t.tag(features([self.observations.symbols[i] for i in x], w))]))
            if progress is not None:
                progress.update(1)
        return Decoded(out, None, {"positions": int(sum(len(x) for x in seqs))})

    def describe(self):
        import json

        attrs = getattr(self, "attrs", {})
        return {"kind": "model", "model_type": MODEL_TYPE, "created_by": attrs.get("created_by"),
                "options": json.loads(attrs.get("options", "{}")),
                "num_labels": len(self.labels), "num_observations": len(self.observations),
                **{k: self.info[k] for k in ("window", "c1", "c2", "iters", "train_utts")
                   if k in self.info}}

    def save(self, path, provenance):
        from ..io.model_file import write_model

        write_model(path, MODEL_TYPE, self.labels, self.observations, self.info, provenance,
                    {"crfsuite": np.frombuffer(self.blob, dtype=np.uint8)})

    @classmethod
    def load(cls, path):
        from ..io.model_file import ModelFile

        path = os.fspath(path)
        with ModelFile(path, MODEL_TYPE) as mf:
            labels, obs, info, attrs = mf.labels, mf.observations, mf.info, mf.attrs
            blob = mf.array("crfsuite").tobytes()
        model = cls(labels, obs, blob, info)
        model.attrs = attrs
        return model


def train(obs_path, ali_path, opts=None):
    """Train a CrfModel on a codes archive of letters and an alignment."""
    import pycrfsuite

    from ..training_data import read_corpus
    from ..progress import log, progress

    opts = opts or CrfOptions()
    corpus = read_corpus(obs_path, ali_path)
    if len(corpus) == 0 or corpus.num_positions == 0:
        raise InputError("empty training set: no words with letters", ali_path)
    trainer = pycrfsuite.Trainer(algorithm="lbfgs", verbose=False)
    syms = corpus.label_table.symbols
    for x, y in progress(zip(corpus.obs, corpus.labels), desc="features", total=len(corpus)):
        trainer.append(features([corpus.obs_table.symbols[i] for i in x], opts.window), [syms[i] for i in y])
    trainer.set_params({"c1": opts.c1, "c2": opts.c2, "max_iterations": opts.iters,
                        "feature.possible_transitions": True})
    fd, tmp = tempfile.mkstemp(suffix=".crfsuite")
    os.close(fd)
    try:
        trainer.train(tmp)
        with open(tmp, "rb") as f:
            blob = f.read()
    finally:
        os.unlink(tmp)
    log.info("CRF trained on %d words (%d L-BFGS iterations at most)", len(corpus), opts.iters)
    info = {"estimator": "crf", **dataclasses.asdict(opts), "train_utts": len(corpus)}
    return CrfModel(corpus.label_table, corpus.obs_table, blob, info)
