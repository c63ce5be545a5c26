"""The README's commands work as written, from a fresh copy of the repository tree.

Convention (README.md): a fenced block right after the line `<!-- readme-test: run -->`
is run as written (```python blocks by python, the others by bash) in a copy of the
tree with `../shared` beside it, so that the quick start really runs where a new user
runs it. The long commands (the install, the full recipes) are not run: the scripts they
name must exist and answer `--help`. Every `rhmmtk SUBCOMMAND --option` the README
mentions must be an option of that subcommand, and every repository path it names must
exist.
"""
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

import click
import pytest

from conftest import REPO, shared_dir

README = REPO / "README.md"
MARK = "<!-- readme-test: run -->"


def fenced_blocks(text):
    """[(language, code, marked)] for every ``` block; marked: right after MARK."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        if lines[i].startswith("```"):
            lang, start = lines[i][3:].strip(), i + 1
            end = next(j for j in range(start, len(lines)) if lines[j].startswith("```"))
            marked = i > 0 and lines[i - 1].strip() == MARK
            blocks.append((lang, "\n".join(lines[start:end]) + "\n", marked))
            i = end
        i += 1
    return blocks


def shell_commands(text):
    """Every command of the README's shell code: fenced non-python blocks, indented
    blocks and inline `...` spans, split at pipes, && and ;, comments dropped, the
    backslash continuations joined."""
    spans = [code for lang, code, _ in fenced_blocks(text) if lang != "python"]
    spans += re.findall(r"^    (\S.*)$", text, flags=re.M)
    spans += re.findall(r"`([^`\n]+)`", text)
    commands = []
    for span in spans:
        for line in span.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s#\s.*$", "", line)
            commands += [c.strip() for c in re.split(r"\|\||&&|\||;", line) if c.strip()]
    return commands


def test_the_marked_blocks_are_the_quick_starts():
    """The convention is in use: the command-line and Python quick starts, the example
    and the Slurm dry run are marked (a dropped marker would silently stop testing them)."""
    marked = [code for _, code, m in fenced_blocks(README.read_text()) if m]
    assert len(marked) >= 4, marked
    joined = "".join(marked)
    for must in ("rhmmtk train-spectral", "rhmmtk compare", "SpectralRHMM",
                 "examples/nettalk.py", "run_slurm.sh --dry-run"):
        assert must in joined, must


@pytest.fixture(scope="module")
def fresh_tree(tmp_path_factory):
    """A copy of the repository's files (what a clone holds, plus new files not yet
    committed, less what the README's own commands write) at TMP/repo, with TMP/shared
    pointing at the shared corpora."""
    shared = shared_dir()
    if not (shared / "data" / "nettalk" / "nettalk.data").is_file():
        pytest.skip(f"NETtalk not found under {shared}")
    top = tmp_path_factory.mktemp("readme")
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                           cwd=REPO, capture_output=True, text=True, check=True).stdout
    for name in filter(None, files.split("\0")):
        src = REPO / name
        made_by_the_readme = name.startswith("qs/") or ("/" not in name and name.endswith(".h5"))
        if src.is_file() and not made_by_the_readme:   # deleted files are listed too
            dst = top / "repo" / name
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    (top / "shared").symlink_to(shared.resolve())
    return top / "repo"


def user_env(tree):
    """The environment of a user who installed rhmmtk: this interpreter's `python` and
    `rhmmtk` first on PATH, running the copy's code."""
    bindir = pathlib.Path(sys.executable).parent
    if not (bindir / "rhmmtk").exists():    # e.g. pip install --user: scripts elsewhere
        found = shutil.which("rhmmtk")
        assert found, "rhmmtk is not installed (pip install -e .)"
        bindir = pathlib.Path(found).parent
    return {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": str(tree)}


def run_block(lang, code, tree):
    argv = [sys.executable, "-c", code] if lang == "python" else ["bash", "-euo", "pipefail", "-c", code]
    p = subprocess.run(argv, cwd=tree, env=user_env(tree), capture_output=True, text=True)
    assert p.returncode == 0, f"README block failed:\n{code}\n--- stderr:\n{p.stderr[-3000:]}"
    assert "Traceback" not in p.stderr, p.stderr[-3000:]
    return p.stdout


MARKED = [(lang, code) for lang, code, marked in fenced_blocks(README.read_text()) if marked]


def accuracy(pattern, text):
    found = re.search(pattern, text)
    assert found, text[-2000:]
    return float(found.group(1))


@pytest.mark.parametrize("lang,code", MARKED, ids=[code.split("\n")[0][:40] for _, code in MARKED])
def test_marked_block_runs_as_written(lang, code, fresh_tree):
    out = run_block(lang, code, fresh_tree)
    # Beyond a zero exit: the outputs a reader is told to expect. The floors are far below
    # what these runs give (quick start 84-85% with 3,000 words; the example 88-89%) and
    # far above what a broken model gives (the majority label, '-', is ~20% of letters).
    if "rhmmtk compare" in code:
        assert accuracy(r"POS:\s+%Acc=([\d.]+)", out) > 75, out
        assert "Bootstrap: p=" in out and "Sign test: p=" in out, out
        for name in ("spectral.h5", "em.h5", "spectral.hyp", "em.hyp"):
            assert (fresh_tree / "qs" / name).stat().st_size > 0, name
    if "SpectralRHMM" in code:
        assert accuracy(r"dev accuracy ([\d.]+)%", out) > 75, out
        assert re.search(r"rhythm -> \S+", out), out
        assert (fresh_tree / "sp8.h5").is_file()
    if "examples/nettalk.py" in code:
        assert accuracy(r"per-letter test accuracy ([\d.]+)%", out) > 80, out
    if "--dry-run" in code:
        assert "sbatch" in out and "--array=1-4" in out, out


def long_scripts(text):
    """The scripts the README's commands start: `bash X`, or a path to a .sh."""
    scripts = set()
    for command in shell_commands(text):
        words = command.split()
        if words[0] == "bash" and len(words) > 1:
            scripts.add(words[1])
        elif words[0].endswith(".sh") and "/" in words[0] and "<" not in words[0]:
            scripts.add(words[0])
    return sorted(scripts)


def test_long_commands_name_scripts_that_exist():
    scripts = long_scripts(README.read_text())
    # the two set-up commands and both recipes must be among them
    for must in ("scripts/install.sh", "scripts/setup_and_test.sh", "recipes/nettalk/run.sh",
                 "recipes/timit/run.sh"):
        assert must in scripts, scripts
    for script in scripts:
        assert (REPO / script).is_file(), f"README names {script}, which does not exist"


@pytest.mark.parametrize("script", ["recipes/nettalk/run.sh", "recipes/timit/run.sh",
                                    "recipes/nettalk/run_competitors.sh", "recipes/g2p/run.sh"])
def test_recipes_answer_help(script, fresh_tree):
    assert script in README.read_text()
    p = subprocess.run([str(fresh_tree / script), "--help"], cwd=fresh_tree,
                       env=user_env(fresh_tree), capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "Usage:" in p.stdout + p.stderr


def rhmmtk_uses(text):
    """(subcommand path, [--options]) for every `rhmmtk ...` command in the README."""
    uses = []
    for command in shell_commands(text):
        try:
            words = shlex.split(command)
        except ValueError:          # an inline span holding half a quoted string
            words = command.split()
        if not words or words[0] != "rhmmtk":
            continue
        path = [w for w in words[1:3] if re.fullmatch(r"[a-z][a-z-]*", w)]
        uses.append((path, [w.split("=")[0] for w in words if w.startswith("--")]))
    return uses


def test_every_rhmmtk_option_in_the_readme_exists():
    from rhmmtk.cli import cli      # the same group the man pages are made from

    uses = rhmmtk_uses(README.read_text())
    assert len(uses) >= 10, uses
    for path, options in uses:
        # contexts with each command's own settings (-h), as `--help` and the man pages
        # build them: click caches a command's help option from the first context it sees
        cmd, ctx = cli, click.Context(cli, **cli.context_settings)
        for name in path:
            if not isinstance(cmd, click.Group):
                break
            sub = cmd.get_command(ctx, name)
            assert sub is not None, f"README: `rhmmtk {' '.join(path)}`: no such subcommand"
            cmd, ctx = sub, click.Context(sub, parent=ctx, **sub.context_settings)
        known = {o for p in cmd.get_params(ctx) for o in p.opts + p.secondary_opts}
        for option in options:
            assert option in known, f"README: `rhmmtk {' '.join(path)} {option}`: no such option"


def test_every_path_the_readme_names_exists():
    text = README.read_text()
    paths = set(re.findall(r"(?<![\w./$-])((?:recipes|scripts|docs|man|examples|tests|bench)/[\w./*-]+)", text))
    assert len(paths) > 20, paths
    for path in sorted(p.rstrip(".") for p in paths if "/exp/" not in p):  # exp/: outputs
        assert list(REPO.glob(path)), f"README names {path}, which does not exist"
