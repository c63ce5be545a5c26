"""Vector quantisation: k-means codebooks and our chunked nearest-centroid assignment."""
import h5py
import numpy as np
import pytest

from cli_helpers import fails, run
from rhmmtk.frontend.codebook import Codebook, assign, learn, learn_codebook, quantize_archive, read_frames
from rhmmtk.errors import InputError
from rhmmtk.io.archive import Archive, ArchiveWriter
from rhmmtk.provenance import record


def clusters(rng, k=6, dim=5, per=80, spread=50.0):
    """Well-separated Gaussian blobs: (frames, true cluster of each frame)."""
    centres = rng.standard_normal((k, dim)) * spread
    truth = np.repeat(np.arange(k), per)
    rng.shuffle(truth)
    x = centres[truth] + rng.standard_normal((len(truth), dim))
    return x.astype(np.float32), truth


def write_features(path, frames, sizes=None):
    """Frames cut into utterances, as a `features` archive."""
    sizes = sizes or [len(frames) // 4] * 3 + [len(frames) - 3 * (len(frames) // 4)]
    start = 0
    with ArchiveWriter(path, "features", record({}), attrs={"dim": frames.shape[1]}) as w:
        for i, n in enumerate(sizes):
            w.add(f"utt{i}", frames[start:start + n])
            start += n
    return path


def same_partition(a, b):
    """True if labelings a and b group the items identically (up to renaming)."""
    pairs = set(zip(a.tolist(), b.tolist()))
    return len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


def test_recovers_separated_clusters(rng, seed):
    for trial in range(5):
        x, truth = clusters(rng)
        book, stats = learn(x, 6, seed=seed + trial)
        assert same_partition(book.assign(x), truth), trial
        assert stats["codes_used"] == 6
        # the centroids are the blobs' sample means
        for c in range(6):
            np.testing.assert_allclose(book.centroids[book.assign(x[truth == c][:1])[0]],
                                       x[truth == c].mean(0), rtol=1e-4, atol=1e-3)


def test_random_init(rng, seed):
    """Random starting frames (which may share a blob, so no exact recovery is promised)."""
    x, truth = clusters(rng)
    book, _ = learn(x, 6, init="random", seed=seed, iters=100, tol=0)
    again, _ = learn(x, 6, init="random", seed=seed, iters=100, tol=0)
    np.testing.assert_array_equal(book.centroids, again.centroids)
    codes = book.assign(x)
    assert codes.min() >= 0 and codes.max() < 6
    # at convergence (tol=0: until no frame changes code) each centroid is its frames' mean
    for c in np.unique(codes):
        np.testing.assert_allclose(book.centroids[c], x[codes == c].mean(0), rtol=1e-4, atol=1e-3)


def test_assign_matches_brute_force(rng):
    x = rng.standard_normal((3000, 39)).astype(np.float32) * 3 + 10
    c = rng.standard_normal((257, 39)).astype(np.float32) * 3 + 10
    d = ((x[:, None, :].astype(np.float64) - c[None].astype(np.float64)) ** 2).sum(-1)
    exact = d.argmin(1)
    srt = np.sort(d, 1)
    clear = (srt[:, 1] - srt[:, 0]) > 1e-3 * srt[:, 0]  # not a near-tie
    for dtype in (np.float32, np.float64):
        for chunk in (1, 7, 64, 5000):
            got, dist = assign(x, c, dtype=dtype, chunk=chunk, return_distance=True)
            assert got.dtype == np.int32
            np.testing.assert_array_equal(got[clear], exact[clear])
            np.testing.assert_allclose(dist, srt[:, 0], rtol=1e-4)
    np.testing.assert_array_equal(assign(x, c, dtype=np.float64), exact)
    # ties go to the lowest index
    assert assign(np.zeros((2, 3)), np.ones((4, 3)))[0] == 0


def test_learn_apply_cli_deterministic(tmp_path, rng, seed):
    x, truth = clusters(rng, k=8, dim=39, per=50)
    feats = write_features(tmp_path / "f.h5", x)
    book = tmp_path / "cb.h5"
    run("quantize", "learn", "--codes", 8, "--seed", seed, "--quiet", feats, book)
    run("quantize", "apply", "--quiet", book, feats, tmp_path / "c1.h5")
    run("quantize", "apply", "--quiet", book, feats, tmp_path / "c2.h5")
    with h5py.File(book) as f:
        assert f.attrs["rhmmtk_format"] == "codebook" and f["centroids"].shape == (8, 39)
        assert "quantize learn" in f.attrs["created_by"]
    cb = Codebook.load(book)
    with Archive(tmp_path / "c1.h5", expect_kind="codes") as a, \
            Archive(tmp_path / "c2.h5", expect_kind="codes") as b:
        assert a.symbols("observations").symbols == [str(i) for i in range(8)]
        assert a.attrs["codebook"] == cb.fingerprint()
        codes = np.concatenate([a[k] for k in a.keys()])
        assert codes.dtype == np.int32
        for k in a.keys():
            np.testing.assert_array_equal(a[k], b[k])
    assert same_partition(codes, truth)
    # the same seed learns the same codebook (k-means sums are reduced per thread, so this
    # holds for the same number of threads: both runs are the CLI's, RHMMTK_THREADS alike)
    run("quantize", "learn", "--codes", 8, "--seed", seed, "--quiet", feats, tmp_path / "cb2.h5")
    np.testing.assert_array_equal(Codebook.load(tmp_path / "cb2.h5").centroids, cb.centroids)
    again = learn_codebook(feats, tmp_path / "cb3.h5", num_codes=8, seed=seed)  # in-process
    twice = learn_codebook(feats, tmp_path / "cb4.h5", num_codes=8, seed=seed)
    np.testing.assert_array_equal(again.centroids, twice.centroids)
    assert same_partition(again.assign(x), truth)


def test_sampled_frames_are_a_subset(tmp_path, rng):
    x = rng.standard_normal((500, 4)).astype(np.float32)
    feats = write_features(tmp_path / "f.h5", x, [100, 1, 250, 149])
    allf, total, _ = read_frames(feats)
    np.testing.assert_array_equal(allf, x)
    some, total, _ = read_frames(feats, 123, seed=3)
    assert total == 500 and len(some) == 123
    rows = {r.tobytes() for r in x}
    assert all(r.tobytes() in rows for r in some)
    np.testing.assert_array_equal(some, read_frames(feats, 123, seed=3)[0])


def test_errors(tmp_path, rng):
    x, _ = clusters(rng, k=3, dim=5, per=20)
    feats = write_features(tmp_path / "f.h5", x)
    book = tmp_path / "cb.h5"
    learn_codebook(feats, book, num_codes=3)
    other = write_features(tmp_path / "g.h5", rng.standard_normal((40, 7)).astype(np.float32))
    err = fails("quantize", "apply", book, other, tmp_path / "c.h5")
    assert "7 dimensions" in err and "has 5" in err and "g.h5" in err
    assert not (tmp_path / "c.h5").exists()
    with pytest.raises(InputError, match="too few for 100 codes"):
        learn_codebook(feats, tmp_path / "cb2.h5", num_codes=100)
    err = fails("quantize", "apply", feats, feats, tmp_path / "c.h5")
    assert "expected an rhmmtk codebook" in err
    err = fails("quantize", "learn", "--codes", 2, book, tmp_path / "cb3.h5")
    assert "expected an rhmmtk archive" in err
    bad = x.copy()
    bad[3, 2] = np.nan
    nan = write_features(tmp_path / "nan.h5", bad)
    with pytest.raises(InputError, match="not finite"):
        quantize_archive(book, nan, tmp_path / "c.h5")
