"""train-maxmargin: a thin shim over rhmmtk.models.maxmargin."""
from ..models.maxmargin import MaxMarginOptions
from .common import dev_trainer


@dev_trainer("train-maxmargin", MaxMarginOptions)
def train_maxmargin():
    """Max-margin IO-OOM tagger (paper 002): a Hankel matrix of trigram scores -> MODEL.

    OBS is a codes archive of single letters (make-obs --context 0), ALI their labels;
    outputs are restricted per letter to the labels seen with it. FOBOS minimises the
    mean Viterbi-hinge loss (Hamming) + tau R(H), R the nuclear norm, l2 or none; with
    --update perceptron, the averaged perceptron on the same trigram factors instead.

      rhmmtk train-maxmargin --reg nuclear --tau 1e-3 --rate 1 --iters 30 \\
          --dev-obs dev.let.h5 --dev-ali dev.ali train.let.h5 train.ali mm.h5
    """
    from ..models.maxmargin import train, write_history

    return train, write_history
