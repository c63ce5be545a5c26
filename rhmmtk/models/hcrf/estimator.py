"""`HcrfClassifier` and `HcrfFrameTagger`: train-hcrf and train-hcrf-tagger from Python,
scikit-learn estimators (rhmmtk.estimator.FramesEstimator: the commands' library functions
on the one features archive they read)."""
import numpy as np

from ...estimator import FramesEstimator, init_model_path
from .train import HcrfOptions as _H, RpropOptions as _R


class _Hcrf(FramesEstimator):
    """The hyperparameters both HCRF trainers take: HcrfOptions (constraints, knots,
    normalize, iters, patience, mapping) and RpropOptions (step, min_step, max_step), and
    `init`: an ML CDHMM to convert (an `MlCdhmm`, fitted on the same frames first; default
    MlCdhmm()) or the path of a model file (an ML CDHMM, or an HCRF to continue)."""

    _options_classes = (_H, _R)

    def __init__(self, init=None, constraints=_H.constraints, knots=_H.knots,
                 normalize=_H.normalize, iters=_H.iters, patience=_H.patience,
                 mapping=_H.mapping, step=_R.step, min_step=_R.min_step, max_step=_R.max_step):
        self.init, self.constraints, self.knots, self.normalize = init, constraints, knots, normalize
        self.iters, self.patience, self.mapping = iters, patience, mapping
        self.step, self.min_step, self.max_step = step, min_step, max_step

    def _frame_labels(self, X, y):
        return y

    def _train(self, feats, labels, opts, dev, tmp, X, y):
        from ..cdhmm_estimator import MlCdhmm

        path, self.init_ = init_model_path(self.init, X, self._frame_labels(X, y), tmp,
                                           MlCdhmm())
        model = self._train_file(path, feats, labels, opts[0], *(dev or (None, None)),
                                 opts[1])
        self.history_ = model.info.get("history")
        return model

    def _recorded_options(self):
        return {**super()._recorded_options(),
                "init": self.init if isinstance(self.init, str) else None}

    def predict_marginals(self, X):
        """Per X[i], the class (segment) or label (frame) posteriors; columns in classes_
        order."""
        return self._decode(X).posteriors


class HcrfClassifier(_Hcrf):
    """HCRF phone classification (paper 003): `rhmmtk train-hcrf`. X: a list of segments,
    each a (frames, dim) array; y: one class label per segment; predict gives one label per
    segment, predict_marginals the class posteriors (segments, classes); score (and
    accuracy_scorer) the classification accuracy."""

    _command = "train-hcrf"
    _model_type = "hcrf"
    _targets = "segments"

    def _frame_labels(self, X, y):
        return [[lab] * len(x) for x, lab in zip(X, y)]

    @staticmethod
    def _train_file(*args):
        from .train import train_file

        return train_file(*args)

    def _inputs(self, X):
        from ...io.segments import Segments

        return [(x, Segments(np.array([0]), np.array([len(x)]), ["?"], [i + 1]))
                for i, x in enumerate(super()._inputs(X))]

    def predict(self, X):
        """The class label of every segment X[i]."""
        sym = self._fitted().labels.symbols
        return [sym[int(lab[0])] for lab in self._decode(X).labels]

    def predict_marginals(self, X):
        return np.concatenate(super().predict_marginals(X))


class HcrfFrameTagger(_Hcrf):
    """The frame-tagging HCRF: `rhmmtk train-hcrf-tagger`. X: a list of (frames, dim)
    arrays, y: one phone label per frame; predict gives a label per frame (max-marginals),
    predict_marginals the (frames, labels) posteriors."""

    _command = "train-hcrf-tagger"
    _model_type = "hcrf-tagger"

    @staticmethod
    def _train_file(*args):
        from .tagger import train_tagger_file

        return train_tagger_file(*args)
