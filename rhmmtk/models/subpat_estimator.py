"""`SubpatTagger`: train-subpat from Python, a scikit-learn estimator
(rhmmtk.estimator.CodesTagger: the command's library function on the one archive it reads)."""
from ..estimator import CodesTagger
from .subpat import SubpatOptions as _O


class SubpatTagger(CodesTagger):
    """The second-order tagger with sub-pattern features trained by the averaged
    perceptron or as a CRF: `rhmmtk train-subpat` (features, window, ngram,
    graphone_window, label_order, hash_bits, loss, l2, rate, average, iters, seed, patience).
    X: symbol sequences (NETtalk words), y: one label per symbol; `dev` = (X_dev, y_dev)
    selects the epoch."""

    _command = "train-subpat"
    _model_type = "subpat"
    _options_class = _O

    def __init__(self, features=_O.features, window=_O.window, ngram=_O.ngram,
                 graphone_window=_O.graphone_window, label_order=_O.label_order,
                 hash_bits=_O.hash_bits, loss=_O.loss, l2=_O.l2, rate=_O.rate,
                 average=_O.average, iters=_O.iters, seed=_O.seed, patience=_O.patience,
                 unknown="error"):
        self.features, self.window, self.ngram = features, window, ngram
        self.graphone_window, self.label_order = graphone_window, label_order
        self.hash_bits, self.iters, self.seed = hash_bits, iters, seed
        self.loss, self.l2, self.rate, self.average = loss, l2, rate, average
        self.patience, self.unknown = patience, unknown

    def _train(self, obs, ali, opts, dev):
        from .subpat import train

        return train(obs, ali, opts, *(dev or (None, None)))[0]
