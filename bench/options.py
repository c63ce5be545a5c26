"""The options every benchmark shares, defined once (the convention: bench/README.md).

  --smoke           tiny data and one repeat: seconds, no ../shared; the same code paths
                    and the same report (tests/test_bench.py runs every script so)
  --repeats N       each timing is the best of N runs
  --work DIR        inputs and outputs in DIR, kept (default: a temporary dir, removed)
  --reuse           with --work: keep the inputs already prepared there
  --json FILE       also write every number as JSON
  --seed N          the synthetic data's seed
  --blas-threads N  OPENBLAS/OMP/MKL_NUM_THREADS for the run and its subprocesses
  --data FILE       the NETtalk dictionary (default $RHMMTK_NETTALK, else
                    ../shared/data/nettalk/nettalk.data beside the repository)
  --words N         NETtalk training words (the recipe's split, seed 1)
A list is one option with commas: --jobs 1,2.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from timing import REPO  # bench/timing.py

NETTALK = REPO.parent / "shared" / "data" / "nettalk" / "nettalk.data"


def parser(doc, repeats=3, work=False, reuse=False, seed=None, blas_threads=False,
           nettalk=None, json_out=True):
    """An ArgumentParser with --smoke and the shared options asked for: `work`, `reuse`,
    `blas_threads`, `json_out` (bool); `repeats`, `seed` and `nettalk` (the default
    repeats, seed and training word count; None: no such option)."""
    ap = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    ap.add_argument("--smoke", action="store_true",
                    help="tiny data, one repeat: seconds; checks that the script runs")
    if repeats is not None:
        ap.add_argument("--repeats", type=positive, default=repeats,
                        help="each timing is the best of this many (default: %(default)s)")
    if work:
        ap.add_argument("--work", metavar="DIR", type=Path,
                        help="keep inputs and outputs here (default: a temporary dir, removed)")
    if reuse:
        ap.add_argument("--reuse", action="store_true",
                        help="with --work: keep the inputs already prepared there")
    if json_out:
        ap.add_argument("--json", metavar="FILE", help="also write every number as JSON here")
    if seed is not None:
        ap.add_argument("--seed", type=int, default=seed,
                        help="seed of the synthetic data (default: %(default)s)")
    if blas_threads:
        ap.add_argument("--blas-threads", type=positive, metavar="N",
                        help="OPENBLAS/OMP/MKL_NUM_THREADS for the run and its subprocesses "
                             "(default: unchanged)")
    if nettalk is not None:
        ap.add_argument("--data", metavar="FILE", type=Path,
                        help="the NETtalk dictionary (default: $RHMMTK_NETTALK, else "
                             f"{NETTALK.relative_to(REPO.parent)} beside the repository; "
                             "--smoke: a small generated one)")
        ap.add_argument("--words", type=positive, default=nettalk,
                        help="NETtalk training words, the recipe's split with seed 1 "
                             "(default: %(default)s)")
    return ap


def parse(ap, smoke, argv=None):
    """Parse; with --smoke, `smoke` (dest -> value) and one repeat replace the defaults
    (options given on the command line still win)."""
    args = ap.parse_args(argv)
    if args.smoke:
        one = {"repeats": 1} if hasattr(args, "repeats") else {}
        ap.set_defaults(**one, **smoke)
        args = ap.parse_args(argv)
    if getattr(args, "blas_threads", None):
        for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[v] = str(args.blas_threads)
        _limit_loaded_blas(args.blas_threads)
    return args


def _limit_loaded_blas(n):
    """The environment reaches a BLAS loaded later and the subprocesses; one already
    loaded (numpy imported) is limited through threadpoolctl."""
    if "numpy" in sys.modules:
        from threadpoolctl import threadpool_limits
        threadpool_limits(n, user_api="blas")


def positive(text):
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def comma_list(kind):
    """argparse type: a comma-separated list of `kind` ("1,2"; "" is the empty list)."""
    def parse_list(text):
        try:
            return [kind(v) for v in text.split(",") if v.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a comma-separated list of {kind.__name__}, got {text!r}") from None
    parse_list.__name__ = f"comma-separated {kind.__name__} list"
    return parse_list


@contextmanager
def work_dir(args, prefix):
    """--work DIR (created, kept) or a temporary directory removed afterwards."""
    if getattr(args, "work", None):
        work = args.work.resolve()
        work.mkdir(parents=True, exist_ok=True)
        yield work
        return
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        yield Path(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def nettalk_data(args, work):
    """The dictionary to read: with --smoke (and no --data) a generated one in `work`
    (four times --words, so that the split has dev and test words); else --data,
    $RHMMTK_NETTALK or the shared copy. Exits with one line if it is missing."""
    if args.smoke and not args.data:
        from rhmmtk.corpora.synthetic import write_dictionary

        path = work / "smoke-dictionary.data"
        write_dictionary(path, 4 * args.words)
        return path
    data = Path(args.data or os.environ.get("RHMMTK_NETTALK") or NETTALK)
    if not data.exists():
        sys.exit(f"{Path(sys.argv[0]).name}: error: {data}: no such file (give --data or "
                 "$RHMMTK_NETTALK, or run with --smoke)")
    return data.resolve()


def nettalk_sizes(words):
    """(train, dev) word counts of the recipe's split scaled to `words` training words
    (15,000: 1,034, paper 002's)."""
    return words, round(words * 1034 / 15000)


def nettalk_training(args, work):
    """NETtalk's training words of the recipe's split (seed 1, --words of them) as the
    commands read them: `work`/letters, `work`/ali (hand alignment) and `work`/let.h5
    (make-obs codes). Returns the split's (key, letters, labels) rows."""
    from rhmmtk.corpora.nettalk import read_dictionary, split
    from rhmmtk.frontend.observations import make_obs_file

    data = nettalk_data(args, work)
    rows = split(read_dictionary(data), nettalk_sizes(args.words), seed=1)["train"]
    (work / "letters").write_text("".join(f"{k} {' '.join(w)}\n" for k, w, _ in rows))
    (work / "ali").write_text("".join(f"{k} {' '.join(p)}\n" for k, _, p in rows))
    make_obs_file(work / "letters", work / "let.h5")
    return rows


def write_json(args, result, default=str):
    """--json FILE: the result, every number."""
    if getattr(args, "json", None):
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1, default=default)
        print(f"wrote {args.json}")
