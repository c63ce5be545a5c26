"""train-subpat: a thin shim over rhmmtk.models.subpat."""
from ..models.subpat import SubpatOptions
from .common import dev_trainer


@dev_trainer("train-subpat", SubpatOptions)
def train_subpat():
    """A second-order tagger with sub-pattern features, perceptron or CRF -> MODEL.

    OBS is a codes archive of single letters (make-obs --context 0), ALI their labels;
    outputs are restricted per letter to the labels seen with it. Features are letter
    n-grams conjoined with the label, the label pair or the label triple (templates:
    --features); decoding is exact second-order Viterbi. Training (--loss): the averaged
    perceptron, or crf: SGD on the negative conditional log-likelihood (exact
    second-order forward-backward) + L2 (--l2). Each epoch's weights are scored on dev
    and the best kept (the word order of each epoch is seeded).

      rhmmtk train-subpat --features g2p --window 5 --ngram 5 --graphone-window 1 \\
          --dev-obs dev.let.h5 --dev-ali dev.ali train.let.h5 train.ali subpat.h5
    """
    from ..models.maxmargin import write_history
    from ..models.subpat import train

    return train, write_history
