"""train-maxmargin: a thin shim over rhmmtk.models.maxmargin."""
from ..models.maxmargin import MaxMarginOptions
from ..options import as_dict, click_options, take
from ..selection import DevOptions
from .common import command, training_data


@command("train-maxmargin")
@click_options(MaxMarginOptions, DevOptions)
@training_data()
def train_maxmargin(obs, ali, model, **kw):
    """Max-margin IO-OOM tagger (paper 002): a Hankel matrix of trigram scores -> MODEL.

    OBS is a codes archive of single letters (make-obs --context 0), ALI their labels;
    outputs are restricted per letter to the labels seen with it. FOBOS minimises the
    mean Viterbi-hinge loss (Hamming) + tau R(H), R the nuclear norm, l2 or none; with
    --update perceptron, the averaged perceptron on the same trigram factors instead.

      rhmmtk train-maxmargin --reg nuclear --tau 1e-3 --rate 1 --iters 30 \\
          --dev-obs dev.let.h5 --dev-ali dev.ali train.let.h5 train.ali mm.h5
    """
    from ..io.text import check_outputs
    from ..models.maxmargin import train, write_history
    from ..provenance import record

    opts, dev = take(MaxMarginOptions, kw), take(DevOptions, kw).check()
    check_outputs(model, dev.history, inputs=[obs, ali, dev.dev_obs, dev.dev_ali])
    m, records = train(obs, ali, opts, dev.dev_obs, dev.dev_ali)
    if dev.history:
        write_history(records, dev.history)
    m.save(model, record({**as_dict(opts), "dev_obs": dev.dev_obs, "dev_ali": dev.dev_ali}))
