"""Choosing an iteration on development data, for every iterative trainer.

The paper's protocol (and paper 002's) trains for a fixed number of iterations, decodes the
dev set after each and keeps the best. This module owns that bookkeeping once, as
hmmlearn's ConvergenceMonitor does: the shared `--dev-obs/--dev-ali/--history` options,
the dev scorer, the history file, and which iteration is best.

A history is a list of dicts, one per iteration: {"iter", "loglik", "objective",
"dev_acc"} (None where unknown); trainers may add keys of their own.
"""
import dataclasses

import click

from .errors import InputError
from .options import option, shared
from .click_types import HDF5_INPUT

HISTORY_COLUMNS = ("iter", "loglik", "objective", "dev_acc")


@dataclasses.dataclass
class DevOptions:
    """Dev-set selection, shared by every iterative trainer."""

    dev_obs: str = option("--dev-obs", default=None, type=HDF5_INPUT,
                          help="Dev observations archive.")
    dev_ali: str = shared("dev_ali")
    history: str = shared("history",
                          help="Write the per-iteration log here (TSV, a row per iteration: "
                               "the trainer's figures and dev_acc).")

    def check(self):
        if bool(self.dev_obs) != bool(self.dev_ali):
            raise click.UsageError("--dev-obs and --dev-ali go together")
        return self


# what each `--select` choice of a trainer maximises: (history key, lower is better)
SELECT_KEYS = {"accuracy": ("dev_acc", False), "per": ("dev_per", True),
               "objective": ("objective", True)}


def best_index(rows, key="dev_acc", lower=False):
    """Index of the best of `rows` (dicts) by `key`: the highest value, or the lowest
    with `lower`; the first of equals. Rows without a (non-NaN) value are skipped;
    None when no row has one."""
    scored = [(v if lower else -v, i) for i, r in enumerate(rows)
              if (v := r.get(key)) is not None and v == v]
    return min(scored)[1] if scored else None


def best_iteration(history, key="dev_acc", lower=False):
    """The iteration with the best dev score (`key`: dev_acc, highest; see best_index);
    without dev scores, the last one."""
    i = best_index(history, key, lower)
    return history[-1]["iter"] if i is None else history[i]["iter"]


def require_dev(patience, has_dev):
    """Early stopping needs dev scores: refuse patience > 0 without a dev set (every
    trainer's library entry calls this, so the CLI, the API and the scripts agree)."""
    if patience and not has_dev:
        raise InputError("--patience needs a dev set (--dev-obs, --dev-ali)")


def stalled(history, patience, key="dev_acc", lower=False):
    """Early stopping: True when the last `patience` scored rows of `history` all came
    after its best one (see best_index), i.e. dev has not improved in `patience`
    evaluations. patience 0 never stops (the paper's protocol: every iteration is run),
    nor does a history without dev scores."""
    if patience <= 0:
        return False
    best = best_index(history, key, lower)
    if best is None:
        return False
    later = [r for r in history[best + 1:] if (v := r.get(key)) is not None and v == v]
    return len(later) >= patience


def read_table(path):
    """A TSV table with a header line -> a list of dicts (numbers as floats; `path` kept
    under "table", the fields as written under "raw")."""
    from .io.text import open_input

    def value(x):
        try:
            return float(x)
        except ValueError:
            return x or None

    with open_input(path) as f:
        lines = [ln.rstrip("\n").split("\t") for ln in f if ln.strip()]
    if not lines:
        raise InputError("empty table (no header line)", path)
    head = lines[0]
    for n, row in enumerate(lines[1:], 2):
        if len(row) != len(head):
            raise InputError(f"line {n} has {len(row)} fields, the header {len(head)}", path)
    return [{"table": path, "raw": dict(zip(head, row)), **{k: value(v) for k, v in zip(head, row)}}
            for row in lines[1:]]


def best_row(tables, key, lower=False):
    """The best row (best_index) among the rows of several TSV tables: how a recipe
    chooses among runs (decoding weights, lambda, model size) on dev."""
    rows = [r for t in tables for r in read_table(t)]
    i = best_index(rows, key, lower)
    if i is None:
        raise InputError(f"no row has a {key} value", ", ".join(map(str, tables)))
    return rows[i]


def write_history(path, history):
    """The per-iteration log as TSV: iter, loglik, objective, dev_acc (empty when unknown)."""
    from .io.text import open_output

    with open_output(path) as f:
        f.write("\t".join(HISTORY_COLUMNS) + "\n")
        for h in history:
            f.write("\t".join("" if h.get(k) is None else f"{h[k]:.6f}" if k != "iter"
                              else str(h[k]) for k in HISTORY_COLUMNS) + "\n")


def main(argv=None):
    """`python -m rhmmtk.selection [--lower] KEY COLUMN,... TABLE...`: print the given
    columns of the best row (tab-separated), for recipes."""
    import sys

    from .errors import InputError as _E

    args = list(sys.argv[1:] if argv is None else argv)
    lower = args and args[0] == "--lower"
    if lower:
        args = args[1:]
    if len(args) < 3:
        sys.stderr.write(main.__doc__.strip().split("\n")[0] + "\n")
        return 2
    key, cols, tables = args[0], args[1].split(","), args[2:]
    try:
        row = best_row(tables, key, lower)
        missing = [c for c in cols if c not in row]
        if missing:
            raise _E(f"no column {missing[0]!r}", row["table"])
    except _E as e:
        sys.stderr.write(f"selection: {e}\n")
        return 1
    print("\t".join(row["raw"].get(c, str(row[c])) for c in cols))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
