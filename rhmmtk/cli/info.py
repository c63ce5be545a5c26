import click

from .common import command


@command("info")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--plot", type=click.Path(dir_okay=False),
              help="For a spectral model: PNG of the singular values of Omega1 and Omega2.")
@click.argument("path", type=click.Path(dir_okay=False))
def info(as_json, plot, path):
    """Summarise a model, archive or statistics file: what made it, options, symbol tables,
    per-label m, and for spectral models the singular values of Omega1^a and Omega2^a.

      rhmmtk info exp/spectral_m24/final.h5
    """
    import json

    import h5py

    from ..errors import InputError
    from ..summaries import describe_archive, describe_model, describe_stats, plot_singular_values

    try:
        with h5py.File(path, "r") as f:
            kind = f.attrs.get("rhmmtk_format")
    except (OSError, FileNotFoundError):
        raise InputError("not a readable HDF5 file", path) from None
    if kind == "model":
        summary = describe_model(path)
    elif kind == "archive":
        summary = describe_archive(path)
    elif kind == "stats":
        summary = describe_stats(path)
    else:
        raise InputError("not an rhmmtk model, archive or statistics file", path)
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
