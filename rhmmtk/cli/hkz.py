"""train-hkz: a thin shim over rhmmtk.models.hkz."""
from ..models.hkz import HkzOptions
from .common import obs_ali_trainer


@obs_ali_trainer("train-hkz", HkzOptions)
def train_hkz():
    """The Hsu-Kakade-Zhang spectral HMM on joint (letter, label) symbols -> MODEL.

    OBS is a codes archive of single letters (make-obs --context 0), ALI their labels.
    Moments P_1, P_21, P_3x1 are counted over every position of the words (framed by a
    boundary symbol); one SVD of P_21 gives the observable operators. `rhmmtk decode`
    decodes it by sign-corrected max-marginals over the labels each letter was seen
    with (or --hkz-decode viterbi: trigram scores and second-order Viterbi).

      rhmmtk train-hkz -m 32 train.letters.h5 train.ali hkz32.h5
    """
    from ..models.hkz import train

    return train
