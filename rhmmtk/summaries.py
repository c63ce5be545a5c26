"""Summaries of model files, archives and statistics files (`rhmmtk info`), and the singular-value plot."""
import json

import numpy as np

from .io.archive import Archive


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


def plot_singular_values(summary, png):
    """Per-label singular values of Omega1 and Omega2 (log scale), one line per label."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .io.text import atomic_path

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
    with atomic_path(png) as tmp:
        fig.savefig(tmp, format="png", dpi=90)
    plt.close(fig)
