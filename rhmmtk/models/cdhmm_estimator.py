"""`MlCdhmm` and `LargeMarginCdhmm`: train-cdhmm and train-largemargin from Python,
scikit-learn estimators (rhmmtk.estimator.FramesEstimator: the commands' library functions
on the one features archive they read)."""
from ..estimator import FramesEstimator, init_model_path
from .cdhmm import CdhmmDecodeOptions as _D
from .cdhmm_train import CdhmmOptions as _O
from .largemargin import LargeMarginOptions as _L


class MlCdhmm(FramesEstimator):
    """ML continuous-density phone HMMs: `rhmmtk train-cdhmm` (states, mixtures, iters,
    update, var_floor, lm_smooth), decoded as `rhmmtk decode` decodes them (phone-loop
    Viterbi with lm_scale and insertion_penalty). X: a list of (frames, dim) feature
    arrays, y: one phone label per frame; predict gives a phone label per frame."""

    _command = "train-cdhmm"
    _also = ("decode",)
    _model_type = "cdhmm"
    _options_classes = (_O,)
    _decode_class = _D

    def __init__(self, states=_O.states, mixtures=_O.mixtures, iters=_O.iters,
                 update=_O.update, var_floor=_O.var_floor, lm_smooth=_O.lm_smooth,
                 lm_scale=_D.lm_scale, insertion_penalty=_D.insertion_penalty):
        self.states, self.mixtures, self.iters, self.update = states, mixtures, iters, update
        self.var_floor, self.lm_smooth = var_floor, lm_smooth
        self.lm_scale, self.insertion_penalty = lm_scale, insertion_penalty

    def _train(self, feats, ali, opts, dev, tmp, X, y):
        from .cdhmm_train import train_cdhmm

        model = train_cdhmm(feats, ali, opts[0])
        self.history_ = model.info["history"]
        return model


class LargeMarginCdhmm(FramesEstimator):
    """Large-margin CDHMMs (paper 004): `rhmmtk train-largemargin` (lam, tol, max_iter,
    restarts, objective, scaling, segmentation, select; lm_scale and insertion_penalty:
    the phone loop's in training and decoding; mapping: a label mapping file for dev
    scoring). `init`: the ML model to start from, an `MlCdhmm` (fitted on the same X, y
    first; default MlCdhmm()) or the path of an ML model file. fit(X, y, dev=(X_dev,
    y_dev)): with select 'accuracy' or 'per' (the command's default needs a dev set) the
    best dev iteration is kept."""

    _command = "train-largemargin"
    _model_type = "cdhmm"
    _options_classes = (_L, _D)
    _decode_class = _D

    def __init__(self, init=None, lam=_L.lam, tol=_L.tol, max_iter=_L.max_iter,
                 restarts=_L.restarts, objective=_L.objective, scaling=_L.scaling,
                 segmentation=_L.segmentation, select=_L.select, lm_scale=_D.lm_scale,
                 insertion_penalty=_D.insertion_penalty, mapping=None):
        self.init, self.lam, self.tol, self.max_iter = init, lam, tol, max_iter
        self.restarts, self.objective, self.select = restarts, objective, select
        self.scaling, self.segmentation = scaling, segmentation
        self.lm_scale, self.insertion_penalty, self.mapping = lm_scale, insertion_penalty, mapping

    def _train(self, feats, ali, opts, dev, tmp, X, y):
        from ..io.labelmap import read_label_map
        from . import load_model
        from .largemargin import train_largemargin

        path, self.init_ = init_model_path(self.init, X, y, tmp, MlCdhmm())
        ml = load_model(path, expect="cdhmm")
        mapping = read_label_map(self.mapping) if self.mapping else None
        model = train_largemargin(ml, feats, ali, opts[0], opts[1], dev, mapping)
        self.history_ = model.info["history"]
        return model

    def _recorded_options(self):
        return {**super()._recorded_options(),
                "ml_model": self.init if isinstance(self.init, str) else None}
