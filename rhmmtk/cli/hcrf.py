"""train-hcrf: a thin shim over rhmmtk.models.hcrf.train."""
import click

from ..models.hcrf.train import HcrfOptions
from ..options import click_options
from ..params import HDF5_INPUT, HDF5_OUTPUT, TEXT_INPUT
from ..selection import DevOptions
from .common import command


@command("train-hcrf")
@click_options(HcrfOptions, DevOptions)
@click.argument("init", type=HDF5_INPUT)
@click.argument("feats", type=HDF5_INPUT)
@click.argument("segments", type=TEXT_INPUT)
@click.argument("model", type=HDF5_OUTPUT)
def train_hcrf(init, feats, segments, model, **kw):
    """HCRF phone classifier (paper 003) from INIT + FEATS + SEGMENTS -> MODEL.

    INIT is an ML CDHMM (train-cdhmm), converted exactly (every state-Gaussian pair
    becomes a hidden state; before training the class posterior is the HMM's), or an
    HCRF to continue. Trains the conditional likelihood of each segment's class by RPROP
    with moment or distribution (spline) constraints. With --dev-obs (dev features) and
    --dev-ali (the dev segment list) every iteration is scored and the best kept.
    Classify with `rhmmtk decode --segments`.

    \b
      rhmmtk train-hcrf --constraints distribution --knots 5 --mapping map_48_39.txt \\
          --dev-obs dev/feats.h5 --dev-ali dev/segments s3m4.h5 train/feats.h5 \\
          train/segments hcrf_dc5.h5
    """
    from ..io.text import check_outputs
    from ..models.hcrf.train import train_file
    from ..options import as_dict, take
    from ..provenance import record
    from ..selection import write_history

    o, d = take(HcrfOptions, kw), take(DevOptions, kw).check()
    check_outputs(model, d.history, inputs=[init, feats, segments, d.dev_obs, d.dev_ali])
    m = train_file(init, feats, segments, o, d.dev_obs, d.dev_ali)
    m.save(model, record({**as_dict(o), "init": init}))
    if d.history:
        write_history(d.history, m.info["history"])
