"""Progress bars and logging for long steps.

Bars go to stderr and are silent when stderr is not a terminal or the user
asked for --quiet; logs go to stderr too, so stdout stays free for pipes.
"""
import logging
import sys
import time

log = logging.getLogger("rhmmtk")
_state = {"quiet": False}


def setup_logging(command, quiet=False, verbose=False):
    _state["quiet"] = quiet
    level = logging.WARNING if quiet else (logging.DEBUG if verbose else logging.INFO)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"rhmmtk {command}: %(message)s"))
    log.handlers[:] = [handler]
    log.setLevel(level)
    log.propagate = False


def progress(iterable=None, desc=None, total=None, unit="utt"):
    from tqdm import tqdm

    disable = _state["quiet"] or not sys.stderr.isatty()
    return tqdm(iterable, desc=desc, total=total, unit=unit, disable=disable,
                file=sys.stderr, leave=False, dynamic_ncols=True)


class Timer:
    """`with Timer("decode"):` logs the wall time of a step."""

    def __init__(self, what):
        self.what = what

    def __enter__(self):
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.t0
        if exc[0] is None:
            log.info("%s took %.2f s", self.what, self.seconds)
