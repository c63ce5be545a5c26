import click

from .common import command


@command("featurize")
@click.option("--templates", "templates_path", required=True, type=click.Path(dir_okay=False),
              help="Feature-template config (see rhmmtk-formats(5)).")
@click.option("--labels", "labels_path", type=click.Path(dir_okay=False),
              help="Label symbol table to use (default: the alignment's labels, sorted).")
@click.argument("obs", type=click.Path(dir_okay=False))
@click.argument("ali", type=click.Path(allow_dash=True))
@click.argument("out", type=click.Path(dir_okay=False))
def featurize(templates_path, labels_path, obs, ali, out):
    """Skeletal sequences (OBS codes archive + ALI label alignment) -> featurized archive.

    Each position gets its label id, observation id and one feature id per
    template of the future, past, present and destiny views; templates that read
    more than their view may see are refused. Example:

      rhmmtk featurize --templates conf/templates.conf train.obs.h5 train.ali train.feats.h5
    """
    import json

    from ..corpus import read_corpus
    from ..io.archive import ArchiveWriter
    from ..progress import log, progress
    from ..provenance import record
    from ..symbols import SymbolTable
    from ..templates import Templates

    tpl = Templates.read(templates_path)
    labels = SymbolTable.read(labels_path) if labels_path else None
    corpus = read_corpus(obs, ali, labels)
    l, n = len(corpus.label_table), len(corpus.obs_table)
    attrs = {
        "templates": tpl.text,
        "template_fingerprint": tpl.fingerprint(),
        "columns": json.dumps(tpl.columns()),
        "view_slices": json.dumps(tpl.view_slices()),
        "observation_fingerprint": corpus.obs_table.fingerprint(),
        "label_fingerprint": corpus.label_table.fingerprint(),
    }
    symbols = {"observations": corpus.obs_table, "labels": corpus.label_table}
    with ArchiveWriter(out, "featurized", record({"templates": templates_path}), symbols,
                       attrs) as w:
        mats = tpl.featurize_many(corpus.labels, corpus.obs, l, n)
        for key, mat in progress(zip(corpus.keys, mats), desc="featurize", total=len(corpus)):
            w.add(key, mat)
    log.info("featurized %d utterances, %d positions, %d templates", len(corpus),
             corpus.num_positions, len(tpl.columns()))
