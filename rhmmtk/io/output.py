"""The one writer of every rhmmtk output: text, HDF5 and images.

Guarantees (stated for users in rhmmtk-formats(5), "WRITE GUARANTEES"):

- A regular file (or a name that does not exist yet) is written to a temporary file
  `.NAME.XXXXXXXX.tmp` beside it, flushed to disk, and renamed onto NAME only when the
  whole command has succeeded. A reader never sees a half-written file, and a failed
  or killed command leaves the previous NAME (or nothing) behind.
- A command's outputs form one transaction (`transaction`, opened by every subcommand):
  every file is complete before the first rename, so a command with several outputs
  (make-obs's archive and symbol table, train-em's model and --history, decode's
  alignment and --posteriors) leaves all of them or none.
- A target that is not a regular file (a character device such as /dev/null, a named
  pipe), or a descriptor alias (/dev/stdout, /dev/fd/N, also when the shell redirected
  it to a regular file), is written in place (appending), never replaced. Any other
  symbolic link is followed: the link stays, the file it points to gets the content.
- `-` is standard output, for text only: HDF5 needs to seek, so it cannot stream.
- Every operating-system error (full disk, read-only file system, permission, I/O
  error) becomes an OutputError naming the output; temporaries are removed.

HDF5 files are written by the HDF5 library through `_GuardedFile`, a Python file object
that never lets an operating-system error reach the library: measured here (h5py 3.16,
HDF5 2.0), an ENOSPC inside HDF5's own writes makes it fail while releasing its cached
objects and the process died with a segmentation fault (make-obs and featurize on a
20 kB tmpfs: exit 139 and ~20,000 lines of HDF5 diagnostics; featurize on a 400 kB
tmpfs: exit 139, 16,335 lines, its temporary left behind). The guard records the
first error, keeps HDF5's later metadata writes in memory (HDF5 may read them back) and
drops bulk data; the error is raised as one line when the file is closed, or earlier
by `check()`.
"""
import contextlib
import errno
import io
import os
import re
import shutil
import signal
import stat
import sys
import tempfile

from ..errors import InputError

STREAM = "-"
FREE_SPACE_MIN = 64 * 1024      # refuse, before any work, an output on a fuller file system


class OutputError(InputError):
    """An output cannot be written: names the file and the operating system's reason."""


def os_reason(e):
    """'No space left on device (ENOSPC)' from an OSError."""
    code = errno.errorcode.get(e.errno or 0)
    text = e.strerror or str(e)
    return f"{text} ({code})" if code else text


# --- what a path is ---------------------------------------------------------------

class Target:
    """An output path resolved: `mode` is "stream" ('-'), "replace" (a regular file or a
    new name: temp-then-rename at `real`) or "direct" (a device or pipe: written in place)."""

    def __init__(self, path):
        self.path = os.fspath(path)
        if self.path == STREAM:
            self.mode, self.real = "stream", None
            return
        # symbolic links (also dangling ones) resolved: the link survives, its target is written
        self.real = os.path.realpath(self.path)
        try:
            st = os.stat(self.path)      # follows links, also /dev/stdout -> pipe:[N]
        except FileNotFoundError:
            st = None
        except OSError as e:
            raise OutputError(f"cannot write: {os_reason(e)}", self.path) from None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise OutputError("output is a directory", self.path)
        regular = st is None or (stat.S_ISREG(st.st_mode) and not _via_fd(self.path))
        self.mode = "replace" if regular else "direct"
        if self.mode == "direct":
            self.real = self.path        # opened through its name: /proc links have no real path
        self.dir = os.path.dirname(self.real)
        if self.mode == "replace" and not os.path.isdir(self.dir):
            raise OutputError("output directory does not exist", self.path)

    def key(self):
        """What identifies the file written (None for streams and devices, which can be shared)."""
        return self.real if self.mode == "replace" else None


_FD_LINK = re.compile(r"^/(?:proc/(?:self|thread-self|\d+)|dev)/fd/\d+$")


def _via_fd(path):
    """Is `path` (or a link on the way) an open descriptor's alias: /dev/stdout,
    /dev/fd/N, /proc/self/fd/N? Then it names the file the shell opened (`> log`,
    `>> log`): it is appended to in place, never replaced."""
    p = os.path.abspath(path)
    for _ in range(40):
        if _FD_LINK.match(p):
            return True
        if not os.path.islink(p):
            return False
        p = os.path.normpath(os.path.join(os.path.dirname(p), os.readlink(p)))
    return False


def _identity(path):
    """(realpath, (dev, inode) or None) of an input path."""
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
        return real, (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None
    except OSError:
        return real, None


def _flatten(paths):
    for p in paths:
        if p is None:
            continue
        if isinstance(p, (list, tuple, set)):
            yield from _flatten(p)
        else:
            from .specifiers import spec_files

            yield from spec_files(p)     # `ark,scp:A,S` is two files, `ark:-` none


def check_outputs(*outputs, inputs=()):
    """Before any work: every output's directory exists and can be written, its file
    system has room, no output is an input or another output (by resolved path and by
    inode: links and `./x` vs `x` are caught). `None` entries are skipped."""
    from .specifiers import writes_stdout

    to_stdout = [p for p in outputs if p is not None and not isinstance(p, (list, tuple, set))
                 and writes_stdout(p)]
    if len(to_stdout) > 1:
        raise OutputError("two outputs to standard output would be mixed: give one a file",
                          " and ".join(map(str, to_stdout)))
    seen = {}
    in_ids = {}
    for p in _flatten(inputs):
        if p != STREAM:
            real, ino = _identity(p)
            in_ids[real] = p
            if ino is not None:
                in_ids[ino] = p
    for p in _flatten(outputs):
        t = Target(p)
        key = t.key()
        if key is None:
            if t.mode == "direct" and not os.access(t.real, os.W_OK):
                raise OutputError("cannot write: permission denied (EACCES)", p)
            continue
        _, ino = _identity(t.real)
        for k in (key, ino):
            if k is not None and k in in_ids:
                raise OutputError(f"output is also an input ({in_ids[k]}): writing it would "
                                  "destroy it", p)
            if k is not None and k in seen:
                raise OutputError(f"given twice as an output (also as {seen[k]})", p)
        seen[key] = p
        if ino is not None:
            seen[ino] = p
        _probe(t)


def _probe(t):
    """Create and remove a temporary beside the target: read-only file systems,
    permissions and a full inode table show up now, not after hours of training."""
    try:
        fd, tmp = _new_temp(t.dir, os.path.basename(t.real))
        os.close(fd)
        _remove(tmp)
        sv = os.statvfs(t.dir)
    except OSError as e:
        raise OutputError(f"cannot write in its directory: {os_reason(e)}", t.path) from None
    if sv.f_bavail * sv.f_frsize < FREE_SPACE_MIN:
        raise OutputError(f"cannot write: {os.strerror(errno.ENOSPC)} (ENOSPC): "
                          f"{sv.f_bavail * sv.f_frsize} bytes free", t.path)


# --- temporaries, cleaned up on errors and signals -----------------------------------

_temps = {}   # temp path -> pid that made it (a forked worker must not remove its parent's)


_BLOCKED = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


def _new_temp(directory, name):
    # a signal between creating the file and registering it would leave it behind (a
    # recipe killed just then): the signals wait until it is registered
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _BLOCKED)
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + name + ".", suffix=".tmp")
        _temps[tmp] = os.getpid()
    except OSError as e:
        raise OSError(e.errno, e.strerror) from None   # reported against the target
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
    return fd, tmp


def _remove(tmp):
    with contextlib.suppress(OSError):
        os.unlink(tmp)
    _temps.pop(tmp, None)      # after the unlink: a signal in between still finds it


def remove_temporaries():
    """Remove every temporary this process made (signal handlers call this)."""
    pid = os.getpid()
    for tmp, owner in list(_temps.items()):
        if owner == pid:
            _remove(tmp)


# --- transactions -----------------------------------------------------------------------

class Transaction:
    """Outputs written so far, each complete in its temporary; `commit` renames them all."""

    def __init__(self):
        self.staged = []     # (tmp, Target)
        self.undo = []       # what else abort() takes back (a directory an output made)

    def stage(self, tmp, target):
        self.staged.append((tmp, target))

    def commit(self):
        # signals wait until the renames are done: all outputs appear, or none
        old = signal.pthread_sigmask(signal.SIG_BLOCK, _BLOCKED)
        try:
            for i, (tmp, t) in enumerate(self.staged):
                try:
                    if t.mode == "direct":       # HDF5 for a device or pipe: copy it in
                        with open(tmp, "rb") as src, open(_open_direct(t.real), "wb") as dst:
                            shutil.copyfileobj(src, dst, 1 << 20)
                        _remove(tmp)
                    else:
                        os.replace(tmp, t.real)
                        _temps.pop(tmp, None)
                except OSError as e:
                    self.staged = self.staged[i:]
                    self.abort()
                    raise OutputError(f"cannot write: {os_reason(e)}", t.path) from None
            self.staged, self.undo = [], []
            _state["committed"] = True
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)

    def abort(self):
        for tmp, _ in self.staged:
            _remove(tmp)
        self.staged = []
        for undo in reversed(self.undo):
            with contextlib.suppress(OSError):
                undo()
        self.undo = []


def on_abort(undo):
    """Call `undo()` if the current command's outputs are not written (an output's new
    directory removed); nothing outside a transaction."""
    if _active:
        _active[0].undo.append(undo)


_active = []
_state = {"committed": False}   # a signal after the last commit finds the outputs complete


@contextlib.contextmanager
def transaction():
    """Every output written inside appears when the block ends without an error; an
    error (or a signal) leaves none. Nested blocks join the outermost."""
    if _active:
        yield _active[0]
        return
    tx = Transaction()
    _active.append(tx)
    _state["committed"] = False
    try:
        yield tx
    except BaseException:
        tx.abort()
        raise
    else:
        tx.commit()
    finally:
        _active.clear()


# --- writing -------------------------------------------------------------------------------

def _open_direct(path):
    """A descriptor writing into a device, pipe or descriptor alias; appending, so that
    `>> log` (reached as /dev/stdout) keeps what the file held."""
    return os.open(path, os.O_WRONLY | os.O_APPEND)


def _umask():
    u = os.umask(0)
    os.umask(u)
    return u


@contextlib.contextmanager
def _staged_file(path, binary_name=None):
    """Yield (fd, tmp, Target) of a fresh temporary for `path` ("replace" targets, or any
    target for HDF5, which cannot be written into a pipe); stage it when the body ends."""
    t = Target(path)
    directory = t.dir if t.mode == "replace" else tempfile.gettempdir()
    try:
        fd, tmp = _new_temp(directory, os.path.basename(t.real))
    except OSError as e:
        raise OutputError(f"cannot write: {os_reason(e)}", t.path) from None
    try:
        with transaction() as tx:
            yield fd, tmp, t
            try:
                os.chmod(tmp, 0o666 & ~_umask())   # mkstemp makes 0600: normal permissions
            except OSError as e:
                raise OutputError(f"cannot write: {os_reason(e)}", t.path) from None
            tx.stage(tmp, t)
    except BaseException:
        _remove(tmp)
        raise


class _RawSink(io.RawIOBase):
    """A file descriptor whose write errors are OutputErrors naming the output."""

    def __init__(self, fd, path):
        self.fd, self.path = fd, path

    def writable(self):
        return True

    def write(self, b):
        try:
            return os.write(self.fd, b)
        except OSError as e:
            raise OutputError(f"cannot write: {os_reason(e)}", self.path) from None

    def finish(self):
        """Flush to disk: some file systems (NFS, delayed allocation) report a full disk
        only now."""
        try:
            os.fsync(self.fd)
        except OSError as e:
            raise OutputError(f"cannot write: {os_reason(e)}", self.path) from None

    def close(self):
        if not self.closed:
            fd, self.fd = self.fd, -1
            super().close()
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError as e:
                    raise OutputError(f"cannot write: {os_reason(e)}", self.path) from None


@contextlib.contextmanager
def open_output(path, binary=False):
    """A stream to `path`: stdout for '-', written in place for devices and pipes, else a
    temporary renamed when the command's transaction commits. Text is UTF-8."""
    t = Target(path)
    if t.mode == "stream":
        out = sys.stdout.buffer if binary else sys.stdout
        yield out
        out.flush()
        return
    if t.mode == "direct":
        try:
            fd = _open_direct(t.real)
        except OSError as e:
            raise OutputError(f"cannot write: {os_reason(e)}", t.path) from None
        raw = _RawSink(fd, t.path)
        with _wrapped(raw, binary) as f:
            yield f
        return
    with _staged_file(path) as (fd, tmp, t):
        raw = _RawSink(fd, t.path)
        with _wrapped(raw, binary, sync=True) as f:
            yield f


@contextlib.contextmanager
def _wrapped(raw, binary, sync=False):
    buf = io.BufferedWriter(raw, 1 << 16)
    f = buf if binary else io.TextIOWrapper(buf, encoding="utf-8", newline="\n")
    try:
        yield f
        f.flush()
        if sync:
            raw.finish()
    finally:
        with contextlib.suppress(OutputError, ValueError):
            f.close()             # on an error path: the first error is the one reported
        if not raw.closed:
            with contextlib.suppress(OutputError):
                raw.close()


def write_hdf5(path):
    """Context manager yielding an h5py.File (mode "w") for `path`, written through
    `_GuardedFile` into a temporary; staged in the command's transaction when complete.
    `-` is refused: HDF5 cannot be streamed."""
    if os.fspath(path) == STREAM:
        raise OutputError("HDF5 files cannot be written to standard output ('-'): HDF5 "
                          "needs to seek; give a file name", path)
    return _hdf5(path)


@contextlib.contextmanager
def _hdf5(path):
    import h5py

    with _staged_file(path) as (fd, tmp, t):
        guard = _GuardedFile(fd, t.path)
        try:
            f = h5py.File(guard, "w")
            f.guard = guard   # lets long writers (ArchiveWriter) stop at the first error
            try:
                yield f
            finally:
                with contextlib.suppress(Exception):
                    f.close()
            guard.finish()
        finally:
            guard.close()


class _GuardedFile(io.RawIOBase):
    """A read/write file object for h5py's "fileobj" driver that never raises: the first
    OS error is recorded (`error`), and HDF5 carries on against an in-memory overlay
    (see the module docstring for why)."""

    OVERLAY_MAX = 1 << 16   # writes up to this size (HDF5 metadata) are kept after an error

    def __init__(self, fd, path):
        self.fd, self.path = fd, path
        self.pos = self.size = 0
        self.error = None
        self.overlay = {}

    def readable(self):
        return True

    def writable(self):
        return True

    def seekable(self):
        return True

    def seek(self, pos, whence=0):
        self.pos = pos if whence == 0 else self.pos + pos if whence == 1 else self.size + pos
        return self.pos

    def tell(self):
        return self.pos

    def _fail(self, e):
        if self.error is None:
            self.error = e

    def write(self, b):
        b = memoryview(b).cast("B")
        n = len(b)
        if self.error is None:
            try:
                done = 0
                while done < n:
                    done += os.pwrite(self.fd, b[done:], self.pos + done)
            except OSError as e:
                self._fail(e)
        if self.error is not None and n <= self.OVERLAY_MAX:
            self.overlay[self.pos] = bytes(b)
        self.pos += n
        self.size = max(self.size, self.pos)
        return n

    def readinto(self, buf):
        mv = memoryview(buf).cast("B")
        n = len(mv)
        try:
            data = os.pread(self.fd, n, self.pos)
        except OSError as e:
            self._fail(e)
            data = b""
        mv[:len(data)] = data
        mv[len(data):] = bytes(n - len(data))
        for off, ob in self.overlay.items():
            lo, hi = max(off, self.pos), min(off + len(ob), self.pos + n)
            if lo < hi:
                mv[lo - self.pos:hi - self.pos] = ob[lo - off:hi - off]
        self.pos += n
        return n

    def truncate(self, size=None):
        size = self.pos if size is None else size
        if self.error is None:
            try:
                os.ftruncate(self.fd, size)
            except OSError as e:
                self._fail(e)
        self.size = size
        return size

    def flush(self):
        pass

    def check(self):
        """Raise the recorded error now (an OutputError naming the file)."""
        if self.error is not None:
            raise OutputError(f"cannot write: {os_reason(self.error)}", self.path) from None

    def finish(self):
        if self.error is None:
            try:
                os.fsync(self.fd)
            except OSError as e:
                self._fail(e)
        self.check()

    def close(self):
        if not self.closed:
            super().close()
            with contextlib.suppress(OSError):
                os.close(self.fd)


# --- signals --------------------------------------------------------------------------------

SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")


def handle_signals(prog):
    """SIGINT, SIGTERM (scancel, timeout) and SIGHUP: remove this process's temporaries,
    say so in one line and exit with 128 + the signal number. Nothing is unwound through
    the HDF5 library (an exception raised inside its callbacks could crash it)."""

    owner = os.getpid()

    def handler(signum, frame):
        if os.getpid() != owner:
            # a forked worker (svd-spectral --workers): its pool stops it with SIGTERM
            # when the work is done; it has no outputs of its own and must stay silent
            os._exit(128 + signum)
        remove_temporaries()
        name = signal.Signals(signum).name
        what = ("outputs were complete before it" if _state["committed"] and not _active
                else "no output written (temporary files removed)")
        with contextlib.suppress(OSError):
            os.write(2, f"{prog}: error: killed by {name}; {what}\n".encode())
        os._exit(128 + signum)

    for name in SIGNALS:
        with contextlib.suppress(ValueError, OSError):   # not the main thread: leave them
            signal.signal(getattr(signal, name), handler)
