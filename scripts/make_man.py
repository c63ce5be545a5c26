#!/usr/bin/env python3
"""Generate man pages from the click definitions, so `--help` and `man` never disagree.

  python scripts/make_man.py [OUTDIR]       (default: man/)

Writes rhmmtk.1 and rhmmtk-<subcommand>.1 (subgroups give rhmmtk-<group>-<sub>.1).
rhmmtk-formats.5 is written by hand. tests/test_man.py checks the pages are current.
"""
import os
import sys

import click

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from rhmmtk import __version__  # noqa: E402
from rhmmtk.cli import cli  # noqa: E402

DATE = "2026"


def esc(text):
    """Escape roff: backslashes, and leading dots/quotes on a line."""
    out = []
    for line in text.replace("\\", "\\e").splitlines():
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line)
    return "\n".join(out)


def paragraphs(text):
    """click help text -> roff: blank lines separate paragraphs; indented blocks stay literal."""
    out, block = [], []
    import inspect

    for para in inspect.cleandoc(click.unstyle(text or "")).strip().split("\n\n"):
        lines = para.split("\n")
        if lines[0].strip() == "\b":          # click's no-rewrap marker: a literal block
            lines = [l if l.startswith("  ") else "  " + l for l in lines[1:]]
        if all(l.startswith("  ") or not l.strip() for l in lines):
            out.append(".PP\n.nf\n.RS 4\n" + esc("\n".join(l[2:] for l in lines)) + "\n.RE\n.fi")
        else:
            out.append(".PP\n" + esc(" ".join(l.strip() for l in lines)))
    return "\n".join(out + block)


def page(ctx, cmd, name):
    lines = [f'.TH "{name.upper()}" "1" "{DATE}" "rhmmtk {__version__}" "rhmmtk manual"',
             ".SH NAME", f"{name} \\- {esc(cmd.get_short_help_str(limit=200))}",
             ".SH SYNOPSIS", f".B {ctx.command_path}",
             esc(" ".join(cmd.collect_usage_pieces(ctx))),
             ".SH DESCRIPTION", paragraphs(cmd.help)]
    opts = [p for p in cmd.get_params(ctx) if isinstance(p, click.Option) and not p.hidden]
    if opts:
        lines.append(".SH OPTIONS")
        for p in opts:
            rec = p.get_help_record(ctx)
            if rec is None:
                continue
            lines += [".TP", f".B {esc(rec[0])}", esc(rec[1]) if rec[1] else ""]
    if isinstance(cmd, click.Group):
        lines.append(".SH COMMANDS")
        for sub in cmd.list_commands(ctx):
            c = cmd.get_command(ctx, sub)
            lines += [".TP", f".B {sub}", esc(c.get_short_help_str(limit=200)),
                      f"See \\fB{name}-{sub}\\fR(1)."]
    lines += [".SH SEE ALSO", "\\fBrhmmtk\\fR(1), \\fBrhmmtk-formats\\fR(5)"]
    return "\n".join(l for l in lines if l is not None) + "\n"


def walk(cmd, name, parent=None, info_name="rhmmtk"):
    # the command's own context settings (show_default, -h), as `--help` gets them
    ctx = click.Context(cmd, info_name=info_name, parent=parent, **cmd.context_settings)
    yield name, page(ctx, cmd, name)
    if isinstance(cmd, click.Group):
        for sub in cmd.list_commands(ctx):
            yield from walk(cmd.get_command(ctx, sub), f"{name}-{sub}", ctx, sub)


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..",
                                                                "man")
    os.makedirs(outdir, exist_ok=True)
    for name, text in walk(cli, "rhmmtk"):
        with open(os.path.join(outdir, f"{name}.1"), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
