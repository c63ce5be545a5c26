"""validate-data-dir: Kaldi's utils/validate_data_dir.sh checks (rhmmtk.io.datadir)."""
import sys

import click

from .common import command


@command("validate-data-dir")
@click.argument("data_dir", type=click.Path(file_okay=False))
def validate_data_dir(data_dir):
    """Check a Kaldi data directory before `rhmmtk feats DATA_DIR` uses it.

    The checks of Kaldi's utils/validate_data_dir.sh on the files rhmmtk reads: every
    table sorted (LC_ALL=C) with unique keys; utt2spk and spk2utt agree and speaker
    order follows utterance order; segments (or wav.scp), text and feats.scp cover the
    same utterances; segments' recordings are in wav.scp and their times are sane;
    reco2file_and_channel and spk2gender match. Prints every problem, one line each, and
    exits 1 if there is any. Example:

      rhmmtk validate-data-dir data/train && rhmmtk feats --cmvn spk data/train train.feats.h5
    """
    from ..io.datadir import validate_data_dir as check

    problems = check(data_dir)
    for p in problems:
        click.echo(f"rhmmtk validate-data-dir: error: {p}", err=True)
    if problems:
        sys.exit(1)
    click.echo(f"{data_dir}: valid Kaldi data directory")
