"""`rhmmtk merge-archives`: concatenate the archives that --job shards wrote."""
import click

from .common import command
from .params import HDF5_INPUT, HDF5_OUTPUT

# attributes that must agree for archives to be one archive
SAME = ("kind", "template_fingerprint", "view_slices", "columns", "observation_fingerprint",
        "label_fingerprint", "feature_config", "cmvn", "dim", "codebook", "num_codes",
        "sample_rate", "frame_shift", "frame_length")
KEEP = SAME + ("templates", "feature_type", "frame_length_samples", "frame_shift_samples")


@command("merge-archives")
@click.argument("out", type=HDF5_OUTPUT)
@click.argument("archives", nargs=-1, required=True, type=HDF5_INPUT)
def merge_archives(out, archives):
    """Concatenate ARCHIVES (e.g. the shards of `--job K/N` runs, in order) into OUT.

    The archives must be of one kind with the same symbol tables and making options
    (templates, feature configuration, codebook, ...) and hold different utterances;
    OUT has their utterances in the order given, one at a time in memory. Example:

    \b
      $cmd JOB=1:4 log/feats.JOB.log rhmmtk feats --job JOB/4 wav.scp feats.JOB.h5
      rhmmtk merge-archives feats.h5 feats.1.h5 feats.2.h5 feats.3.h5 feats.4.h5
    """
    from ..errors import InputError
    from ..io.archive import Archive, ArchiveWriter
    from ..io.text import check_outputs
    from ..progress import log, progress
    from ..provenance import record

    check_outputs(out, inputs=archives)
    with Archive(archives[0]) as first:
        attrs = {k: (v.item() if hasattr(v, "item") else v)
                 for k, v in first.attrs.items() if k in KEEP}
        names = list(first.file["symbols"]) if "symbols" in first.file else []
        symbols = {name: first.symbols(name) for name in names}
        kind = first.kind
    for path in archives[1:]:
        with Archive(path) as ar:
            for k in SAME:
                theirs = ar.attrs.get(k)
                theirs = theirs.item() if hasattr(theirs, "item") else theirs
                if theirs != (kind if k == "kind" else attrs.get(k)):
                    raise InputError(f"{k} differs from {archives[0]}'s ({theirs} vs "
                                     f"{attrs.get(k, kind if k == 'kind' else None)}): not "
                                     "shards of one archive", path)
            theirs = list(ar.file["symbols"]) if "symbols" in ar.file else []
            if theirs != names or any(ar.symbols(n) != symbols[n] for n in names):
                raise InputError(f"symbol tables differ from {archives[0]}'s", path)
    attrs.pop("kind", None)
    total = 0
    with ArchiveWriter(out, kind, record({"archives": list(archives)}), symbols, attrs) as w:
        for path in progress(archives, desc="merge", unit="archive"):
            with Archive(path) as ar:
                for key, arr in ar.items():
                    if key in w.seen:
                        raise InputError("utterance is in more than one of the archives", path,
                                         key)
                    w.add(key, arr)
                    total += 1
    log.info("merged %d archives, %d utterances, into %s", len(archives), total, out)
