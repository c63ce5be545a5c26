import click

from .common import command, job_option
from .params import HDF5_INPUT, HDF5_OUTPUT, TEXT_INPUT


FEATURIZE_POSITIONS = 1 << 18   # positions featurized at a time (bounded memory)


@command("featurize")
@job_option
@click.option("--templates", "templates_path", required=True, type=TEXT_INPUT,
              help="Feature-template config (see rhmmtk-formats(5)).")
@click.option("--labels", "labels_path", type=TEXT_INPUT,
              help="Label symbol table to use (default: the alignment's labels, sorted).")
@click.argument("obs", type=HDF5_INPUT)
@click.argument("ali", type=TEXT_INPUT)
@click.argument("out", type=HDF5_OUTPUT)
def featurize(job, templates_path, labels_path, obs, ali, out):
    """Skeletal sequences (OBS codes archive + ALI label alignment) -> featurized archive.

    Each position gets its label id, observation id and one feature id per
    template of the future, past, present and destiny views; templates that read
    more than their view may see are refused. Utterances are featurized a block
    at a time; with --job K/N only shard K of the alignment's utterances is
    (the label table is still the whole alignment's). Example:

      rhmmtk featurize --templates conf/templates.conf train.obs.h5 train.ali train.feats.h5
    """
    import json

    from ..corpus import CorpusReader
    from ..io.archive import ArchiveWriter
    from ..io.text import check_outputs
    from ..progress import log, progress
    from ..provenance import record
    from ..symbols import SymbolTable
    from ..templates import Templates

    check_outputs(out, inputs=[obs, ali, templates_path, labels_path])
    tpl = Templates.read(templates_path)
    labels = SymbolTable.read(labels_path) if labels_path else None
    reader = CorpusReader(obs, ali, labels, job=job, block_positions=FEATURIZE_POSITIONS)
    l, n = len(reader.label_table), len(reader.obs_table)
    attrs = {
        "templates": tpl.text,
        "template_fingerprint": tpl.fingerprint(),
        "columns": json.dumps(tpl.columns()),
        "view_slices": json.dumps(tpl.view_slices()),
        "observation_fingerprint": reader.obs_table.fingerprint(),
        "label_fingerprint": reader.label_table.fingerprint(),
    }
    symbols = {"observations": reader.obs_table, "labels": reader.label_table}
    positions = 0
    with ArchiveWriter(out, "featurized", record({"templates": templates_path}), symbols,
                       attrs) as w, progress(total=len(reader.keys), desc="featurize") as bar:
        for corpus in reader.blocks():           # a block of utterances at a time
            mats = tpl.featurize_many(corpus.labels, corpus.obs, l, n)
            for key, mat in zip(corpus.keys, mats):
                w.add(key, mat)
            positions += corpus.num_positions
            bar.update(len(corpus))
    log.info("featurized %d utterances, %d positions, %d templates", len(reader.keys),
             positions, len(tpl.columns()))
