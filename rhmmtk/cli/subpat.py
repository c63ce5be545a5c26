"""train-subpat: a thin shim over rhmmtk.models.subpat."""
from ..models.subpat import SubpatOptions
from ..options import as_dict, click_options, take
from ..selection import DevOptions
from .common import command, training_data


@command("train-subpat")
@click_options(SubpatOptions, DevOptions)
@training_data()
def train_subpat(obs, ali, model, **kw):
    """A second-order tagger with sub-pattern features, averaged perceptron -> MODEL.

    OBS is a codes archive of single letters (make-obs --context 0), ALI their labels;
    outputs are restricted per letter to the labels seen with it. Features are letter
    n-grams conjoined with the label, the label pair or the label triple (templates:
    --features); decoding is exact second-order Viterbi. Each epoch's averaged weights
    are scored on dev and the best kept (the word order of each epoch is seeded).

      rhmmtk train-subpat --features g2p --window 5 --ngram 5 --graphone-window 1 \\
          --dev-obs dev.let.h5 --dev-ali dev.ali train.let.h5 train.ali subpat.h5
    """
    from ..io.text import check_outputs
    from ..models.maxmargin import write_history
    from ..models.subpat import train
    from ..provenance import record

    opts, dev = take(SubpatOptions, kw), take(DevOptions, kw).check()
    check_outputs(model, dev.history, inputs=[obs, ali, dev.dev_obs, dev.dev_ali])
    m, records = train(obs, ali, opts, dev.dev_obs, dev.dev_ali)
    if dev.history:
        write_history(records, dev.history)
    m.save(model, record({**as_dict(opts), "dev_obs": dev.dev_obs, "dev_ali": dev.dev_ali}))
