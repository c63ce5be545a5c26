"""train-cdhmm, train-largemargin: thin shims over rhmmtk.cdhmm_train and
rhmmtk.largemargin."""
import click

from ..options import click_options
from .common import command


def _write_history(path, rows):
    from ..io.text import open_output

    if not rows:
        return
    cols = list(rows[0])
    with open_output(path) as f:
        f.write("\t".join(cols) + "\n")
        for r in rows:
            f.write("\t".join(f"{r[c]:.6g}" if isinstance(r[c], float) else str(r[c])
                              for c in cols) + "\n")


from ..cdhmm_train import CdhmmOptions  # noqa: E402  (options declared once, there)


@command("train-cdhmm")
@click_options(CdhmmOptions)
@click.option("--phones", type=click.Path(dir_okay=False),
              help="Symbol table of the phones to model (`phone id` lines); every one needs "
                   "training frames.  [default: the alignment's phones]")
@click.option("--history", type=click.Path(dir_okay=False),
              help="Write the per-iteration log (TSV: mixtures, iter, loglik_per_frame) here.")
@click.argument("feats", type=click.Path(dir_okay=False))
@click.argument("ali", type=click.Path(allow_dash=True))
@click.argument("model", type=click.Path(dir_okay=False))
def train_cdhmm(phones, history, feats, ali, model, **kw):
    """ML phone HMMs from features FEATS (`rhmmtk feats`) and frame labels ALI -> MODEL.

    HTK's recipe on frame-aligned data: uniform segmentation of every labelled segment
    into the states, Baum-Welch (or Viterbi) re-estimation within the segments, mixture
    splitting 1 -> 2 -> 4 -> ... -> --mixtures, variance floors. The model also holds a
    phone bigram of the training transcriptions; `rhmmtk decode` recognises phones with
    it (--lm-scale, --insertion-penalty).

      rhmmtk train-cdhmm --states 3 --mixtures 8 train/feats.h5 train/ali.48 cdhmm_s3m8.h5
    """
    from ..cdhmm_train import train_cdhmm as train
    from ..io.text import check_outputs
    from ..options import as_dict, take
    from ..provenance import record
    from ..symbols import SymbolTable

    check_outputs(model, history)
    opts = take(CdhmmOptions, kw)
    labels = SymbolTable.read(phones) if phones else None
    m = train(feats, ali, opts, labels)
    m.save(model, record(as_dict(opts)))
    if history:
        _write_history(history, m.info["history"])
