"""Fault injection through every subcommand that writes: a full disk (injected ENOSPC,
and a real file-size limit), I/O and permission errors, a read-only directory, device /
pipe / symlink targets, signals mid-write, an output that is an input, bad numeric
options and damaged HDF5 inputs.

Every failure must be: the documented exit code, exactly one error line on stderr, no
traceback, and exactly the files that were there before (no output, no temporary, old
versions untouched). Commands run in-process (rhmmtk.cli.main) unless a real process is
the point (signals, resource limits).
"""
import contextlib
import errno
import hashlib
import io
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from synthetic import SEED, make_corpus, read_table

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


# --- running commands ----------------------------------------------------------------

class Result:
    def __init__(self, code, out, err):
        self.code, self.out, self.err = code, out, err

    def __repr__(self):
        return f"exit {self.code}\nstdout: {self.out[:300]}\nstderr: {self.err[:2000]}"


def invoke(*args):
    """`rhmmtk ARGS -q` in this process; returns Result(exit code, stdout, stderr)."""
    from rhmmtk.cli import main

    saved = {s: signal.getsignal(s) for s in SIGNALS}
    out, err = io.StringIO(), io.StringIO()
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main([str(a) for a in args] + ["-q"])
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    finally:
        for s, h in saved.items():          # main() installs its handlers: give pytest back its own
            signal.signal(s, h)
    return Result(code, out.getvalue(), err.getvalue())


def ok(*args):
    r = invoke(*args)
    assert r.code == 0, r
    return r


def listing(directory):
    """name -> sha1 of every file under `directory` (hidden ones too), links as links."""
    out = {}
    for root, dirs, names in os.walk(directory):
        for n in names + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            p = os.path.join(root, n)
            rel = os.path.relpath(p, directory)
            if os.path.islink(p):
                out[rel] = "->" + os.readlink(p)
            elif stat.S_ISREG(os.lstat(p).st_mode):
                out[rel] = hashlib.sha1(open(p, "rb").read()).hexdigest()
            else:
                out[rel] = "special"
    return out


def one_error(r, code=1, mention=()):
    """The failure contract: exit code, one error line, no traceback; returns the line."""
    assert r.code == code, r
    assert "Traceback" not in r.err, r
    if code == 2:                         # click usage errors: usage lines + one 'Error:' line
        lines = [l for l in r.err.splitlines() if "error" in l.lower()]
    else:
        lines = r.err.strip().splitlines()
    assert len(lines) == 1, r
    for m in mention:
        assert str(m) in lines[0], f"{m!r} not in {lines[0]!r}"
    return lines[0]


# --- inputs, made once ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def base(tmp_path_factory):
    import soundfile as sf

    print(f"[seed] test_faults base: {SEED}")
    d = tmp_path_factory.mktemp("faults_in")
    b = dict(make_corpus(d, SEED, sizes=(120, 20, 20)))
    b["d"] = d
    for k, v in dict(syms="obs.syms", obs="train.obs.h5", test_obs="test.obs.h5",
                     feats="train.feats.h5", spectral="spectral.h5", em="em.h5",
                     omega="omega.acc", proj="proj.h5", moments="moments.acc",
                     counts="counts.acc", em0="em0.h5", estep="estep.acc", scp="wav.scp",
                     mfcc="mfcc.h5", codebook="codebook.h5").items():
        b[k] = d / v
    ok("make-obs", "--write-symbols", b["syms"], b["train_txt"], b["obs"])
    ok("make-obs", "--symbols", b["syms"], b["test_txt"], b["test_obs"])
    ok("featurize", "--templates", b["templates"], b["obs"], b["train_ali"], b["feats"])
    ok("train-spectral", "-m", "2", b["feats"], b["spectral"])
    ok("train-em", "-m", "2", "--iters", "1", b["obs"], b["train_ali"], b["em"])
    ok("acc-spectral", b["feats"], b["omega"])
    ok("svd-spectral", "-m", "2", b["omega"], b["proj"])
    ok("acc-spectral", "--projections", b["proj"], b["feats"], b["moments"])
    ok("acc-em", "--init", b["obs"], b["train_ali"], b["counts"])
    ok("init-em", "-m", "2", b["counts"], b["em0"])
    ok("acc-em", "--model", b["em0"], b["obs"], b["train_ali"], b["estep"])
    rng = np.random.default_rng(SEED)
    lines = []
    for i in range(2):
        x = (3000 * rng.standard_normal(int(0.3 * 16000))).astype(np.int16)
        sf.write(str(d / f"u{i}.wav"), x, 16000, format="WAV", subtype="PCM_16")
        lines.append(f"u{i} {d / f'u{i}.wav'}\n")
    b["scp"].write_text("".join(lines))
    ok("feats", b["scp"], b["mfcc"])
    ok("quantize", "learn", "--codes", "4", b["mfcc"], b["codebook"])
    return b


def writers(b, o):
    """Every subcommand that writes: name -> (argv, outputs), outputs in directory `o`."""
    return {
        "feats": (["feats", b["scp"], o / "f.h5"], [o / "f.h5"]),
        "make-obs": (["make-obs", "--write-symbols", o / "o.syms", b["train_txt"], o / "o.h5"],
                     [o / "o.h5", o / "o.syms"]),
        "featurize": (["featurize", "--templates", b["templates"], b["obs"], b["train_ali"],
                       o / "x.h5"], [o / "x.h5"]),
        "train-spectral": (["train-spectral", "-m", "2", b["feats"], o / "m.h5"], [o / "m.h5"]),
        "train-em": (["train-em", "-m", "2", "--iters", "1", "--history", o / "h.tsv", b["obs"],
                      b["train_ali"], o / "m.h5"], [o / "m.h5", o / "h.tsv"]),
        "train-unigram": (["train-unigram", b["obs"], b["train_ali"], o / "m.h5"], [o / "m.h5"]),
        "acc-spectral": (["acc-spectral", b["feats"], o / "s.acc"], [o / "s.acc"]),
        "acc-spectral-2": (["acc-spectral", "--projections", b["proj"], b["feats"], o / "s.acc"],
                           [o / "s.acc"]),
        "svd-spectral": (["svd-spectral", "-m", "2", b["omega"], o / "p.h5"], [o / "p.h5"]),
        "est-spectral": (["est-spectral", b["proj"], b["moments"], o / "m.h5"], [o / "m.h5"]),
        "acc-em": (["acc-em", "--init", b["obs"], b["train_ali"], o / "c.acc"], [o / "c.acc"]),
        "init-em": (["init-em", "-m", "2", "--history", o / "h.tsv", b["counts"], o / "m.h5"],
                    [o / "m.h5", o / "h.tsv"]),
        "est-em": (["est-em", "--history", o / "h.tsv", b["em0"], b["estep"], o / "m.h5"],
                   [o / "m.h5", o / "h.tsv"]),
        "merge-archives": (["merge-archives", o / "a.h5", b["obs"], b["test_obs"]], [o / "a.h5"]),
        "decode": (["decode", "--posteriors", o / "post.h5", b["spectral"], b["test_obs"],
                    o / "hyp"], [o / "hyp", o / "post.h5"]),
        "quantize-learn": (["quantize", "learn", "--codes", "4", b["mfcc"], o / "cb.h5"],
                           [o / "cb.h5"]),
        "quantize-apply": (["quantize", "apply", b["codebook"], b["mfcc"], o / "q.h5"],
                           [o / "q.h5"]),
        "info-plot": (["info", "--plot", o / "sv.png", b["spectral"]], [o / "sv.png"]),
    }


NAMES = list(writers({k: None for k in ("scp", "train_txt", "templates", "obs", "train_ali",
                                         "feats", "proj", "omega", "moments", "counts", "em0",
                                         "estep", "test_obs", "spectral", "mfcc", "codebook")},
                     __import__("pathlib").Path("o")))


def command(base, tmp_path, name, sub="out"):
    o = tmp_path / sub
    o.mkdir(exist_ok=True)
    argv, outs = writers(base, o)[name]
    return o, argv, outs


# --- injected operating-system errors --------------------------------------------------------

class Disk:
    """Counts the bytes rhmmtk's writer hands to the OS (os.write, os.pwrite); with a
    budget, the write that would pass it fails with `err` instead."""

    def __init__(self, monkeypatch, budget=None, err=errno.ENOSPC):
        self.written, self.budget, self.err = 0, budget, err
        real_write, real_pwrite = os.write, os.pwrite

        def charge(n):
            if self.budget is not None and self.written + n > self.budget:
                raise OSError(self.err, os.strerror(self.err))
            self.written += n

        def write(fd, data):
            if fd > 2:
                charge(len(data))
            return real_write(fd, data)

        def pwrite(fd, data, offset):
            charge(len(data))
            return real_pwrite(fd, data, offset)

        monkeypatch.setattr(os, "write", write)
        monkeypatch.setattr(os, "pwrite", pwrite)


def bytes_written(monkeypatch, argv):
    with monkeypatch.context() as m:
        disk = Disk(m)
        ok(*argv)
    return disk.written


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_full_disk(base, tmp_path, monkeypatch, name, where):
    """ENOSPC at the first, a middle or the very last write: one line naming the output,
    no output (old versions kept), no temporary. 'last' fails in the command's last
    output when the others are complete: they must not appear either."""
    o, argv, outs = command(base, tmp_path, name, "cln")   # as long a name as "out": the
    total = bytes_written(monkeypatch, argv)               # provenance records the paths
    shutil.rmtree(o)
    o, argv, outs = command(base, tmp_path, name)
    for p in outs:                               # old versions must survive a failed run
        p.write_text("old version\n")
    before = listing(o)
    budget = {"first": 0, "middle": total // 2, "last": total - 1}[where]
    Disk(monkeypatch, budget)
    line = one_error(invoke(*argv), mention=("No space left on device",))
    assert any(p.name in line for p in outs), line
    assert listing(o) == before


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("err", [errno.EIO, errno.EFBIG, errno.EDQUOT])
def test_os_errors_mid_write(base, tmp_path, monkeypatch, name, err):
    o, argv, outs = command(base, tmp_path, name, "cln")
    total = bytes_written(monkeypatch, argv)
    o, argv, outs = command(base, tmp_path, name)
    Disk(monkeypatch, total // 3, err)
    line = one_error(invoke(*argv), mention=(os.strerror(err),))
    assert errno.errorcode[err] in line
    assert listing(o) == {}


def test_fsync_failure(base, tmp_path, monkeypatch):
    """Some file systems (NFS, delayed allocation) report a full disk only at fsync."""
    o, argv, outs = command(base, tmp_path, "train-em")

    def fsync(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", fsync)
    one_error(invoke(*argv), mention=("No space left on device",))
    assert listing(o) == {}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("err", [errno.EROFS, errno.EACCES])
def test_unwritable_directory_refused_before_work(base, tmp_path, monkeypatch, name, err):
    """Read-only file system / permission denied (injected: tests run as root, whom
    chmod does not stop): refused before any work, naming the output."""
    import tempfile

    o, argv, outs = command(base, tmp_path, name)
    real = tempfile.mkstemp
    started = []

    def mkstemp(*a, dir=None, **kw):
        if dir is not None and os.path.realpath(dir) == os.path.realpath(o):
            raise OSError(err, os.strerror(err))
        return real(*a, dir=dir, **kw)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    import rhmmtk.models.rhmm.operators as operators

    monkeypatch.setattr(operators.Operators, "check", lambda self: started.append(1))
    one_error(invoke(*argv), mention=(os.strerror(err), outs[0].name))
    assert listing(o) == {}
    assert not started, "work started before the output was found unwritable"


@pytest.fixture
def readonly_dir(tmp_path):
    """A real read-only file system (a tmpfs mounted ro), where mounting is possible."""
    d = tmp_path / "ro"
    d.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(d)],
                       capture_output=True)
    if p.returncode != 0:
        pytest.skip("cannot mount a read-only tmpfs here (not root, or no mount privilege)")
    yield d
    subprocess.run(["umount", str(d)], check=False)


@pytest.mark.parametrize("name", ["make-obs", "train-em", "decode", "info-plot"])
def test_read_only_file_system(base, readonly_dir, name):
    argv, outs = writers(base, readonly_dir)[name]
    one_error(invoke(*argv), mention=("Read-only file system", "EROFS"))
    assert listing(readonly_dir) == {}


def test_file_size_limit_in_a_real_process(base, tmp_path):
    """A real (not injected) write failure: RLIMIT_FSIZE with SIGXFSZ ignored makes the
    kernel fail the write with EFBIG in the middle of HDF5's output."""
    import resource

    o, argv, outs = command(base, tmp_path, "featurize")
    size = os.path.getsize(base["feats"])

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size // 2, size // 2))

    p = subprocess.run([sys.executable, "-m", "rhmmtk", *map(str, argv), "-q"], capture_output=True,
                       text=True, preexec_fn=limit)
    one_error(Result(p.returncode, p.stdout, p.stderr), mention=("File too large", "x.h5"))
    assert listing(o) == {}


def test_directory_missing_and_output_a_directory(base, tmp_path):
    one_error(invoke("train-unigram", base["obs"], base["train_ali"], tmp_path / "no" / "m.h5"),
              mention=("output directory does not exist",))
    (tmp_path / "m.h5").mkdir()
    r = invoke("train-unigram", base["obs"], base["train_ali"], tmp_path / "m.h5")
    assert r.code in (1, 2) and "Traceback" not in r.err and "directory" in r.err


# --- special targets ------------------------------------------------------------------------

@pytest.fixture
def null_device(tmp_path):
    """A private character device equal to /dev/null (so a bug cannot replace the
    machine's /dev/null)."""
    p = tmp_path / "null"
    try:
        os.mknod(p, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        with open(p, "w") as f:
            f.write("x")
    except OSError as e:
        pytest.skip(f"cannot make a device node here: {e}")
    return p


@pytest.mark.parametrize("name", NAMES)
def test_character_device_target_survives(base, tmp_path, null_device, name):
    o, argv, outs = command(base, tmp_path, name)
    argv = [null_device if a in outs else a for a in argv]
    ok(*argv)
    assert stat.S_ISCHR(os.lstat(null_device).st_mode)
    assert listing(o) == {} and sorted(os.listdir(tmp_path)) == ["null", "out"]


def test_dev_null_itself(base, tmp_path):
    """The case of the report: `decode model obs /dev/null` as root."""
    ok("decode", base["spectral"], base["test_obs"], "/dev/null")
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)


@pytest.mark.parametrize("name", NAMES)
def test_symlink_target(base, tmp_path, name):
    """Outputs given as symbolic links (one dangling): the links stay links and the files
    they point to get the content, equal to a plain run's where the format allows."""
    clean, argv_c, outs_c = command(base, tmp_path, name, "clean")
    ok(*argv_c)
    o, argv, outs = command(base, tmp_path, name)
    real = tmp_path / "real"
    real.mkdir()
    for i, p in enumerate(outs):
        if i == 0:
            (real / p.name).write_text("old\n")     # an existing target ...
        os.symlink(real / p.name, p)              # ... and, for later outputs, dangling links
    ok(*argv)
    for p, pc in zip(outs, outs_c):
        assert os.path.islink(p)
        content = (real / p.name).read_bytes()
        assert content != b"old\n" and len(content) > 0
        if p.suffix not in (".h5", ".acc", ".png"):   # HDF5 records its creation time
            assert content == pc.read_bytes()
    assert sorted(os.listdir(real)) == sorted(p.name for p in outs)


def _read_fifo(path, sink):
    with open(path, "rb") as f:
        sink.append(f.read())


@pytest.mark.parametrize("name", ["decode", "make-obs", "train-em"])
def test_fifo_target(base, tmp_path, name):
    """Named pipes are written in place (text as it is made, HDF5 copied in when complete)."""
    import h5py

    clean, argv_c, outs_c = command(base, tmp_path, name, "clean")
    ok(*argv_c)
    o, argv, outs = command(base, tmp_path, name)
    got = {}
    threads = []
    for p in outs:
        os.mkfifo(p)
        got[p] = []
        t = threading.Thread(target=_read_fifo, args=(p, got[p]), daemon=True)
        t.start()
        threads.append(t)
    ok(*argv)
    for t in threads:
        t.join(10)
    for p, pc in zip(outs, outs_c):
        assert stat.S_ISFIFO(os.lstat(p).st_mode)
        data = got[p][0]
        if p.suffix == ".h5":
            with h5py.File(io.BytesIO(data), "r") as f, h5py.File(pc, "r") as g:
                assert sorted(f.keys()) == sorted(g.keys())
        else:
            assert data == pc.read_bytes()
    assert sorted(os.listdir(o)) == sorted(p.name for p in outs)


@pytest.mark.parametrize("alias", ["/dev/fd/1", "/proc/self/fd/1"])
def test_descriptor_alias_is_appended_to(base, tmp_path, alias):
    """`rhmmtk ... /dev/stdout >> log`: the shell's file is written through the open
    descriptor and appended to, not replaced (the alias /dev/stdout itself is tested
    only through /dev/fd/1 and /proc/self/fd/1, which a bug cannot replace: /proc
    holds no new files)."""
    log = tmp_path / "log"
    log.write_text("first line\n")
    with open(log, "a") as out:
        subprocess.run([sys.executable, "-m", "rhmmtk", "decode", "-q", str(base["spectral"]),
                        str(base["test_obs"]), alias], stdout=out, check=True)
        subprocess.run([sys.executable, "-m", "rhmmtk", "train-unigram", "-q", str(base["obs"]),
                        str(base["train_ali"]), alias], stdout=out, check=True)
    lines = log.read_bytes().split(b"\n")
    assert lines[0] == b"first line"
    assert len(lines) > len(read_table(base["test_txt"])) + 1
    assert b"\x89HDF" in log.read_bytes()           # the model followed, in the same file
    assert sorted(os.listdir(tmp_path)) == ["log"]


def test_stdout_streams_text_and_refuses_hdf5(base, tmp_path):
    r = ok("decode", base["spectral"], base["test_obs"], "-")
    assert len(r.out.splitlines()) == len(read_table(base["test_txt"]))
    for argv in (["train-unigram", base["obs"], base["train_ali"], "-"],
                 ["decode", base["spectral"], "-", tmp_path / "hyp"],
                 ["make-obs", "--symbols", base["syms"], base["test_txt"], "-"]):
        line = one_error(invoke(*argv), code=2)
        assert "cannot be streamed" in line
    assert listing(tmp_path) == {} and not os.path.exists("-")


# --- outputs that are inputs ------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("how", ["same", "symlink", "hardlink"])
def test_output_equal_to_an_input_is_refused(base, tmp_path, name, how):
    o, argv, outs = command(base, tmp_path, name)
    victim = next(a for a in argv[1:] if isinstance(a, os.PathLike) and os.path.isfile(a)
                  and a.parent == base["d"])
    copy = tmp_path / "in" / victim.name
    copy.parent.mkdir()
    shutil.copy(victim, copy)
    argv = [copy if a == victim else a for a in argv]
    target = {"same": copy, "symlink": o / "link", "hardlink": o / "hard"}[how]
    if how == "symlink":
        os.symlink(copy, target)
    elif how == "hardlink":
        os.link(copy, target)
    argv = [target if a == outs[0] else a for a in argv]
    before = listing(tmp_path)
    one_error(invoke(*argv), mention=("output is also an input",))
    assert listing(tmp_path) == before


@pytest.mark.parametrize("name", ["make-obs", "train-em", "init-em", "est-em", "decode"])
def test_two_outputs_equal_are_refused(base, tmp_path, name):
    o, argv, outs = command(base, tmp_path, name)
    argv = [outs[0] if a == outs[1] else a for a in argv]
    one_error(invoke(*argv), mention=("given twice as an output",))
    assert listing(o) == {}


# --- option values --------------------------------------------------------------------------

BAD_OPTIONS = [
    ("train-em", "--floor", "nan"), ("train-em", "--floor", "-1"), ("train-em", "--noise", "inf"),
    ("train-em", "--seed", "-1"), ("init-em", "--floor", "nan"), ("est-em", "--floor", "inf"),
    ("train-spectral", "--smooth", "nan"), ("train-spectral", "--smooth", "-0.5"),
    ("train-spectral", "--max-cond", "-1"), ("train-spectral", "--max-cond", "nan"),
    ("train-spectral", "--max-cond", "inf"), ("train-spectral", "--rank-tol", "1"),
    ("train-spectral", "--kappa", "-inf"), ("train-spectral", "--emission-floor", "NaN"),
    ("est-spectral", "--smooth", "nan"), ("est-spectral", "--max-cond", "0.5"),
    ("est-spectral", "--ridge", "-0.1"), ("est-spectral", "--ridge", "1.5"),
    ("train-spectral", "--ridge", "nan"),
    ("svd-spectral", "--kappa", "nan"), ("make-obs", "--context", "-1"),
    ("make-obs", "--min-count", "-1"), ("decode", "--beam", "nan"),
    ("decode", "--beam", "1.5"), ("decode", "--beam", "-0.1"), ("decode", "--batch-mb", "0"),
    ("feats", "--frame-shift", "0"), ("feats", "--preemph", "1"), ("feats", "--nfft", "-512"),
    ("quantize-learn", "--codes", "0"), ("quantize-learn", "--seed", "-3"),
]


@pytest.mark.parametrize("name,option,value", BAD_OPTIONS)
def test_bad_option_values_are_refused(base, tmp_path, name, option, value):
    o, argv, outs = command(base, tmp_path, name)
    argv = argv + [option, value]      # last: it overrides the option if argv has it
    one_error(invoke(*argv), code=2, mention=(option,))
    assert listing(o) == {}


def test_beam_one_keeps_the_best_label(base, tmp_path):
    """--beam 1 (inside the documented range) used to prune every label: every position
    decoded as '*'. Now the best label is always extended."""
    labels = {s for syms in read_table(base["test_ali"]).values() for s in syms}
    for beam in ("1", "0.999999"):
        hyp = tmp_path / f"hyp{beam}"
        ok("decode", "--beam", beam, base["spectral"], base["test_obs"], hyp)
        got = read_table(hyp)
        assert set(got) == set(read_table(base["test_txt"]))
        assert {s for syms in got.values() for s in syms} <= labels


def test_keep_at_the_boundary():
    """The pruning rule itself: mass > beam * best, plus the best label (ties included),
    and nothing when every label has zero mass."""
    from rhmmtk.models.rhmm.decoder import kernels

    off = np.array([0, 1, 2, 3])
    enorm = np.ones((3, 1))              # the norms |c^a_x|_1 of the observations
    alpha = np.array([[0.5, 0.2, 0.5], [0.0, 0.0, 0.0], [1e-9, 1.0, 0.3]])
    x = np.array([0, 0, 0])
    for beam, want in [(1.0, [[1, 0, 1], [0, 0, 0], [0, 1, 0]]),
                       (0.5, [[1, 0, 1], [0, 0, 0], [0, 1, 0]]),
                       (0.25, [[1, 1, 1], [0, 0, 0], [0, 1, 1]]),
                       (0.0, [[1, 1, 1], [0, 0, 0], [1, 1, 1]])]:
        keep = np.zeros((3, 3), dtype=bool)
        kernels.keep_rows(alpha, off, enorm, x, beam, keep)
        np.testing.assert_array_equal(keep, np.array(want, bool), err_msg=str(beam))


def test_a_model_with_non_finite_values_is_never_written(base, tmp_path):
    from rhmmtk.errors import InputError
    from rhmmtk.models.rhmm.operators import Operators

    op = Operators.load(base["em"])
    op.emit[1][0, 0] = np.nan
    op.trans[next(iter(op.trans))][0, 0] = np.inf
    with pytest.raises(InputError) as e:
        op.save(tmp_path / "m.h5", {})
    msg = str(e.value)
    assert f"emission of label {op.labels.symbols[1]}" in msg and "transition" in msg
    assert os.listdir(tmp_path) == []


def test_a_model_file_with_non_finite_values_is_refused(base, tmp_path):
    import h5py

    bad = tmp_path / "nan.h5"
    shutil.copy(base["spectral"], bad)
    with h5py.File(bad, "r+") as f:
        f["init/0"][0] = np.nan
        del f["init/0"].attrs["crc32"]          # as an older writer, without checksums
    one_error(invoke("decode", bad, base["test_obs"], tmp_path / "hyp"),
              mention=("nan.h5", "non-finite", "init of label"))
    assert sorted(os.listdir(tmp_path)) == ["nan.h5"]


@pytest.mark.parametrize("key,dataset", [("spectral", "emit/1"), ("em", "trans/0/1"),
                                         ("moments", None), ("codebook", "centroids")])
def test_changed_numbers_fail_their_checksum(base, tmp_path, key, dataset):
    """One number changed in place (the file stays valid HDF5): found by the checksum."""
    import h5py

    def damage(p):
        with h5py.File(p, "r+") as f:
            name = dataset or next(n for n in _datasets(f["data"]) if f["data"][n].size)
            ds = f[name] if dataset else f["data"][name]
            flat = ds[()].reshape(-1)
            flat[len(flat) // 2] += 1
            ds[...] = flat.reshape(ds.shape)

    r, o = damaged_run(base, tmp_path, key, damage)
    one_error(r, mention=("bad.", "checksum"))
    assert listing(o) == {}


def _datasets(group, prefix=""):
    import h5py

    for k, v in group.items():
        if isinstance(v, h5py.Dataset):
            yield prefix + k
        else:
            yield from _datasets(v, prefix + k + "/")


# --- damaged inputs -------------------------------------------------------------------------

def consumers(b, o):
    """input key -> a command reading that input (and writing into `o`)."""
    return {
        "obs": ["featurize", "--templates", b["templates"], b["obs"], b["train_ali"], o / "x.h5"],
        "feats": ["train-spectral", "-m", "2", b["feats"], o / "m.h5"],
        "spectral": ["decode", b["spectral"], b["test_obs"], o / "hyp"],
        "em": ["decode", b["em"], b["test_obs"], o / "hyp"],
        "omega": ["svd-spectral", "-m", "2", b["omega"], o / "p.h5"],
        "proj": ["acc-spectral", "--projections", b["proj"], b["feats"], o / "s.acc"],
        "moments": ["est-spectral", b["proj"], b["moments"], o / "m.h5"],
        "counts": ["init-em", "-m", "2", b["counts"], o / "m.h5"],
        "estep": ["est-em", b["em0"], b["estep"], o / "m.h5"],
        "codebook": ["quantize", "apply", b["codebook"], b["mfcc"], o / "q.h5"],
        "mfcc": ["quantize", "apply", b["codebook"], b["mfcc"], o / "q.h5"],
        "info": ["info", b["spectral"]],
    }


DAMAGED = ["obs", "feats", "spectral", "em", "omega", "proj", "moments", "counts", "estep",
           "codebook", "mfcc"]


def damaged_run(base, tmp_path, key, damage):
    src = base[key]
    bad = tmp_path / ("bad" + src.suffix)
    shutil.copy(src, bad)
    damage(bad)
    o = tmp_path / "out"
    o.mkdir(exist_ok=True)
    argv = [bad if a == src else a for a in consumers(base, o)[key]]
    return invoke(*argv), o


def check_damaged(r, o, allow_success=False):
    """A damaged input is a one-line error naming it; only where the damage cannot be
    seen (raw numbers overwritten, which HDF5 does not checksum) may the command succeed."""
    if r.code == 0 and allow_success:
        return
    one_error(r, mention=("bad.",))
    assert listing(o) == {}


@pytest.mark.parametrize("key", DAMAGED)
@pytest.mark.parametrize("frac", [0.0, 0.02, 0.5, 0.98])
def test_truncated_hdf5(base, tmp_path, key, frac):
    def damage(p):
        with open(p, "r+b") as f:
            f.truncate(int(os.path.getsize(p) * frac))

    r, o = damaged_run(base, tmp_path, key, damage)
    check_damaged(r, o)
    assert "corrupt" in r.err or "truncated" in r.err or "not a readable" in r.err


@pytest.mark.parametrize("key", DAMAGED)
def test_bytes_overwritten_in_the_middle(base, tmp_path, key, seed):
    """Garbage written over 64 bytes at 12 places through the file, one place per run."""
    size = os.path.getsize(base[key])
    rng = np.random.default_rng(seed)
    failures = 0
    for k, at in enumerate(np.linspace(0, size - 64, 12).astype(int)):
        junk = rng.integers(0, 256, 64, dtype=np.uint8).tobytes()

        def damage(p):
            with open(p, "r+b") as f:
                f.seek(at)
                f.write(junk)

        sub = tmp_path / f"r{k}"
        sub.mkdir()
        r, o = damaged_run(base, sub, key, damage)
        check_damaged(r, o, allow_success=True)
        failures += r.code != 0
    assert failures > 0        # the header, at least, is always noticed


def _h5_edit(edit):
    def damage(p):
        import h5py

        with h5py.File(p, "r+") as f:
            edit(f)
    return damage


WRONG_CONTENT = {
    "format attribute removed": lambda f: f.attrs.__delitem__("rhmmtk_format"),
    "format attribute of another type": lambda f: f.attrs.__setitem__("rhmmtk_format", 7),
    "symbols removed": lambda f: f.__delitem__("symbols"),
}


@pytest.mark.parametrize("key", DAMAGED)
@pytest.mark.parametrize("what", list(WRONG_CONTENT))
def test_wrong_attributes_or_datasets(base, tmp_path, key, what):
    if what == "symbols removed" and key in ("codebook", "mfcc", "moments", "estep"):
        pytest.skip("no symbol tables, or the command takes them from another input")
    r, o = damaged_run(base, tmp_path, key, _h5_edit(WRONG_CONTENT[what]))
    check_damaged(r, o)


@pytest.mark.parametrize("key,edit", [
    ("spectral", lambda f: f.__delitem__("emit/1")),
    ("spectral", lambda f: f.attrs.__setitem__("info", "{not json")),
    ("spectral", lambda f: f.attrs.__setitem__("form", "weird")),
    ("spectral", lambda f: f.create_dataset("trans/x", data=[1])),
    ("em", lambda f: (f.__delitem__("init/0"), f.create_dataset("init/0", data="text"))),
    ("moments", lambda f: f.attrs.__setitem__("meta", "[1, 2")),
    ("moments", lambda f: f.__delitem__("data")),
    ("counts", lambda f: f.attrs.__setitem__("utts", "many")),
    ("obs", lambda f: f.attrs.__setitem__("kind", "other")),
    ("obs", lambda f: f["offsets"].__setitem__(1, 10 ** 6)),
    ("obs", lambda f: f.__delitem__("offsets")),
    ("obs", lambda f: (f.__delitem__("data"), f.create_dataset("data", data=np.array([[1.5]])))),
    ("codebook", lambda f: f.__delitem__("centroids")),
])
def test_wrong_datasets(base, tmp_path, key, edit):
    r, o = damaged_run(base, tmp_path, key, _h5_edit(edit))
    check_damaged(r, o)


def test_info_on_damaged_files(base, tmp_path):
    for frac in (0.3, 0.9):
        bad = tmp_path / "bad.h5"
        data = base["spectral"].read_bytes()
        bad.write_bytes(data[:int(len(data) * frac)])
        one_error(invoke("info", bad), mention=("bad.h5",))


# --- text inputs -------------------------------------------------------------------------------

def test_byte_order_mark_is_skipped(base, tmp_path):
    text = base["test_txt"].read_bytes()
    bom = tmp_path / "bom.txt"
    bom.write_bytes(b"\xef\xbb\xbf" + text)
    ok("make-obs", "--symbols", base["syms"], bom, tmp_path / "a.h5")
    ok("make-obs", "--symbols", base["syms"], base["test_txt"], tmp_path / "b.h5")
    from rhmmtk.io.archive import Archive

    with Archive(tmp_path / "a.h5") as a, Archive(tmp_path / "b.h5") as b:
        assert a.keys() == b.keys()


def test_non_utf8_names_the_line(base, tmp_path):
    lines = base["test_txt"].read_bytes().splitlines(keepends=True)
    lines[4] = lines[4][:-1] + b" \xff\xfe\n"
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"".join(lines))
    one_error(invoke("make-obs", "--symbols", base["syms"], bad, tmp_path / "a.h5"),
              mention=("bad.txt", "line 5", "UTF-8"))
    assert sorted(os.listdir(tmp_path)) == ["bad.txt"]


# --- signals ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """A corpus large enough that writing its archive takes a few seconds."""
    d = tmp_path_factory.mktemp("faults_big")
    p = make_corpus(d, SEED + 1, sizes=(6000, 5, 5))
    return d, p


def _spawn(argv, **kw):
    return subprocess.Popen([sys.executable, "-m", "rhmmtk", *map(str, argv), "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def _wait_for_temp(directory, proc, timeout=60):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if any(n.endswith(".tmp") for n in os.listdir(directory)):
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.005)
    return False


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_signal_mid_write(big, tmp_path, sig):
    d, p = big
    o = tmp_path / "out"
    o.mkdir()
    (o / "o.syms").write_text("old\n")
    before = listing(o)
    proc = _spawn(["make-obs", "--context", "1", "--write-symbols", o / "o.syms", p["train_txt"],
                   o / "o.h5"])
    assert _wait_for_temp(o, proc), "the command ended before its temporary appeared"
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    name = signal.Signals(sig).name
    one_error(Result(proc.returncode, out, err), code=128 + sig, mention=(name, "no output"))
    assert listing(o) == before


RECIPE = """\
set -e
[ -f obs.h5 ] || rhmmtk make-obs -q --context 1 --write-symbols obs.syms train.txt obs.h5
[ -f feats.h5 ] || rhmmtk featurize -q --templates templates.conf obs.h5 train.ali feats.h5
[ -f model.h5 ] || rhmmtk train-em -q -m 1 --iters 0 obs.h5 train.ali model.h5
echo done
"""


def test_recipe_killed_mid_stage_resumes(big, tmp_path):
    """A recipe that skips finished steps (`[ -f out ] || ...`), killed by SIGTERM while
    featurize writes, leaves no feats.h5; run again, it redoes that step and finishes
    with the same archive as an uninterrupted run."""
    import h5py

    d, p = big
    work = tmp_path / "w"
    work.mkdir()
    for f in ("train.txt", "train.ali", "templates.conf"):
        shutil.copy(d / f, work / f)
    (work / "run.sh").write_text(RECIPE)
    env = dict(os.environ, PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    (tmp_path / "bin").mkdir()
    shim = tmp_path / "bin" / "rhmmtk"
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} -m rhmmtk \"$@\"\n")
    shim.chmod(0o755)
    proc = subprocess.Popen(["bash", "run.sh"], cwd=work, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    t0 = time.time()
    while not (work / "obs.h5").exists() or not any(n.startswith(".feats.h5")
                                                    for n in os.listdir(work)):
        assert proc.poll() is None and time.time() - t0 < 120, "recipe ended too early"
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGTERM)          # what Slurm's scancel does to the job
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert "killed by SIGTERM" in err and "Traceback" not in err
    left = sorted(os.listdir(work))
    assert "feats.h5" not in left and not any(n.endswith(".tmp") for n in left), left
    p2 = subprocess.run(["bash", "run.sh"], cwd=work, env=env, capture_output=True, text=True)
    assert p2.returncode == 0 and p2.stdout.strip() == "done", p2.stderr
    clean = tmp_path / "clean"
    clean.mkdir()
    for f in ("train.txt", "train.ali", "templates.conf", "run.sh"):
        shutil.copy(work / f, clean / f)
    subprocess.run(["bash", "run.sh"], cwd=clean, env=env, check=True, capture_output=True)
    from rhmmtk.io.archive import Archive

    with Archive(work / "feats.h5") as a, Archive(clean / "feats.h5") as b:
        assert a.keys() == b.keys()
        for k in a.keys()[::500]:
            np.testing.assert_array_equal(a[k], b[k])


# --- the writer as a library --------------------------------------------------------------------

def test_transaction_is_all_or_nothing_in_python(tmp_path):
    from rhmmtk.errors import InputError
    from rhmmtk.io.output import check_outputs, open_output, transaction, write_hdf5

    with pytest.raises(RuntimeError):
        with transaction():
            with open_output(tmp_path / "a.txt") as f:
                f.write("a\n")
            with write_hdf5(tmp_path / "b.h5") as h:
                h["x"] = [1, 2]
            assert sorted(os.listdir(tmp_path))[0].startswith(".a.txt.")   # staged, hidden
            raise RuntimeError("a later step fails")
    assert os.listdir(tmp_path) == []
    with transaction():
        with transaction():                    # nested blocks join the outer one
            with open_output(tmp_path / "a.txt") as f:
                f.write("a\n")
        assert not (tmp_path / "a.txt").exists()
    assert (tmp_path / "a.txt").read_text() == "a\n"
    with open_output(tmp_path / "c.txt") as f:   # no transaction: committed at once
        f.write("c\n")
    assert (tmp_path / "c.txt").read_text() == "c\n"
    for open_ in (open_output, write_hdf5):     # an error while an output is written
        with pytest.raises(RuntimeError):
            with open_(tmp_path / "d"):
                raise RuntimeError("the producer fails")
    assert sorted(os.listdir(tmp_path)) == ["a.txt", "c.txt"]
    check_outputs(tmp_path / "e.txt")           # the probe's temporary is removed too
    assert sorted(os.listdir(tmp_path)) == ["a.txt", "c.txt"]
    with pytest.raises(InputError, match="cannot be written to standard output"):
        write_hdf5("-").__enter__()


def _fill(out, fmt):
    """A text (~90 kB) or HDF5 (800 kB) output: more than one buffer of each."""
    from rhmmtk.io.output import open_output, write_hdf5

    if fmt == "text":
        with open_output(out) as f:
            for i in range(10000):
                f.write(f"line {i}\n")
    else:
        with write_hdf5(out) as h:
            h["x"] = np.arange(100000.0)


@pytest.mark.parametrize("fmt", ["text", "hdf5"])
@pytest.mark.parametrize("fault", ["write", "fsync"])
def test_write_and_fsync_errors_in_python(tmp_path, monkeypatch, fmt, fault):
    """The writer alone (what every command's output goes through): a write failing after
    1000 bytes, or the final fsync failing (ENOSPC), raises an OutputError naming the
    output and leaves neither the output nor its temporary, never a half-written file."""
    from rhmmtk.io.output import OutputError

    out = tmp_path / f"o.{fmt}"
    if fault == "write":
        Disk(monkeypatch, 1000)
    else:
        def fsync(fd):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OutputError, match="No space left on device") as e:
        _fill(out, fmt)
    assert e.value.path == str(out)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("which", [0, 1])
def test_failed_rename_leaves_no_temporary(tmp_path, monkeypatch, which):
    """The rename onto the target fails (EIO; EXDEV or EBUSY on a bind-mounted file) at
    the first or the second of two outputs: an OutputError naming that output, no
    temporary left behind (also those of outputs not yet renamed), that output absent."""
    from rhmmtk.io.output import OutputError, transaction

    real, renamed = os.replace, []

    def replace(src, dst, *a, **kw):
        if os.path.dirname(os.fspath(dst)) == str(tmp_path):   # not numba's cache, say
            renamed.append(os.path.basename(dst))
            if len(renamed) == which + 1:
                raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real(src, dst, *a, **kw)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OutputError, match="Input/output error") as e:
        with transaction():
            _fill(tmp_path / "a.text", "text")
            _fill(tmp_path / "b.hdf5", "hdf5")
    assert len(renamed) == which + 1 and e.value.path.endswith(renamed[which]), renamed
    left = os.listdir(tmp_path)
    assert not [n for n in left if n.endswith(".tmp")] and renamed[which] not in left, left


def test_forked_worker_leaves_parent_temporaries_alone(tmp_path):
    """A forked worker stopped by a signal exits silently and removes nothing of its
    parent's (svd-spectral --workers: the pool stops its workers with SIGTERM)."""
    from rhmmtk.io.output import handle_signals, open_output

    saved = {s: signal.getsignal(s) for s in SIGNALS}
    try:
        handle_signals("rhmmtk test")
        with open_output(tmp_path / "a.txt") as f:
            f.write("a\n")
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:                       # the worker: wait to be killed
                os.close(r)
                os.write(w, b"x")
                time.sleep(30)
                os._exit(0)
            os.close(w)
            os.read(r, 1)
            os.kill(pid, signal.SIGTERM)
            _, status = os.waitpid(pid, 0)
            assert os.waitstatus_to_exitcode(status) == 128 + signal.SIGTERM
            assert len(os.listdir(tmp_path)) == 1          # the parent's temporary is still there
    finally:
        for s, h in saved.items():
            signal.signal(s, h)
    assert (tmp_path / "a.txt").read_text() == "a\n"


def test_svd_workers_print_nothing(base, tmp_path):
    p = subprocess.run([sys.executable, "-m", "rhmmtk", "svd-spectral", "-q", "--workers", "2",
                        "-m", "2", str(base["omega"]), str(tmp_path / "p.h5")],
                       capture_output=True, text=True)
    assert p.returncode == 0 and p.stderr == "", p.stderr


def test_svd_workers_exit_without_being_signalled(base, tmp_path, monkeypatch):
    """svd-spectral --workers: the pool's workers leave their task loop on their own. A
    SIGTERM from the pool's terminate() reaching a worker that has not yet run past its
    start-up after fork is dropped by the interpreter, and that worker then waits for a
    task forever (a CI run hung so on a loaded machine): no worker may need a signal."""
    import multiprocessing.process

    from rhmmtk.models.rhmm.spectral import SvdOptions
    from rhmmtk.models.rhmm.spectral_files import svd_files

    signalled, terminate = [], multiprocessing.process.BaseProcess.terminate
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "terminate",
                        lambda self: (signalled.append(self.pid), terminate(self)))
    svd_files([base["omega"]], tmp_path / "p.h5", SvdOptions(m=2, workers=2))
    assert signalled == [] and (tmp_path / "p.h5").exists()


def test_check_value_outside_click():
    """The option types serve any options layer: check_value raises InputError."""
    from rhmmtk.click_types import Count, Real, check_value
    from rhmmtk.errors import InputError

    assert check_value(Real(0), "0.5", "--smooth") == 0.5
    for t, v in ((Real(0), float("nan")), (Real(0), "inf"), (Real(0, 1, max_open=True), 1.0),
                 (Count(0), -1), (Real(1), 0.5)):
        with pytest.raises(InputError):
            check_value(t, v, "--x")
