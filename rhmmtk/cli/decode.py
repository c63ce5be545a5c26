"""decode: one command for every model type (rhmmtk.models registry)."""
import dataclasses

import click

from ..models import decode_option_classes
from ..options import click_options
from ..io.specifiers import OutputType
from ..click_types import HDF5_INPUT
from .common import arguments, command, job_option


def _decode_options(func):
    """Every registered family's decode options, each declared once."""
    seen, classes = set(), []
    for cls in decode_option_classes():
        names = {f.name for f in dataclasses.fields(cls)}
        if names & seen:
            raise RuntimeError(f"decode option declared by two model families: {names & seen}")
        seen |= names
        classes.append(cls)
    return click_options(*classes)(func)


@command("decode")
@job_option
@_decode_options
@click.option("--posteriors", type=OutputType("features"),
              help="Also write each utterance's per-position label posteriors (N x labels) to "
                   "this archive (rhmmtk HDF5, or Kaldi matrices or HTK files as copy-feats "
                   "writes them).")
@arguments(("model", HDF5_INPUT), ("obs", HDF5_INPUT), ("out", OutputType("alignment")))
def decode(job, posteriors, model, obs, out, **options):
    """MODEL + input archive OBS -> alignment of predicted labels (OUT may be '-').

    One decoder entry for models of every type (`rhmmtk info MODEL` says which); each
    type's own options are marked with its name and ignored by the others. For an R-HMM,
    OBS is a codes archive (or a featurized one, whose template set must be the model's).
    Utterances are read and decoded a block at a time; with --job K/N only shard K is
    decoded, and the shards' outputs 1..N concatenated are the whole alignment. OUT is
    text (a file, '-', or Kaldi's ark,t:F, ark,t:-, 'ark,t:| CMD') or an HTK MLF
    (mlf:F, times from OBS's frame shift, else 10 ms).

      rhmmtk decode spectral24.h5 test.obs.h5 - | rhmmtk score test.ali -
    """
    from ..decoding import decode_to_files
    from ..io.text import check_outputs
    from ..models import load_model
    from ..options import take

    check_outputs(out, posteriors, inputs=[model, obs])
    m = load_model(model)
    opts = take(m.decode_options, options) if m.decode_options else None
    decode_to_files(m, obs, out, posteriors, job, opts, model)
