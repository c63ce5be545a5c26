"""Label mappings: a text file of `from to` lines (e.g. TIMIT's 48 -> 39 folding).

Every label that occurs in the data must have a line, including labels that map
to themselves (`aa aa`); scoring refuses a label the mapping does not cover
rather than guessing. Blank lines and lines starting with `#` are skipped.
"""
from ..errors import InputError
from .text import open_input


def read_label_map(path):
    """Read a mapping file into a dict from-label -> to-label."""
    mapping = {}
    with open_input(path) as f:
        for lineno, line in enumerate(f, 1):
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            if len(parts) != 2:
                raise InputError(f"line {lineno}: expected 'from to' (two labels), got {len(parts)} fields", path)
            src, dst = parts
            if src in mapping:
                raise InputError(f"line {lineno}: label {src!r} is mapped twice", path)
            mapping[src] = dst
    if not mapping:
        raise InputError("empty label mapping", path)
    return mapping
