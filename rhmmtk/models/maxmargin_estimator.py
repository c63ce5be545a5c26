"""`MaxMarginTagger`: train-maxmargin from Python, a scikit-learn estimator
(rhmmtk.estimator.CodesTagger: the command's library function on the one archive it reads)."""
from ..estimator import CodesTagger
from .maxmargin import MaxMarginOptions as _O


class MaxMarginTagger(CodesTagger):
    """The max-margin IO-OOM tagger (paper 002) and the averaged perceptron: `rhmmtk
    train-maxmargin`, one hyperparameter per option (reg: nuclear, l2 or none;
    update='perceptron' for the averaged perceptron). X: symbol sequences (NETtalk words),
    y: one label per symbol; fit(X, y, dev=(X_dev, y_dev)) keeps the best iteration on dev
    (history_: the per-iteration records)."""

    _command = "train-maxmargin"
    _model_type = "maxmargin"
    _options_class = _O

    def __init__(self, reg=_O.reg, tau=_O.tau, rate=_O.rate, iters=_O.iters, update=_O.update,
                 states=_O.states, boundary=_O.boundary, steps=_O.steps,
                 batch_words=_O.batch_words, average=_O.average,
                 average_decay=_O.average_decay, seed=_O.seed, patience=_O.patience,
                 unknown="error"):
        self.reg, self.tau, self.rate, self.iters, self.update = reg, tau, rate, iters, update
        self.states, self.boundary, self.steps = states, boundary, steps
        self.batch_words, self.average, self.average_decay = batch_words, average, average_decay
        self.seed, self.patience, self.unknown = seed, patience, unknown

    def _train(self, obs, ali, opts, dev):
        from .maxmargin import train

        model, self.history_ = train(obs, ali, opts, *(dev or (None, None)))
        return model
