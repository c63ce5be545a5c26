"""The `rhmmtk` command: a click group whose subcommands are thin shims over the library.

Subcommands are imported lazily so `rhmmtk --help` is instant; each lives in its
own module rhmmtk/cli/<name>.py and is listed in COMMANDS below.
"""
import importlib
import sys

import click

from ..errors import InputError

# name -> "module:function"; the one place a subcommand is registered.
COMMANDS = {
    "feats": "rhmmtk.cli.feats:feats",
    "quantize": "rhmmtk.cli.quantize:quantize",
    "make-obs": "rhmmtk.cli.make_obs:make_obs",
    "featurize": "rhmmtk.cli.featurize:featurize",
    "train-spectral": "rhmmtk.cli.spectral:train_spectral",
    "train-em": "rhmmtk.cli.train:train_em",
    "train-unigram": "rhmmtk.cli.train:train_unigram",
    "train-cdhmm": "rhmmtk.cli.cdhmm:train_cdhmm",
    "train-largemargin": "rhmmtk.cli.cdhmm:train_largemargin",
    "acc-cdhmm": "rhmmtk.cli.cdhmm:acc_cdhmm",
    "init-cdhmm": "rhmmtk.cli.cdhmm:init_cdhmm",
    "est-cdhmm": "rhmmtk.cli.cdhmm:est_cdhmm",
    "acc-spectral": "rhmmtk.cli.spectral:acc_spectral",
    "svd-spectral": "rhmmtk.cli.spectral:svd_spectral",
    "est-spectral": "rhmmtk.cli.spectral:est_spectral",
    "acc-em": "rhmmtk.cli.em:acc_em",
    "init-em": "rhmmtk.cli.em:init_em",
    "est-em": "rhmmtk.cli.em:est_em",
    "merge-archives": "rhmmtk.cli.merge:merge_archives",
    "decode": "rhmmtk.cli.decode:decode",
    "score": "rhmmtk.cli.score:score",
    "compare": "rhmmtk.cli.compare:compare",
    "info": "rhmmtk.cli.info:info",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return sorted(COMMANDS)

    def get_command(self, ctx, name):
        if name not in COMMANDS:
            return None
        module, func = COMMANDS[name].split(":")
        return getattr(importlib.import_module(module), func)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="rhmmtk")
def cli():
    """rhmmtk: supervised sequence labeling with refinement HMMs (R-HMMs).

    Every label is refined by a hidden state the data never shows; models are
    trained by the spectral method of Stratos et al. (CoNLL 2013) or by EM and
    decoded by max-marginal forward-backward. See rhmmtk-formats(5) for files.
    """


def main(argv=None):
    """Entry point: user errors become one line on stderr and exit status 1."""
    # One BLAS thread unless the user says otherwise (RHMMTK_THREADS or the BLAS's own
    # variables): our products are many and small, and on a shared 2-core machine a
    # second BLAS thread measured 2-5x slower (bench/README.md). Must precede numpy's import.
    import os

    threads = os.environ.get("RHMMTK_THREADS", "1")
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, threads)
    try:
        cli.main(args=argv, prog_name="rhmmtk", standalone_mode=False)
    except InputError as e:
        cmd = next((a for a in (argv or sys.argv[1:]) if a in COMMANDS), None)
        click.echo(f"rhmmtk{' ' + cmd if cmd else ''}: error: {e.describe()}", err=True)
        sys.exit(1)
    except click.exceptions.Abort:
        click.echo("rhmmtk: aborted", err=True)
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except BrokenPipeError:
        sys.exit(141)
