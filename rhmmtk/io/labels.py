"""Labels in other toolkits' formats, to and from rhmmtk alignments (`utt-id sym sym ...`,
one symbol per frame or position).

In:  Kaldi integer alignments with a symbol table (`utt id id ...` + phones.txt `sym id`,
     e.g. `ali-to-phones --per-frame=true` output); HTK label files (.lab) listed in a
     script file, and master label files (.mlf).
Out: Kaldi integer alignments, HTK MLF, and CTM (for NIST sclite), from any alignment.

HTK label lines are `[start [end]] name [score] [aux ...]`, times in 100 ns units; a line
`///` ends the first level (later levels are ignored). A label covering [start, end) gets
frames round(start / shift) .. round(end / shift) - 1: the inverse of writing frame t as
[t * shift, (t + 1) * shift), which is how HTK writes frame-level alignments, so frames ->
MLF -> frames is exact. Labels must tile the utterance from time 0 without gaps or overlaps;
a label too short to hold a frame after rounding is dropped (counted in the log).

CTM lines are `file channel start duration word` (seconds): each run of one label is a
word. With a Kaldi segments file the times are shifted to the recording's time line and
`file`/`channel` come from reco2file_and_channel (or are the recording id and 1).
"""
import fnmatch
import math
import os
import re

from ..errors import InputError
from .htk import utterance_ids
from .text import open_input, open_output, read_table, symbol_id_lines

HTK_UNIT = 1e-7          # HTK times are in 100 ns units
POSITION_SUFFIX = re.compile(r"_[BEIS]$")  # Kaldi's word-position-dependent phones
_TIME = re.compile(r"-?\d+(?:\.\d*)?")


def read_symbol_table(path):
    """A Kaldi symbol table (`sym id` lines: phones.txt, words.txt): (sym -> id, id -> sym)."""
    to_id, to_sym = {}, {}
    for lineno, sym, i in symbol_id_lines(path):
        if sym in to_id or i in to_sym:
            raise InputError(f"line {lineno}: symbol {sym} or id {i} appears twice", path)
        to_id[sym], to_sym[i] = i, sym
    return to_id, to_sym


def strip_position(sym):
    """`aa_B` -> `aa` (Kaldi's word-position markers _B, _E, _I, _S)."""
    return POSITION_SUFFIX.sub("", sym)


def read_int_alignment(path, symbols, strip_word_position=False):
    """`utt id id ...` lines, or a Kaldi integer-vector rspecifier (binary or text: `ark:`,
    `ark,t:`, `scp:`, `ark:CMD |`, rhmmtk.io.specifiers), + symbol table file -> ordered
    dict utt -> list of symbols."""
    from .specifiers import looks_like_specifier, read_int_vectors

    _, to_sym = read_symbol_table(symbols)
    out = {}
    table = read_int_vectors(path) if looks_like_specifier(path) else read_table(path)
    for utt, ids in table.items():
        syms = []
        for tok in ids:
            try:
                syms.append(to_sym[int(tok)])
            except (ValueError, KeyError):
                raise InputError(f"{str(tok)!r} is not an id in {symbols}", path, utt) from None
        out[utt] = [strip_position(s) for s in syms] if strip_word_position else syms
    if not out:
        raise InputError("no utterances", path)
    return out


def write_int_alignment(path, ali, symbols):
    """An alignment written as integer ids of symbol table file `symbols`."""
    to_id, _ = read_symbol_table(symbols)
    lines = []
    for utt, syms in ali.items():
        ids = []
        for s in syms:
            if s not in to_id:
                raise InputError(f"label {s} is not in the symbol table {symbols}", path, utt)
            ids.append(str(to_id[s]))
        lines.append(utt + " " + " ".join(ids) + "\n")
    with open_output(path) as f:
        f.writelines(lines)


# --- HTK labels -----------------------------------------------------------------------------

def _label_lines(lines, path, utt, first_lineno):
    """(start, end, name) of a label file's first level; times None when absent."""
    out = []
    for i, line in enumerate(lines):
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "///":
            break
        nums = 0
        while nums < min(2, len(parts) - 1) and _TIME.fullmatch(parts[nums]):
            nums += 1
        if nums == 0 and _TIME.fullmatch(parts[0]) and len(parts) == 1:
            raise InputError(f"line {first_lineno + i}: a time with no label", path, utt)
        if nums == 1:
            raise InputError(f"line {first_lineno + i}: a start time with no end time "
                             "(frame alignments need both)", path, utt)
        if nums == 0:
            raise InputError(f"line {first_lineno + i}: label {parts[0]} has no times "
                             "(frame alignments need `start end label`)", path, utt)
        start, end = _round(float(parts[0])), _round(float(parts[1]))
        out.append((start, end, parts[2], first_lineno + i))
    if not out:
        raise InputError("label file holds no labels", path, utt)
    return out


def labels_to_frames(labels, frame_shift, path, utt, symbols=None, dropped=None):
    """(start, end, name, lineno) in 100 ns -> per-frame list of names."""
    shift = frame_shift / HTK_UNIT
    frames, prev_end = [], 0
    for start, end, name, lineno in labels:
        if symbols is not None and name not in symbols:
            raise InputError(f"line {lineno}: label {name} is not in the symbol table "
                             f"{symbols.name}", path, utt)
        if end <= start:
            raise InputError(f"line {lineno}: label {name} ends ({end}) before it starts "
                             f"({start})", path, utt)
        if start != prev_end:
            what = "gap" if start > prev_end else "overlap"
            raise InputError(f"line {lineno}: {what} before label {name}: it starts at "
                             f"{start}, the previous label ends at {prev_end} (100 ns units)",
                             path, utt)
        prev_end = end
        a, b = _round(start / shift), _round(end / shift)
        if b <= a:
            if dropped is not None:
                dropped[0] += 1
            continue
        frames.extend([name] * (b - a))
    if not frames:
        raise InputError("labels too short to cover one frame", path, utt)
    return frames


def _round(x):
    return int(math.floor(x + 0.5))


class LabelSet:
    """A set of allowed labels with a name for messages (a symbol table's file)."""

    def __init__(self, syms, name):
        self.syms, self.name = set(syms), name

    def __contains__(self, s):
        return s in self.syms


def _utt_of(name):
    return os.path.splitext(os.path.basename(name))[0]


def read_mlf(path, frame_shift=0.01, symbols=None, dropped=None, files=None):
    """An HTK master label file -> ordered dict utt -> per-frame labels. `symbols`: a
    LabelSet every label must be in (else an InputError naming file, utterance, line).

    Utterance ids are the patterns' base names, with parent directories where two share
    one (rhmmtk.io.htk.utterance_ids). With `files` (utt -> parameter file name, an HTK
    script's), each file takes its labels from the longest pattern that fits its name, as
    HTK looks them up; the result is keyed by those utterance ids."""
    entries = {}
    with open_input(path) as f:
        lines = f.read().splitlines()
    if not lines or lines[0].strip() != "#!MLF!#":
        raise InputError("not an HTK master label file (first line is not #!MLF!#)", path)
    i = 1
    while i < len(lines):
        line = lines[i].strip()
        if not line:
            i += 1
            continue
        m = re.fullmatch(r'"(.+)"(?:\s+(->|=>)\s+.*)?', line)
        if not m:
            raise InputError(f"line {i + 1}: expected a quoted label file name", path)
        if m.group(2):
            raise InputError(f"line {i + 1}: MLF search definitions ({m.group(2)}) are not "
                             "supported; give the labels inline", path)
        pattern = m.group(1)
        if pattern in entries:
            raise InputError(f"line {i + 1}: pattern {pattern} appears twice", path,
                             _utt_of(pattern))
        j = i + 1
        while j < len(lines) and lines[j].strip() != ".":
            j += 1
        if j == len(lines):
            raise InputError(f"line {i + 1}: label list not ended by a `.` line", path,
                             _utt_of(pattern))
        entries[pattern] = (i + 2, lines[i + 1:j])
        i = j + 1
    if not entries:
        raise InputError("master label file holds no utterances", path)
    if files is None:
        named = dict(zip(utterance_ids(list(entries), path), entries))
    else:
        named = {utt: _longest_match(entries, name, path, utt) for utt, name in files.items()}
    out = {}
    for utt, pattern in named.items():
        first, body = entries[pattern]
        labels = _label_lines(body, path, utt, first)
        out[utt] = labels_to_frames(labels, frame_shift, path, utt, symbols, dropped)
    return out


def _longest_match(entries, name, path, utt):
    """The longest MLF pattern (`*` any characters, `?` one) that fits file `name`, compared
    without extensions (a .mfc file's labels are its .lab)."""
    stem = os.path.splitext(name)[0]
    fits = [p for p in entries if fnmatch.fnmatchcase(stem, os.path.splitext(p)[0])]
    if not fits:
        raise InputError(f"no label pattern fits {name}", path, utt)
    return max(fits, key=len)


def read_lab_files(script, frame_shift=0.01, symbols=None, dropped=None):
    """HTK label files listed in a script file (one path a line) -> utt -> per-frame labels."""
    out = {}
    base = os.path.dirname(os.fspath(script))
    with open_input(script) as f:
        paths = [l.strip() for l in f if l.strip()]
    if not paths:
        raise InputError("lists no label files", script)
    for p in paths:
        if not os.path.exists(p) and not os.path.isabs(p) and os.path.exists(
                os.path.join(base, p)):
            p = os.path.join(base, p)
        utt = _utt_of(p)
        if utt in out:
            raise InputError("utterance listed twice", script, utt)
        with open_input(p) as f:
            labels = _label_lines(f.read().splitlines(), p, utt, 1)
        out[utt] = labels_to_frames(labels, frame_shift, p, utt, symbols, dropped)
    return out


def runs(syms):
    """(first frame, end frame, label) of each run of equal labels."""
    out, start = [], 0
    for t in range(1, len(syms) + 1):
        if t == len(syms) or syms[t] != syms[start]:
            out.append((start, t, syms[start]))
            start = t
    return out


def write_mlf(path, ali, frame_shift=0.01, ext="rec"):
    """Alignment -> HTK MLF, each run of a label one `start end label` line (100 ns)."""
    with open_output(path) as f:
        f.write("#!MLF!#\n")
        for utt, syms in ali.items():
            f.write(mlf_record(utt, syms, frame_shift, ext))


def mlf_record(utt, syms, frame_shift=0.01, ext="rec"):
    """One utterance's MLF entry: `"*/UTT.EXT"`, its label runs, and `.`."""
    shift = frame_shift / HTK_UNIT
    lines = [f'"*/{utt}.{ext}"\n']
    lines += [f"{_round(a * shift)} {_round(b * shift)} {lab}\n" for a, b, lab in runs(syms)]
    return "".join(lines) + ".\n"


def _decimals(x):
    s = f"{x:.9f}".rstrip("0")
    return max(2, len(s.split(".")[1]) if "." in s else 0)


def write_ctm(path, ali, frame_shift=0.01, segments=None, reco2file_and_channel=None):
    """Alignment -> CTM (`file channel start duration label`, seconds), one line per run.
    `segments` / `reco2file_and_channel`: Kaldi files (paths) placing utterances in their
    recordings."""
    from .datadir import read_reco2file_and_channel, read_segments

    seg = read_segments(segments) if segments else {}
    r2fc = read_reco2file_and_channel(reco2file_and_channel) if reco2file_and_channel else {}
    d = _decimals(frame_shift)
    lines = []
    for utt, syms in ali.items():
        if segments:
            if utt not in seg:
                raise InputError("utterance not in the segments file", segments, utt)
            reco, offset, _ = seg[utt]
        else:
            reco, offset = utt, 0.0
        file, chan = r2fc.get(reco, (reco, "1"))
        if reco2file_and_channel and reco not in r2fc:
            raise InputError(f"recording {reco} not in reco2file_and_channel",
                             reco2file_and_channel, utt)
        for a, b, lab in runs(syms):
            lines.append(f"{file} {chan} {offset + a * frame_shift:.{d}f} "
                         f"{(b - a) * frame_shift:.{d}f} {lab}\n")
    with open_output(path) as f:
        f.writelines(lines)


def fit_lengths(ali, lengths, tolerance, path=None):
    """Pad (repeating the last label) or cut each alignment to `lengths[utt]` frames when
    they differ by at most `tolerance` frames; more is an InputError naming the utterance."""
    out = {}
    for utt, syms in ali.items():
        if utt not in lengths:
            raise InputError("utterance has labels but no features", path, utt)
        n = lengths[utt]
        if abs(len(syms) - n) > tolerance:
            raise InputError(f"labels cover {len(syms)} frames, the features have {n} "
                             f"(more than --tolerance {tolerance} apart)", path, utt)
        out[utt] = syms[:n] + [syms[-1]] * (n - len(syms))
    return out


FORMATS_IN = ("text", "int", "mlf", "lab")
FORMATS_OUT = ("text", "int", "mlf", "ctm")


def convert_alignment(src, dst, fmt_in="text", fmt_out="text", symbols=None, frame_shift=None,
                      features=None, tolerance=2, segments=None, reco2file_and_channel=None,
                      strip_word_position=False, mlf_ext="rec"):
    """The library function behind `rhmmtk convert-ali`: read `src` in `fmt_in`, write `dst`
    in `fmt_out`. `symbols`: a Kaldi symbol table (needed for int; for mlf/lab input every
    label must be in it). `frame_shift` (seconds) or `features` (a feature source whose
    frame shift is used, and whose frame counts the labels are fitted to within
    `tolerance` frames). Returns {"utterances", "frames", "dropped"}."""
    from ..progress import log
    from .text import read_alignment, write_alignment

    if fmt_in not in FORMATS_IN or fmt_out not in FORMATS_OUT:
        raise InputError(f"formats: in {'/'.join(FORMATS_IN)}, out {'/'.join(FORMATS_OUT)}")
    if "int" in (fmt_in, fmt_out) and not symbols:
        raise InputError("integer alignments need --symbols (a Kaldi phones.txt)")
    lengths = None
    if features is not None:
        lengths, shift = _feature_lengths(features)
        if frame_shift is None:
            frame_shift = shift
    if frame_shift is None:
        frame_shift = 0.01
    if frame_shift <= 0:
        raise InputError(f"frame shift must be positive (got {frame_shift})")
    labelset = None
    if symbols and fmt_in in ("mlf", "lab"):
        labelset = LabelSet(read_symbol_table(symbols)[0], symbols)
    dropped = [0]
    if fmt_in == "text":
        ali = read_alignment(src)
    elif fmt_in == "int":
        ali = read_int_alignment(src, symbols, strip_word_position)
    elif fmt_in == "mlf":
        ali = read_mlf(src, frame_shift, labelset, dropped, _htk_files(features))
    else:
        ali = read_lab_files(src, frame_shift, labelset, dropped)
    if strip_word_position and fmt_in != "int":
        ali = {k: [strip_position(s) for s in v] for k, v in ali.items()}
    if dropped[0]:
        log.warning("%d labels shorter than half a frame (%g s) hold no frame and were "
                    "dropped", dropped[0], frame_shift)
    if lengths is not None:
        ali = fit_lengths(ali, lengths, tolerance, src)
    if fmt_out == "text":
        write_alignment(dst, ali)
    elif fmt_out == "int":
        write_int_alignment(dst, ali, symbols)
    elif fmt_out == "mlf":
        write_mlf(dst, ali, frame_shift, mlf_ext)
    else:
        write_ctm(dst, ali, frame_shift, segments, reco2file_and_channel)
    frames = sum(len(v) for v in ali.values())
    log.info("converted %d utterances, %d frames (%s -> %s)", len(ali), frames, fmt_in, fmt_out)
    return {"utterances": len(ali), "frames": frames, "dropped": dropped[0]}


def _htk_files(spec):
    """utt -> parameter file of HTK features (`htk:LIST`), whose labels an MLF gives by
    pattern; None for other features."""
    from .features import parse_spec

    if spec is None or parse_spec(spec)[0] != "htk":
        return None
    from .features import HtkFeatures

    with HtkFeatures(spec) as r:
        return {u: p for u, (p, _) in r.entries.items()}


def _feature_lengths(spec):
    """(utt -> frame count, frame shift or None) of a feature source."""
    from .features import ArchiveFeatures, open_features

    with open_features(spec) as r:
        if isinstance(r, ArchiveFeatures):
            lengths = dict(zip(r.keys(), (s[0] for s in r.shapes())))
        else:
            lengths = {k: len(x) for k, x in r.items()}
        shift = r.attrs.get("frame_shift")
    return lengths, None if shift is None else float(shift)
