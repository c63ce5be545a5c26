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

from .errors import InputError

WINDOWS = ("hamming", "hann", "rectangular")
CMVN_MODES = ("none", "utt", "spk")
VAR_FLOOR = 1e-10
INT16_SCALE = 32768.0


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
    size = os.path.getsize(path)
    with open(path, "rb") as f:
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
            if need in (0, 0xFFFFFFFF):  # written by a streaming tool: length unknown
                return
            have = size - offset
        else:
            return
    if have < need:
        raise InputError(f"truncated audio: header declares {need} bytes of samples, "
                         f"file holds {max(have, 0)}", path, utt)


def audio_info(path, sample_rate=None, utt=None):
    """Number of samples in a mono audio file, after checking it is whole and at `sample_rate`."""
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
    if sample_rate is not None and info.samplerate != sample_rate:
        raise InputError(f"sample rate is {info.samplerate} Hz, expected {sample_rate} Hz "
                         "(see --sample-rate)", path, utt)
    if info.channels != 1:
        raise InputError(f"expected mono audio, found {info.channels} channels", path, utt)
    if info.frames <= 0:
        raise InputError("audio file holds no samples", path, utt)
    return int(info.frames)


def _sf_reason(e):
    msg = str(e)
    return msg.split(": ", 1)[1] if msg.startswith("Error opening") and ": " in msg else msg


def read_audio(path, sample_rate=None, utt=None):
    """Samples of a mono audio file as float64 on the 16-bit integer scale (-32768..32767)."""
    import soundfile as sf

    n = audio_info(path, sample_rate, utt)
    try:
        x, _ = sf.read(os.fspath(path), dtype="float64", always_2d=False)
    except (sf.LibsndfileError, RuntimeError) as e:
        raise InputError(f"unreadable audio ({_sf_reason(e)})", path, utt) from None
    if len(x) != n:
        raise InputError(f"audio read as {len(x)} samples, header declares {n} (corrupt file)",
                         path, utt)
    return x * INT16_SCALE


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


def compute_features(wav_scp, out, config=MfccConfig(), cmvn="none", utt2spk=None,
                     options=None):
    """Features of every utterance of a `utt-id path` list, written to an HDF5 archive.

    `wav_scp` and `utt2spk` are paths (or dicts utt -> path / speaker). Returns a
    dict with the number of utterances and frames. Archive attributes record the
    configuration (`feature_config`, JSON), `frame_shift` and `frame_length` in
    seconds, their sample counts, `sample_rate`, `dim` and `cmvn`.
    """
    from .io.archive import ArchiveWriter
    from .io.text import read_scp
    from .progress import log, progress
    from .provenance import record

    config.validate()
    if cmvn not in CMVN_MODES:
        raise InputError(f"--cmvn must be one of {', '.join(CMVN_MODES)} (got {cmvn!r})")
    scp_name = wav_scp if isinstance(wav_scp, (str, os.PathLike)) else None
    wavs = read_scp(wav_scp) if scp_name is not None else dict(wav_scp)
    if not wavs:
        raise InputError("no utterances in the list", scp_name)
    spk_of = None
    if cmvn == "spk":
        if utt2spk is None:
            raise InputError("--cmvn spk needs --utt2spk")
        u2s_name = utt2spk if isinstance(utt2spk, (str, os.PathLike)) else None
        spk_of = read_scp(utt2spk) if u2s_name is not None else dict(utt2spk)
        for utt in wavs:
            if utt not in spk_of:
                raise InputError("utterance has no speaker in utt2spk", u2s_name, utt)
    elif utt2spk is not None:
        log.warning("--utt2spk is only used with --cmvn spk; ignoring it")
    for utt, path in wavs.items():  # fail now rather than after hours of work
        if not os.path.isfile(path):
            raise InputError("no such audio file" if not os.path.exists(path)
                             else "not a file, expected audio", path, utt)

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
            "utt2spk": str(utt2spk) if spk_of is not None else None, **(options or {})}
    acc = MomentAccumulator(config.dim) if spk_of is not None else None
    frames = 0
    with ArchiveWriter(out, "features", record(opts), attrs=attrs) as w:
        for utt, path in progress(wavs.items(), desc="feats", total=len(wavs)):
            signal = read_audio(path, config.sample_rate, utt)
            feat = mfcc(signal, config)
            if not np.isfinite(feat).all():
                raise InputError("features are not finite (NaN or infinity)", path, utt)
            frames += len(feat)
            if cmvn == "utt":
                feat = utterance_cmvn(feat)
            elif acc is not None:
                acc.add(spk_of[utt], feat)
            w.add(utt, feat)
        if acc is not None:  # second pass: normalise each speaker's utterances in place
            log.info("normalising %d speakers' features", len(acc.stats))
            for utt in progress(wavs, desc="cmvn", total=len(wavs)):
                ds = w.utts[utt]
                ds[...] = normalize(ds[()], *acc.mean_std(spk_of[utt]))
    log.info("wrote %d utterances, %d frames of %d-dim features to %s",
             len(wavs), frames, config.dim, out)
    return {"utterances": len(wavs), "frames": frames, "dim": config.dim}
