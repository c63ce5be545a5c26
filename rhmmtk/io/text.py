"""Text tables: alignments (`utt-id sym sym ...`), lists (`utt-id value`).

Every path may be `-` for stdin/stdout so tools chain with pipes. Outputs are
written to a temporary name beside the target and renamed when complete, so a
failed run never leaves a half-written file.
"""
import contextlib
import io
import os
import sys
import tempfile

from ..errors import InputError


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside `path`; rename onto `path` only on success."""
    path = os.fspath(path)
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise InputError("output directory does not exist", path)
    fd, tmp = tempfile.mkstemp(dir=d, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the file normal permissions
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def check_outputs(*paths):
    """Refuse, before any work, outputs whose directory does not exist: a command
    with several outputs must not write one and then fail on the next."""
    for p in paths:
        if p is None or str(p) == "-":
            continue
        d = os.path.dirname(os.path.abspath(os.fspath(p)))
        if not os.path.isdir(d):
            raise InputError("output directory does not exist", p)
        if os.path.isdir(p):
            raise InputError("output is a directory", p)


@contextlib.contextmanager
def open_output(path):
    """A text stream to `path` (or stdout for '-'), written atomically."""
    if str(path) == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            yield f


@contextlib.contextmanager
def open_input(path):
    if str(path) == "-":
        yield io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8")
        return
    try:
        f = open(path, encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such file", path) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a file", path) from None
    except PermissionError:
        raise InputError("permission denied", path) from None
    with f:
        try:
            yield f
        except UnicodeDecodeError:
            raise InputError("not a UTF-8 text file", path) from None


def read_table(path, min_fields=2):
    """Read `key field field ...` lines into an ordered dict key -> list of fields.

    Blank lines are skipped. A key given twice, or a line with fewer than
    `min_fields` fields (e.g. an utterance with no symbols), is an InputError.
    """
    table = {}
    with open_input(path) as f:
        for lineno, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
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
