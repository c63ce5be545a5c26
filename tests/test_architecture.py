"""docs/ARCHITECTURE.md stays true to the tree: every module under rhmmtk/ is named (full
path) in the first column of a row of its "Where things live" table, and every rhmmtk/
path a row names exists."""
import re

from conftest import REPO

DOC = REPO / "docs" / "ARCHITECTURE.md"


def named_paths(text):
    """The backquoted paths in the first column of every table row."""
    out = set()
    for line in text.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            first = line.split("|")[1]
            out.update(re.findall(r"`([^`]+)`", first))
    return out


def modules():
    return {p.relative_to(REPO).as_posix() for p in (REPO / "rhmmtk").rglob("*.py")}


def test_every_module_has_its_row():
    missing = sorted(modules() - named_paths(DOC.read_text()))
    assert not missing, ("modules without a row in docs/ARCHITECTURE.md (add one that says "
                         "what each holds): " + ", ".join(missing))


def test_every_row_names_what_exists():
    gone = sorted(p for p in named_paths(DOC.read_text())
                  if p.startswith("rhmmtk/") and not (REPO / p).exists())
    assert not gone, "docs/ARCHITECTURE.md names modules that do not exist: " + ", ".join(gone)


def test_the_check_notices_a_missing_row():
    """The check can fail: a table without one module's row misses exactly that one."""
    text = "\n".join(line for line in DOC.read_text().splitlines()
                     if "`rhmmtk/bundle.py`" not in line)
    assert sorted(modules() - named_paths(text)) == ["rhmmtk/bundle.py"]
    assert "rhmmtk/bundle.py" not in named_paths("| x | `rhmmtk/bundle.py` | y |")
