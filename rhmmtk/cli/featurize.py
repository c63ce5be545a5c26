"""featurize: skeletal sequences -> featurized archive (rhmmtk.models.rhmm.templates)."""
import click

from ..click_types import TEXT_INPUT
from .common import command, job_option, training_data


@command("featurize")
@job_option
@click.option("--templates", "templates_path", required=True, type=TEXT_INPUT,
              help="Feature-template config (see rhmmtk-formats(5)).")
@click.option("--labels", "labels_path", type=TEXT_INPUT,
              help="Label symbol table to use (default: the alignment's labels, sorted).")
@training_data("out")
def featurize(job, templates_path, labels_path, obs, ali, out):
    """Skeletal sequences (OBS codes archive + ALI label alignment) -> featurized archive.

    Each position gets its label id, observation id and one feature id per
    template of the future, past, present and destiny views; templates that read
    more than their view may see are refused. Utterances are featurized a block
    at a time; with --job K/N only shard K of the alignment's utterances is
    (the label table is still the whole alignment's). Example:

      rhmmtk featurize --templates conf/templates.conf train.obs.h5 train.ali train.feats.h5
    """
    from ..models.rhmm.templates import featurize_file

    featurize_file(obs, ali, out, templates_path, labels_path, job)
