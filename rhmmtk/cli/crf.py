"""train-crf: a thin shim over rhmmtk.models.crf."""
from ..models.crf import CrfOptions
from .common import obs_ali_trainer


@obs_ali_trainer("train-crf", CrfOptions)
def train_crf():
    """A linear-chain CRF (CRFsuite, L-BFGS) with letter-window features -> MODEL.

    OBS is a codes archive of single letters (make-obs --context 0), ALI their labels.
    Features: letters, letter bigrams and trigrams within +-window, and label bigrams.
    The peer our models are compared against; decoded by `rhmmtk decode` like them.

      rhmmtk train-crf --window 3 --c2 0.1 train.let.h5 train.ali crf.h5
    """
    from ..models.crf import train

    return train
