"""Options shared by every subcommand, with the same names everywhere (HTK's rule)."""
import functools
import time

import click

from ..progress import log, setup_logging
from ..provenance import command_line


def command(name, **kwargs):
    """Declare a subcommand: adds --quiet/--verbose, logs the command line and the wall time."""

    def wrap(func):
        @click.option("-q", "--quiet", is_flag=True, help="No progress bars or informational logs.")
        @click.option("-v", "--verbose", is_flag=True, help="Debug logging.")
        @functools.wraps(func)
        def run(quiet, verbose, **kw):
            setup_logging(name, quiet, verbose)
            log.info("command: %s", command_line())
            t0 = time.perf_counter()
            out = func(**kw)
            log.info("finished in %.2f s", time.perf_counter() - t0)
            return out

        return click.command(name, context_settings={"show_default": True}, **kwargs)(run)

    return wrap

