"""`CrfTagger`: train-crf from Python, a scikit-learn estimator
(rhmmtk.estimator.CodesTagger: the command's library function on the one archive it reads)."""
from ..estimator import CodesTagger
from .crf import CrfOptions as _O


class CrfTagger(CodesTagger):
    """The linear-chain CRF peer (CRFsuite: L-BFGS or the averaged perceptron) with
    symbol-window and symbol n-gram features: `rhmmtk train-crf` (window, ngram,
    algorithm, c1, c2, iters). X: symbol sequences (NETtalk words), y: one label
    per symbol; `dev` is accepted and unused."""

    _command = "train-crf"
    _model_type = "crf"
    _options_class = _O

    def __init__(self, window=_O.window, ngram=_O.ngram, algorithm=_O.algorithm, c1=_O.c1,
                 c2=_O.c2, iters=_O.iters, unknown="error"):
        self.window, self.ngram, self.algorithm = window, ngram, algorithm
        self.c1, self.c2, self.iters, self.unknown = c1, c2, iters, unknown

    def _train(self, obs, ali, opts, dev):
        from .crf import train

        return train(obs, ali, opts)
