"""TIMIT data preparation: a corpus in TIMIT's layout -> Kaldi-style data directories.

Input: a TIMIT root holding TRAIN/ and TEST/, each DR<n>/<SPEAKER>/<UTT>.{WAV,PHN}
(any mix of upper and lower case, as copies of TIMIT differ; .WAV files carry
NIST SPHERE headers whatever their extension's case). Output, for each of
train, dev and test, a directory with

  wav.scp   `utt-id path`           (absolute paths to the audio)
  utt2spk   `utt-id speaker`
  spk2utt   `speaker utt-id ...`
  ali.48    `utt-id phone ...`      one 48-set label per frame (training labels)
  ali.39    `utt-id phone ...`      the same frames folded to the 39-set (scoring)
  phone_segments  `utt-id start end phone` one line per phone segment: frames start..end-1
                                    (end exclusive), 48-set label (rhmmtk.io.segments)
  seg.48    `utt-id phone ...`      one 48-set label per segment, in order (the
                                    classification reference, alignment format)
  seg.39    `utt-id phone ...`      the same folded to the 39-set (scoring)

Utterance ids are `SPEAKER_UTT` in upper case (FELC0_SX216), sorted, so they
are the same for upper- and lower-case copies of the corpus.

Splits (the standard selection): train = every TRAIN speaker's SX and SI
utterances; test = the NIST core test speakers' SX and SI; dev = the
development speakers' SX and SI, or a `dev_size` subset of them (the core
paper's dev set has 200 utterances); SA utterances are never used. The speaker
lists and the 61 -> 48 -> 39 map are data files (recipes/timit/conf).

Frames are those of `rhmmtk feats` (rhmmtk.frontend.acoustic.num_frames: windows of
L samples every S samples, python_speech_features padding the end with zeros);
a frame's label is the phone whose PHN segment covers its centre sample
t*S + L//2. Frames whose centre lies past the last segment (the zero-padded
tail) take the last phone, but a PHN file ending more than one window before
the audio does, or starting more than one window after it, is an error, as is
one running more than a window past the audio's end. `q` (glottal stop) has no
48-set label and is deleted: its frames join the preceding phone (the
following one if the utterance starts with q). Between segments, a gap's
frames also go to the preceding phone.

Phone segments (for phone classification, paper 003) are the runs of frames that take
their label from the same PHN line, so segment boundaries fall on frame boundaries as in
the paper's HTK practice; a PHN segment too short to hold a frame centre has no frames
and no segment.
"""
import hashlib
import os
import re

import numpy as np

from ..frontend.acoustic import audio_info, frame_centres, num_frames
from ..errors import InputError

SETS = ("train", "dev", "test")
UTT_RE = re.compile(r"^(SA|SI|SX)\d+$")
DOWNLOAD = ("TIMIT is LDC93S1, licensed from the Linguistic Data Consortium "
            "(https://catalog.ldc.upenn.edu/LDC93S1); a stand-in in the same layout is "
            "../shared/data/festival-timit")


# --- configuration files -----------------------------------------------------------

class PhoneMap:
    """The 61 -> 48 -> 39 folding, from a Kaldi-style 3-column map (`phone p48 p39`).

    A line with the phone alone (q) marks a phone that is deleted.
    """

    def __init__(self, to48, to39, deleted):
        self.to48, self.to39, self.deleted = to48, to39, deleted
        self.fold48to39 = {}
        for p, p48 in to48.items():
            if self.fold48to39.setdefault(p48, to39[p]) != to39[p]:
                raise InputError(f"48-set phone {p48!r} folds to both {self.fold48to39[p48]!r} "
                                 f"and {to39[p]!r}")
        self.set48 = sorted(set(to48.values()))
        self.set39 = sorted(set(to39.values()))

    @classmethod
    def read(cls, path):
        to48, to39, deleted = {}, {}, set()
        try:
            f = open(path, encoding="utf-8")
        except FileNotFoundError:
            raise InputError("no such phone map file", path) from None
        with f:
            for lineno, line in enumerate(f, 1):
                parts = line.split()
                if not parts:
                    continue
                p = parts[0]
                if p in to48 or p in deleted:
                    raise InputError(f"line {lineno}: phone {p!r} appears twice", path)
                if len(parts) == 1:
                    deleted.add(p)
                elif len(parts) == 3:
                    to48[p], to39[p] = parts[1], parts[2]
                else:
                    raise InputError(f"line {lineno}: expected 'phone phone48 phone39' "
                                     "(or a phone alone, to delete it)", path)
        if not to48:
            raise InputError("empty phone map", path)
        try:
            return cls(to48, to39, deleted)
        except InputError as e:
            raise InputError(e.problem, path) from None


def read_speaker_list(path):
    """Speaker ids, one per line (upper-cased)."""
    try:
        with open(path, encoding="utf-8") as f:
            spk = [w.upper() for line in f for w in line.split()[:1]]
    except FileNotFoundError:
        raise InputError("no such speaker list", path) from None
    if not spk:
        raise InputError("empty speaker list", path)
    if len(set(spk)) != len(spk):
        raise InputError("a speaker appears twice", path)
    return spk


# --- the corpus on disk --------------------------------------------------------------

def _entries(d):
    """Directory entries keyed by upper-case name; two names differing only in case are an error."""
    out = {}
    for name in sorted(os.listdir(d)):
        key = name.upper()
        if key in out:
            raise InputError(f"both {out[key]!r} and {name!r} exist; which one is meant?", d)
        out[key] = name
    return out


def find_root(root):
    """The directory holding TRAIN and TEST: `root` itself, or a single TIMIT/ inside it."""
    root = os.fspath(root)
    if not os.path.isdir(root):
        raise InputError(f"TIMIT folder not found. {DOWNLOAD}", root)
    entries = _entries(root)
    if "TRAIN" not in entries or "TEST" not in entries:
        if "TIMIT" in entries and os.path.isdir(os.path.join(root, entries["TIMIT"])):
            return find_root(os.path.join(root, entries["TIMIT"]))
        missing = " and ".join(s for s in ("TRAIN", "TEST") if s not in entries)
        raise InputError(f"not a TIMIT root: no {missing} folder (expected "
                         f"TRAIN/DR1/<SPEAKER>/<UTT>.WAV ...). {DOWNLOAD}", root)
    return root


def scan(root, part):
    """{speaker: {utt: (wav path, phn path)}} for one part (TRAIN or TEST), SA included."""
    pdir = os.path.join(root, _entries(root)[part])
    speakers = {}
    for dr_key, dr in _entries(pdir).items():
        ddir = os.path.join(pdir, dr)
        if not dr_key.startswith("DR") or not os.path.isdir(ddir):
            continue
        for spk_key, spk in _entries(ddir).items():
            sdir = os.path.join(ddir, spk)
            if not os.path.isdir(sdir):
                continue
            if spk_key in speakers:
                raise InputError(f"speaker {spk_key} appears in two dialect regions", sdir)
            files = {}
            for key, name in _entries(sdir).items():
                stem, _, ext = key.rpartition(".")
                if UTT_RE.match(stem) and ext in ("WAV", "PHN"):
                    files.setdefault(stem, {})[ext] = os.path.join(sdir, name)
            utts = {}
            for stem, f in sorted(files.items()):
                if "WAV" not in f or "PHN" not in f:
                    have, lack = ("WAV", "PHN") if "WAV" in f else ("PHN", "WAV")
                    raise InputError(f"{stem}.{have} has no {stem}.{lack} beside it", sdir)
                utts[stem] = (os.path.abspath(f["WAV"]), os.path.abspath(f["PHN"]))
            speakers[spk_key] = utts
    if not speakers:
        raise InputError("no speaker folders (DR<n>/<SPEAKER>/)", pdir)
    return speakers


def read_phn(path, utt=None):
    """Segments of a PHN file: (starts, ends, phones), validated."""
    starts, ends, phones = [], [], []
    try:
        f = open(path, encoding="ascii")
    except FileNotFoundError:
        raise InputError("no such PHN file", path, utt) from None
    with f:
        try:
            for lineno, line in enumerate(f, 1):
                parts = line.split()
                if not parts:
                    continue
                if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit():
                    raise InputError(f"line {lineno}: expected 'start_sample end_sample phone'",
                                     path, utt)
                s, e = int(parts[0]), int(parts[1])
                if e <= s:
                    raise InputError(f"line {lineno}: segment ends ({e}) at or before its "
                                     f"start ({s})", path, utt)
                if starts and s < starts[-1]:
                    raise InputError(f"line {lineno}: segment starts ({s}) before the previous "
                                     f"one ({starts[-1]})", path, utt)
                starts.append(s)
                ends.append(e)
                phones.append(parts[2])
        except UnicodeDecodeError:
            raise InputError("not a text PHN file", path, utt) from None
    if not phones:
        raise InputError("no phone segments", path, utt)
    return np.array(starts), np.array(ends), phones


def frame_labels(starts, ends, phones, nsamples, phone_map, winlen=400, step=160,
                 path=None, utt=None, with_segments=False):
    """One 48-set label per frame of an utterance of `nsamples` samples (see module doc);
    `with_segments`: also its phone segments [(start frame, end frame, label)]."""
    for i, p in enumerate(phones):
        if p not in phone_map.to48 and p not in phone_map.deleted:
            raise InputError(f"unknown phone {p!r} in segment {i + 1} (not in the phone map)",
                             path, utt)
    last = int(np.max(ends))
    if last < nsamples - winlen:
        raise InputError(f"PHN does not cover the audio: segments end at sample {last}, "
                         f"audio has {nsamples} samples", path, utt)
    if last > nsamples + winlen:
        raise InputError(f"PHN runs past the audio: segments end at sample {last}, "
                         f"audio has {nsamples} samples", path, utt)
    if starts[0] > winlen:
        raise InputError(f"PHN does not cover the audio: first segment starts at sample "
                         f"{starts[0]}", path, utt)
    keep = [i for i, p in enumerate(phones) if p not in phone_map.deleted]
    if not keep:
        raise InputError("every segment is a deleted phone", path, utt)
    kept_starts = starts[keep]
    labels = np.array([phone_map.to48[phones[i]] for i in keep], dtype=object)
    centres = frame_centres(num_frames(nsamples, winlen, step), winlen, step)
    idx = np.maximum(np.searchsorted(kept_starts, centres, side="right") - 1, 0)
    if with_segments:
        return list(labels[idx]), segments_of(idx, labels)
    return list(labels[idx])


def segments_of(idx, labels):
    """[(start, end, label)] of the runs of equal PHN-line index `idx` (one per frame)."""
    cut = np.flatnonzero(np.diff(idx)) + 1
    starts = np.concatenate([[0], cut])
    ends = np.concatenate([cut, [len(idx)]])
    return [(int(s), int(e), labels[idx[s]]) for s, e in zip(starts, ends)]


# --- splits ----------------------------------------------------------------------

def dev_subset(utts_by_spk, size, seed=0):
    """A deterministic, speaker-balanced subset: round robin over speakers (sorted), each
    speaker's utterances in an order fixed by a hash of (seed, utterance id)."""
    order = {s: sorted(u, key=lambda k: hashlib.sha1(f"{seed}:{k}".encode()).hexdigest())
             for s, u in sorted(utts_by_spk.items())}
    chosen = []
    for r in range(max((len(u) for u in order.values()), default=0)):
        for s, u in order.items():
            if r < len(u) and len(chosen) < size:
                chosen.append(u[r])
    return set(chosen)


def select(train, test, core_spk, dev_spk, dev_size=None, seed=0):
    """{set: {utt-id: (speaker, wav, phn)}} for train, dev and test (SX and SI only)."""
    from ..progress import log

    def utts(speakers, which):
        out = {}
        for spk in which:
            for stem, (wav, phn) in speakers[spk].items():
                if not stem.startswith("SA"):
                    out[f"{spk}_{stem}"] = (spk, wav, phn)
        return out

    both = set(core_spk) & set(dev_spk)
    if both:
        raise InputError(f"speakers in both the core test and the dev list: {sorted(both)}")
    for name, spk in (("core test", core_spk), ("dev", dev_spk)):
        missing = [s for s in spk if s not in test]
        if missing:
            log.warning("%d of the %d %s speakers are not in TEST: %s", len(missing), len(spk),
                        name, " ".join(missing))
    sets = {
        "train": utts(train, sorted(train)),
        "dev": utts(test, sorted(s for s in dev_spk if s in test)),
        "test": utts(test, sorted(s for s in core_spk if s in test)),
    }
    if dev_size is not None:
        if dev_size < 1:
            raise InputError(f"--dev-size must be at least 1 (got {dev_size})")
        if dev_size > len(sets["dev"]):
            log.warning("--dev-size %d: only %d dev utterances exist; using all",
                        dev_size, len(sets["dev"]))
        by_spk = {}
        for k, (spk, _, _) in sets["dev"].items():
            by_spk.setdefault(spk, []).append(k)
        keep = dev_subset(by_spk, dev_size, seed)
        sets["dev"] = {k: v for k, v in sets["dev"].items() if k in keep}
    for name, s in sets.items():
        if not s:
            raise InputError(f"the {name} set is empty (no SX/SI utterances of its speakers)")
    return {name: dict(sorted(s.items())) for name, s in sets.items()}


# --- writing ---------------------------------------------------------------------

def alignments(utts, phone_map, sample_rate=16000, winlen=400, step=160, desc=None):
    """({utt: 48-set label per frame}, {utt: phone segments}) for {utt: (speaker, wav, phn)},
    checking every file."""
    from ..progress import progress

    ali48, segs = {}, {}
    for utt, (spk, wav, phn) in progress(utts.items(), desc=desc, total=len(utts)):
        if any(c.isspace() for c in wav):
            raise InputError("path contains white space, which wav.scp cannot hold", wav, utt)
        n = audio_info(wav, sample_rate, utt)
        ali48[utt], segs[utt] = frame_labels(*read_phn(phn, utt), n, phone_map, winlen, step,
                                             phn, utt, with_segments=True)
    return ali48, segs


def write_data_dir(d, utts, ali48, phone_map, segs=None):
    """wav.scp, utt2spk, spk2utt, ali.48, ali.39 (and with `segs`: phone_segments, seg.48,
    seg.39) in folder d (made if needed)."""
    from ..io.text import open_output

    os.makedirs(d, exist_ok=True)
    spk2utt = {}
    for utt, (spk, _, _) in utts.items():
        spk2utt.setdefault(spk, []).append(utt)
    with open_output(os.path.join(d, "wav.scp")) as f:
        f.writelines(f"{u} {w}\n" for u, (_, w, _) in utts.items())
    with open_output(os.path.join(d, "utt2spk")) as f:
        f.writelines(f"{u} {s}\n" for u, (s, _, _) in utts.items())
    with open_output(os.path.join(d, "spk2utt")) as f:
        f.writelines(f"{s} {' '.join(us)}\n" for s, us in sorted(spk2utt.items()))
    with open_output(os.path.join(d, "ali.48")) as f:
        f.writelines(f"{u} {' '.join(ali48[u])}\n" for u in utts)
    fold = phone_map.fold48to39
    with open_output(os.path.join(d, "ali.39")) as f:
        f.writelines(f"{u} {' '.join(fold[p] for p in ali48[u])}\n" for u in utts)
    if segs is not None:
        write_segments(d, utts, segs, fold)


def write_segments(d, utts, segs, fold):
    """phone_segments, seg.48 and seg.39 (see the module doc)."""
    from ..io.text import open_output

    with open_output(os.path.join(d, "phone_segments")) as f:
        f.writelines(f"{u} {s} {e} {p}\n" for u in utts for s, e, p in segs[u])
    for name, m in (("seg.48", lambda p: p), ("seg.39", fold.__getitem__)):
        with open_output(os.path.join(d, name)) as f:
            f.writelines(f"{u} {' '.join(m(p) for _, _, p in segs[u])}\n" for u in utts)


def prepare(root, out_dir, conf_dir, dev_size=None, seed=0, sample_rate=16000,
            frame_length=25.0, frame_shift=10.0):
    """Write out_dir/{train,dev,test}/ from a TIMIT root; returns {set: (utterances, frames,
    phone segments)}.

    `conf_dir` holds core_test_spk.txt, dev_spk.txt and phones.60-48-39.map.
    Frame length and shift (ms) must match those given to `rhmmtk feats`.
    """
    from ..frontend.acoustic import MfccConfig
    from ..progress import log

    cfg = MfccConfig(sample_rate=sample_rate, frame_length=frame_length,
                     frame_shift=frame_shift)
    if cfg.winlen < 1 or cfg.step < 1:
        raise InputError("frame length and shift must each be at least one sample")
    phone_map = PhoneMap.read(os.path.join(conf_dir, "phones.60-48-39.map"))
    core = read_speaker_list(os.path.join(conf_dir, "core_test_spk.txt"))
    dev = read_speaker_list(os.path.join(conf_dir, "dev_spk.txt"))
    root = find_root(root)
    train, test = scan(root, "TRAIN"), scan(root, "TEST")
    sets = select(train, test, core, dev, dev_size, seed)
    # every file is checked before anything is written
    alis = {name: alignments(sets[name], phone_map, sample_rate, cfg.winlen, cfg.step, name)
            for name in SETS}
    summary = {}
    for name in SETS:
        ali, segs = alis[name]
        write_data_dir(os.path.join(out_dir, name), sets[name], ali, phone_map, segs)
        frames = sum(len(a) for a in ali.values())
        nseg = sum(len(s) for s in segs.values())
        nspk = len({s for s, _, _ in sets[name].values()})
        summary[name] = (len(sets[name]), frames, nseg)
        log.info("%s: %d utterances, %d speakers, %d frames, %d phone segments",
                 name, len(sets[name]), nspk, frames, nseg)
    return summary
