"""train-maxmargin: a thin shim over rhmmtk.models.maxmargin."""
import click

from ..models.maxmargin import MaxMarginOptions
from ..options import as_dict, click_options, take
from .common import command


@command("train-maxmargin")
@click_options(MaxMarginOptions)
@click.option("--dev-obs", type=click.Path(dir_okay=False), help="Dev letters (codes archive).")
@click.option("--dev-ali", type=click.Path(dir_okay=False, allow_dash=True),
              help="Dev alignment: every iteration is scored and the best one is kept.")
@click.option("--history", type=click.Path(dir_okay=False),
              help="Write the per-iteration log (TSV: iter, loss, train_word_errors, eta, "
                   "rank, dev_acc) here.")
@click.argument("obs", type=click.Path(dir_okay=False))
@click.argument("ali", type=click.Path(allow_dash=True))
@click.argument("model", type=click.Path(dir_okay=False))
def train_maxmargin(dev_obs, dev_ali, history, obs, ali, model, **kw):
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

    check_outputs(model, history)
    opts = take(MaxMarginOptions, kw)
    m, records = train(obs, ali, opts, dev_obs, dev_ali)
    if history:
        write_history(records, history)
    m.save(model, record({**as_dict(opts), "dev_obs": dev_obs, "dev_ali": dev_ali}))
