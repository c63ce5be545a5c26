#!/usr/bin/env python3
"""The discrete front end (make-obs, featurize) against the training it feeds (issue 10).

NETtalk words as the recipe prepares them (letter windows i-1..i+1, backoff below 2
occurrences, the recipe's templates), at two sizes: the recipe's 15,000 training words,
and `--words` (default 100,000: the dictionary's words repeated under new ids, the
issue's "100,000 short sequences"). Each step runs as the user runs it, a `rhmmtk`
subprocess (wall clock, best of `--repeats`):

  make-obs     rhmmtk make-obs --context 1 --min-count 2 --write-symbols ...
  featurize    rhmmtk featurize --templates recipes/nettalk/conf/templates.conf ...
  training     rhmmtk train-spectral -m 32 --smooth 100 (the recipe's selected model)
  start-up     rhmmtk --version: what every command pays before its work

and reports the front end's share: (make-obs + featurize) / training. The per-utterance
work no layout can avoid is the text itself (symbols -> ids, templates); the archive
layout decides the rest (bench/README.md).

  python bench/bench_frontend.py [--data nettalk.data] [--words 100000] [--repeats 2]
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)
from timing import best_time  # noqa: E402

TEMPLATES = os.path.join(REPO, "recipes", "nettalk", "conf", "templates.conf")


def rhmmtk(*args):
    subprocess.run([sys.executable, "-m", "rhmmtk", *map(str, args)], check=True,
                   stdout=subprocess.DEVNULL)


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
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.environ.get("RHMMTK_NETTALK", os.path.join(
        REPO, "..", "shared", "data", "nettalk", "nettalk.data")))
    ap.add_argument("--words", type=int, default=100000)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as work:
        subprocess.run([sys.executable, os.path.join(REPO, "recipes", "nettalk", "local",
                                                     "prepare_nettalk.py"),
                        "--seed", "1", args.data, os.path.join(work, "data")], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        train = os.path.join(work, "data", "train")
        big = os.path.join(work, "big")
        replicate(train, big, args.words)
        startup = best_time(lambda: rhmmtk("--version"), args.repeats)
        rows = [("15,000 training words", measure(train, args.repeats)),
                (f"{args.words:,} words", measure(big, args.repeats))]
    print(f"load average after: {os.getloadavg()}")
    print(f"start-up of one rhmmtk command: {startup:.2f} s")
    print(f"{'corpus':24s} {'make-obs':>9s} {'featurize':>10s} {'train-spectral -m 32':>21s} "
          f"{'front end / training':>21s}")
    for name, t in rows:
        share = (t["make-obs"] + t["featurize"]) / t["training"]
        print(f"{name:24s} {t['make-obs']:9.2f} {t['featurize']:10.2f} {t['training']:21.2f} "
              f"{share:21.2f}")


if __name__ == "__main__":
    main()
