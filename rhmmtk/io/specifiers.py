"""Where a command's data goes: output specifiers resolved once, for every command.

An output argument is one of
  PATH, -                 rhmmtk's own file: an HDF5 archive (features, codes) or text
                          (alignments; `-` is standard output)
  ark:PATH  ark,t:PATH    a Kaldi archive, binary or text; `ark:-` standard output,
                          `ark:| CMD` (or `ark:CMD`) the standard input of a shell command
  ark,scp:ARK,SCP         a Kaldi archive and its script file (`utt ARK:offset` lines)
  htk:DIR                 HTK parameter files DIR/<utt>.htk and their script DIR/feats.scp
  mlf:PATH                an HTK master label file
each where the data kind allows (OUTPUT_FORMS). A name that looks like a specifier (Kaldi's
option words, htk or mlf, then a colon) but is not one of the command's forms is refused
before any work, listing the forms it accepts: it is never taken for a file name (a file
named `ark:-` is never created).

`resolve_output(spec, kind)` parses and checks; `spec_files(spec)` are the files a
specifier names (rhmmtk.io.output.check_outputs checks them); `KaldiSink` writes Kaldi
archive bytes to a file, standard output or a command, through rhmmtk.io.output (complete
or absent). On input: wave-archive entries of wav.scp, integer-vector tables.
"""
import contextlib
import dataclasses
import os
import re
import subprocess
import sys

import click

from ..errors import InputError

# Kaldi's wspecifier and rspecifier option words (util/kaldi-table.cc), and ours
KALDI_WORDS = {"ark", "scp", "t", "b", "f", "nf", "p", "np", "o", "no", "s", "ns", "cs", "ncs",
               "bg"}
OUR_WORDS = {"htk", "mlf"}
_LOOKS = re.compile(r"^([a-z]+(?:,[a-z]+)*):(.*)$", re.S)

OUTPUT_FORMS = {
    "features": ["PATH (rhmmtk HDF5)", "ark:PATH", "ark,t:PATH", "ark,scp:ARK,SCP", "ark:-",
                 "'ark:| CMD'", "htk:DIR"],
    "codes": ["PATH (rhmmtk HDF5)", "ark:PATH", "ark,t:PATH", "ark,scp:ARK,SCP", "ark:-",
              "'ark:| CMD'"],
    "alignment": ["PATH", "- (text)", "ark,t:PATH", "ark,t:-", "'ark,t:| CMD'", "mlf:PATH"],
    "text": ["PATH", "- (text)"],
}


def looks_like_specifier(spec):
    """(words, rest) when `spec` starts with Kaldi's or our specifier words and a colon."""
    m = _LOOKS.match(os.fspath(spec))
    if not m:
        return None
    words = m.group(1).split(",")
    if not set(words) & {"ark", "scp", "htk", "mlf"}:
        return None          # `x:y` is a file name; `ark,x:y` a mistyped specifier
    return words, m.group(2)


@dataclasses.dataclass
class OutputSpec:
    """A resolved output: `form` is "plain" (rhmmtk's file or '-'), "ark", "htk" or "mlf"."""
    spec: str
    form: str
    text: bool = False        # a Kaldi text archive
    ark: str = None           # an archive file, '-' or None (a command)
    scp: str = None
    command: str = None       # `ark:| CMD`
    path: str = None          # plain, htk:DIR, mlf:PATH


def _refuse(spec, kind, why):
    raise InputError(f"{why}; {kind} outputs are " + ", ".join(OUTPUT_FORMS[kind]), spec)


def resolve_output(spec, kind):
    """An OutputSpec for output argument `spec` of data kind `kind` (OUTPUT_FORMS), or an
    InputError naming the specifier and the forms the kind accepts."""
    spec = os.fspath(spec)
    looks = looks_like_specifier(spec)
    if looks is None:
        if spec == "-" and kind not in ("alignment", "text"):
            _refuse(spec, kind, "HDF5 cannot be streamed to standard output ('-')")
        if not spec:
            _refuse(spec, kind, "empty output name")
        return OutputSpec(spec, "plain", path=spec)
    words, rest = looks
    rest = rest.strip()
    if kind not in ("features", "codes", "alignment"):
        _refuse(spec, kind, "a Kaldi or HTK specifier is not an output of this command")
    if words in (["htk"], ["mlf"]):
        want = "htk" if kind == "features" else "mlf" if kind == "alignment" else None
        if words[0] != want:
            _refuse(spec, kind, f"{words[0]}: is not an output for {kind}")
        if not rest:
            _refuse(spec, kind, f"{words[0]}: needs a {'directory' if want == 'htk' else 'file'}")
        return OutputSpec(spec, words[0], path=rest)
    if set(words) & OUR_WORDS or not set(words) <= KALDI_WORDS:
        _refuse(spec, kind, f"{','.join(words)}: is not a Kaldi or HTK output")
    return _kaldi_output(spec, kind, words, rest)


def _kaldi_output(spec, kind, words, rest):
    if "ark" not in words:
        _refuse(spec, kind, "a Kaldi output needs `ark` (rhmmtk writes archives, not into "
                            "an existing script file's entries)")
    extra = set(words) - {"ark", "scp", "t", "b", "f", "nf", "p"}
    if extra:
        _refuse(spec, kind, f"{','.join(sorted(extra))} is not a Kaldi output option")
    text = "t" in words
    if kind == "alignment" and not text:
        _refuse(spec, kind, "alignments are label symbols: write the Kaldi text form ark,t: "
                            "(convert-ali --to int makes integer ids)")
    out = OutputSpec(spec, "ark", text=text)
    if not rest:
        _refuse(spec, kind, "no archive after the colon")
    if "scp" in words:
        if kind == "alignment":
            _refuse(spec, kind, "ark,scp: is not an output for alignments")
        parts = rest.split(",")
        if len(parts) != 2 or not all(p.strip() for p in parts):
            _refuse(spec, kind, "ark,scp: needs two paths, ARK,SCP")
        first_ark = words.index("ark") < words.index("scp")
        out.ark, out.scp = [p.strip() for p in (parts if first_ark else parts[::-1])]
        if out.ark == "-" or out.ark.startswith("|"):
            _refuse(spec, kind, "a script file needs offsets in an archive file, not a stream")
        return out
    if rest.startswith("|"):
        out.command = rest[1:].strip()
        if not out.command:
            _refuse(spec, kind, "no command after `|`")
    elif rest.endswith("|"):
        _refuse(spec, kind, "`CMD |` reads from a command; an output writes to one: ark:| CMD")
    else:
        out.ark = rest
    return out


class OutputType(click.ParamType):
    """A command's output argument of data kind `kind`: refused at parsing (exit 2) when it
    is not one of the kind's forms; the value stays the string given."""

    name = "output"

    def __init__(self, kind):
        self.kind = kind

    def convert(self, value, param, ctx):
        try:
            resolve_output(value, self.kind)
        except InputError as e:
            self.fail(e.describe(), param, ctx)
        return value


# --- writing Kaldi archives ---------------------------------------------------------------

class KaldiSink:
    """A Kaldi archive being written (a context manager): `write(key, data_bytes)` appends
    one `key data` record to the archive file, standard output or the command's standard
    input, and its `key ark:offset` line to the script file. Files go through
    rhmmtk.io.output, so they appear complete when the command succeeds, or not at all."""

    def __init__(self, spec):
        self.out = spec if isinstance(spec, OutputSpec) else resolve_output(spec, "features")
        self.seen = set()
        self.pos = 0

    def __enter__(self):
        from .output import open_output

        self._stack = contextlib.ExitStack()
        self.proc = None
        if self.out.command is not None:
            self.f = self._stack.enter_context(self._command())
        else:
            self.f = self._stack.enter_context(open_output(self.out.ark, binary=True))
        self.sf = None
        if self.out.scp is not None:
            self.sf = self._stack.enter_context(open_output(self.out.scp))
        return self

    @contextlib.contextmanager
    def _command(self):
        """The standard input of `CMD` (run by the shell, as Kaldi does); its failure is
        this command's error."""
        sys.stdout.flush()
        self.proc = subprocess.Popen(self.out.command, shell=True, stdin=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        ended = False             # the command closed its input before the archive's end
        try:
            yield self.proc.stdin
        except BrokenPipeError:
            ended = True
        except BaseException:
            self.proc.kill()      # it must not take a half-written archive for a whole one
            raise
        finally:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()
            err = self.proc.stderr.read().decode("utf-8", "replace").strip().splitlines()
            code = self.proc.wait()
        if code != 0:
            raise InputError(f"output command failed (exit status {code})"
                             f"{': ' + err[-1] if err else ''}", self.out.spec)
        if ended:
            raise InputError("output command ended before reading the whole archive",
                             self.out.spec)

    def check_key(self, key):
        if not key or any(c.isspace() for c in key):
            raise InputError("utterance id is empty or holds white space", self.out.spec, key)
        if key in self.seen:
            raise InputError("utterance appears twice", self.out.spec, key)
        self.seen.add(key)

    def write(self, key, data):
        """Append the record `key data` (data: the value's bytes, Kaldi's header included;
        bytes or a memoryview)."""
        self.check_key(key)
        head = key.encode("utf-8") + b" "
        self.f.write(head)             # two writes, not a copy of `data` joined to `head`
        self.f.write(data)             # a command's broken pipe: _command reports it
        if self.sf is not None:       # Kaldi's scp offset: just past "key "
            self.sf.write(f"{key} {self.out.ark}:{self.pos + len(head)}\n")
        self.pos += len(head) + len(data)

    def __exit__(self, *exc):
        return self._stack.__exit__(*exc)


def matrix_bytes(mat, text=False):
    """A float32 matrix's Kaldi bytes: binary `\\0BFM `, rows and columns (each after the
    byte 4), then the values little-endian; text `[ ... ]` by kaldiio. The binary header is
    written here: kaldiio's save_ark took 56 us per 300 x 39 matrix, this 23 us, for the
    same bytes (tests/test_specifiers.py reads them back with kaldiio)."""
    import numpy as np

    x = np.asarray(mat, np.float32)
    if text:
        import io

        import kaldiio

        buf = io.BytesIO()
        kaldiio.save_ark(buf, {"x": x}, text=True)
        return buf.getbuffer()[2:]     # without kaldiio's "x " (a view: no copy)
    rows, cols = x.shape
    return b"\0BFM \4" + np.int32(rows).astype("<i4").tobytes() + b"\4" + \
        np.int32(cols).astype("<i4").tobytes() + x.astype("<f4", copy=False).tobytes()


def int_vector_bytes(vec, text=False):
    """An integer vector's Kaldi bytes, as copy-int-vector writes them: binary `\\0B` then
    a 4-byte size and each value as a 4-byte int, each after the byte 4; text `1 2 3\\n`."""
    import numpy as np

    v = np.asarray(vec, dtype="<i4")
    if text:
        return (" ".join(map(str, v.tolist())) + "\n").encode()
    rec = np.empty(len(v), dtype=[("n", "u1"), ("v", "<i4")])
    rec["n"], rec["v"] = 4, v
    return b"\0B\4" + np.int32(len(v)).astype("<i4").tobytes() + rec.tobytes()


# --- writers by data kind -----------------------------------------------------------------

class KaldiWriter:
    """A Kaldi archive of values (a context manager with add(utt, value)), each written as
    `encode(value, text)` gives its bytes: matrix_bytes, int_vector_bytes."""

    def __init__(self, out, encode):
        self.sink = KaldiSink(out)
        self.encode = encode

    def __enter__(self):
        self.sink.__enter__()
        return self

    def add(self, key, value):
        self.sink.write(key, self.encode(value, self.sink.out.text))

    def __exit__(self, *exc):
        return self.sink.__exit__(*exc)


def open_codes_writer(spec, provenance, tables, attrs):
    """A writer (context manager with add(utt, codes)) of a codes archive: rhmmtk HDF5 (with
    its symbol tables and attributes) or a Kaldi integer-vector archive (the ids only)."""
    from .archive import ArchiveWriter

    out = resolve_output(spec, "codes")
    if out.form == "ark":
        return KaldiWriter(out, int_vector_bytes)
    return ArchiveWriter(spec, "codes", provenance, tables, attrs)


class AlignmentWriter:
    """Alignments (`utt sym sym ...`) as text (a file, '-', `ark,t:` file or command) or as
    an HTK MLF (`mlf:PATH`, each run of a label one line, times in 100 ns)."""

    def __init__(self, spec, frame_shift=None, mlf_ext="rec"):
        self.out = resolve_output(spec, "alignment")
        self.frame_shift = frame_shift or 0.01
        self.mlf_ext = mlf_ext
        self.seen = set()

    def __enter__(self):
        from .output import open_output

        self._stack = contextlib.ExitStack()
        self.sink = None
        if self.out.form == "ark" and self.out.command is not None:
            self.sink = self._stack.enter_context(KaldiSink(self.out))
            return self
        target = self.out.ark if self.out.form == "ark" else self.out.path
        self.f = self._stack.enter_context(open_output(target))
        if self.out.form == "mlf":
            self.f.write("#!MLF!#\n")
        return self

    def add(self, key, syms):
        from .labels import mlf_record

        line = " ".join(syms) + "\n"
        if self.sink is not None:
            self.sink.write(key, line.encode("utf-8"))
        elif self.out.form == "mlf":
            self.f.write(mlf_record(key, syms, self.frame_shift, self.mlf_ext))
        else:
            self.f.write(key + " " + line)

    def __exit__(self, *exc):
        return self._stack.__exit__(*exc)


def spec_files(spec):
    """The files a specifier (input or output) names, for the checks of
    rhmmtk.io.output.check_outputs: none for streams and commands; a plain path is itself."""
    spec = os.fspath(spec)
    looks = looks_like_specifier(spec)
    if looks is None:
        return [spec]
    words, rest = looks
    rest = rest.strip()
    if not rest or rest == "-" or rest.startswith("|") or rest.endswith("|"):
        return []
    if words == ["htk"] and os.path.isdir(rest):
        return [os.path.join(rest, "feats.scp")]
    if "ark" in words and "scp" in words:
        return [p.strip() for p in rest.split(",") if p.strip() not in ("", "-")]
    return [rest]


# --- reading: wave archives, integer alignments -------------------------------------------

_OFFSET = re.compile(r"^(.+):(\d+)$", re.S)


def wave_archive_entry(entry):
    """(archive path, byte offset) of a wav.scp entry `wav.ark:10` that points into a Kaldi
    wave archive (the file `wav.ark` exists, `wav.ark:10` does not), else None."""
    m = _OFFSET.match(entry)
    if m is None or os.path.exists(entry) or not os.path.isfile(m.group(1)):
        return None
    return m.group(1), int(m.group(2))


def check_wave_archive_entry(entry, utt=None):
    """An entry's offset inside its archive (checked before any work)."""
    path, offset = wave_archive_entry(entry)
    size = os.path.getsize(path)
    if offset >= size:
        raise InputError(f"offset {offset} is past the end of the wave archive ({size} bytes)",
                         entry, utt)


def read_wave_archive(entry, sample_rate=None, utt=None, channel=None):
    """Samples (16-bit scale, float64) of a wave-archive entry, read by kaldiio."""
    import kaldiio
    import numpy as np

    check_wave_archive_entry(entry, utt)
    try:
        rate, x = kaldiio.load_mat(entry)
    except Exception as e:
        raise InputError(f"unreadable wave archive entry ({_reason(e)})", entry, utt) from None
    if sample_rate is not None and rate != sample_rate:
        raise InputError(f"sample rate is {rate} Hz, expected {sample_rate}", entry, utt)
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 2:
        if channel is not None and channel >= x.shape[1]:
            raise InputError(f"channel {channel + 1} asked, audio has {x.shape[1]}", entry, utt)
        x = x[:, channel or 0]
    if not len(x):
        raise InputError("audio holds no samples", entry, utt)
    return x


def read_source_bytes(spec):
    """All bytes of a Kaldi rspecifier's archive (`ark:PATH`, `ark:-`, `ark:CMD |`); a
    failing command is an InputError naming the specifier."""
    rest = looks_like_specifier(spec)[1].strip()
    if rest == "-":
        return sys.stdin.buffer.read()
    if rest.endswith("|"):
        p = subprocess.run(rest[:-1], shell=True, stdin=subprocess.DEVNULL,
                           capture_output=True)
        if p.returncode != 0:
            err = p.stderr.decode("utf-8", "replace").strip().splitlines()
            raise InputError(f"command failed (exit status {p.returncode})"
                             f"{': ' + err[-1] if err else ''}", spec)
        return p.stdout
    try:
        with open(rest, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise InputError("no such Kaldi archive", spec) from None
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", spec) from None


def read_int_vectors(spec):
    """utt -> list of ints of a Kaldi integer-vector table (alignments, ali-to-phones output):
    `ark:`/`ark,t:` (binary or text, read by kaldiio or as `utt i i ...` lines; file, `-`,
    `CMD |`) or `scp:` (kaldiio)."""
    import io

    import kaldiio

    words, rest = looks_like_specifier(spec)
    if "scp" in words and "ark" not in words:
        try:
            table = kaldiio.load_scp(rest.strip())
            return {k: _int_list(table[k], spec, k) for k in table}
        except InputError:
            raise
        except Exception as e:
            raise InputError(f"unreadable Kaldi script file ({_reason(e)})", spec) from None
    data = read_source_bytes(spec)
    head = data.split(b" ", 1)
    if len(head) == 2 and head[1].startswith(b"\0B"):       # binary: `utt \0B\4 size ...`
        return _binary_int_vectors(data, spec)
    out = {}
    for lineno, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if parts[0] in out:
            raise InputError(f"line {lineno}: utterance appears twice", spec, parts[0])
        if len(parts) < 2:
            raise InputError(f"line {lineno}: empty utterance (no ids after the key)", spec,
                             parts[0])
        out[parts[0]] = parts[1:]
    return out


_INT_ITEM = [("n", "u1"), ("v", "<i4")]


def _binary_int_vectors(data, spec):
    """Kaldi's binary integer vectors, `utt \0B\4 <n> (\4 <int32>) * n` each, read with
    numpy: kaldiio reads them one value at a time (132x a raw read of the same ints,
    bench/bench_specifiers.py; this is a few times)."""
    import numpy as np

    out, pos, last = {}, 0, None
    while pos < len(data):
        sp = data.find(b" ", pos)
        key = data[pos:sp].decode("utf-8", "replace").strip() if sp > 0 else ""
        start = sp + 1
        if sp < 0 or data[start:start + 3] != b"\0B\4" or start + 7 > len(data):
            where = f"after utterance {last}" if last else "at the first utterance"
            raise InputError(f"truncated or unreadable Kaldi integer-vector archive {where}",
                             spec, key or None)
        n = int(np.frombuffer(data, "<i4", 1, start + 3)[0])
        end = start + 7 + 5 * n
        if n < 0 or end > len(data):
            raise InputError(f"truncated Kaldi archive after utterance {last}: the vector "
                             f"needs {5 * max(n, 0)} bytes, {len(data) - start - 7} remain",
                             spec, key)
        items = np.frombuffer(data, _INT_ITEM, n, start + 7)
        if (items["n"] != 4).any():
            raise InputError("not a vector of 4-byte integers", spec, key)
        if key in out:
            raise InputError("utterance appears twice", spec, key)
        out[key] = items["v"].tolist()
        pos, last = end, key
    return out


def _int_list(v, spec, utt):
    import numpy as np

    v = np.asarray(v)
    if v.ndim != 1 or not np.issubdtype(v.dtype, np.integer):
        raise InputError(f"expected an integer vector, found {v.dtype} of shape {v.shape}",
                         spec, utt)
    return v.tolist()


def _reason(e):
    return (str(e) or type(e).__name__).splitlines()[0][:200]


def writes_stdout(spec):
    """Does output `spec` go to standard output (`-`, `ark:-`, `ark,t:-`)?"""
    spec = os.fspath(spec)
    looks = looks_like_specifier(spec)
    return spec == "-" if looks is None else looks[1].strip() == "-"
