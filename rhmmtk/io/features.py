"""Frame features from wherever they are: one reader for rhmmtk archives, Kaldi tables and
HTK parameter files, and one writer for each.

A feature specifier (`spec`) is
  PATH                    an rhmmtk features archive (HDF5, `rhmmtk feats`)
  ark:PATH  ark,t:PATH    a Kaldi archive (binary or text; kaldiio reads it, compressed
                          matrices included); `ark:-` is stdin, `ark:CMD |` a command's
                          output (`ark:copy-feats scp:feats.scp ark:- |`)
  scp:PATH                a Kaldi script file (`utt ark-path:offset`), read lazily
  htk:LIST                an HTK script file listing parameter files (rhmmtk.io.htk); a
                          directory stands for its feats.scp
Kaldi's read options after `ark`/`scp` (`,s`, `,cs`, `,o`, `,bg`) are accepted (they are
hints about order; rhmmtk reads in stored order); `,p` (permissive) skips unreadable
script-file entries with a warning; other words are refused.

open_features(spec) returns a reader: `keys()`, `items(keys=None)` yielding (utt, float32
matrix (frames, dim)), `attrs` (dim, frame_shift in seconds when known, feature_type), used
as a context manager. Every matrix is checked as it is read: 2-d, at least one frame, the
same dimension as the first; a bad one is an InputError naming the source and utterance.
Kaldi double matrices are read as float32 (rhmmtk's feature type).

Output specifiers (open_feature_writer: `rhmmtk feats`, `copy-feats`, `decode --posteriors`)
are resolved by rhmmtk.io.specifiers: PATH (rhmmtk archive), `ark:PATH`, `ark,t:PATH`,
`ark,scp:ARK,SCP`, `ark:-`, `ark:| CMD` (Kaldi), `htk:DIR` (one HTK parameter file per
utterance, DIR/<utt>.htk, with the source's parameter kind when it had one, and their
script file DIR/feats.scp). Files are written under temporary names and renamed when
complete.
"""
import contextlib
import functools
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

from ..errors import InputError

_KALDI = re.compile(r"^(ark|scp)((?:,[a-z]+)*):(.*)$", re.S)
_HTK = re.compile(r"^htk:(.*)$", re.S)
# Kaldi's rspecifier options (util/kaldi-table.h): only order/permissiveness hints here
READ_OPTIONS = {"ark", "scp", "t", "b", "s", "ns", "cs", "ncs", "p", "np", "o", "no", "bg"}


def parse_spec(spec):
    """('rhmmtk', path) | ('ark' or 'scp', options set, rest) | ('htk', path)."""
    spec = os.fspath(spec)
    m = _KALDI.match(spec)
    if m:
        opts = set(filter(None, m.group(2).split(",")))
        unknown = opts - READ_OPTIONS
        if unknown:
            raise InputError(f"{','.join(sorted(unknown))} is not a Kaldi read option (those "
                             f"are {', '.join(sorted(READ_OPTIONS))})", spec)
        return m.group(1), opts, m.group(3).strip()
    m = _HTK.match(spec)
    if m:
        return "htk", set(), m.group(1)
    return "rhmmtk", set(), spec


def is_foreign(spec):
    """True for Kaldi and HTK specifiers (not an rhmmtk archive path)."""
    return parse_spec(spec)[0] != "rhmmtk"


class FeatureReader:
    """Common checks; subclasses provide _keys() and _read(keys)."""

    def __init__(self, spec):
        self.spec = os.fspath(spec)
        self.path = self.spec          # what messages name
        self.attrs = {}
        self._dim = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        pass

    def keys(self):
        return list(self._keys())

    def __len__(self):
        return len(self.keys())

    def count(self):
        """The number of utterances if known without reading the data, else None."""
        return len(self.keys())

    def items(self, keys=None):
        """(utt, float32 (frames, dim)) in stored order, or of `keys`."""
        for k, x in self._read(keys):
            yield k, self._check(k, x)

    def dim(self):
        """The feature dimension (reads the first matrix if not yet known)."""
        if self._dim is None:
            for _ in self.items(self.keys()[:1]):
                break
        return self._dim

    def _check(self, key, x):
        if isinstance(x, tuple):     # a Kaldi wave archive: (rate, samples)
            raise InputError("holds audio, not a feature matrix", self.path, key)
        x = np.asarray(x)
        if x.ndim != 2:
            raise InputError(f"expected a (frames, dim) matrix, found shape {x.shape}",
                             self.path, key)
        if not len(x):
            raise InputError("empty utterance (no frames)", self.path, key)
        if not np.issubdtype(x.dtype, np.floating):
            raise InputError(f"expected floating-point features, found {x.dtype}",
                             self.path, key)
        if self._dim is None:
            self._dim = x.shape[1]
            self.attrs.setdefault("dim", self._dim)
        elif x.shape[1] != self._dim:
            raise InputError(f"matrix has {x.shape[1]} columns, earlier utterances have "
                             f"{self._dim}", self.path, key)
        return x.astype(np.float32, copy=False)


class ArchiveFeatures(FeatureReader):
    """An rhmmtk features archive (rhmmtk.io.archive)."""

    def __init__(self, spec):
        from .archive import Archive

        super().__init__(spec)
        self.archive = Archive(spec, expect_kind="features")
        self.attrs = dict(self.archive.attrs)
        self.file = self.archive.file

    def close(self):
        self.archive.close()

    def _keys(self):
        return self.archive.keys()

    def _read(self, keys):
        return self.archive.items(keys)

    def shapes(self):
        """Shapes of every utterance, from the index (no data read)."""
        return [self.archive.shape(k) for k in self.archive.keys()]


def _load_error(e):
    msg = str(e) or type(e).__name__
    return msg.splitlines()[0][:200]


class KaldiFeatures(FeatureReader):
    """A Kaldi archive (read in order; keys() reads it all) or script file (lazy)."""

    def __init__(self, spec):
        super().__init__(spec)
        self.kind, self.opts, self.target = parse_spec(spec)
        self.path = self.target if self.target not in ("-", "") else self.spec
        self.attrs = {"feature_type": "kaldi", "source": self.spec}
        if not self.target:
            raise InputError("empty Kaldi specifier", self.spec)
        self._scp = None
        self._cache = None
        if self.kind == "scp":
            import kaldiio

            if not os.path.isfile(self.target):
                raise InputError("no such Kaldi script file", self.target)
            try:
                self._scp = kaldiio.load_scp(self.target)
                self._scp_keys = list(self._scp.keys())
            except Exception as e:
                raise InputError(f"unreadable Kaldi script file ({_load_error(e)})",
                                 self.target) from None
            if not self._scp_keys:
                raise InputError("Kaldi script file lists no utterances", self.target)
        elif not self.target.endswith("|") and self.target != "-" \
                and not os.path.isfile(self.target):
            raise InputError("no such Kaldi archive", self.target)

    def count(self):
        if self._scp is not None or self._cache is not None:
            return len(self._keys())
        return None

    def _keys(self):
        if self._scp is not None:
            return self._scp_keys
        if self._cache is None:       # an archive is a stream: read it once, keep it
            self._cache = dict(self._stream())
        return list(self._cache)

    def _read(self, keys):
        if self._scp is not None:
            for k in (self._scp_keys if keys is None else keys):
                if k not in self._scp:
                    raise InputError("utterance missing from Kaldi script file", self.target, k)
                try:
                    x = self._scp[k]
                except Exception as e:
                    if "p" in self.opts:      # Kaldi's permissive read: as if absent
                        from ..progress import log

                        log.warning("%s: utterance %s unreadable, skipped (,p): %s",
                                    self.target, k, _load_error(e))
                        continue
                    raise InputError(f"unreadable Kaldi matrix ({_load_error(e)})",
                                     self.target, k) from None
                yield k, x
            return
        if self._cache is None and keys is None:
            yield from self._stream()
            return
        self._keys()
        for k in (self._cache if keys is None else keys):
            if k not in self._cache:
                raise InputError("utterance missing from Kaldi archive", self.path, k)
            yield k, self._cache[k]

    def _stream(self):
        """(key, matrix) of an ark file, stdin or command, in order, checking the command."""
        import kaldiio

        with contextlib.ExitStack() as stack:
            proc = errf = None
            if self.target.endswith("|"):
                cmd = self.target[:-1].strip()
                errf = stack.enter_context(tempfile.TemporaryFile())
                proc = subprocess.Popen(cmd, shell=True, stdout=subprocess.PIPE, stderr=errf,
                                        stdin=subprocess.DEVNULL)
                stack.callback(proc.wait)
                stack.callback(proc.stdout.close)
                src = proc.stdout
            elif self.target == "-":
                src = sys.stdin.buffer
            else:
                src = stack.enter_context(open(self.target, "rb"))
            last, count = None, 0
            try:
                for k, x in kaldiio.load_ark(src):
                    last, count = k, count + 1
                    yield k, x
            except InputError:
                raise
            except Exception as e:
                where = f"after utterance {last}" if last else "at the first utterance"
                raise InputError(f"unreadable Kaldi archive {where} ({_load_error(e)})",
                                 self.path) from None
            if proc is not None:
                proc.stdout.close()
                if proc.wait() != 0:
                    errf.seek(0)
                    err = errf.read().decode("utf-8", "replace").strip().splitlines()
                    raise InputError(f"command failed (exit status {proc.returncode})"
                                     f"{': ' + err[-1] if err else ''}", self.spec)
            if count == 0:
                raise InputError("Kaldi archive holds no utterances", self.path)


class HtkFeatures(FeatureReader):
    """HTK parameter files listed in an HTK script file."""

    def __init__(self, spec):
        from .htk import read_script

        super().__init__(spec)
        target = parse_spec(spec)[2]
        if os.path.isdir(target):
            target = os.path.join(target, "feats.scp")
        self.path = target
        self.entries = {u: (p, r) for u, p, r in read_script(target)}
        self.attrs = {"feature_type": "htk", "source": self.spec}
        from .htk import kind_name, read_header

        first_utt, (first, _) = next(iter(self.entries.items()))
        _, period, _, kind = read_header(first, first_utt)
        self.period, self.kind = period, kind
        self.attrs.update(frame_shift=period * 1e-7, htk_parm_kind=kind_name(kind))

    def _keys(self):
        return list(self.entries)

    def _read(self, keys):
        from .htk import read_htk, select_range

        for k in (self.entries if keys is None else keys):
            if k not in self.entries:
                raise InputError("utterance missing from HTK script file", self.path, k)
            path, rng = self.entries[k]
            x, period, kind = read_htk(path, k)
            if period != self.period:
                raise InputError(f"sample period {period} differs from the first file's "
                                 f"{self.period} (100 ns units)", path, k)
            try:
                x = self._check(k, select_range(x, rng, path, k))
            except InputError as e:
                raise InputError(e.problem, path, k) from None
            yield k, x

    def items(self, keys=None):
        yield from self._read(keys)


def open_features(spec):
    """A reader for an rhmmtk features archive, a Kaldi rspecifier or an HTK script."""
    kind = parse_spec(spec)[0]
    if kind in ("ark", "scp"):
        return KaldiFeatures(spec)
    if kind == "htk":
        return HtkFeatures(spec)
    try:
        return ArchiveFeatures(spec)
    except InputError as e:
        if os.path.isfile(spec) and not _is_hdf5(spec):
            raise InputError(e.problem + "; for Kaldi features write ark:PATH or scp:PATH, "
                             "for HTK files htk:LIST", e.path, e.utt) from None
        raise


def _is_hdf5(path):
    with open(path, "rb") as f:
        return f.read(8) == b"\x89HDF\r\n\x1a\n"


# --- writers ------------------------------------------------------------------------------

class HtkWriter:
    """`htk:DIR`: DIR/<utt>.htk (uncompressed; the parameter kind the source's files had,
    else USER) and the script DIR/feats.scp."""

    def __init__(self, spec, frame_shift, parm_kind=None):
        from .htk import USER, kind_code

        self.dir = spec.path
        self.period = int(round((frame_shift or 0.01) * 1e7))
        self.kind = USER if parm_kind is None else kind_code(parm_kind, uncompressed=True)

    def __enter__(self):
        from .output import on_abort, open_output

        if os.path.exists(self.dir) and not os.path.isdir(self.dir):
            raise InputError("exists and is not a directory", self.dir)
        made, d = [], os.path.abspath(self.dir)
        while not os.path.exists(d):
            made.append(d)
            d = os.path.dirname(d)
        os.makedirs(self.dir, exist_ok=True)
        for d in reversed(made):      # undone in reverse: the deepest first
            on_abort(functools.partial(os.rmdir, d))   # a failed command leaves no directory
        self.list = os.path.join(self.dir, "feats.scp")
        self._stack = contextlib.ExitStack()
        self.sf = self._stack.enter_context(open_output(self.list))
        self.seen = set()
        return self

    def add(self, key, mat):
        from .htk import htk_bytes
        from .output import open_output

        if not key or "/" in key or any(c.isspace() for c in key) or key in self.seen:
            raise InputError("utterance id is empty, repeated, or holds '/' or white space",
                             self.dir, key)
        self.seen.add(key)
        path = os.path.join(self.dir, key + ".htk")
        with open_output(path, binary=True) as f:     # renamed with the command's others
            f.write(htk_bytes(mat, self.period, self.kind))
        self.sf.write(f"{key}={path}\n")

    def __exit__(self, *exc):
        return self._stack.__exit__(*exc)


def open_feature_writer(spec, provenance, attrs=None, kind="features", tables=None):
    """A writer (context manager with add(utt, matrix)) for output specifier `spec`
    (rhmmtk.io.specifiers' forms of features); an rhmmtk archive of `kind` ("features",
    "posteriors") with symbol `tables` for a plain path."""
    from .specifiers import KaldiWriter, matrix_bytes, resolve_output

    out = resolve_output(spec, "features")
    attrs = dict(attrs or {})
    if out.form == "ark":
        return KaldiWriter(out, matrix_bytes)
    if out.form == "htk":
        return HtkWriter(out, attrs.get("frame_shift"), attrs.get("htk_parm_kind"))
    from .archive import ArchiveWriter

    return ArchiveWriter(spec, kind, provenance, tables, attrs)


# attributes of an rhmmtk archive carried over by copy-feats (others describe the copy)
CARRIED = ("feature_type", "feature_config", "cmvn", "dim", "sample_rate", "frame_length",
           "frame_shift", "frame_length_samples", "frame_shift_samples", "htk_parm_kind")


def copy_features(src, dst, frame_shift=None, options=None):
    """Copy every utterance of feature source `src` to output specifier `dst` (the library
    function behind `rhmmtk copy-feats`). `frame_shift` (seconds) is recorded in an rhmmtk
    archive and sets an HTK file's sample period when the source does not say. Returns
    {"utterances", "frames", "dim"}."""
    from ..progress import log, progress
    from ..provenance import record
    from .specifiers import resolve_output

    resolve_output(dst, "features")        # a wrong output form is refused before reading
    with open_features(src) as r:
        attrs = {k: v for k, v in r.attrs.items() if k in CARRIED}
        if frame_shift is not None:
            attrs["frame_shift"] = frame_shift
        frames = utts = 0
        items = r.items()
        first = next(items, None)
        if first is None:
            raise InputError("no utterances", r.path)
        attrs["dim"] = int(first[1].shape[1])
        opts = {"source": os.fspath(src), "output": os.fspath(dst), **(options or {})}
        with open_feature_writer(dst, record(opts), attrs) as w:
            for key, x in progress(_chain(first, items), desc="copy-feats"):
                w.add(key, x)
                frames += len(x)
                utts += 1
    log.info("copied %d utterances, %d frames of %d-dim features to %s", utts, frames,
             attrs["dim"], dst)
    return {"utterances": utts, "frames": frames, "dim": attrs["dim"]}


def _chain(first, rest):
    yield first
    yield from rest
