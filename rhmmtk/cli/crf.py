"""train-crf: a thin shim over rhmmtk.models.crf."""
import click

from ..models.crf import CrfOptions
from ..options import as_dict, click_options, take
from ..params import HDF5_INPUT, HDF5_OUTPUT, TEXT_INPUT
from .common import command


@command("train-crf")
@click_options(CrfOptions)
@click.argument("obs", type=HDF5_INPUT)
@click.argument("ali", type=TEXT_INPUT)
@click.argument("model", type=HDF5_OUTPUT)
def train_crf(obs, ali, model, **kw):
    """A linear-chain CRF (CRFsuite, L-BFGS) with letter-window features -> MODEL.

    OBS is a codes archive of single letters (make-obs --context 0), ALI their labels.
    Features: letters, letter bigrams and trigrams within +-window, and label bigrams.
    The peer our models are compared against; decoded by `rhmmtk decode` like them.

      rhmmtk train-crf --window 3 --c2 0.1 train.let.h5 train.ali crf.h5
    """
    from ..io.text import check_outputs
    from ..models.crf import train
    from ..provenance import record

    check_outputs(model, inputs=[obs, ali])
    opts = take(CrfOptions, kw)
    train(obs, ali, opts).save(model, record(as_dict(opts)))
