"""Kaldi data directories: wav.scp (paths or commands ending in `|`), segments, utt2spk,
spk2utt, reco2file_and_channel; and the checks of Kaldi's utils/validate_data_dir.sh.

A data directory names recordings in wav.scp (`reco-id path` or `reco-id cmd args |`: the
command writes the audio to stdout, the form Kaldi's TIMIT and WSJ recipes write with
sph2pipe). With a `segments` file (`utt-id reco-id start end`, seconds; end -1 means the
end of the recording) utterances are stretches of recordings; without one every recording
is an utterance of the same name. `reco2file_and_channel` (`reco-id file channel`) names the
file and channel a recording came from (used in CTM output, and to pick a channel of a
multi-channel recording).

Kaldi's rules, which validate_data_dir() checks: every file's keys are unique and sorted in
C-locale (byte) order; utt2spk, segments (or wav.scp), text and feats.scp cover the same
utterances; spk2utt is utt2spk inverted; sorting utt2spk by speaker keeps its order (speaker
ids are prefixes of utterance ids, or sort the same way).
"""
import os
import shlex
from dataclasses import dataclass

from ..errors import InputError
from .text import open_input

# characters that need a shell to mean what they mean in a wav.scp command
SHELL_CHARS = set("|&;<>()$`\\\"'*?[]#~=%{}\n")


@dataclass(frozen=True)
class Recording:
    """One wav.scp entry: a path, or a command (argv or shell string) writing audio."""

    key: str
    entry: str
    channel: int | None = None       # 0-based channel from reco2file_and_channel, if any

    @property
    def is_command(self):
        return self.entry.endswith("|")

    def command(self):
        """(argv list, or None) and the shell string: argv when no shell is needed."""
        cmd = self.entry[:-1].strip()
        if not cmd:
            return None, cmd
        if any(c in SHELL_CHARS for c in cmd):
            return None, cmd
        return shlex.split(cmd), cmd


@dataclass(frozen=True)
class Utterance:
    """An utterance: a recording, optionally a stretch [start, end) of it in seconds."""

    key: str
    recording: Recording
    start: float = 0.0
    end: float | None = None         # None: to the end of the recording


def _lines(path):
    """(line number, fields) of the non-blank lines of a text table."""
    with open_input(path) as f:
        for lineno, line in enumerate(f, 1):
            parts = line.split()
            if parts:
                yield lineno, parts, line


def read_wav_scp(path):
    """wav.scp: ordered dict recording id -> entry (a path, or a command ending in `|`)."""
    out = {}
    for lineno, parts, line in _lines(path):
        key = parts[0]
        if len(parts) < 2:
            raise InputError(f"line {lineno}: no path or command after the recording id",
                             path, key)
        if key in out:
            raise InputError(f"line {lineno}: recording id appears twice", path, key)
        entry = line.strip()[len(key):].strip()
        if len(parts) > 2 and not entry.endswith("|"):
            raise InputError(f"line {lineno}: several fields but no `|` at the end: a "
                             "command must end in `|`, a path must not contain spaces",
                             path, key)
        out[key] = entry
    return out


def read_map(path, what="value"):
    """`key value` lines (utt2spk, spk2gender): ordered dict key -> value."""
    out = {}
    for lineno, parts, _ in _lines(path):
        if len(parts) != 2:
            raise InputError(f"line {lineno}: expected `key {what}`, found {len(parts)} fields",
                             path, parts[0])
        if parts[0] in out:
            raise InputError(f"line {lineno}: key appears twice", path, parts[0])
        out[parts[0]] = parts[1]
    return out


def read_segments(path):
    """segments: ordered dict utt -> (recording, start, end or None), times in seconds."""
    out = {}
    for lineno, parts, _ in _lines(path):
        key = parts[0]
        if len(parts) != 4:
            raise InputError(f"line {lineno}: expected `utt-id recording-id start end`, found "
                             f"{len(parts)} fields", path, key)
        if key in out:
            raise InputError(f"line {lineno}: utterance id appears twice", path, key)
        try:
            start, end = float(parts[2]), float(parts[3])
        except ValueError:
            raise InputError(f"line {lineno}: start and end must be numbers (seconds)",
                             path, key) from None
        if end == -1:
            end = None
        if start < 0 or (end is not None and end <= start):
            raise InputError(f"line {lineno}: bad segment times {parts[2]} {parts[3]} "
                             "(need 0 <= start < end, or end -1)", path, key)
        out[key] = (parts[1], start, end)
    return out


def read_reco2file_and_channel(path):
    """reco2file_and_channel: dict recording -> (file, channel as written: A/B or 1/2)."""
    out = {}
    for lineno, parts, _ in _lines(path):
        if len(parts) != 3:
            raise InputError(f"line {lineno}: expected `recording-id file channel`, found "
                             f"{len(parts)} fields", path, parts[0])
        if parts[0] in out:
            raise InputError(f"line {lineno}: recording id appears twice", path, parts[0])
        out[parts[0]] = (parts[1], parts[2])
    return out


def channel_index(channel, path=None, key=None):
    """0-based index of a Kaldi channel name: A, B, ... or 1, 2, ..."""
    c = channel.upper()
    if len(c) == 1 and "A" <= c <= "Z":
        return ord(c) - ord("A")
    if c.isdigit() and int(c) >= 1:
        return int(c) - 1
    raise InputError(f"channel {channel!r} is neither a letter (A, B) nor a number from 1",
                     path, key)


def utterances(wav_scp, segments=None, reco2file_and_channel=None):
    """The utterances of a wav.scp (and optional segments, reco2file_and_channel files):
    ordered dict utt -> Utterance, in the segments' (or wav.scp's) order."""
    entries = read_wav_scp(wav_scp)
    if not entries:
        raise InputError("no recordings in the list", wav_scp)
    chans = read_reco2file_and_channel(reco2file_and_channel) if reco2file_and_channel else {}
    recos = {}
    for k, e in entries.items():
        ch = chans.get(k)
        recos[k] = Recording(k, e, None if ch is None else
                             channel_index(ch[1], reco2file_and_channel, k))
    if segments is None:
        return {k: Utterance(k, r) for k, r in recos.items()}
    out = {}
    for utt, (reco, start, end) in read_segments(segments).items():
        if reco not in recos:
            raise InputError(f"segment's recording {reco} is not in {wav_scp}", segments, utt)
        out[utt] = Utterance(utt, recos[reco], start, end)
    if not out:
        raise InputError("no segments", segments)
    return out


@dataclass
class DataDir:
    """The files of a Kaldi data directory that `rhmmtk feats` uses (paths or None)."""

    path: str
    wav_scp: str
    segments: str | None
    utt2spk: str | None
    spk2utt: str | None
    reco2file_and_channel: str | None

    @classmethod
    def open(cls, path):
        path = os.fspath(path)
        if not os.path.isdir(path):
            raise InputError("not a directory", path)

        def have(name):
            p = os.path.join(path, name)
            return p if os.path.isfile(p) else None

        wav = have("wav.scp")
        if wav is None:
            raise InputError("data directory has no wav.scp", path)
        return cls(path, wav, have("segments"), have("utt2spk"), have("spk2utt"),
                   have("reco2file_and_channel"))

    def utterances(self):
        return utterances(self.wav_scp, self.segments, self.reco2file_and_channel)

    def speakers(self):
        """utt -> speaker, from utt2spk (or spk2utt inverted), or None if neither exists."""
        if self.utt2spk:
            return read_map(self.utt2spk, "speaker")
        if self.spk2utt:
            return {u: s for s, us in read_spk2utt(self.spk2utt).items() for u in us}
        return None


def read_spk2utt(path):
    out = {}
    for lineno, parts, _ in _lines(path):
        if len(parts) < 2:
            raise InputError(f"line {lineno}: speaker has no utterances", path, parts[0])
        if parts[0] in out:
            raise InputError(f"line {lineno}: speaker appears twice", path, parts[0])
        out[parts[0]] = parts[1:]
    return out


# --- validation (utils/validate_data_dir.sh) --------------------------------------------------

def _c_key(s):
    """C-locale (byte) order, as `LC_ALL=C sort`."""
    return s.encode("utf-8")


def _sorted_unique(path, keys, problems, what="key"):
    for i in range(1, len(keys)):
        a, b = keys[i - 1], keys[i]
        if a == b:
            problems.append(f"{path}: {what} {b} appears twice")
            return
        if _c_key(a) > _c_key(b):
            problems.append(f"{path}: not sorted: {what} {b} comes after {a} "
                            "(fix with LC_ALL=C sort -k1,1)")
            return


def _keys(path, min_fields, problems):
    """Keys of a table's lines, or None (problem recorded) if a line is malformed."""
    keys = []
    try:
        with open_input(path) as f:
            for lineno, line in enumerate(f, 1):
                parts = line.split()
                if not parts:
                    problems.append(f"{path}: line {lineno}: empty line")
                    return None
                if len(parts) < min_fields:
                    problems.append(f"{path}: line {lineno}: expected at least {min_fields} "
                                    f"fields, found {len(parts)}")
                    return None
                keys.append(parts[0])
    except InputError as e:
        problems.append(e.describe())
        return None
    return keys


def _same_set(a_path, a, b_path, b, what, problems):
    sa, sb = set(a), set(b)
    if sa != sb:
        only_a, only_b = sorted(sa - sb), sorted(sb - sa)
        parts = []
        if only_a:
            parts.append(f"{len(only_a)} only in {os.path.basename(a_path)} (first {only_a[0]})")
        if only_b:
            parts.append(f"{len(only_b)} only in {os.path.basename(b_path)} (first {only_b[0]})")
        problems.append(f"{a_path}: {what} differ from {b_path}'s: " + "; ".join(parts))


def validate_data_dir(path):
    """The problems of a Kaldi data directory, one clear line each (empty list: valid).

    Checks what utils/validate_data_dir.sh checks for the files rhmmtk uses: utt2spk exists;
    every table is sorted (C locale) with unique keys and well-formed lines; spk2utt is
    utt2spk inverted; utt2spk sorted by speaker keeps its order; segments' (or wav.scp's)
    utterances, text's and feats.scp's are utt2spk's; segments' recordings are in wav.scp,
    with start < end; reco2file_and_channel and spk2gender cover wav.scp's recordings and
    utt2spk's speakers."""
    path = os.fspath(path)
    if not os.path.isdir(path):
        return [f"{path}: not a directory"]
    problems = []

    def f(name):
        p = os.path.join(path, name)
        return p if os.path.exists(p) else None

    u2s_path = f("utt2spk")
    if u2s_path is None:
        return [f"{path}: no utt2spk (every Kaldi data directory needs one)"]
    try:
        u2s_pairs = []
        with open_input(u2s_path) as fh:
            for lineno, line in enumerate(fh, 1):
                parts = line.split()
                if len(parts) != 2:
                    problems.append(f"{u2s_path}: line {lineno}: expected `utt-id speaker-id`, "
                                    f"found {len(parts)} fields")
                    break
                u2s_pairs.append((parts[0], parts[1]))
    except InputError as e:
        return [e.describe()]
    utts = [u for u, _ in u2s_pairs]
    _sorted_unique(u2s_path, utts, problems, "utterance")
    by_spk = sorted(u2s_pairs, key=lambda p: (_c_key(p[1]), _c_key(p[0])))
    if not problems and by_spk != u2s_pairs:
        i = next(i for i, (a, b) in enumerate(zip(by_spk, u2s_pairs)) if a != b)
        problems.append(f"{u2s_path}: not in order when sorted by speaker (at utterance "
                        f"{u2s_pairs[i][0]}); make speaker ids prefixes of utterance ids")
    spk_of = dict(u2s_pairs)
    speakers = sorted({s for _, s in u2s_pairs}, key=_c_key)

    s2u_path = f("spk2utt")
    if s2u_path is None:
        problems.append(f"{path}: no spk2utt (make it with utils/utt2spk_to_spk2utt.pl)")
    else:
        try:
            s2u = read_spk2utt(s2u_path)
            _sorted_unique(s2u_path, list(s2u), problems, "speaker")
            inv = {u: s for s, us in s2u.items() for u in us}
            if inv != spk_of or any(us != sorted(us, key=_c_key) for us in s2u.values()):
                problems.append(f"{s2u_path}: does not match utt2spk (regenerate it with "
                                "utils/utt2spk_to_spk2utt.pl)")
        except InputError as e:
            problems.append(e.describe())

    wav_path, seg_path = f("wav.scp"), f("segments")
    recos = None
    if wav_path:
        recos = _keys(wav_path, 2, problems)
        if recos is not None:
            _sorted_unique(wav_path, recos, problems, "recording")
            try:
                read_wav_scp(wav_path)
            except InputError as e:
                problems.append(e.describe())
    if seg_path:
        if not wav_path:
            problems.append(f"{seg_path}: segments without a wav.scp")
        try:
            segs = read_segments(seg_path)
            _sorted_unique(seg_path, list(segs), problems, "utterance")
            _same_set(seg_path, segs, u2s_path, utts, "utterances", problems)
            if recos is not None:
                missing = sorted({r for r, _, _ in segs.values()} - set(recos))
                if missing:
                    problems.append(f"{seg_path}: {len(missing)} recordings not in wav.scp "
                                    f"(first {missing[0]})")
        except InputError as e:
            problems.append(e.describe())
    elif recos is not None:
        _same_set(wav_path, recos, u2s_path, utts, "utterances", problems)

    for name in ("text", "feats.scp", "utt2dur", "utt2num_frames"):
        p = f(name)
        if p:
            keys = _keys(p, 2 if name != "text" else 1, problems)
            if keys is not None:
                _sorted_unique(p, keys, problems, "utterance")
                _same_set(p, keys, u2s_path, utts, "utterances", problems)
    r2fc = f("reco2file_and_channel")
    if r2fc:
        try:
            keys = list(read_reco2file_and_channel(r2fc))
            _sorted_unique(r2fc, keys, problems, "recording")
            if recos is not None:
                _same_set(r2fc, keys, wav_path, recos, "recordings", problems)
        except InputError as e:
            problems.append(e.describe())
    g = f("spk2gender")
    if g:
        try:
            genders = read_map(g, "gender")
            _sorted_unique(g, list(genders), problems, "speaker")
            _same_set(g, genders, u2s_path, speakers, "speakers", problems)
            bad = [s for s, v in genders.items() if v not in ("m", "f")]
            if bad:
                problems.append(f"{g}: gender of speaker {bad[0]} is neither m nor f")
        except InputError as e:
            problems.append(e.describe())
    return problems
