"""Summaries of model files and archives (`rhmmtk info`), and the singular-value plot."""
import json

import numpy as np

from .io.archive import Archive
from .operators import Operators


def describe_model(path):
    op = Operators.load(path)
    info = op.info
    out = {
        "file": str(path), "kind": "model", "estimator": info.get("estimator"),
        "form": op.form, "created_by": op.attrs.get("created_by"),
        "created": op.attrs.get("created"),
        "options": json.loads(op.attrs.get("options", "{}")),
        "versions": json.loads(op.attrs.get("versions", "{}")),
        "num_labels": op.num_labels, "num_observations": len(op.observations),
        "labels": op.labels.symbols, "observations": op.observations.symbols,
        "m_per_label": op.m.tolist(), "mean_m": float(op.m.mean()),
        "label_pairs": len(op.trans),
    }
    for k in ("best_iteration", "train_utts", "train_positions", "template_fingerprint",
              "ill_conditioned", "templates"):
        if k in info:
            out[k] = info[k]
    if "singular_values" in info:
        out["singular_values"] = info["singular_values"]
    if "history" in info:
        out["history"] = info["history"]
    return out


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
