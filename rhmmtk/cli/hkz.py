"""train-hkz: a thin shim over rhmmtk.models.hkz."""
import click

from ..models.hkz import HkzOptions
from ..options import as_dict, click_options, take
from ..params import HDF5_INPUT, HDF5_OUTPUT, TEXT_INPUT
from .common import command


@command("train-hkz")
@click_options(HkzOptions)
@click.argument("obs", type=HDF5_INPUT)
@click.argument("ali", type=TEXT_INPUT)
@click.argument("model", type=HDF5_OUTPUT)
def train_hkz(obs, ali, model, **kw):
    """The Hsu-Kakade-Zhang spectral HMM on joint (letter, label) symbols -> MODEL.

    OBS is a codes archive of single letters (make-obs --context 0), ALI their labels.
    Moments P_1, P_21, P_3x1 are counted over every position of the words (framed by a
    boundary symbol); one SVD of P_21 gives the observable operators. `rhmmtk decode`
    decodes it by sign-corrected max-marginals over the labels each letter was seen
    with (or --hkz-decode viterbi: trigram scores and second-order Viterbi).

      rhmmtk train-hkz -m 32 train.letters.h5 train.ali hkz32.h5
    """
    from ..io.text import check_outputs
    from ..models.hkz import train
    from ..provenance import record

    check_outputs(model, inputs=[obs, ali])
    opts = take(HkzOptions, kw)
    train(obs, ali, opts).save(model, record(as_dict(opts)))
