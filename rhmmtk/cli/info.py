"""info: what a model, archive or statistics file holds and what made it."""
import click

from ..options import shared_option
from ..click_types import HDF5_INPUT, OUTPUT
from .common import command


@command("info")
@shared_option("json", "as_json")
@click.option("--best-iteration", is_flag=True,
              help="For a model trained with dev selection: print only the iteration with "
                   "the best dev accuracy in its history (the first of equals; without dev "
                   "scores, the last).")
@click.option("--plot", type=OUTPUT,
              help="For a spectral model: PNG of the singular values of Omega1 and Omega2.")
@click.argument("path", type=HDF5_INPUT)
def info(as_json, best_iteration, plot, path):
    """Summarise a model (of any type), archive or statistics file: what made it, options,
    symbol tables, per-label m, and for spectral models the singular values of Omega1^a
    and Omega2^a.

      rhmmtk info exp/spectral_m24/final.h5
      rhmmtk info --best-iteration exp/em_m4/20.h5
    """
    import json

    from ..io.text import check_outputs
    from ..summaries import best_iteration_of, describe, plot_singular_values, text_lines

    check_outputs(plot, inputs=[path])
    summary = describe(path)
    if best_iteration:
        click.echo(best_iteration_of(summary, path))
        return
    if plot:
        plot_singular_values(summary, plot, path)
    if as_json:
        click.echo(json.dumps(summary, indent=1, sort_keys=True))
    else:
        for line in text_lines(summary):
            click.echo(line)
