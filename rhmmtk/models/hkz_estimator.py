"""`HkzTagger`: train-hkz from Python, a scikit-learn estimator
(rhmmtk.estimator.CodesTagger: the command's library function on the one archive it reads)."""
from ..estimator import CodesTagger
from .hkz import HkzOptions as _O


class HkzTagger(CodesTagger):
    """The Hsu-Kakade-Zhang spectral HMM on joint (symbol, label) pairs: `rhmmtk train-hkz`
    (m: hidden states; decode: the model's decoder, viterbi or maxmarginal). X: symbol
    sequences (NETtalk words), y: one label per symbol; `dev` is accepted and unused."""

    _command = "train-hkz"
    _model_type = "hkz"
    _options_class = _O

    def __init__(self, m=_O.m, decode=_O.decode, unknown="error"):
        self.m, self.decode, self.unknown = m, decode, unknown

    def _train(self, obs, ali, opts, dev):
        from .hkz import train

        return train(obs, ali, opts)
