"""Text tables: alignments (`utt-id sym sym ...`), lists (`utt-id value`).

Every path may be `-` for stdin/stdout so tools chain with pipes. Outputs go
through rhmmtk.io.output (temp-then-rename, devices and pipes written in place,
all of a command's outputs or none). Inputs may start with a UTF-8 byte-order mark
(skipped); a byte sequence that is not UTF-8 is an error naming its line.
"""
import contextlib
import io
import sys

from ..errors import InputError
from .output import check_outputs, open_output  # noqa: F401  (the writer; re-exported)


@contextlib.contextmanager
def open_input(path):
    """A text stream of `path` (stdin for '-'): UTF-8, a leading byte-order mark skipped."""
    if str(path) == "-":
        f = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8-sig")
        try:
            yield f
        except UnicodeDecodeError as e:
            raise InputError(f"not UTF-8 text ({e.reason})", path) from None
        return
    try:
        f = open(path, encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError("no such file", path) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a file", path) from None
    except PermissionError:
        raise InputError("permission denied", path) from None
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", path) from None
    with f:
        try:
            yield f
        except UnicodeDecodeError as e:
            raise InputError(f"{_bad_line(path)}not UTF-8 text ({e.reason})", path) from None


def _bad_line(path):
    """'line N: ' of the first line of `path` that is not UTF-8 ('' if none is found)."""
    try:
        with open(path, "rb") as f:
            for lineno, line in enumerate(f, 1):
                try:
                    line.decode("utf-8")
                except UnicodeDecodeError:
                    return f"line {lineno}: "
    except OSError:
        pass
    return ""


def split_lines(path):
    """(line number, fields) of every non-blank line of a text input (`-`: stdin)."""
    with open_input(path) as f:
        for lineno, line in enumerate(f, 1):
            parts = line.split()
            if parts:
                yield lineno, parts


def symbol_id_lines(path):
    """`symbol integer-id` lines (a symbol table) -> [(line number, symbol, id)]; a
    malformed line or an empty table is an InputError."""
    rows = []
    for lineno, parts in split_lines(path):
        if len(parts) != 2 or not parts[1].lstrip("-").isdigit():
            raise InputError(f"line {lineno}: expected `symbol integer-id`", path)
        rows.append((lineno, parts[0], int(parts[1])))
    if not rows:
        raise InputError("symbol table is empty", path)
    return rows


def read_table(path, min_fields=2):
    """Read `key field field ...` lines into an ordered dict key -> list of fields.

    Blank lines are skipped. A key given twice, or a line with fewer than
    `min_fields` fields (e.g. an utterance with no symbols), is an InputError.
    """
    table = {}
    for lineno, parts in split_lines(path):
        key = parts[0]
        if key in table:
            raise InputError(f"line {lineno}: key appears twice", path, key)
        if len(parts) < min_fields:
            raise InputError(f"line {lineno}: empty utterance (no symbols after the key)", path, key)
        table[key] = parts[1:]
    return table


def read_alignment(path):
    """An alignment file: ordered dict utt-id -> list of label symbols."""
    ali = read_table(path)
    if not ali:
        raise InputError("no utterances", path)
    return ali


def write_alignment(path, ali):
    with open_output(path) as f:
        for key, syms in ali.items():
            f.write(key + " " + " ".join(syms) + "\n")


def read_scp(path):
    """A Kaldi-style list `utt-id value` (wav.scp, utt2spk): dict utt -> value."""
    table = read_table(path)
    out = {}
    for k, v in table.items():
        if len(v) != 1:
            raise InputError("expected exactly one value after the key", path, k)
        out[k] = v[0]
    return out
