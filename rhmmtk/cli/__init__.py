"""The `rhmmtk` command: a click group whose subcommands are thin shims over the library.

Subcommands are imported lazily so `rhmmtk --help` is instant; each lives in its
own module rhmmtk/cli/<name>.py and is listed in COMMANDS below.
"""
import importlib
import sys

import click

from ..errors import InputError, StdoutClosed

# name -> "module:function"; the one place a subcommand is registered.
COMMANDS = {
    "feats": "rhmmtk.cli.feats:feats",
    "quantize": "rhmmtk.cli.quantize:quantize",
    "copy-feats": "rhmmtk.cli.copy_feats:copy_feats",
    "make-obs": "rhmmtk.cli.make_obs:make_obs",
    "featurize": "rhmmtk.cli.featurize:featurize",
    "train-spectral": "rhmmtk.cli.spectral:train_spectral",
    "train-em": "rhmmtk.cli.em:train_em",
    "train-unigram": "rhmmtk.cli.em:train_unigram",
    "train-hkz": "rhmmtk.cli.hkz:train_hkz",
    "train-maxmargin": "rhmmtk.cli.maxmargin:train_maxmargin",
    "train-crf": "rhmmtk.cli.crf:train_crf",
    "train-subpat": "rhmmtk.cli.subpat:train_subpat",
    "train-cdhmm": "rhmmtk.cli.cdhmm:train_cdhmm",
    "train-largemargin": "rhmmtk.cli.cdhmm:train_largemargin",
    "acc-cdhmm": "rhmmtk.cli.cdhmm:acc_cdhmm",
    "init-cdhmm": "rhmmtk.cli.cdhmm:init_cdhmm",
    "est-cdhmm": "rhmmtk.cli.cdhmm:est_cdhmm",
    "acc-largemargin": "rhmmtk.cli.cdhmm:acc_largemargin",
    "est-largemargin": "rhmmtk.cli.cdhmm:est_largemargin",
    "train-hcrf": "rhmmtk.cli.hcrf:train_hcrf",
    "acc-hcrf": "rhmmtk.cli.hcrf:acc_hcrf",
    "est-hcrf": "rhmmtk.cli.hcrf:est_hcrf",
    "train-hcrf-tagger": "rhmmtk.cli.hcrf:train_hcrf_tagger",
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
    "convert-ali": "rhmmtk.cli.convert_ali:convert_ali",
    "info": "rhmmtk.cli.info:info",
    "validate-data-dir": "rhmmtk.cli.datadir:validate_data_dir",
    "align": "rhmmtk.cli.g2p:align",
    "pronounce": "rhmmtk.cli.g2p:pronounce",
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

    Outputs are complete or absent: each command's outputs appear together when
    all are written, devices and pipes are written in place, and errors and
    signals leave no partial or temporary file (rhmmtk-formats(5), WRITE
    GUARANTEES). Exit status: 0 success; 1 an error, told in one line on stderr;
    2 a usage error or an option value out of range; 128+N killed by signal N.
    """


def main(argv=None):
    """Entry point: user errors become one line on stderr and exit status 1."""
    from ..threads import blas_threads, limit_blas_env

    limit_blas_env()                 # must precede numpy's import
    from ..io.output import handle_signals

    args = sys.argv[1:] if argv is None else list(argv)
    prog = command_name(args)
    handle_signals(prog)
    try:
        with blas_threads():
            cli.main(args=args, prog_name="rhmmtk", standalone_mode=False)
        sys.stdout.flush()            # --help and --version too
    except InputError as e:
        click.echo(f"{prog}: error: {e.describe()}", err=True)
        sys.exit(1)
    except click.exceptions.Abort:
        click.echo(f"{prog}: error: aborted; no output written", err=True)
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except (BrokenPipeError, StdoutClosed):
        _quiet_stdout()
        sys.exit(141)
    except OSError as e:
        # the operating system refused something not already named (an input's I/O error)
        where = f"{e.filename}: " if e.filename else ""
        click.echo(f"{prog}: error: {where}{e.strerror or e}", err=True)
        sys.exit(1)


def _quiet_stdout():
    """Point standard output at /dev/null, so the interpreter's last flush of what is still
    buffered does not fail again (Python's advice for SIGPIPE)."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass                          # not a real descriptor (a test's captured output)


def command_name(args):
    """'rhmmtk decode' (or 'rhmmtk quantize apply') for error lines."""
    words = [a for a in args if not a.startswith("-")]
    name = next((a for a in words if a in COMMANDS), None)
    if name is None:
        return "rhmmtk"
    if name == "quantize":
        sub = next((a for a in words[words.index(name) + 1:]), None)
        if sub in ("learn", "apply"):
            return f"rhmmtk quantize {sub}"
    return f"rhmmtk {name}"
