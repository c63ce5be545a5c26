"""What rhmmtk's scikit-learn estimators share (every family's estimators derive from
`SequenceEstimator`):

- scikit-learn's conventions: hyperparameters are constructor arguments stored unchanged,
  learned state is in attributes ending in `_` (set by fit or load only, so
  `check_is_fitted` works), `fit` returns self, `NotFittedError` before fit;
- one validation path with the command line: each hyperparameter is checked by the click
  type of the option of the `train-*` command it stands for (read from the command
  itself), so the value the command refuses is refused here, with the same message, as
  a ValueError (`InvalidInput`: an InputError that is also a ValueError);
- input checks that name the argument and the sequence (`check_sequences`,
  `check_labels`, `check_frames`: rhmmtk/estimator_checks.py, with `InvalidInput`);
- model files: `save` records the hyperparameters in the file's provenance and `load`
  restores them (from the command's recorded options for files the commands wrote);
- sequence-aware metrics and scorers for GridSearchCV / cross_val_score
  (`per_position_accuracy`, `phone_error_rate`, `accuracy_scorer`, `per_scorer`:
  rhmmtk/estimator_scorers.py).
"""
import contextlib
import inspect
import json
import os

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from .errors import InputError
from .estimator_checks import (InvalidInput, check_frames, check_labels, check_sequences,
                               is_id_array)
from .estimator_scorers import per_position_accuracy


@contextlib.contextmanager
def user_errors(names=None):
    """Raise the library's InputErrors as InvalidInput; `names` maps the paths of files the
    API wrote for a library call (its temporary archives) to the argument they hold."""
    names = {os.fspath(k): v for k, v in (names or {}).items()}
    try:
        yield
    except InvalidInput:
        raise
    except InputError as e:
        raise InvalidInput(e.problem, names.get(e.path, e.path), e.utt) from None


# --- hyperparameters: the command line's click types ---------------------------------------

def option_types(*commands):
    """{parameter name: (its option string, click type)} of `rhmmtk` commands, the first
    command's declaration winning."""
    from .cli import cli

    out = {}
    for name in reversed(commands):
        for p in cli.get_command(None, name).params:
            out[p.name] = ("/".join(p.opts), p.type)
    return out


def check_value(type_, value, name, opt):
    """`value` converted by the command's click type as the command converts its text, or
    InvalidInput with the command's message, naming the argument (and the option)."""
    import click

    if isinstance(value, (np.generic,)):
        value = value.item()
    text = value if isinstance(value, str) else str(value)
    if isinstance(type_, click.types.BoolParamType) and not isinstance(value, (bool, str)):
        text = repr(value)                # 1 and 0 are not booleans here (nor on the CLI: yes)
    try:
        return type_.convert(text, None, None)
    except click.BadParameter as e:
        raise InvalidInput(f"invalid {name} ({opt}): {e.message}") from None


def _rebuilt(v):
    """A recorded parameter value, estimators rebuilt (see _jsonable)."""
    import importlib

    if isinstance(v, dict) and set(v) == {"estimator", "params"}:
        module, name = v["estimator"].split(":")
        cls = getattr(importlib.import_module(module), name)
        return cls(**{k: _rebuilt(p) for k, p in v["params"].items()})
    return v


def _jsonable(v):
    from .symbols import SymbolTable

    if isinstance(v, SymbolTable):
        return list(v.symbols)
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    if isinstance(v, np.generic):
        return v.item()
    if hasattr(v, "text"):                # a Templates object: its config text
        return v.text
    if isinstance(v, BaseEstimator):      # an estimator parameter (an init): rebuilt by load
        return {"estimator": f"{type(v).__module__}:{type(v).__name__}",
                "params": {k: _jsonable(p) for k, p in v.get_params(deep=False).items()}}
    try:
        json.dumps(v)
        return v
    except TypeError:
        return str(v)


class SequenceEstimator(BaseEstimator):
    """The base of every rhmmtk estimator. A subclass sets:

    _command      the `rhmmtk` command it is (its options validate the hyperparameters)
    _also         other commands declaring some of them (make-obs's --context)
    _renamed      {hyperparameter: the command's parameter name} where they differ
    _model_type   the MODEL_TYPES key of its model files
    """

    _command = None
    _also = ()
    _renamed = {}
    _model_type = None

    # --- hyperparameters ------------------------------------------------------------------
    @classmethod
    def _defaults(cls):
        return {n: p.default for n, p in inspect.signature(cls.__init__).parameters.items()
                if n != "self"}

    def _checked_params(self):
        """Every hyperparameter, validated as the command validates its option and
        converted as it converts it. None stands for the command's default where the
        constructor's default is None, and is refused where it is not."""
        types = option_types(self._command, *self._also)
        defaults = self._defaults()
        out = {}
        for name, value in self.get_params(deep=False).items():
            key = self._renamed.get(name, name)
            if value is None:
                if defaults[name] is not None and key in types:
                    raise InvalidInput(f"invalid {name} ({types[key][0]}): None is not "
                                       "allowed")
                out[name] = None
            elif key in types:
                out[name] = check_value(types[key][1], value, name, types[key][0])
            else:
                out[name] = value
        if out.get("unknown", "error") not in UNKNOWN_POLICIES:
            raise InvalidInput(f"invalid unknown: {out['unknown']!r} is not one of "
                               f"{', '.join(map(repr, UNKNOWN_POLICIES))}")
        return out

    # --- fitted state -----------------------------------------------------------------------
    def _fitted(self):
        """The fitted model, or NotFittedError (a ValueError and an AttributeError)."""
        if "model_" not in vars(self):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit() "
                                 "or load() first")
        return self.model_

    def __sklearn_is_fitted__(self):
        return "model_" in vars(self)

    @property
    def classes_(self):
        """The label symbols, in the order of predict_marginals' columns."""
        return list(self._fitted().labels.symbols)

    def _frequent(self):
        """The symbol an unseen observation symbol is read as: None under unknown='error'
        (unseen symbols are errors, as make-obs --symbols makes them), the training's most
        frequent symbol under 'frequent'."""
        if self._checked_params()["unknown"] == "error":
            return None
        if getattr(self, "frequent_observation_", None) is None:
            raise InvalidInput("unknown='frequent' needs the training's most frequent symbol, "
                               "which this model file does not record (the command wrote "
                               "it): use unknown='error'")
        return self.frequent_observation_

    # --- scoring --------------------------------------------------------------------------
    def score(self, X, y):
        """Per-position label accuracy of predict(X) against y."""
        return per_position_accuracy(y, self.predict(X))

    # --- model files ----------------------------------------------------------------------
    def _recorded_options(self):
        """The command's options as the command records them (a family may add more)."""
        return {}

    def _record(self):
        """What `save` records in the file's provenance: the command's options, and the
        API's own record (class, hyperparameters, the most frequent training symbol)."""
        params = {k: _jsonable(v) for k, v in self.get_params(deep=False).items()}
        return {**self._recorded_options(), "api": type(self).__name__, "params": params,
                "frequent_observation": getattr(self, "frequent_observation_", None)}

    def save(self, path):
        """Write the model file the command writes (`rhmmtk decode`, `info` read it), with
        the hyperparameters in its provenance for `load`."""
        from .provenance import record

        model = self._fitted()
        with user_errors():
            model.save(path, record(self._record()))
        return path

    @classmethod
    def load(cls, path):
        """An estimator holding the model in `path`, written by the API or by the command,
        with the hyperparameters it was trained with."""
        from .io.model_file import ModelFile
        from .models import load_model

        with user_errors():
            model = load_model(path, expect=cls._model_type)
            with ModelFile(path, cls._model_type) as mf:
                recorded = json.loads(mf.attrs.get("options") or "{}")
                info = mf.info
        est = cls(**cls._params_from_file(recorded, info, model))
        est._set_model(model)
        if recorded.get("frequent_observation") is not None:
            est.frequent_observation_ = recorded["frequent_observation"]
        return est

    @classmethod
    def _params_from_file(cls, recorded, info, model):
        """The hyperparameters a model file records: the API's own record, else the
        command's options (provenance, then the model's info) under the API's names."""
        names = cls._defaults()
        if recorded.get("api") == cls.__name__ and isinstance(recorded.get("params"), dict):
            return {k: _rebuilt(v) for k, v in recorded["params"].items() if k in names}
        by_cli = {**recorded, **(info.get("options") or {})}
        back = {v: k for k, v in cls._renamed.items()}
        return {back.get(k, k): v for k, v in by_cli.items() if back.get(k, k) in names}

    def _set_model(self, model):
        self.model_ = model


# --- symbols never seen in training ---------------------------------------------------------

UNKNOWN_POLICIES = ("error", "frequent")


def replace_unknown(tokens, table, frequent, i):
    """`tokens` with every symbol `table` does not know read as `frequent` (the
    unknown='frequent' policy; with 'error' the encoder names the first unseen one)."""
    return [t if t in table else frequent for t in tokens]


# --- estimators over a codes archive and an alignment -----------------------------------------

def option_params(options_class, params):
    """`options_class` (a command's option dataclass) built from the checked
    hyperparameters of the same names."""
    import dataclasses

    return options_class(**{f.name: params[f.name] for f in dataclasses.fields(options_class)
                            if f.name in params})


def _tokens(X, name):
    """Symbol sequences as lists of strings (these trainers take symbols, not ids)."""
    out = []
    for i, s in enumerate(X):
        if is_id_array(s):
            raise InvalidInput(f"{name}[{i}]: give symbols (str or a list of str); this "
                               "estimator learns its table from them")
        toks = list(s) if isinstance(s, str) else [str(t) for t in s]
        if " ".join(toks).split() != toks:          # one pass in C; the culprit only then
            t = next(t for t in toks if t.split() != [t])
            raise InvalidInput(f"{name}[{i}]: symbol {t!r} is empty or holds white space "
                               "(an alignment line could not hold it)")
        out.append(toks)
    return out


class CodesTagger(SequenceEstimator):
    """An estimator over a trainer that reads a codes archive of single symbols and an
    alignment (train-hkz, train-maxmargin, train-crf): `fit` writes X as the one archive
    `make-obs --context 0 --write-symbols` writes (the table learned on X) and y as the
    alignment, in a temporary directory, and calls the command's library function, so the
    same data, options and seed give the command's model. `predict` encodes X with the
    model's table (unseen symbols: the `unknown` policy) and decodes as `rhmmtk decode`.

    A subclass sets `_command`, `_model_type`, `_options_class` (the command's option
    dataclass, whose fields are the hyperparameters besides `unknown`) and `_train(obs,
    ali, opts, dev)` (dev: (obs, ali) paths or None) returning the model."""

    _options_class = None

    def _train(self, obs, ali, opts, dev):
        raise NotImplementedError

    def _options(self):
        return option_params(self._options_class, self._checked_params())

    def _recorded_options(self):
        from .options import as_dict

        return as_dict(self._options())

    def fit(self, X, y, dev=None):
        """Train on symbol sequences X with one label per symbol in y; `dev` = (X_dev,
        y_dev) for the trainers that select an iteration on dev."""
        import tempfile

        from .frontend.observations import learn_vocabulary

        opts = self._options()
        X = check_sequences(X)
        y = check_labels(X, y)
        toks, labels = _tokens(X, "X"), _tokens(y, "y")
        if dev is not None:
            if not isinstance(dev, (tuple, list)) or len(dev) != 2:
                raise InvalidInput("dev must be a pair (X_dev, y_dev)")
            dev_x = check_sequences(dev[0], "dev X")
            dev_y = _tokens(check_labels(dev_x, dev[1], "dev y"), "dev y")
            dev_x = _tokens(dev_x, "dev X")
        with user_errors():
            table = learn_vocabulary(toks, 0, 1)
        frequent = _most_common(toks)
        with tempfile.TemporaryDirectory(prefix="rhmmtk-api-") as d:
            paths = {f"{d}/x.h5": "X", f"{d}/y.ali": "y", f"{d}/dev_x.h5": "dev X",
                     f"{d}/dev_y.ali": "dev y"}
            with user_errors(paths):
                _write_codes(f"{d}/x.h5", toks, table)
                _write_alignment(f"{d}/y.ali", labels)
                dev_paths = None
                if dev is not None:
                    policy = frequent if self._checked_params()["unknown"] != "error" else None
                    _write_codes(f"{d}/dev_x.h5", self._known(dev_x, table, policy), table)
                    _write_alignment(f"{d}/dev_y.ali", dev_y)
                    dev_paths = (f"{d}/dev_x.h5", f"{d}/dev_y.ali")
                model = self._train(f"{d}/x.h5", f"{d}/y.ali", opts, dev_paths)
        self._set_model(model)
        self.frequent_observation_ = frequent
        return self

    def _known(self, toks, table, frequent):
        """Symbol sequences with the unseen symbols handled by the `unknown` policy."""
        if frequent is None:
            return toks
        return [replace_unknown(t, table, frequent, i) for i, t in enumerate(toks)]

    def _encode(self, X):
        from .frontend.observations import symbolize

        table = self._fitted().observations
        toks = self._known(_tokens(check_sequences(X), "X"), table, self._frequent())
        with user_errors():
            return [table.ids(symbolize(t, table, 0, "X", i)).astype(np.int64)
                    for i, t in enumerate(toks)]

    def _decode(self, X):
        model = self._fitted()
        seqs = self._encode(X)
        options = model.decode_options() if model.decode_options is not None else None
        with user_errors():
            return model.decode(seqs, options)

    def predict(self, X):
        """The label sequence of every symbol sequence in X (`rhmmtk decode`)."""
        sym = self._fitted().labels.symbols
        return [[sym[i] for i in lab] for lab in self._decode(X).labels]



def _most_common(toks):
    from collections import Counter

    return Counter(t for s in toks for t in s).most_common(1)[0][0]


def _write_codes(path, toks, table):
    """The codes archive make-obs writes (context 0, the given table)."""
    from .frontend.observations import symbolize
    from .io.archive import ArchiveWriter
    from .provenance import record

    with ArchiveWriter(path, "codes", record({"context": 0, "min_count": 1}),
                       {"observations": table},
                       {"observation_fingerprint": table.fingerprint()}) as w:
        for i, t in enumerate(toks):
            w.add(str(i), table.ids(symbolize(t, table, 0, path, str(i)), path, str(i)))


def _write_alignment(path, labels):
    from .io.text import write_alignment

    write_alignment(path, {str(i): s for i, s in enumerate(labels)})


# --- estimators over a features archive (the continuous-density and HCRF families) ------------

def _labels_of(y, name):
    """One label per item (segments) as strings without white space."""
    out = []
    for i, s in enumerate(y):
        s = s.item() if isinstance(s, np.generic) else s
        if not isinstance(s, str) or not s or any(c.isspace() for c in s):
            raise InvalidInput(f"{name}[{i}]: a class label is a non-empty str without white "
                               f"space, not {s!r}")
        out.append(s)
    return out


class FramesEstimator(SequenceEstimator):
    """An estimator over a trainer that reads a features archive (`rhmmtk feats`: float32
    frames) with a frame alignment or a segment list: `fit` writes X (a list of (frames,
    dim) arrays) as that one archive, and y as the alignment (`_targets = "frames"`: a label
    per frame) or as segments (`"segments"`: a class label per X[i], each X[i] one
    segment), in a temporary directory, and calls the command's library function, so the
    same data and options give the command's model. Frames are stored as float32, as the
    archives of `rhmmtk feats` store them, and decoded as float32 too.

    A subclass sets `_command`, `_model_type`, `_options_classes` (the command's option
    dataclasses), `_decode_class` (the model's decode options, built from the
    hyperparameters of the same names) and `_train(feats, labels, opts, dev, tmp, X, y)`
    (paths of the written files, the built options, dev's paths or None, the temporary
    directory, and the checked data)."""

    _options_classes = ()
    _decode_class = None
    _targets = "frames"

    def _train(self, feats, labels, opts, dev, tmp, X, y):
        raise NotImplementedError

    def _options(self):
        p = self._checked_params()
        return tuple(option_params(c, p) for c in self._options_classes)

    def _recorded_options(self):
        from .options import as_dict

        return {k: v for o in self._options() for k, v in as_dict(o).items()}

    def _check_xy(self, X, y, name="X", yname="y"):
        X = check_frames(X, name)
        if self._targets == "frames":
            y = _tokens(check_labels(X, y, yname), yname)
        else:
            if not hasattr(y, "__len__") or isinstance(y, str) or len(y) != len(X):
                raise InvalidInput(f"{len(X)} segments in {name} but "
                                   f"{len(y) if hasattr(y, '__len__') else 'no'} labels in "
                                   f"{yname}")
            y = _labels_of(y, yname)
        return X, y

    def _write(self, path, X, y):
        """The features archive and the alignment or segment list of (X, y)."""
        from .io.archive import ArchiveWriter
        from .io.text import open_output
        from .provenance import record

        with ArchiveWriter(f"{path}.h5", "features", record({}),
                           attrs={"dim": X[0].shape[1]}) as w:
            for i, x in enumerate(X):
                w.add(str(i), x.astype(np.float32))
        if self._targets == "frames":
            _write_alignment(f"{path}.ali", y)
        else:
            with open_output(f"{path}.ali") as f:
                for i, (x, lab) in enumerate(zip(X, y)):
                    f.write(f"{i} 0 {len(x)} {lab}\n")
        return f"{path}.h5", f"{path}.ali"

    def fit(self, X, y, dev=None):
        """Train on X (a list of (frames, dim) arrays) and y; `dev` = (X_dev, y_dev) for
        the trainers that select an iteration on dev."""
        import tempfile

        opts = self._options()
        X, y = self._check_xy(X, y)
        if dev is not None:
            if not isinstance(dev, (tuple, list)) or len(dev) != 2:
                raise InvalidInput("dev must be a pair (X_dev, y_dev)")
            dev = self._check_xy(*dev, "dev X", "dev y")
        with tempfile.TemporaryDirectory(prefix="rhmmtk-api-") as d:
            names = {f"{d}/train.h5": "X", f"{d}/train.ali": "y", f"{d}/dev.h5": "dev X",
                     f"{d}/dev.ali": "dev y"}
            with user_errors(names):
                train = self._write(f"{d}/train", X, y)
                dev_paths = self._write(f"{d}/dev", *dev) if dev is not None else None
                model = self._train(*train, opts, dev_paths, d, X, y)
        self._set_model(model)
        return self

    def _inputs(self, X):
        """X as the decoder's inputs: float32 frames, as read from an archive."""
        model = self._fitted()
        return [x.astype(np.float32) for x in check_frames(X, "X", model.dim)]

    def _decode(self, X):
        model = self._fitted()
        seqs = self._inputs(X)
        p = self._checked_params()
        options = option_params(self._decode_class, p) if self._decode_class else None
        with user_errors():
            return model.decode(seqs, options)

    def predict(self, X):
        """Frame labels of every X[i] (`rhmmtk decode`)."""
        sym = self._fitted().labels.symbols
        return [[sym[i] for i in lab] for lab in self._decode(X).labels]


def init_model_path(init, X, y, tmp, default):
    """The model file a trainer starts from: `init` itself when it is a path, else the
    model of `init` (an estimator; `default` when None) fitted on (X, y) and saved in
    `tmp`. Returns (path, the fitted estimator or None)."""
    from sklearn.base import clone

    if isinstance(init, (str, os.PathLike)):
        return os.fspath(init), None
    est = clone(default if init is None else init).fit(X, y)
    return est.save(f"{tmp}/init.h5"), est
