"""The archive layout: one /data dataset with /keys and /offsets, read ahead in order.

Every read pattern (in order, reversed, random, a shard starting in the middle, one
utterance) must return exactly what was written, whether the writer kept everything in
one buffer or appended it to /data in many pieces; archives of the earlier layout (one
dataset per utterance under /utts) are still read; a damaged index is one clear error.
"""
import h5py
import numpy as np
import pytest

from rhmmtk.errors import InputError
from rhmmtk.io import archive as archive_mod
from rhmmtk.io.archive import Archive, ArchiveWriter
from rhmmtk.provenance import record


def _utterances(rng, n=300, dim=None, dtype=np.int32):
    out = {}
    for i in range(n):
        rows = int(rng.integers(1, 40))
        shape = (rows,) if dim is None else (rows, dim)
        out[f"utt{i:04d}"] = (rng.normal(size=shape) * 100).astype(dtype)
    return out


def _write(path, utts, kind="codes"):
    with ArchiveWriter(path, kind, record({})) as w:
        for k, v in utts.items():
            w.add(k, v)


@pytest.fixture(params=["one buffer", "many pieces"])
def pieces(request, monkeypatch):
    """Small write and read-ahead sizes make /data chunked, appended to ~100 times and
    read ahead in blocks that split utterances."""
    if request.param == "many pieces":
        monkeypatch.setattr(archive_mod, "WRITE_BYTES", 512)
        monkeypatch.setattr(archive_mod, "READ_BYTES", 700)
    return request.param


@pytest.mark.parametrize("dim,dtype", [(None, np.int32), (5, np.float32), (3, np.int64)])
def test_every_read_order_returns_what_was_written(tmp_path, seed, pieces, dim, dtype):
    rng = np.random.default_rng(seed)
    utts = _utterances(rng, dim=dim, dtype=dtype)
    path = tmp_path / "a.h5"
    _write(path, utts)
    with h5py.File(path, "r") as f:              # the case the fixture meant to make
        assert (f["data"].chunks is not None) == (pieces == "many pieces")
    keys = list(utts)
    orders = {"in order": keys, "reversed": keys[::-1],
              "random": list(rng.permutation(keys)), "shard": keys[170:230],
              "alternate": keys[::2] + keys[1::2], "one": [keys[123]]}
    with Archive(path) as ar:
        assert ar.keys() == keys and len(ar) == len(keys)
        assert ar.attrs["layout"] == "flat" and int(ar.attrs["num_utts"]) == len(keys)
        for name, order in orders.items():
            for k, v in ar.items(order):
                assert v.dtype == dtype and ar.shape(k) == v.shape, (name, k)
                np.testing.assert_array_equal(v, utts[k], err_msg=f"{name} {k}")
        a = ar[keys[0]]
        a[:] = 0                        # a returned array is the caller's own copy
        np.testing.assert_array_equal(ar[keys[0]], utts[keys[0]])


def test_rows_must_agree(tmp_path):
    path = tmp_path / "a.h5"
    with pytest.raises(InputError, match="utterance b: rows of shape"):
        with ArchiveWriter(path, "features", record({})) as w:
            w.add("a", np.zeros((3, 4), np.float32))
            w.add("b", np.zeros((3, 5), np.float32))
    assert not path.exists()
    with pytest.raises(InputError, match="utterance b: float64 rows"):
        with ArchiveWriter(path, "codes", record({})) as w:
            w.add("a", np.zeros(3, np.int32))
            w.add("b", np.zeros(3))
    for bad in ("", "a/b", ".x", "a b"):
        with pytest.raises(InputError, match="invalid utterance id"):
            with ArchiveWriter(path, "codes", record({})) as w:
                w.add(bad, np.zeros(3, np.int32))
    with ArchiveWriter(path, "codes", record({})) as w:   # a narrower integer type is cast
        w.add("a", np.arange(3, dtype=np.int32))
        w.add("b", np.arange(4, dtype=np.int16))
    with Archive(path) as ar:
        assert ar["b"].dtype == np.int32 and list(ar["b"]) == [0, 1, 2, 3]


def test_rewrite_in_memory_and_on_disk(tmp_path, seed, pieces):
    rng = np.random.default_rng(seed)
    utts = _utterances(rng, n=80, dim=4, dtype=np.float32)
    path = tmp_path / "a.h5"
    with ArchiveWriter(path, "features", record({})) as w:
        for k, v in utts.items():
            w.add(k, v)
        w.rewrite(lambda k, rows: rows * 2 + int(k[3:]))
    with Archive(path) as ar:
        for k, v in utts.items():
            np.testing.assert_allclose(ar[k], v * 2 + int(k[3:]), rtol=1e-6)


def test_earlier_layout_is_read(tmp_path, seed):
    rng = np.random.default_rng(seed)
    utts = _utterances(rng, n=20, dim=3, dtype=np.float32)
    path = tmp_path / "old.h5"
    with h5py.File(path, "w") as f:
        f.attrs["rhmmtk_format"] = "archive"
        f.attrs["kind"] = "features"
        g = f.create_group("utts", track_order=True)
        for k, v in utts.items():
            g.create_dataset(k, data=v)
    with Archive(path, expect_kind="features") as ar:
        assert ar.keys() == list(utts)
        for k in reversed(list(utts)):
            np.testing.assert_array_equal(ar[k], utts[k])
            assert ar.shape(k) == utts[k].shape


@pytest.mark.parametrize("damage,message", [
    (lambda f: f["offsets"].__setitem__(3, 10 ** 6), "index is corrupt"),
    (lambda f: f["offsets"].__setitem__(3, 0), "index is corrupt"),
    (lambda f: f.__delitem__("offsets"), "index is unreadable"),
    (lambda f: f.__delitem__("keys"), "index is unreadable"),
    (lambda f: (f.__delitem__("data"), f.create_dataset("data", data=np.zeros(5))),
     "index is corrupt"),
])
def test_damaged_index_is_one_error(tmp_path, seed, damage, message):
    path = tmp_path / "a.h5"
    _write(path, _utterances(np.random.default_rng(seed), n=10))
    with h5py.File(path, "r+") as f:
        damage(f)
    with pytest.raises(InputError, match=message) as e:
        Archive(path)
    assert str(path) in str(e.value)


def test_empty_utterance_and_empty_archive(tmp_path):
    path = tmp_path / "a.h5"
    with ArchiveWriter(path, "codes", record({})) as w:
        w.add("a", np.arange(3, dtype=np.int32))
        w.add("b", np.zeros(0, np.int32))
    with Archive(path) as ar:
        with pytest.raises(InputError, match="utterance b: empty utterance"):
            ar["b"]
        with pytest.raises(InputError, match="utterance c: utterance missing"):
            ar["c"]
    with ArchiveWriter(path, "codes", record({})):
        pass
    with pytest.raises(InputError, match="holds no utterances"):
        Archive(path)
