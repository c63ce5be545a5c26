"""A CRF peer through CRFsuite (python-crfsuite): the feature-based tagger a user would
pick instead of our models (paper 002's CRF baseline).

Features of position i: the letters at offsets -w..+w (w = `--window`, '<b>' past either
end), the letter n-grams inside that window up to n = `--ngram` (3: bigrams and trigrams),
and a bias; CRFsuite adds the label-bigram transition features (a first-order linear-chain
CRF) and decodes whole words (Viterbi). Trained by L-BFGS with L1 (`--c1`) and L2 (`--c2`)
penalties, or by CRFsuite's averaged perceptron (`--algorithm ap`: `--iters` epochs, no
penalty; several times faster, for large lexicons). The trained CRFsuite model is stored inside the
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
ALGORITHMS = ("lbfgs", "ap")      # CRFsuite's trainers offered here


@dataclasses.dataclass
class CrfOptions:
    """Training options of the CRF peer."""

    window: int = shared("window")
    ngram: int = shared("ngram")
    algorithm: str = option("--algorithm", default="lbfgs", type=click.Choice(ALGORITHMS),
                            help="CRFsuite trainer: L-BFGS (penalised likelihood) or "
                                 "averaged perceptron (ap; --c1/--c2 unused).")
    c1: float = option("--c1", default=0.0, type=Real(0), help="L1 penalty.")
    c2: float = option("--c2", default=0.1, type=Real(0), help="L2 penalty.")
    iters: int = shared("iters", default=100, type=Count(1),
                        help="L-BFGS iterations (ap: epochs).")


# n-gram feature prefixes: the names of the (window 3, n 3) model files stay valid
_PREFIX = {1: "u", 2: "b", 3: "t"}


def features(symbols, window, ngram=3):
    """CRFsuite feature lists of a word given as a list of letter strings: each n-gram
    (n <= ngram) inside the window, named by its length and first offset."""
    T = len(symbols)
    pad = [BOUNDARY] * window + list(symbols) + [BOUNDARY] * window
    out = []
    for i in range(T):
        w = pad[i:i + 2 * window + 1]
        f = ["bias"]
        for n in range(1, min(ngram, len(w)) + 1):
            name = _PREFIX.get(n, f"g{n}_")
            f += [f"{name}{k - window}={''.join(w[k:k + n])}" for k in range(len(w) - n + 1)]
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
        self._potentials = None

    def __getstate__(self):
        # CRFsuite's tagger cannot be pickled; it is rebuilt from the blob when next needed
        return {**self.__dict__, "_tagger": None, "_potentials": None}

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
        w, n = self.info["window"], self.info.get("ngram", 3)
        index = self.labels.index
        out = []
        for x in seqs:           # CRFsuite tags one sequence per call
            out.append(np.array([index[y] for y in
                                 t.tag(features([self.observations.symbols[i] for i in x], w, n))]))
            if progress is not None:
                progress.update(1)
        return Decoded(out, None, {"positions": int(sum(len(x) for x in seqs))})

    def potentials(self):
        """(attribute -> row, state weights (attributes, labels), transitions (labels,
        labels)) of the trained CRF in this model's label ids, read from CRFsuite's dump;
        a label CRFsuite never saw is -inf."""
        if self._potentials is None:
            dump = self.tagger().info()
            L = len(self.labels)
            index = self.labels.index
            rows = {a: n for n, a in enumerate(dump.attributes)}
            state = np.zeros((len(rows) + 1, L))       # the last row: unknown attributes
            state[:, [index[y] for y in self.labels.symbols if y not in dump.labels]] = -np.inf
            for (a, y), w in dump.state_features.items():
                state[rows[a], index[y]] = w
            trans = np.zeros((L, L))
            for (y0, y1), w in dump.transitions.items():
                trans[index[y0], index[y1]] = w
            self._potentials = rows, state, trans
        return self._potentials

    def nbest(self, seqs, k):
        """The k best label sequences of each word (first-order k-best list Viterbi over
        the CRF's potentials; the first is `decode`'s): [[(score, label ids)]], the score
        the sequence's log-probability log p(y | x) under the CRF."""
        from ..kbest import chain_log_partition, kbest_viterbi

        rows, state, trans = self.potentials()
        w, n = self.info["window"], self.info.get("ngram", 3)
        unknown = len(rows)
        out = []
        for x in seqs:
            feats = features([self.observations.symbols[i] for i in x], w, n)
            emit = np.stack([state[[rows.get(a, unknown) for a in f]].sum(axis=0)
                             for f in feats])
            log_z = chain_log_partition(emit, trans)
            out.append([(score - log_z, labels) for score, labels in kbest_viterbi(emit, trans, k)])
        return out

    def describe(self):
        import json

        attrs = getattr(self, "attrs", {})
        return {"kind": "model", "model_type": MODEL_TYPE, "created_by": attrs.get("created_by"),
                "options": json.loads(attrs.get("options", "{}")),
                "num_labels": len(self.labels), "num_observations": len(self.observations),
                **{k: self.info[k] for k in ("window", "ngram", "algorithm", "c1", "c2", "iters",
                                            "train_utts")
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
    trainer = pycrfsuite.Trainer(algorithm=opts.algorithm, verbose=False)
    syms = corpus.label_table.symbols
    for x, y in progress(zip(corpus.obs, corpus.labels), desc="features", total=len(corpus)):
        trainer.append(features([corpus.obs_table.symbols[i] for i in x], opts.window,
                                opts.ngram), [syms[i] for i in y])
    params = {"max_iterations": opts.iters, "feature.possible_transitions": True}
    if opts.algorithm == "lbfgs":
        params.update(c1=opts.c1, c2=opts.c2)
    trainer.set_params(params)
    fd, tmp = tempfile.mkstemp(suffix=".crfsuite")
    os.close(fd)
    try:
        trainer.train(tmp)
        with open(tmp, "rb") as f:
            blob = f.read()
    finally:
        os.unlink(tmp)
    log.info("CRF trained on %d words (%s, %d iterations at most)", len(corpus),
             opts.algorithm, opts.iters)
    info = {"estimator": "crf", **dataclasses.asdict(opts), "train_utts": len(corpus)}
    return CrfModel(corpus.label_table, corpus.obs_table, blob, info)
