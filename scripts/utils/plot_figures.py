#!/usr/bin/env python3
"""The paper's figures from a recipe's exp/ directory, as PNG and TSV.

  plot_figures.py fig5 EXP/dev_grid.tsv OUT        dev accuracy against m: EM (best
                                                    iteration) and SPECTRAL (best C)
  plot_figures.py fig7 EXP/ablation.tsv OUT        feature ablation (one bar per template set)
  plot_figures.py emcurve OUT HISTORY.tsv...       EM's dev accuracy per iteration, one line per m

OUT is a prefix: OUT.tsv and OUT.png are written (atomically). Recipes call this
in their last stage; tests call it on a small run.
"""
import argparse
import csv
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from plotting import finish  # noqa: E402  (scripts/utils/plotting.py)


def read_tsv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def save(fig, rows, header, out):
    d = os.path.dirname(os.path.abspath(out))
    os.makedirs(d, exist_ok=True)
    from rhmmtk.io.output import open_output, transaction

    with transaction():                   # the table and its figure appear together
        with open_output(f"{out}.tsv") as f:
            _write_tsv(f, rows, header)
        with open_output(f"{out}.png", binary=True) as f:
            fig.savefig(f, format="png", dpi=100)
    plt.close(fig)
    print(f"wrote {out}.tsv and {out}.png", file=sys.stderr)


def _write_tsv(f, rows, header):
    f.write("\t".join(header) + "\n")
    for r in rows:
        f.write("\t".join(str(x) for x in r) + "\n")


def fig5(grid, out):
    """Best dev accuracy per (system, m): EM's grid rows already hold its best iteration;
    SPECTRAL's best over the smoothing constants."""
    best = {}
    for r in read_tsv(grid):
        if r["system"] not in ("EM", "SPECTRAL"):
            continue
        key = (r["system"], int(r["m"]))
        best[key] = max(best.get(key, float("-inf")), float(r["dev_acc"]))
    rows = sorted((s, m, acc) for (s, m), acc in best.items())
    fig, ax = plt.subplots(figsize=(6, 4))
    for system, style in (("EM", "s--"), ("SPECTRAL", "o-")):
        pts = [(m, a) for s, m, a in rows if s == system]
        if pts:
            ax.plot(*zip(*pts), style, label=system)
    finish(fig, ax, "hidden states m", "dev accuracy (%)",
           "Dev accuracy against m (EM: best iteration)")
    save(fig, rows, ["system", "m", "dev_acc"], out)


def fig7(table, out):
    rows = [(r["templates"], float(r["dev_acc"])) for r in read_tsv(table)]
    fig, ax = plt.subplots(figsize=(6, 3 + 0.3 * len(rows)))
    ax.barh([r[0] for r in rows], [r[1] for r in rows], color="tab:blue")
    lo = min(r[1] for r in rows)
    ax.set_xlim(max(0, lo - 5), max(r[1] for r in rows) + 1)
    for i, (_, acc) in enumerate(rows):
        ax.text(acc, i, f" {acc:.2f}", va="center")
    ax.set_xlabel("dev accuracy (%)")
    ax.set_title("Feature ablation (SPECTRAL)")
    fig.tight_layout()
    save(fig, rows, ["templates", "dev_acc"], out)


def emcurve(histories, out):
    rows = []
    fig, ax = plt.subplots(figsize=(6, 4))
    for path in histories:
        mt = re.search(r"m(\d+)", path)
        m = int(mt.group(1)) if mt else path
        pts = [(int(r["iter"]), 100 * float(r["dev_acc"])) for r in read_tsv(path)
               if r.get("dev_acc")]
        rows += [(m, it, f"{acc:.2f}") for it, acc in pts]
        if pts:
            ax.plot(*zip(*pts), label=f"EM({m})")
    finish(fig, ax, "EM iteration", "dev accuracy (%)",
           "EM: dev accuracy per iteration", legend_size=8)
    save(fig, rows, ["m", "iter", "dev_acc"], out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    a = sub.add_parser("fig5")
    a.add_argument("grid")
    a.add_argument("out")
    a = sub.add_parser("fig7")
    a.add_argument("table")
    a.add_argument("out")
    a = sub.add_parser("emcurve")
    a.add_argument("out")
    a.add_argument("histories", nargs="+")
    args = ap.parse_args()
    try:
        if args.what == "fig5":
            fig5(args.grid, args.out)
        elif args.what == "fig7":
            fig7(args.table, args.out)
        else:
            emcurve(args.histories, args.out)
    except (OSError, KeyError, ValueError) as e:
        sys.exit(f"plot_figures.py {args.what}: error: {e}")


if __name__ == "__main__":
    main()
