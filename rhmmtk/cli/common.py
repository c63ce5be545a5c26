"""Options shared by every subcommand, with the same names everywhere (HTK's rule)."""
import functools
import inspect
import sys
import time

import click

from ..errors import StdoutClosed
from ..io.output import transaction
from ..progress import log, setup_logging
from ..provenance import command_line


def short_help(doc):
    """The one-line summary `rhmmtk --help` lists and a man page's NAME line gives: the first
    sentence of the docstring's first paragraph.

    Ours, not click's default, because click's rule for cutting it changed between releases
    (8.5 stopped cutting at "e.g."), which silently changed the generated man pages.
    A period ends the sentence when the text ends there or the next word is not lowercase; an
    ellipsis (`STATS...`, a repeated argument) ends none.
    """
    words = inspect.cleandoc(doc or "").partition("\n\n")[0].split()
    if words and words[0] == "\b":         # click's no-rewrap marker
        words = words[1:]
    for i, word in enumerate(words):
        if (word.endswith(".") and not word.endswith("...")
                and (i == len(words) - 1 or not words[i + 1][0].islower())):
            return " ".join(words[:i + 1])
    return " ".join(words)


def command(name, **kwargs):
    """Declare a subcommand: adds --quiet/--verbose, logs the command line and the wall time."""

    def wrap(func):
        kwargs.setdefault("short_help", short_help(func.__doc__))
        @click.option("-q", "--quiet", is_flag=True, help="No progress bars or informational logs.")
        @click.option("-v", "--verbose", is_flag=True, help="Debug logging.")
        @functools.wraps(func)
        def run(quiet, verbose, **kw):
            setup_logging(name, quiet, verbose)
            log.info("command: %s", command_line())
            t0 = time.perf_counter()
            try:
                with transaction():     # all of the command's outputs, or none of them
                    out = func(**kw)
                    sys.stdout.flush()  # a closed pipe shows now, before the files commit
            except BrokenPipeError:
                raise StdoutClosed() from None
            log.info("finished in %.2f s", time.perf_counter() - t0)
            return out

        return click.command(name, context_settings={"show_default": True}, **kwargs)(run)

    return wrap



class JobParam(click.ParamType):
    """`--job K/N` as a rhmmtk.jobs.Job."""

    name = "K/N"

    def convert(self, value, param, ctx):
        from ..errors import InputError
        from ..jobs import Job

        if isinstance(value, Job):
            return value
        try:
            return Job.parse(value)
        except InputError as e:
            self.fail(e.problem, param, ctx)


def job_option(func):
    """The shared `--job K/N` option (rhmmtk.jobs: contiguous blocks of the input order)."""
    return click.option(
        "--job", type=JobParam(), default=None, metavar="K/N",
        help="Process only shard K of N: the K-th of N contiguous blocks of the utterances, "
             "in input order (Kaldi's `--job JOB/$nj`; outputs of shards 1..N concatenate "
             "to the whole).")(func)


def seconds(ms):
    """A --frame-shift (milliseconds on every command line, as in Kaldi's feature tools)
    in the seconds the library and the archives use; None stays None."""
    return None if ms is None else ms / 1000


def training_data(output="model"):
    """The arguments OBS ALI OUTPUT of a command that reads a training set: its observation
    (or feature) archive, its alignment, and the HDF5 file it writes."""
    from ..click_types import HDF5_INPUT, HDF5_OUTPUT, TEXT_INPUT

    def deco(func):
        for arg in (click.argument(output, type=HDF5_OUTPUT), click.argument("ali", type=TEXT_INPUT),
                    click.argument("obs", type=HDF5_INPUT)):
            func = arg(func)
        return func

    return deco


def obs_ali_trainer(name, options):
    """Declare `rhmmtk NAME [options] OBS ALI MODEL` for a trainer `train(obs, ali, opts)`
    that returns a model: the decorated function gives the help text and returns the
    trainer (imported only when the command runs)."""
    from ..options import click_options

    def wrap(get_train):
        def run(obs, ali, model, **kw):
            from ..io.text import check_outputs
            from ..options import as_dict, take
            from ..provenance import record

            check_outputs(model, inputs=[obs, ali])
            opts = take(options, kw)
            get_train()(obs, ali, opts).save(model, record(as_dict(opts)))

        run.__doc__, run.__name__ = get_train.__doc__, get_train.__name__
        return command(name)(click_options(options)(training_data()(run)))

    return wrap


def dev_trainer(name, options):
    """Declare `rhmmtk NAME [options] [dev options] OBS ALI MODEL` for a trainer
    `train(obs, ali, opts, dev_obs, dev_ali)` returning (model, per-iteration records) that
    keeps the best iteration on dev (selection.DevOptions; --history writes the records):
    the decorated function gives the help text and returns (train, write_history)."""
    from ..options import click_options
    from ..selection import DevOptions

    def wrap(get_functions):
        def run(obs, ali, model, **kw):
            from ..io.text import check_outputs
            from ..options import as_dict, take
            from ..provenance import record

            opts, dev = take(options, kw), take(DevOptions, kw).check()
            check_outputs(model, dev.history, inputs=[obs, ali, dev.dev_obs, dev.dev_ali])
            train, write_history = get_functions()
            m, records = train(obs, ali, opts, dev.dev_obs, dev.dev_ali)
            if dev.history:
                write_history(records, dev.history)
            m.save(model, record({**as_dict(opts), "dev_obs": dev.dev_obs,
                                  "dev_ali": dev.dev_ali}))

        run.__doc__, run.__name__ = get_functions.__doc__, get_functions.__name__
        return command(name)(click_options(options, DevOptions)(training_data()(run)))

    return wrap


def arguments(*specs):
    """The positional arguments of a command, in order, from (NAME, type) pairs; a NAME
    ending in "..." takes one or more values (`STATS...`)."""

    def deco(func):
        for name, type_ in reversed(specs):
            many = name.endswith("...")
            func = click.argument(name.rstrip("."), type=type_, nargs=-1 if many else 1,
                                  required=True)(func)
        return func

    return deco
