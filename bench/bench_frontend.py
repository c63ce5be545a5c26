#!/usr/bin/env python3
"""The discrete front end (make-obs, featurize) against the training it feeds (issue 10).

NETtalk words as the recipe prepares them (letter windows i-1..i+1, backoff below 2
occurrences, the recipe's templates), at two sizes: the recipe's `--words` training words
(15,000), and `--big-words` (default 100,000: the training words repeated under new ids,
the issue's "100,000 short sequences"). Each step runs as the user runs it, a `rhmmtk`
subprocess (wall clock, best of `--repeats`):

  make-obs     rhmmtk make-obs --context 1 --min-count 2 --write-symbols ...
  featurize    rhmmtk featurize --templates recipes/nettalk/conf/templates.conf ...
  training     rhmmtk train-spectral -m 32 --smooth 100 (the recipe's selected model)
  start-up     rhmmtk --version: what every command pays before its work

and reports the front end's share: (make-obs + featurize) / training. The per-utterance
work no layout can avoid is the text itself (symbols -> ids, templates); the archive
layout decides the rest (bench/README.md).

  python bench/bench_frontend.py [--data nettalk.data] [--big-words 100000] [--repeats 2]
  python bench/bench_frontend.py --smoke     # seconds: a small generated dictionary
"""
import os
import sys

import options  # bench/options.py: the options every benchmark shares
from timing import REPO, best_time, rhmmtk_command, run  # bench/timing.py

TEMPLATES = os.path.join(REPO, "recipes", "nettalk", "conf", "templates.conf")
PREPARE = os.path.join(REPO, "recipes", "nettalk", "local", "prepare_nettalk.py")


def rhmmtk(*args):
    run([*rhmmtk_command(), *args], f"rhmmtk {args[0]}")


def replicate(src_dir, dst_dir, words):
    """letters + ali of `words` utterances: the training words repeated under new ids."""
    os.makedirs(dst_dir, exist_ok=True)
    for name in ("letters", "ali"):
        lines = open(os.path.join(src_dir, name)).read().splitlines()
        with open(os.path.join(dst_dir, name), "w") as out:
            for i in range(words):
                key, rest = lines[i % len(lines)].split(None, 1)
                out.write(f"r{i // len(lines)}_{key} {rest}\n")


def measure(d, repeats):
    obs, feats = os.path.join(d, "obs.h5"), os.path.join(d, "feats.h5")
    t = {
        "make-obs": best_time(lambda: rhmmtk(
            "make-obs", "-q", "--context", 1, "--min-count", 2, "--write-symbols",
            os.path.join(d, "obs.syms"), os.path.join(d, "letters"), obs), repeats),
        "featurize": best_time(lambda: rhmmtk(
            "featurize", "-q", "--templates", TEMPLATES, obs, os.path.join(d, "ali"), feats), repeats),
        "training": best_time(lambda: rhmmtk(
            "train-spectral", "-q", "-m", 32, "--smooth", 100, feats, os.path.join(d, "sp.h5")),
            repeats),
    }
    return t


def main():
    ap = options.parser(__doc__, repeats=2, work=True, nettalk=15000)
    ap.add_argument("--big-words", type=options.positive, default=100000,
                    help="the larger corpus: the training words repeated (default: %(default)s)")
    args = options.parse(ap, dict(words=100, big_words=400))
    print(f"load average before: {os.getloadavg()}")
    with options.work_dir(args, "rhmmtk-bench-frontend-") as work:
        data = options.nettalk_data(args, work)
        sizes = ",".join(map(str, options.nettalk_sizes(args.words)))
        run([sys.executable, PREPARE, "--seed", "1", "--sizes", sizes, data, work / "data"],
            "prepare_nettalk.py")
        train = os.path.join(work, "data", "train")
        big = os.path.join(work, "big")
        replicate(train, big, args.big_words)
        startup = best_time(lambda: rhmmtk("--version"), args.repeats)
        rows = [(f"{args.words:,} training words", measure(train, args.repeats)),
                (f"{args.big_words:,} words", measure(big, args.repeats))]
    print(f"load average after: {os.getloadavg()}")
    print(f"start-up of one rhmmtk command: {startup:.2f} s")
    print(f"{'corpus':24s} {'make-obs':>9s} {'featurize':>10s} {'train-spectral -m 32':>21s} "
          f"{'front end / training':>21s}")
    for name, t in rows:
        share = (t["make-obs"] + t["featurize"]) / t["training"]
        print(f"{name:24s} {t['make-obs']:9.2f} {t['featurize']:10.2f} {t['training']:21.2f} "
              f"{share:21.2f}")
    options.write_json(args, {"startup_s": startup, **{name: t for name, t in rows}})


if __name__ == "__main__":
    main()
