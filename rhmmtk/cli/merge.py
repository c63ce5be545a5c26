"""`rhmmtk merge-archives`: concatenate the archives that --job shards wrote."""

from ..click_types import HDF5_INPUT, HDF5_OUTPUT
from .common import arguments, command


@command("merge-archives")
@arguments(("out", HDF5_OUTPUT), ("archives...", HDF5_INPUT))
def merge_archives(out, archives):
    """Concatenate ARCHIVES (e.g. the shards of `--job K/N` runs, in order) into OUT.

    The archives must be of one kind with the same symbol tables and making options
    (templates, feature configuration, codebook, ...) and hold different utterances;
    OUT has their utterances in the order given, one at a time in memory. Example:

    \b
      $cmd JOB=1:4 log/feats.JOB.log rhmmtk feats --job JOB/4 wav.scp feats.JOB.h5
      rhmmtk merge-archives feats.h5 feats.1.h5 feats.2.h5 feats.3.h5 feats.4.h5
    """
    from ..io.archive import merge_archives as merge

    merge(out, archives)
