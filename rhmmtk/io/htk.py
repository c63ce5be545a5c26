"""HTK parameter files (HCopy's .mfc, .fbk, .plp ...) and HTK script (-S) files.

A parameter file is a 12-byte big-endian header -- nSamples (int32), sampPeriod (int32,
100 ns units), sampSize (int16, bytes per frame), parmKind (int16: a base kind in the low 6
bits plus qualifier bits) -- then the frames, big-endian float32. A compressed file (_C)
holds, after the header, the scale A and offset B (float32 per dimension) and then int16
values x' with x = (x' + B) / A; its nSamples counts A and B as 4 extra frames. A _K file
ends with a 2-byte CRC, which is ignored. HTK's book (The HTK Book, section 5.10) is the
reference.

A script file lists one parameter file per line: `path`, or `logical=path` (HTK's form),
optionally followed by a frame range `[start,end]` (inclusive). The utterance id is the
logical name (or the path) without directory and extension, with as many parent
directories (joined by `_`) as tell apart files of the same name (utterance_ids).
"""
import os
import re

import numpy as np

from ..errors import InputError

BASE_KINDS = ["WAVEFORM", "LPC", "LPREFC", "LPCEPSTRA", "LPDELCEP", "IREFC", "MFCC", "FBANK",
              "MELSPEC", "USER", "DISCRETE", "PLP"]
QUALIFIERS = [("_E", 0o100), ("_N", 0o200), ("_D", 0o400), ("_A", 0o1000), ("_C", 0o2000),
              ("_Z", 0o4000), ("_K", 0o10000), ("_0", 0o20000), ("_V", 0o40000),
              ("_T", 0o100000)]
COMPRESSED, CRC = 0o2000, 0o10000
USER = 9
HEADER = np.dtype([("n", ">i4"), ("period", ">i4"), ("size", ">i2"), ("kind", ">i2")])
NEITHER = " (read big-endian, HTK's order; not a valid little-endian header either)"


def kind_name(kind):
    """HTK's name of a parmKind code, e.g. 6 | 0o100 | 0o400 -> MFCC_E_D."""
    base = kind & 0o77
    name = BASE_KINDS[base] if base < len(BASE_KINDS) else f"KIND{base}"
    return name + "".join(q for q, bit in QUALIFIERS if kind & bit)


def kind_code(name, uncompressed=False):
    """The parmKind code of HTK's name (MFCC_E_D -> 6 | 0o100 | 0o400); `uncompressed`
    drops _C and _K (what rhmmtk writes is neither compressed nor checksummed)."""
    base, *quals = name.split("_")
    if base not in BASE_KINDS:
        raise InputError(f"unknown HTK parameter kind {name}")
    code = BASE_KINDS.index(base)
    bits = dict(QUALIFIERS)
    for q in quals:
        if "_" + q not in bits:
            raise InputError(f"unknown HTK parameter kind qualifier _{q} in {name}")
        if not (uncompressed and bits["_" + q] in (COMPRESSED, CRC)):
            code |= bits["_" + q]
    return code


def read_header(path, utt=None):
    """(nSamples, sampPeriod, sampSize, parmKind) of an HTK parameter file, in the byte
    order `byte_order` finds."""
    return _header(path, utt)[0]


def _header(path, utt=None):
    """(header fields, byte order '>' or '<', file size)."""
    try:
        with open(path, "rb") as f:
            head = f.read(12)
            nbytes = os.fstat(f.fileno()).st_size
    except FileNotFoundError:
        raise InputError("no such HTK parameter file", path, utt) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected an HTK parameter file", path, utt) from None
    if len(head) < 12:
        raise InputError(f"bad HTK header: file is {len(head)} bytes, the header alone is 12",
                         path, utt)
    order = byte_order(head, nbytes)
    h = np.frombuffer(head, HEADER.newbyteorder(order))[0]
    return (int(h["n"]), int(h["period"]), int(h["size"]), int(h["kind"]) & 0xFFFF), order, \
        nbytes


def _plausible(fields, nbytes):
    n, period, size, kind = fields
    if n <= 0 or period <= 0 or size <= 0 or (kind & 0o77) >= len(BASE_KINDS):
        return False
    need = 12 + n * size
    return need <= nbytes <= need + 2


def byte_order(head, nbytes):
    """'>' (HTK's own order, big-endian) unless only the little-endian reading of the
    12-byte header fits the file's size (HTK's NATURALREADORDER files on a PC): '<'."""
    for order in (">", "<"):
        h = np.frombuffer(head, HEADER.newbyteorder(order))[0]
        fields = (int(h["n"]), int(h["period"]), int(h["size"]), int(h["kind"]) & 0xFFFF)
        if _plausible(fields, nbytes):
            return order
    return ">"


def _check_header(path, utt, n, period, size, kind, nbytes):
    """The frame count and dimension the header promises, after checking it is sane and
    that the file holds that many bytes."""
    base = kind & 0o77
    if base >= len(BASE_KINDS):
        raise InputError(f"bad HTK header: unknown parameter kind {kind}", path, utt)
    if base in (0, 10):
        raise InputError(f"HTK file holds {BASE_KINDS[base]} data, not feature vectors",
                         path, utt)
    compressed = bool(kind & COMPRESSED)
    unit = 2 if compressed else 4
    if n <= 0 or period <= 0 or size <= 0 or size % unit:
        raise InputError(f"bad HTK header: nSamples {n}, sampPeriod {period}, sampSize {size} "
                         f"(need positive values, sampSize a multiple of {unit})", path, utt)
    dim = size // unit
    frames = n - 4 if compressed else n
    if frames <= 0:
        raise InputError("bad HTK header: compressed file with no frames", path, utt)
    need = 12 + n * size
    if nbytes < need:
        raise InputError(f"bad HTK header or truncated file: header promises {need} bytes "
                         f"({frames} frames of {dim} values), file has {nbytes}", path, utt)
    if nbytes > need + (2 if kind & CRC else 0):
        raise InputError(f"bad HTK header: file has {nbytes - need} bytes more than the "
                         f"header's {frames} frames of {dim} values", path, utt)
    return frames, dim


def read_htk(path, utt=None):
    """(frames float32 (N, D), sampPeriod in 100 ns, parmKind) of an HTK parameter file,
    big-endian (HTK's order) or, when only that reading fits, little-endian."""
    path = os.fspath(path)
    (n, period, size, kind), order, _ = _header(path, utt)
    with open(path, "rb") as f:
        data = f.read()
    try:
        frames, dim = _check_header(path, utt, n, period, size, kind, len(data))
    except InputError as e:
        raise InputError(e.problem + NEITHER, e.path, e.utt) from None
    f4, i2 = order + "f4", order + "i2"
    if kind & COMPRESSED:
        a = np.frombuffer(data, f4, dim, 12).astype(np.float32)
        b = np.frombuffer(data, f4, dim, 12 + 4 * dim).astype(np.float32)
        if not (np.isfinite(a).all() and (a != 0).all() and np.isfinite(b).all()):
            raise InputError("bad HTK compressed file: zero or non-finite scale", path, utt)
        q = np.frombuffer(data, i2, frames * dim, 12 + 8 * dim).reshape(frames, dim)
        x = (q.astype(np.float32) + b) / a
    else:
        x = np.frombuffer(data, f4, frames * dim, 12).reshape(frames, dim)
    return x.astype(np.float32), period, kind


def htk_bytes(mat, period, kind=USER):
    """An uncompressed HTK parameter file's bytes for a float32 (N, D) matrix."""
    mat = np.asarray(mat, dtype=np.float32)
    if mat.ndim != 2 or not len(mat):
        raise ValueError(f"expected a non-empty (frames, dim) matrix, got shape {mat.shape}")
    head = np.array([(len(mat), period, 4 * mat.shape[1], kind)], HEADER)
    return head.tobytes() + mat.astype(">f4").tobytes()


_RANGE = re.compile(r"^(.*)\[(\d+),(\d+)\]$")


def utterance_ids(names, path=None):
    """Utterance ids of HTK file names or MLF patterns: the base name without extension,
    and where two share it, as many parent directories as tell them apart joined by `_`
    (TIMIT's `*/FESZ1/SA1.lab`, `*/FMLP0/SA1.lab` -> FESZ1_SA1, FMLP0_SA1). Names that
    nothing tells apart are an InputError naming `path`."""
    parts = [[c for c in os.path.splitext(n)[0].split("/") if c not in ("", "*", ".", "..")]
             for n in names]
    depth = [1] * len(names)
    while True:
        ids = ["_".join(p[-d:]) for p, d in zip(parts, depth)]
        groups = {}
        for i, u in enumerate(ids):
            groups.setdefault(u, []).append(i)
        clash = [g for g in groups.values() if len(g) > 1]
        if not clash:
            return ids
        for g in clash:
            if all(depth[i] >= len(parts[i]) for i in g):
                raise InputError(f"{names[g[0]]} and {names[g[1]]} name the same utterance "
                                 f"{ids[g[0]]}", path, ids[g[0]])
            for i in g:
                depth[i] = min(depth[i] + 1, len(parts[i]))


def read_script(path):
    """An HTK script file: ordered list of (utt id, path, frame range or None)."""
    from .text import open_input

    out, seen, logicals = [], set(), []
    base = os.path.dirname(os.fspath(path))
    with open_input(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            logical, _, physical = line.partition("=") if "=" in line else (line, "", line)
            rng = None
            m = _RANGE.match(physical)
            if m:
                physical, rng = m.group(1), (int(m.group(2)), int(m.group(3)))
            logical = _RANGE.sub(r"\1", logical)
            utt = os.path.splitext(os.path.basename(logical))[0]
            if not utt or " " in physical:
                raise InputError(f"line {lineno}: expected `path` or `name=path`", path)
            if logical in seen:
                raise InputError(f"line {lineno}: file appears twice", path, utt)
            seen.add(logical)
            logicals.append(logical)
            if not os.path.isabs(physical) and not os.path.exists(physical) and base:
                # a relative path is relative to the working directory (HTK's rule); accept
                # one relative to the script file too, as lists are often moved with it
                alt = os.path.join(base, physical)
                physical = alt if os.path.exists(alt) else physical
            out.append((utt, physical, rng))
    if not out:
        raise InputError("HTK script file lists no files", path)
    ids = utterance_ids(logicals, path)     # FESZ1/SA1 and FMLP0/SA1 are two utterances
    return [(u, physical, rng) for u, (_, physical, rng) in zip(ids, out)]


def select_range(x, rng, path, utt):
    if rng is None:
        return x
    s, e = rng
    if not 0 <= s <= e < len(x):
        raise InputError(f"frame range [{s},{e}] outside the file's {len(x)} frames", path, utt)
    return x[s:e + 1]
