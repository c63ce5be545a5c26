"""Summaries of model files, archives and statistics files (`rhmmtk info`), and the singular-value plot."""
import json

import numpy as np

from .errors import InputError
from .io.archive import Archive


def describe(path):
    """The summary of any rhmmtk HDF5 file, by the kind it declares."""
    from .io.hdf5 import file_format

    kind = file_format(path)
    if kind == "model":
        return describe_model(path)
    if kind == "archive":
        return describe_archive(path)
    if kind == "stats":
        return describe_stats(path)
    raise InputError("not an rhmmtk model, archive or statistics file", path)


def best_iteration_of(summary, path):
    """The dev-selected iteration recorded in a model's history (rhmmtk.selection)."""
    from .selection import SELECT_KEYS, best_iteration

    if summary.get("kind") != "model" or not summary.get("history"):
        raise InputError("not a model with a training history (an iterative trainer's)", path)
    select = (summary.get("options") or {}).get("select")
    return best_iteration(summary["history"], *SELECT_KEYS.get(select, SELECT_KEYS["accuracy"]))


def text_lines(summary):
    """The summary as `key: value` lines; long symbol lists abbreviated."""
    out = []
    for k, v in summary.items():
        if k == "singular_values":
            out.append("singular values (largest 5 of Omega1 | Omega2) per label:")
            for lab, s1, s2 in zip(summary["labels"], v["omega1"], v["omega2"]):
                out.append(f"  {lab:>8s}  " + " ".join(f"{x:.3g}" for x in s1[:5]) + "  |  "
                           + " ".join(f"{x:.3g}" for x in s2[:5]))
            continue
        if k in ("labels", "observations", "history", "templates") and isinstance(v, list) \
                and len(v) > 12:
            v = " ".join(map(str, v[:12])) + f" ... ({len(v)} in all)"
        out.append(f"{k}: {v}")
    return out


def describe_model(path):
    """Any model type: its own summary (rhmmtk.models.Model.describe) and the file name."""
    from .models import load_model

    return {"file": str(path), **load_model(path).describe()}


def describe_archive(path):
    with Archive(path) as ar:
        keys = ar.keys()
        first = ar[keys[0]]
        out = {"file": str(path), "kind": "archive", "archive_kind": ar.kind,
               "num_utts": len(keys), "first_utt": keys[0],
               "first_shape": list(first.shape), "dtype": str(first.dtype)}
        for k in ("created_by", "created", "options", "versions", "template_fingerprint",
                  "observation_fingerprint", "columns"):
            if k in ar.attrs:
                v = ar.attrs[k]
                try:
                    v = json.loads(v) if k in ("options", "versions", "columns") else v
                except (TypeError, ValueError):
                    pass
                out[k] = v
        for name in ("observations", "labels"):
            if name in ar.file.get("symbols", {}):
                out[f"num_{name}"] = len(ar.symbols(name))
    return out


def describe_stats(path):
    """A statistics file of an accumulation step (rhmmtk.io.stats)."""
    from .io.stats import StatsFile

    with StatsFile(path) as sf:
        out = {"file": str(path), "kind": "stats", "stats_kind": sf.kind,
               "source": sf.source, "job": sf.job or "all", "utts": sf.utts,
               "positions": sf.positions, "meta": sf.meta}
        for k in ("created_by", "created"):
            if k in sf.attrs:
                out[k] = sf.attrs[k]
        out["num_labels"] = len(sf.symbols("labels"))
        out["num_observations"] = len(sf.symbols("observations"))
    return out


def plot_singular_values(summary, png, path=None):
    """Per-label singular values of Omega1 and Omega2 (log scale), one line per label."""
    if summary.get("kind") != "model" or "singular_values" not in summary:
        raise InputError("--plot needs a spectral model (it plots Omega singular values)", path)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .io.output import open_output

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, key, title in zip(axes, ("omega1", "omega2"), ("Omega1 (future x past)",
                                                            "Omega2 (present x destiny)")):
        for s in summary["singular_values"][key]:
            s = np.asarray(s)
            s = s[s > 0]
            if s.size:
                ax.semilogy(np.arange(1, s.size + 1), s, alpha=0.5, lw=1)
        ax.set_title(title)
        ax.set_xlabel("index")
    axes[0].set_ylabel("singular value")
    fig.suptitle(f"{summary['file']}: one line per label")
    fig.tight_layout()
    with open_output(png, binary=True) as f:
        fig.savefig(f, format="png", dpi=90)
    plt.close(fig)
