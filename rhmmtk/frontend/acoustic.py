"""Acoustic front end: audio files -> MFCC + delta + delta-delta feature archives.

The features are python_speech_features' MFCCs (13 cepstra, 26 mel filters,
25 ms windows every 10 ms, pre-emphasis 0.97, cepstral lifter 22, c0 replaced
by the log frame energy), with its regression deltas and delta-deltas appended:
39 dimensions. The one departure from that library's defaults is the analysis
window: Hamming (as HTK and the TIMIT literature) instead of its rectangular
default; `window="rectangular"` restores it.

Audio is read with soundfile (libsndfile): NIST SPHERE (TIMIT's .WAV, whatever
the file name's case) and RIFF WAV, among others. Samples are scaled to the
16-bit integer range, as HTK and Kaldi do, so log energies are comparable with
theirs. libsndfile silently reads a truncated SPHERE or WAV file as a shorter
one, so the declared length in the header is checked against the file size.

Frames: python_speech_features pads the signal with zeros to whole frames, so a
signal of n samples gives 1 + ceil((n - L) / S) frames (window L, shift S
samples; one frame if n <= L). `num_frames` is that count; frame t covers
samples [t*S, t*S + L) and its centre sample is t*S + L//2 (used by the TIMIT
alignments in rhmmtk.corpora.timit).

Normalisation (`cmvn`): none; per utterance (`utt`); or per speaker (`spk`, with
an utt2spk map), each dimension to zero mean and unit variance. Per-speaker
normalisation makes two passes over the output file (write raw features,
accumulate per-speaker sums, then normalise each dataset in place before the
archive is closed), so memory holds one utterance at a time, never the corpus.
"""
import json
import math
import os
from dataclasses import asdict, dataclass

import numpy as np

from ..errors import InputError

WINDOWS = ("hamming", "hann", "rectangular")
CMVN_MODES = ("none", "utt", "spk")
VAR_FLOOR = 1e-10
INT16_SCALE = 32768.0
# data-chunk lengths at or above this, in a RIFF header read from a pipe, are placeholders
# (a tool writing to a pipe cannot seek back to fill in the length: sox writes 0x7ffff000)
STREAM_PLACEHOLDER = 0x7FFF0000


@dataclass(frozen=True)
class MfccConfig:
    """Everything that determines the features. Lengths in milliseconds, frequencies in Hz."""

    sample_rate: int = 16000
    frame_length: float = 25.0
    frame_shift: float = 10.0
    num_ceps: int = 13
    num_filters: int = 26
    nfft: int = 512
    low_freq: float = 0.0
    high_freq: float | None = None
    use_energy: bool = True
    preemph: float = 0.97
    ceplifter: int = 22
    delta_window: int = 2
    window: str = "hamming"

    @property
    def winlen(self):
        """Window length in samples (python_speech_features rounds half up)."""
        return _round_half_up(self.frame_length / 1000 * self.sample_rate)

    @property
    def step(self):
        """Frame shift in samples."""
        return _round_half_up(self.frame_shift / 1000 * self.sample_rate)

    @property
    def dim(self):
        return 3 * self.num_ceps

    def validate(self):
        """Raise InputError for settings that cannot work together."""
        if self.sample_rate <= 0:
            raise InputError(f"--sample-rate must be positive (got {self.sample_rate})")
        if self.frame_length <= 0 or self.frame_shift <= 0:
            raise InputError("--frame-length and --frame-shift must be positive")
        if self.winlen < 1 or self.step < 1:
            raise InputError("frame length and shift must each be at least one sample")
        if self.nfft < self.winlen:
            raise InputError(f"--nfft {self.nfft} is shorter than the {self.winlen}-sample "
                             f"window ({self.frame_length} ms at {self.sample_rate} Hz); "
                             "frames would be truncated")
        if self.num_filters < 1 or not 1 <= self.num_ceps <= self.num_filters:
            raise InputError(f"need 1 <= --num-ceps ({self.num_ceps}) <= --num-filters "
                             f"({self.num_filters})")
        nyquist = self.sample_rate / 2
        high = nyquist if self.high_freq is None else self.high_freq
        if not 0 <= self.low_freq < high <= nyquist:
            raise InputError(f"need 0 <= --low-freq ({self.low_freq}) < --high-freq ({high}) "
                             f"<= Nyquist ({nyquist:g} Hz)")
        if self.delta_window < 1:
            raise InputError(f"--delta-window must be at least 1 (got {self.delta_window})")
        if not 0 <= self.preemph < 1:
            raise InputError(f"--preemph must be in [0, 1) (got {self.preemph})")
        if self.ceplifter < 0:
            raise InputError(f"--ceplifter must be >= 0 (got {self.ceplifter})")
        if self.window not in WINDOWS:
            raise InputError(f"--window must be one of {', '.join(WINDOWS)} (got {self.window!r})")
        return self

    def to_json(self):
        return json.dumps(asdict(self), sort_keys=True)


def _round_half_up(x):
    """python_speech_features' rounding of window lengths (sigproc.round_half_up)."""
    from python_speech_features.sigproc import round_half_up

    return int(round_half_up(x))


def num_frames(nsamples, winlen=400, step=160):
    """Frames python_speech_features makes from `nsamples` samples (window, shift in samples)."""
    if nsamples <= winlen:
        return 1
    return 1 + int(math.ceil((nsamples - winlen) / step))


def frame_centres(nframes, winlen=400, step=160):
    """The centre sample of each frame: t*step + winlen//2."""
    return np.arange(nframes, dtype=np.int64) * step + winlen // 2


# --- audio ---------------------------------------------------------------------

def _sphere_header(head, path, utt):
    """Fields of a NIST SPHERE header (name -> value) and its byte length."""
    lines = head.split(b"\n")
    try:
        size = int(lines[1])
    except (IndexError, ValueError):
        raise InputError("bad NIST SPHERE header (no header size on line 2)", path, utt) from None
    fields = {}
    for line in head[:size].split(b"\n")[2:]:
        parts = line.decode("ascii", "replace").split(None, 2)
        if parts and parts[0] == "end_head":
            break
        if len(parts) == 3:
            fields[parts[0]] = parts[2].strip()
    return fields, size


def _riff_data_chunk(f, path, utt):
    """(declared size, offset) of a RIFF WAVE file's data chunk, or None if not found."""
    f.seek(12)
    while True:
        hdr = f.read(8)
        if len(hdr) < 8:
            return None
        cid, size = hdr[:4], int.from_bytes(hdr[4:], "little")
        if cid == b"data":
            return size, f.tell()
        f.seek(size + (size & 1), 1)


def check_complete(path, utt=None):
    """Raise InputError if a SPHERE or RIFF WAV file holds fewer bytes than its header declares.

    (libsndfile quietly reads such a file as a shorter one.) Other formats are
    left to libsndfile. Compressed SPHERE (shorten) is refused with advice.
    """
    with open(path, "rb") as f:
        _check_stream(f, os.path.getsize(path), path, utt)


def _check_stream(f, size, path, utt, streamed=False):
    """check_complete on an open binary file of `size` bytes. `streamed`: the bytes came
    down a pipe, so a RIFF header may carry a placeholder length (returns the offset and
    true length of the data chunk so the caller can patch the header; else None)."""
    head = f.read(4096)
    if head.startswith(b"NIST_1A"):
        fields, hsize = _sphere_header(head, path, utt)
        coding = fields.get("sample_coding", "pcm")
        if coding.split(",")[0] not in ("pcm", "ulaw", "alaw", "pculaw"):
            raise InputError(f"compressed NIST SPHERE audio (sample_coding {coding}) is not "
                             "supported; decompress it first (e.g. sph2pipe -f wav)", path, utt)
        try:
            need = (int(fields["sample_count"]) * int(fields.get("sample_n_bytes", 2))
                    * int(fields.get("channel_count", 1)))
        except (KeyError, ValueError):
            raise InputError("bad NIST SPHERE header (no usable sample_count)",
                             path, utt) from None
        have = size - hsize
    elif head.startswith(b"RIFF") and head[8:12] == b"WAVE":
        found = _riff_data_chunk(f, path, utt)
        if found is None:
            raise InputError("RIFF WAV file has no data chunk (truncated?)", path, utt)
        need, offset = found
        have = size - offset
        if need in (0, 0xFFFFFFFF) or (streamed and need >= STREAM_PLACEHOLDER and have < need):
            # written by a streaming tool (sox, sph2pipe to a pipe): length unknown
            return offset, have
    else:
        return None
    if have < need:
        raise InputError(f"truncated audio: header declares {need} bytes of samples, "
                         f"{'the command wrote' if streamed else 'file holds'} {max(have, 0)}",
                         path, utt)
    return None


def audio_info(path, sample_rate=None, utt=None, channel=None):
    """Number of samples in a mono audio file (or one with `channel`, 0-based), after checking
    it is whole and at `sample_rate`."""
    import soundfile as sf

    path = os.fspath(path)
    if not os.path.exists(path):
        raise InputError("no such audio file", path, utt)
    if os.path.isdir(path):
        raise InputError("is a directory, expected an audio file", path, utt)
    try:
        info = sf.info(path)
    except (sf.LibsndfileError, RuntimeError) as e:
        raise InputError(f"unreadable audio ({_sf_reason(e)})", path, utt) from None
    except PermissionError:
        raise InputError("permission denied", path, utt) from None
    check_complete(path, utt)
    _check_info(info, sample_rate, channel, path, utt)
    return int(info.frames)


def _check_info(info, sample_rate, channel, path, utt):
    if sample_rate is not None and info.samplerate != sample_rate:
        raise InputError(f"sample rate is {info.samplerate} Hz, expected {sample_rate} Hz "
                         "(see --sample-rate)", path, utt)
    if channel is None and info.channels != 1:
        raise InputError(f"expected mono audio, found {info.channels} channels (name the "
                         "channel in reco2file_and_channel)", path, utt)
    if channel is not None and not 0 <= channel < info.channels:
        raise InputError(f"channel {channel + 1} requested, audio has {info.channels}",
                         path, utt)
    if info.frames <= 0:
        raise InputError("audio holds no samples", path, utt)


def _sf_reason(e):
    msg = str(e)
    return msg.split(": ", 1)[1] if msg.startswith("Error opening") and ": " in msg else msg


def read_audio(path, sample_rate=None, utt=None, channel=None):
    """Samples of a mono audio file (or of `channel`, 0-based) as float64 on the 16-bit
    integer scale (-32768..32767)."""
    import soundfile as sf

    n = audio_info(path, sample_rate, utt, channel)
    try:
        x, _ = sf.read(os.fspath(path), dtype="float64", always_2d=True)
    except (sf.LibsndfileError, RuntimeError) as e:
        raise InputError(f"unreadable audio ({_sf_reason(e)})", path, utt) from None
    if len(x) != n:
        raise InputError(f"audio read as {len(x)} samples, header declares {n} (corrupt file)",
                         path, utt)
    return x[:, channel or 0] * INT16_SCALE


def run_audio_command(rec, scp=None, utt=None):
    """The bytes a wav.scp command (rhmmtk.io.datadir.Recording ending in `|`) writes to
    stdout. Run without a shell when it has no shell syntax; a command that fails or writes
    nothing is an InputError naming `scp` and the utterance."""
    import subprocess

    argv, shell = rec.command()
    if not shell:
        raise InputError(f"recording {rec.key}: empty command before `|`", scp, utt)
    try:
        p = subprocess.run(argv if argv is not None else ["sh", "-c", shell],
                           stdin=subprocess.DEVNULL, capture_output=True)
    except FileNotFoundError:
        raise InputError(f"recording {rec.key}: command not found: {argv[0]}", scp, utt) from None
    except PermissionError:
        raise InputError(f"recording {rec.key}: command not executable: {argv[0]}",
                         scp, utt) from None
    if p.returncode != 0:
        err = p.stderr.decode("utf-8", "replace").strip().splitlines()
        why = f": {err[-1].strip()}" if err else ""
        raise InputError(f"recording {rec.key}: command `{shell}` failed "
                         f"(exit status {p.returncode}){why}", scp, utt)
    if not p.stdout:
        raise InputError(f"recording {rec.key}: command `{shell}` wrote no audio", scp, utt)
    return p.stdout


def decode_audio_bytes(data, sample_rate=None, name=None, utt=None, channel=None):
    """Samples (16-bit scale, float64) of audio held in memory (a command's output)."""
    import io

    import soundfile as sf

    patch = _check_stream(io.BytesIO(data), len(data), name, utt, streamed=True)
    if patch is not None:        # fill in the placeholder lengths of a streamed RIFF header
        offset, have = patch
        have -= have % 2
        buf = bytearray(data[:offset + have])
        buf[4:8] = (len(buf) - 8).to_bytes(4, "little")
        buf[offset - 4:offset] = have.to_bytes(4, "little")
        data = bytes(buf)
    try:
        with sf.SoundFile(io.BytesIO(data)) as f:
            _check_info(f, sample_rate, channel, name, utt)
            x = f.read(dtype="float64", always_2d=True)
    except (sf.LibsndfileError, RuntimeError) as e:
        raise InputError(f"unreadable audio from command ({_sf_reason(e)})", name, utt) from None
    if len(x) == 0:
        raise InputError("audio holds no samples", name, utt)
    return x[:, channel or 0] * INT16_SCALE


def read_recording(rec, sample_rate=None, scp=None, utt=None):
    """Samples of a wav.scp entry (rhmmtk.io.datadir.Recording): a file, a command, or an
    offset into a Kaldi wave archive (`wav.ark:10`)."""
    from ..io.specifiers import read_wave_archive, wave_archive_entry

    if rec.is_command:
        data = run_audio_command(rec, scp, utt)
        return decode_audio_bytes(data, sample_rate, scp, utt, rec.channel)
    if wave_archive_entry(rec.entry):            # `utt wav.ark:10`: Kaldi's wave archive
        return read_wave_archive(rec.entry, sample_rate, utt, rec.channel)
    return read_audio(rec.entry, sample_rate, utt, rec.channel)


def segment_samples(signal, u, sample_rate, segments=None, max_overshoot=0.0):
    """The samples of utterance `u` (rhmmtk.io.datadir.Utterance) within its recording's
    `signal`: [round(start * rate), round(end * rate)). A segment reaching past the end of
    the recording is an InputError, unless by at most `max_overshoot` seconds (then it is
    cut at the end, as Kaldi's extract-segments --max-overshoot does)."""
    if u.start == 0 and u.end is None:
        return signal
    n = len(signal)
    lo = int(round(u.start * sample_rate))
    hi = n if u.end is None else int(round(u.end * sample_rate))
    if n < hi <= n + int(round(max_overshoot * sample_rate)):
        hi = n
    if hi > n or lo >= n:
        raise InputError(f"segment {u.start:g}-{'end' if u.end is None else f'{u.end:g}'} s "
                         f"reaches past the end of recording {u.recording.key} "
                         f"({n / sample_rate:g} s; see --max-overshoot)", segments, u.key)
    if hi <= lo:
        raise InputError("segment holds no samples", segments, u.key)
    return signal[lo:hi]


# --- features --------------------------------------------------------------------

def add_deltas(feat, window=2):
    """[c, delta c, delta-delta c]: python_speech_features' regression deltas over +-window."""
    from python_speech_features import delta

    d1 = delta(feat, window)
    d2 = delta(d1, window)
    return np.hstack([feat, d1, d2])


def _winfunc(name):
    if name == "hamming":
        return np.hamming
    if name == "hann":
        return np.hanning
    return lambda n: np.ones((n,))


def mfcc(signal, config=MfccConfig()):
    """MFCC + delta + delta-delta of one signal: float32 (num_frames, 3 * num_ceps)."""
    from python_speech_features import mfcc as psf_mfcc

    c = config
    ceps = psf_mfcc(signal, samplerate=c.sample_rate, winlen=c.frame_length / 1000,
                    winstep=c.frame_shift / 1000, numcep=c.num_ceps, nfilt=c.num_filters,
                    nfft=c.nfft, lowfreq=c.low_freq, highfreq=c.high_freq, preemph=c.preemph,
                    ceplifter=c.ceplifter, appendEnergy=c.use_energy,
                    winfunc=_winfunc(c.window))
    return add_deltas(ceps, c.delta_window).astype(np.float32)


class MomentAccumulator:
    """Per-key frame count, sum and sum of squares (float64), for mean/variance normalisation."""

    def __init__(self, dim):
        self.dim = dim
        self.stats = {}

    def add(self, key, feat):
        n, s, ss = self.stats.get(key, (0, np.zeros(self.dim), np.zeros(self.dim)))
        x = feat.astype(np.float64)
        self.stats[key] = (n + len(x), s + x.sum(0), ss + (x * x).sum(0))

    def mean_std(self, key):
        n, s, ss = self.stats[key]
        mean = s / n
        var = np.maximum(ss / n - mean * mean, VAR_FLOOR)
        return mean, np.sqrt(var)


def normalize(feat, mean, std):
    return ((feat.astype(np.float64) - mean) / std).astype(np.float32)


def utterance_cmvn(feat):
    acc = MomentAccumulator(feat.shape[1])
    acc.add(None, feat)
    return normalize(feat, *acc.mean_std(None))


def audio_sources(wav_scp, segments=None, reco2file_and_channel=None, names=None):
    """Resolve what `rhmmtk feats` is given into (utterances, names).

    `wav_scp`: a Kaldi data directory (its wav.scp, segments, reco2file_and_channel and
    utt2spk are used), a wav.scp path (`reco-id path` or `reco-id command |`), or a dict
    utt -> path / command / rhmmtk.io.datadir.Utterance. Returns an ordered dict utt ->
    Utterance and a dict of the file names used (wav_scp, segments, utt2spk: for messages
    and provenance; utt2spk is the data directory's, if any)."""
    from ..io.datadir import DataDir, Recording, Utterance, utterances

    names = {"wav_scp": None, "segments": None, "utt2spk": None, **(names or {})}
    if isinstance(wav_scp, (str, os.PathLike)) and os.path.isdir(wav_scp):
        if segments or reco2file_and_channel:
            raise InputError("--segments and --reco2file-and-channel are taken from the data "
                             "directory; give them only with a wav.scp file", wav_scp)
        d = DataDir.open(wav_scp)
        names.update(wav_scp=d.wav_scp, segments=d.segments, utt2spk=d.utt2spk,
                     spk2utt=d.spk2utt)
        return d.utterances(), names
    if isinstance(wav_scp, (str, os.PathLike)):
        names.update(wav_scp=os.fspath(wav_scp), segments=segments)
        return utterances(wav_scp, segments, reco2file_and_channel), names
    utts = {}
    for k, v in dict(wav_scp).items():
        utts[k] = v if isinstance(v, Utterance) else Utterance(k, Recording(k, os.fspath(v)))
    return utts, names


def _speakers(utt2spk, names, cmvn):
    """utt -> speaker for --cmvn spk: `utt2spk` (path or dict), else the data directory's."""
    from ..io.datadir import read_map, read_spk2utt

    if utt2spk is None and cmvn == "spk":
        if names.get("utt2spk"):
            utt2spk = names["utt2spk"]
        elif names.get("spk2utt"):
            return {u: s for s, us in read_spk2utt(names["spk2utt"]).items() for u in us}, \
                names["spk2utt"]
    if utt2spk is None:
        return None, None
    if isinstance(utt2spk, (str, os.PathLike)):
        return read_map(utt2spk, "speaker"), os.fspath(utt2spk)
    return dict(utt2spk), None


def speakers_of(utt2spk, names, cmvn):
    """utt -> speaker (for --cmvn spk, or when `utt2spk` is given), else None."""
    if cmvn != "spk" and utt2spk is None:
        return None
    return _speakers(utt2spk, names, cmvn)[0]


def _check_sources(utts, scp):
    """Fail now, rather than after hours of work, on missing files and unknown commands."""
    import shutil

    from ..io.specifiers import check_wave_archive_entry, wave_archive_entry

    seen = set()
    for utt, u in utts.items():
        rec = u.recording
        if rec.key in seen:
            continue
        seen.add(rec.key)
        if rec.is_command:
            argv, shell = rec.command()
            if not shell:
                raise InputError(f"recording {rec.key}: empty command before `|`", scp, utt)
            if argv and shutil.which(argv[0]) is None:
                raise InputError(f"recording {rec.key}: command not found: {argv[0]}", scp, utt)
        elif wave_archive_entry(rec.entry):
            check_wave_archive_entry(rec.entry, utt)
        elif not os.path.isfile(rec.entry):
            raise InputError("no such audio file" if not os.path.exists(rec.entry)
                             else "not a file, expected audio", rec.entry, utt)


def utterance_signals(utts, sample_rate, names=None, max_overshoot=0.0):
    """Yield (utt, samples) for every Utterance, reading (or running) each recording once
    for a run of consecutive segments of it (Kaldi's segments are sorted, so a recording's
    segments are normally together)."""
    names = names or {}
    last_key, signal = None, None
    for utt, u in utts.items():
        if u.recording.key != last_key:
            signal = read_recording(u.recording, sample_rate, names.get("wav_scp"), utt)
            last_key = u.recording.key
        yield utt, segment_samples(signal, u, sample_rate, names.get("segments"), max_overshoot)


def shard_sources(wav_scp, segments, reco2file_and_channel, utt2spk, cmvn, job):
    """--job K/N of `feats`: (the shard's {utt: source}, utt2spk, provenance options,
    source names). With --cmvn spk whole speakers go to a shard (blocks of speakers in
    order of appearance), so the per-speaker statistics are those of one process."""
    from ..jobs import select, select_groups

    wavs, names = audio_sources(wav_scp, segments, reco2file_and_channel)
    spk = speakers_of(utt2spk, names, cmvn)
    keys = select_groups(wavs, lambda u: spk.get(u, u), job) if spk is not None \
        else select(wavs, job)
    options = {"wav_scp": names["wav_scp"], "segments": names["segments"], "job": str(job)}
    if cmvn == "spk" and utt2spk is None:
        utt2spk = spk
    return {k: wavs[k] for k in keys}, utt2spk, options, names


def compute_features(wav_scp, out, config=MfccConfig(), cmvn="none", utt2spk=None,
                     options=None, segments=None, reco2file_and_channel=None, names=None,
                     max_overshoot=0.0):
    """Features of every utterance of a Kaldi data directory or wav.scp, written to an HDF5
    archive or any features output of rhmmtk.io.specifiers (`ark:...`, `htk:DIR`).

    `wav_scp`: a data directory, a wav.scp path, or a dict (see audio_sources); wav.scp
    entries may be paths or commands ending in `|`; `segments` and
    `reco2file_and_channel` are the Kaldi files of those names (with a wav.scp file).
    `utt2spk`: path or dict utt -> speaker, for --cmvn spk (default: the data
    directory's). `names`: the file names a dict `wav_scp` came from (audio_sources'), for
    messages. `max_overshoot` (seconds): how far a segment may end past its recording's end
    (cut there); further is an error. Returns a dict with the number of utterances and
    frames. Archive
    attributes record the configuration (`feature_config`, JSON), `frame_shift` and
    `frame_length` in seconds, their sample counts, `sample_rate`, `dim` and `cmvn`.
    """
    from ..io.features import open_feature_writer
    from ..io.specifiers import resolve_output
    from ..progress import log, progress
    from ..provenance import record

    resolve_output(out, "features")
    config.validate()
    if cmvn not in CMVN_MODES:
        raise InputError(f"--cmvn must be one of {', '.join(CMVN_MODES)} (got {cmvn!r})")
    wavs, names = audio_sources(wav_scp, segments, reco2file_and_channel, names)
    scp_name = names["wav_scp"]
    if not wavs:
        raise InputError("no utterances in the list", scp_name)
    spk_of = u2s_name = None
    if cmvn == "spk":
        spk_of, u2s_name = _speakers(utt2spk, names, cmvn)
        if spk_of is None:
            raise InputError("--cmvn spk needs --utt2spk")
        for utt in wavs:
            if utt not in spk_of:
                raise InputError("utterance has no speaker in utt2spk", u2s_name, utt)
    elif utt2spk is not None:
        log.warning("--utt2spk is only used with --cmvn spk; ignoring it")
    _check_sources(wavs, scp_name)

    attrs = {
        "feature_type": "mfcc+delta+delta-delta",
        "feature_config": config.to_json(),
        "cmvn": cmvn,
        "dim": config.dim,
        "sample_rate": config.sample_rate,
        "frame_length": config.frame_length / 1000,
        "frame_shift": config.frame_shift / 1000,
        "frame_length_samples": config.winlen,
        "frame_shift_samples": config.step,
    }
    opts = {**asdict(config), "cmvn": cmvn, "wav_scp": str(scp_name),
            "segments": names["segments"], "max_overshoot": max_overshoot,
            "utt2spk": u2s_name, **(options or {})}
    acc = MomentAccumulator(config.dim) if spk_of is not None else None
    frames = 0
    with open_feature_writer(out, record(opts), attrs) as w:
        # a stream (Kaldi, HTK) cannot be rewritten: per-speaker CMVN holds the features
        held = [] if acc is not None and not hasattr(w, "rewrite") else None
        signals = utterance_signals(wavs, config.sample_rate, names, max_overshoot)
        for utt, signal in progress(signals, desc="feats", total=len(wavs)):
            feat = mfcc(signal, config)
            if not np.isfinite(feat).all():
                raise InputError("features are not finite (NaN or infinity)", scp_name, utt)
            frames += len(feat)
            if cmvn == "utt":
                feat = utterance_cmvn(feat)
            elif acc is not None:
                acc.add(spk_of[utt], feat)
            if held is None:
                w.add(utt, feat)
            else:
                held.append((utt, feat))
        if acc is not None:  # second pass: normalise each speaker's utterances
            log.info("normalising %d speakers' features", len(acc.stats))
            norm = lambda utt, feat: normalize(feat, *acc.mean_std(spk_of[utt]))  # noqa: E731
            if held is None:
                w.rewrite(norm)
            for utt, feat in held or ():
                w.add(utt, norm(utt, feat))
    log.info("wrote %d utterances, %d frames of %d-dim features to %s",
             len(wavs), frames, config.dim, out)
    return {"utterances": len(wavs), "frames": frames, "dim": config.dim}
