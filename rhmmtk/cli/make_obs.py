"""make-obs: text observations -> codes archive (rhmmtk.frontend.observations)."""
import click

from ..click_types import Count, HDF5_OUTPUT, TEXT_INPUT, TEXT_OUTPUT
from .common import command, job_option
from ..options import shared_option


@command("make-obs")
@job_option
@click.option("--context", type=Count(0), default=0,
              help="Window half-width K: observation = symbols i-K..i+K (with --write-symbols).")
@click.option("--min-count", type=Count(0), default=1,
              help="Windows seen fewer times back off to narrower ones (with --write-symbols).")
@shared_option("symbols", "symbols_in",
               help="Apply this observation table (dev/test); unknown symbols are errors.")
@click.option("--write-symbols", type=TEXT_OUTPUT,
              help="Learn the observation table from this text (training) and write it here.")
@click.argument("text", type=TEXT_INPUT)
@click.argument("out", type=HDF5_OUTPUT)
def make_obs(job, context, min_count, symbols_in, write_symbols, text, out):
    """Text observations `utt-id sym sym ...` -> an HDF5 archive of observation codes.

    Learn the observation symbol table on training text (--write-symbols), then
    apply that same table to dev and test (--symbols). Example (NETtalk):

      rhmmtk make-obs --context 1 --min-count 2 --write-symbols obs.syms train.letters train.obs.h5
      rhmmtk make-obs --symbols obs.syms dev.letters dev.obs.h5
    """
    from ..frontend.observations import make_obs_file

    if bool(symbols_in) == bool(write_symbols):
        raise click.UsageError("give exactly one of --symbols (apply) or --write-symbols (learn)")
    if job is not None and write_symbols:
        raise click.UsageError("--job applies a table (--symbols); learning one "
                               "(--write-symbols) needs all of the text")
    make_obs_file(text, out, symbols_in, write_symbols, context, min_count, job)
