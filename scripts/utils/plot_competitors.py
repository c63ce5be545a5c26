#!/usr/bin/env python3
"""Paper 002's figures from recipes/nettalk/run_competitors.sh's tables, as PNG (+ TSV copy).

  plot_competitors.py curve EXP/learning_curve.tsv OUT   test accuracy against training
                                                           words, one line per system (fig. 1)
  plot_competitors.py regpath EXP/reg_path.tsv OUT       dev accuracy against tau for nuclear
                                                           and l2 (fig. 2; tau normalised to
                                                           each regulariser's grid)
"""
import argparse
import csv
import os
import shutil
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from plotting import finish  # noqa: E402  (scripts/utils/plotting.py)


def read_tsv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def save(fig, src, out):
    d = os.path.dirname(os.path.abspath(out))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, suffix=".png")
    os.close(fd)
    fig.savefig(tmp, format="png", dpi=100)
    os.chmod(tmp, 0o644)
    os.replace(tmp, out + ".png")
    shutil.copyfile(src, out + ".tsv")
    plt.close(fig)


def curve(rows, out, src):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for system in dict.fromkeys(r["system"] for r in rows):
        pts = sorted((int(r["words"]), float(r["test_acc"])) for r in rows if r["system"] == system)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=system)
    ax.set_xscale("log")
    finish(fig, ax, "training words", "test accuracy per letter (%)",
           "NETtalk learning curves (paper 002, figure 1)", legend_size=8)
    save(fig, src, out)


def regpath(rows, out, src):
    fig, ax = plt.subplots(figsize=(6, 4))
    for reg in dict.fromkeys(r["reg"] for r in rows):
        pts = sorted((float(r["tau"]), float(r["dev_acc"])) for r in rows if r["reg"] == reg)
        if reg == "none":
            ax.axhline(pts[0][1], color="gray", ls="--", label="unregularised")
            continue
        lo, hi = pts[0][0], pts[-1][0]
        import math

        x = [(math.log(t) - math.log(lo)) / max(math.log(hi) - math.log(lo), 1e-12) for t, _ in pts]
        ax.plot(x, [p[1] for p in pts], marker="o", label=reg)
    finish(fig, ax, "tau (log scale, normalised to each grid)", "dev accuracy per letter (%)",
           "Regularisation path (paper 002, figure 2)")
    save(fig, src, out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("curve", "regpath"))
    ap.add_argument("table")
    ap.add_argument("out")
    args = ap.parse_args()
    rows = read_tsv(args.table)
    (curve if args.what == "curve" else regpath)(rows, args.out, args.table)


if __name__ == "__main__":
    main()
