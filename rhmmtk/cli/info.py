import click

from .common import command
from .params import HDF5_INPUT, OUTPUT


@command("info")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--plot", type=OUTPUT,
              help="For a spectral model: PNG of the singular values of Omega1 and Omega2.")
@click.argument("path", type=HDF5_INPUT)
def info(as_json, plot, path):
    """Summarise a model, archive or statistics file: what made it, options, symbol tables,
    per-label m, and for spectral models the singular values of Omega1^a and Omega2^a.

      rhmmtk info exp/spectral_m24/final.h5
    """
    import json

    from ..errors import InputError
    from ..inspect import describe_archive, describe_model, describe_stats, plot_singular_values
    from ..io.hdf5 import open_h5, reading
    from ..io.text import check_outputs

    check_outputs(plot, inputs=[path])
    with open_h5(path) as f, reading(path):
        kind = f.attrs.get("rhmmtk_format")
    describe = {"model": describe_model, "archive": describe_archive, "stats": describe_stats}
    if kind not in describe:
        raise InputError("not an rhmmtk model, archive or statistics file", path)
    with reading(path):
        summary = describe[kind](path)
    if plot:
        if kind != "model" or "singular_values" not in summary:
            raise InputError("--plot needs a spectral model (it plots Omega singular values)", path)
        plot_singular_values(summary, plot)
    if as_json:
        click.echo(json.dumps(summary, indent=1, sort_keys=True))
    else:
        for k, v in summary.items():
            if k == "singular_values":
                click.echo("singular values (largest 5 of Omega1 | Omega2) per label:")
                for lab, s1, s2 in zip(summary["labels"], v["omega1"], v["omega2"]):
                    click.echo(f"  {lab:>8s}  " + " ".join(f"{x:.3g}" for x in s1[:5]) + "  |  "
                               + " ".join(f"{x:.3g}" for x in s2[:5]))
            elif k in ("labels", "observations", "history", "templates"):
                if isinstance(v, list) and len(v) > 12:
                    v = " ".join(map(str, v[:12])) + f" ... ({len(v)} in all)"
                click.echo(f"{k}: {v}")
            else:
                click.echo(f"{k}: {v}")
