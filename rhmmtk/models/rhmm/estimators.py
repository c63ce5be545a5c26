"""A scikit-learn-style Python API: R-HMM taggers with fit / predict / score / save / load.

    from rhmmtk import SpectralRHMM
    words = [list("cat"), list("dog")]              # observation sequences (symbols)
    phones = [["k", "@", "t"], ["d", "c", "g"]]     # one label per observation
    model = SpectralRHMM(m=4, smooth=30).fit(words, phones)
    model.predict([list("cog")])                    # -> [['k', 'c', 'g']]
    model.save("spectral.h5")                       # `rhmmtk decode spectral.h5 ...` reads it

A sequence is a list (or tuple) of symbols (strings), a `str` (its characters), or a 1-d
int array of ids into `observation_symbols` / `label_symbols` (a list of symbols, a
SymbolTable or a `symbol id` file). Observations become observation symbols exactly as
`rhmmtk make-obs` makes them (`context`, `min_count`: windows of neighbouring symbols with
backoff), labels are numbered in sorted order as `rhmmtk featurize`/`train-em` number them,
and training calls the same library functions as the command line, so the same data and
seed give the same model as `make-obs` + `featurize` + `train-spectral` (or `train-em`),
and a model saved here is the file those commands write (and `load` reads theirs).
"""
import os

import numpy as np

from ...errors import InputError
from ...estimator import SequenceEstimator, replace_unknown, user_errors
from ...estimator_checks import check_labels, check_sequences, is_id_array
from ...threads import blas_threads
from ...symbols import SymbolTable

# A small default template set (rhmmtk-formats(5)); pass `templates=` for a recipe's.
DEFAULT_TEMPLATES = """\
future   x[0]
future   a[+1]
future   x[+1]
past     a[-1]
past     x[-1]
present  x[0]
destiny  a[-1]
destiny  a[+1]
destiny  x[-1]
destiny  x[+1]
"""


def _given_table(seqs, symbols, what):
    """(the given table or None, token lists) of sequences that are all symbol sequences or
    all arrays of ids; arrays of ids need the given table."""
    given = _table(symbols, what)
    toks = [_as_tokens(s, what, i) for i, s in enumerate(seqs)]
    if all(t is None for t in toks):
        if given is None:
            raise InputError(f"{what}s are arrays of ids: give {what}_symbols")
    elif any(t is None for t in toks):
        raise InputError(f"{what}s mix symbol sequences and arrays of ids")
    return given, toks


def _table(symbols, what):
    if symbols is None or isinstance(symbols, SymbolTable):
        return symbols
    if isinstance(symbols, (str, os.PathLike)):
        return SymbolTable.read(symbols)
    return SymbolTable(list(symbols))


def _as_tokens(seq, what, i):
    if isinstance(seq, str):
        return list(seq)
    if isinstance(seq, np.ndarray) and seq.dtype.kind in "iu":
        return None                   # ids: mapped by the caller
    toks = [str(s) for s in seq]
    if not toks:
        raise InputError(f"{what} sequence {i} is empty")
    return toks


def _ids(seq, table, what, i):
    a = np.asarray(seq, dtype=np.int64)
    if a.ndim != 1 or not len(a):
        raise InputError(f"{what} sequence {i}: expected a non-empty 1-d array of ids")
    if table is None:
        raise InputError(f"{what} sequence {i} is an array of ids: give {what}_symbols")
    if a.min() < 0 or a.max() >= len(table):
        raise InputError(f"{what} sequence {i}: id out of range 0..{len(table) - 1}")
    return a


class _RHMMEstimator(SequenceEstimator):
    """What the R-HMM estimators share: symbol handling, decoding, scoring, model files.
    Hyperparameters are validated by the click types of the command's options
    (rhmmtk.estimator); `unknown` is the policy for observation symbols never seen in
    training: "error" (make-obs --symbols: a ValueError naming the sequence and position)
    or "frequent" (read as the most frequent training symbol)."""

    _also = ("make-obs", "decode")
    _model_type = "rhmm"

    def __init__(self, context=0, min_count=1, observation_symbols=None, label_symbols=None,
                 beam=None, batch_mb=None, unknown="error"):
        self.context = context
        self.min_count = min_count
        self.observation_symbols = observation_symbols
        self.label_symbols = label_symbols
        self.beam = beam
        self.batch_mb = batch_mb
        self.unknown = unknown

    # --- data -----------------------------------------------------------------------------
    def _observation_table(self, observations):
        """Learn the observation table on training sequences (rhmmtk make-obs
        --write-symbols), or use the given one."""
        from ...frontend.observations import learn_vocabulary

        given, toks = _given_table(observations, self.observation_symbols, "observation")
        return given if given is not None else learn_vocabulary(toks, self.context,
                                                                self.min_count)

    def _encode_obs(self, observations, table, context, frequent=None):
        from ...frontend.observations import symbolize

        out = []
        for i, s in enumerate(observations):
            toks = _as_tokens(s, "observation", i)
            if toks is None:
                out.append(_ids(s, table, "observation", i))
            else:
                if frequent is not None:
                    toks = replace_unknown(toks, table, frequent, i)
                out.append(table.ids(symbolize(toks, table, context, None, f"#{i}"),
                                     None, f"#{i}").astype(np.int64))
        return out

    def _label_table(self, labels):
        given, toks = _given_table(labels, self.label_symbols, "label")
        if given is not None:
            return given
        return SymbolTable(sorted({s for t in toks for s in t}))   # as rhmmtk.training_data numbers them

    def _encode_labels(self, labels, table, strict=True):
        out = []
        for i, s in enumerate(labels):
            toks = _as_tokens(s, "label", i)
            if toks is None:
                out.append(_ids(s, table, "label", i))
            elif strict:
                out.append(table.ids(toks, None, f"#{i}").astype(np.int64))
            else:                      # dev labels the model never saw count as errors
                out.append(np.array([table.index.get(t, -1) for t in toks], dtype=np.int64))
        return out

    def _corpus(self, observations, labels):
        from ...training_data import Corpus

        observations = check_sequences(observations)
        labels = check_labels(observations, labels)
        obs_table = self._observation_table(observations)
        label_table = self._label_table(labels)
        obs = self._encode_obs(observations, obs_table, self.context)
        labs = self._encode_labels(labels, label_table)
        for i, (x, a) in enumerate(zip(obs, labs)):
            if len(x) != len(a):
                raise InputError(f"sequence {i}: {len(a)} labels but {len(x)} observations")
        keys = [str(i) for i in range(len(obs))]
        self.frequent_observation_ = _most_frequent(obs, obs_table)
        return Corpus(keys, labs, obs, label_table, obs_table)

    def _dev_scorer(self, corpus, dev):
        """Accuracy of a model on dev (observations, labels): EM keeps the best iteration."""
        from .decoder import DEFAULT_BEAM, decode

        if not isinstance(dev, (tuple, list)) or len(dev) != 2:
            raise InputError("dev must be a pair (X_dev, y_dev)")
        dev_obs = check_sequences(dev[0], "dev X")
        dev_labels = check_labels(dev_obs, dev[1], "dev y")
        obs = self._encode_obs(dev_obs, corpus.obs_table, self.context,
                               self._frequent())
        ref = np.concatenate(self._encode_labels(dev_labels, corpus.label_table, strict=False))

        def score(rhmm):
            op = rhmm.operators(corpus.label_table, corpus.obs_table)
            hyp, _, _ = decode(op, obs, beam=DEFAULT_BEAM)
            return float(np.mean(np.concatenate(hyp) == ref))

        return score

    # --- decoding --------------------------------------------------------------------------
    def _decode(self, observations):
        from .operators import RhmmDecodeOptions

        m = self._fitted()
        from ...frontend.observations import context_of

        p = self._checked_params()
        observations = check_sequences(observations)
        with user_errors():
            seqs = self._encode_obs(observations, m.observations, context_of(m.observations),
                                    self._frequent())
        defaults = RhmmDecodeOptions()
        opts = RhmmDecodeOptions(beam=defaults.beam if p.get("beam") is None else p["beam"],
                                 batch_mb=defaults.batch_mb if p.get("batch_mb") is None
                                 else p["batch_mb"])
        with blas_threads():
            return m.decode(seqs, opts)


    def predict(self, observations):
        """The label sequence (list of label symbols) of every observation sequence: the
        max-marginal decoder of `rhmmtk decode`."""
        out = self._decode(observations)
        sym = self.model_.labels.symbols
        return [[sym[i] for i in lab] for lab in out.labels]

    def predict_marginals(self, observations):
        """Per sequence, an (N, labels) array of label posteriors; columns in classes_ order
        (`rhmmtk decode --posteriors`)."""
        return self._decode(observations).posteriors

    def score(self, observations, labels):
        """Per-position label accuracy on (observations, labels)."""
        from ...estimator_scorers import per_position_accuracy

        sym = self._fitted().labels.symbols
        observations = check_sequences(observations)
        labels = check_labels(observations, labels)
        ref = [[sym[j] for j in r] if is_id_array(r) else r for r in labels]
        return per_position_accuracy(ref, self.predict(observations))

    # --- model files -----------------------------------------------------------------------
    def _recorded_options(self):
        return self._options()

    @classmethod
    def _params_from_file(cls, recorded, info, model):
        from ...frontend.observations import context_of

        params = super()._params_from_file(recorded, info, model)
        params.setdefault("context", context_of(model.observations))
        if "templates" in cls._defaults() and info.get("templates"):
            params["templates"] = info["templates"]     # the text, not a path it was read from
        return params

    @property
    def operators_(self):
        """The fitted model (rhmmtk.models.rhmm.operators.Operators)."""
        return self._fitted()


class SpectralRHMM(_RHMMEstimator):
    """The spectral estimator (Stratos et al. 2013, figure 4): `rhmmtk train-spectral`.

    m: hidden states per label; smooth: the tensor smoothing constant C; templates: a
    template config (text, a path, or a rhmmtk.models.rhmm.templates.Templates; default
    DEFAULT_TEMPLATES); the remaining options are rhmmtk.models.rhmm.spectral.SvdOptions and
    EstimateOptions fields (their defaults when None)."""

    def __init__(self, m=24, smooth=None, templates=None, context=0, min_count=1,
                 observation_symbols=None, label_symbols=None, kappa=None,
                 feature_scaling=None, rank_tol=None, seed=None, smooth_emission=None,
                 emission_floor=None, max_cond=None, workers=None, beam=None, batch_mb=None,
                 mean_direction=None, ridge=None, unknown="error"):
        super().__init__(context, min_count, observation_symbols, label_symbols, beam,
                         batch_mb, unknown)
        self.m, self.smooth, self.templates = m, smooth, templates
        self.mean_direction = mean_direction
        self.kappa, self.feature_scaling, self.rank_tol, self.seed = (kappa, feature_scaling,
                                                                      rank_tol, seed)
        self.smooth_emission, self.emission_floor, self.max_cond = (smooth_emission,
                                                                    emission_floor, max_cond)
        self.workers, self.ridge = workers, ridge

    _command = "train-spectral"

    def _svd_est(self):
        import dataclasses

        from .spectral import EstimateOptions, SvdOptions

        p = self._checked_params()

        def build(cls):
            kw = {f.name: p[f.name] for f in dataclasses.fields(cls)
                  if p.get(f.name) is not None}
            return cls(**kw)

        return build(SvdOptions), build(EstimateOptions)

    def _templates(self):
        from .templates import Templates

        t = self.templates
        if t is None:
            return Templates(DEFAULT_TEMPLATES, "<default templates>")
        if isinstance(t, Templates):
            return t
        if isinstance(t, os.PathLike) or (isinstance(t, str) and "\n" not in t
                                          and os.path.isfile(t)):
            return Templates.read(t)
        return Templates(str(t))

    def _options(self):
        import dataclasses

        svd, est = self._svd_est()
        return {**dataclasses.asdict(svd), **dataclasses.asdict(est)}

    def fit(self, observations, labels, dev=None):
        """Estimate from training sequences. `dev` is accepted for the common interface and
        unused (the spectral estimate has no iterations to choose among)."""
        with blas_threads(), user_errors():
            return self._fit(observations, labels)

    def _fit(self, observations, labels):
        from .spectral import BLOCK_POSITIONS, estimate, recorded_options

        svd, est = self._svd_est()
        corpus = self._corpus(observations, labels)
        tpl = self._templates()
        l, n = len(corpus.label_table), len(corpus.obs_table)
        F = np.concatenate(tpl.featurize_many(corpus.labels, corpus.obs, l, n))
        op = estimate(corpus, F, tpl.view_slices(), svd.m, est.smooth, svd.scaling,
                      svd.rank_tol, est.max_cond, svd.seed, est.smooth_emission,
                      est.emission_floor, BLOCK_POSITIONS, svd.workers, svd.mean_direction,
                      est.ridge)
        opts = recorded_options(svd, est)
        op.info.update(options=opts, templates=tpl.text, template_fingerprint=tpl.fingerprint(),
                       train_utts=len(corpus), train_positions=corpus.num_positions)
        self.model_ = op
        return self


class EmRHMM(_RHMMEstimator):
    """EM for the R-HMM from a seeded random start: `rhmmtk train-em`. With
    dev=(observations, labels), every iteration is scored on dev and the best is kept
    (the paper's protocol); history_ holds the per-iteration log. m=1, iters=0 is the
    supervised HMM. emission_floor: train-em's --emission-floor (decode with every
    emission interpolated with eps p(x))."""

    def __init__(self, m=4, iters=50, seed=0, floor=1e-3, noise=0.5, context=0, min_count=1,
                 observation_symbols=None, label_symbols=None, beam=None, batch_mb=None,
                 dev_every=1, patience=0, emission_floor=0.0, unknown="error"):
        super().__init__(context, min_count, observation_symbols, label_symbols, beam,
                         batch_mb, unknown)
        self.m, self.iters, self.seed, self.floor, self.noise = m, iters, seed, floor, noise
        self.dev_every, self.patience = dev_every, patience
        self.emission_floor = emission_floor

    _command = "train-em"

    def _options(self):
        p = self._checked_params()
        return {k: p[k] for k in ("m", "iters", "seed", "floor", "noise", "dev_every",
                                  "patience", "emission_floor")}

    def fit(self, observations, labels, dev=None):
        with blas_threads(), user_errors():
            return self._fit(observations, labels, dev)

    def _fit(self, observations, labels, dev):
        from .em import train

        p = self._options()
        corpus = self._corpus(observations, labels)
        score = self._dev_scorer(corpus, dev) if dev is not None else None
        best, hist, best_it = train(corpus, p["m"], p["iters"], p["seed"], p["floor"],
                                    p["noise"], score=score, dev_every=p["dev_every"],
                                    patience=p["patience"],
                                    emission_floor=p["emission_floor"])
        info = {"estimator": "em" if p["m"] > 1 or p["iters"] > 0 else "hmm",
                "options": p, "best_iteration": best_it, "history": hist,
                "m": [p["m"]] * len(corpus.label_table), "train_utts": len(corpus),
                "train_positions": corpus.num_positions}
        self.model_ = best.operators(corpus.label_table, corpus.obs_table, info)
        self.history_ = hist
        self.best_iteration_ = best_it
        return self


class UnigramTagger(_RHMMEstimator):
    """The UNIGRAM baseline, argmax_a p(a | x) per position: `rhmmtk train-unigram`."""

    _command = "train-unigram"

    def __init__(self, context=0, min_count=1, observation_symbols=None, label_symbols=None,
                 unknown="error"):
        super().__init__(context, min_count, observation_symbols, label_symbols,
                         unknown=unknown)

    def _options(self):
        return {}

    def fit(self, observations, labels, dev=None):
        """Count from training sequences (`dev` is accepted and unused)."""
        from .em import unigram_operators

        self._checked_params()
        with user_errors():
            corpus = self._corpus(observations, labels)
        info = {"estimator": "unigram", "m": [1] * len(corpus.label_table),
                "train_utts": len(corpus), "train_positions": corpus.num_positions}
        self.model_ = unigram_operators(corpus, info)
        return self


def _most_frequent(seqs, table):
    """The most frequent single symbol (no window) of encoded training sequences."""
    from ...frontend.observations import SEP

    counts = np.bincount(np.concatenate(seqs), minlength=len(table))
    single = np.array([SEP not in s for s in table.symbols])
    counts[~single] = -1
    return table.symbols[int(np.argmax(counts))]
