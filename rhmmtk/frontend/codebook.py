"""Vector quantisation: learn a k-means codebook on feature frames, map frames to codes.

Learning uses scikit-learn's `KMeans` (Lloyd's algorithm, one run), not
`MiniBatchKMeans`: the paper quantises with plain Euclidean k-means, Lloyd's
iterations are exact and deterministic for a fixed seed, and with 10,000 codes
a mini-batch epoch costs about as much as a Lloyd iteration (every batch is
compared with every centre) while ending at a worse distortion: measured here
on 100,000 frames x 39 dims, 5 Lloyd iterations took 17 s (mean squared
distance 32.3), 5 mini-batch epochs 52 s (34.6).

A codebook is reproducible from the seed for a given number of threads
(scikit-learn sums each thread's share of the frames, so the thread count can
move centroids in the last float32 bit; the command line uses RHMMTK_THREADS,
1 by default).

Initialisation is done by us, on a subsample of the training frames
(`init_frames`; by default 3 x codes, the rule of MiniBatchKMeans' `init_size`,
or more for small codebooks, up to frames x codes = 3e8): scikit-learn's
k-means++ (`sklearn.cluster.kmeans_plusplus`) chooses each of the K centres in turn against all the frames it is given, so on
the full 1.1M TIMIT frames it would take far longer than the iterations
themselves (220 s for 10,000 centres from 100,000 frames on two cores). `random`
takes distinct random frames of that subsample. The KMeans run then starts
from those centres on all training frames (or `sample_frames` of them).

Assignment (`assign`) is our own: squared distances ||x||^2 - 2 x.c + ||c||^2
for a chunk of frames at a time as one matrix product, then argmin along the
codes; ||x||^2 is the same for every code and is left out, and -2c and ||c||^2
are packed into one (D+1) x K matrix so each chunk costs a single GEMM and one
argmin pass. Frames and centres are first shifted by the centres' mean (which
changes no distance) to limit cancellation. Arithmetic is float32 by default
(`dtype=np.float64` for exact ties); chunks have a fixed size for a given
codebook and ties go to the lowest code, so the result is deterministic.

Codebook file (HDF5): attrs rhmmtk_format="codebook", provenance (created_by,
created, options, versions), num_codes, dim, fingerprint, training statistics
and the training features' `feature_config`; dataset /centroids float32 (K, D).
"""
import hashlib
import json
import os
import warnings

import numpy as np

from ..errors import InputError

FORMAT = "codebook"
INITS = ("k-means++", "random")
INIT_BUDGET = 3e8  # frames x codes looked at by the initialisation (30,000 frames for 10,000 codes)


class Codebook:
    """K centroids in D dimensions, with the attributes stored alongside them."""

    def __init__(self, centroids, attrs=None):
        self.centroids = np.ascontiguousarray(centroids, dtype=np.float32)
        self.attrs = dict(attrs or {})

    @property
    def num_codes(self):
        return self.centroids.shape[0]

    @property
    def dim(self):
        return self.centroids.shape[1]

    def fingerprint(self):
        return hashlib.sha1(self.centroids.astype("<f4").tobytes()).hexdigest()[:16]

    def assign(self, frames, **kw):
        return assign(frames, self.centroids, **kw)

    def save(self, path, provenance):
        from ..io.hdf5 import create_checked
        from ..io.output import write_hdf5

        if not np.isfinite(self.centroids).all():
            raise InputError("refusing to write a codebook with non-finite centroids "
                             f"({int((~np.isfinite(self.centroids)).any(axis=1).sum())} of "
                             f"{self.num_codes})", path)
        with write_hdf5(path) as f:
            f.attrs["rhmmtk_format"] = FORMAT
            for k, v in {**provenance, **self.attrs}.items():
                f.attrs[k] = v if isinstance(v, (str, int, float, np.integer, np.floating)) \
                    else json.dumps(v)
            f.attrs["num_codes"] = self.num_codes
            f.attrs["dim"] = self.dim
            f.attrs["fingerprint"] = self.fingerprint()
            create_checked(f, "centroids", self.centroids)

    @classmethod
    def load(cls, path):
        from ..io.hdf5 import open_rhmmtk, read_checked, reading

        path = os.fspath(path)
        with open_rhmmtk(path, FORMAT, required=("centroids",)) as f, reading(path):
            c = read_checked(f["centroids"], path)
            attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
        if c.ndim != 2 or c.shape[0] < 1 or not np.isfinite(c).all():
            raise InputError(f"centroids must be a finite (K, D) matrix, found shape {c.shape}",
                             path)
        book = cls(c, attrs)
        if attrs.get("fingerprint") not in (None, book.fingerprint()):
            raise InputError("centroids do not match the stored fingerprint (corrupt file)", path)
        return book


# --- assignment ----------------------------------------------------------------

def default_chunk(num_codes):
    """Frames per matrix product: a power of two, about 5 million distances per block.

    (256 frames for 10,000 codes: measured best or near-best on a 2-core AVX-512
    machine, for float32 and float64 alike; far larger blocks leave the caches.)
    """
    target = max(1, int(5e6 // max(num_codes, 1)))
    return int(min(16384, max(64, 1 << (target.bit_length() - 1))))


def _packed(centroids, dtype):
    """(shift, A) with A = [[-2 (c - shift)^T], [||c - shift||^2]], shape (D+1, K)."""
    c = np.asarray(centroids, dtype=np.float64)
    shift = c.mean(axis=0)
    cc = c - shift
    a = np.empty((c.shape[1] + 1, c.shape[0]))
    a[:-1] = -2.0 * cc.T
    a[-1] = np.einsum("kd,kd->k", cc, cc)
    return shift.astype(dtype), np.ascontiguousarray(a, dtype=dtype)


class Assigner:
    """Nearest-centroid assignment with buffers reused across calls (one per codebook)."""

    def __init__(self, centroids, dtype=np.float32, chunk=None):
        centroids = np.asarray(centroids)
        self.num_codes, self.dim = centroids.shape
        self.dtype = np.dtype(dtype)
        self.chunk = chunk or default_chunk(self.num_codes)
        self.shift, self.packed = _packed(centroids, self.dtype)
        self._x = np.empty((self.chunk, self.dim + 1), self.dtype)
        self._x[:, -1] = 1.0
        self._d = np.empty((self.chunk, self.num_codes), self.dtype)

    def __call__(self, frames, return_distance=False):
        """Codes (int32) of frames (N, D); with return_distance also squared distances (float64)."""
        frames = np.asarray(frames)
        if frames.ndim != 2 or frames.shape[1] != self.dim:
            raise ValueError(f"frames have shape {frames.shape}, codebook dimension is {self.dim}")
        n = len(frames)
        codes = np.empty(n, np.int32)
        dist = np.empty(n) if return_distance else None
        x, d = self._x, self._d
        for s in range(0, n, self.chunk):
            e = min(s + self.chunk, n)
            m = e - s
            np.subtract(frames[s:e], self.shift, out=x[:m, :-1], casting="unsafe")
            np.matmul(x[:m], self.packed, out=d[:m])
            best = d[:m].argmin(axis=1)
            codes[s:e] = best
            if return_distance:
                xs = x[:m, :-1].astype(np.float64)
                nearest = np.take_along_axis(d[:m], best[:, None], 1)[:, 0]
                dist[s:e] = np.maximum(nearest + np.einsum("nd,nd->n", xs, xs), 0.0)
        return (codes, dist) if return_distance else codes


def assign(frames, centroids, dtype=np.float32, chunk=None, return_distance=False):
    """Index of the nearest centroid (squared Euclidean distance) for every frame."""
    return Assigner(centroids, dtype, chunk)(frames, return_distance)


def _plain(v):
    """An HDF5 attribute value as a plain Python value (numpy scalars -> int, float, str)."""
    return v.item() if isinstance(v, np.generic) else v


# --- learning ------------------------------------------------------------------

def _frame_counts(archive):
    counts = []
    for k in archive.keys():
        shape = archive.shape(k)
        if len(shape) != 2:
            raise InputError(f"expected a (frames, dim) matrix, found shape {shape}",
                             archive.path, k)
        counts.append(shape)
    dims = {s[1] for s in counts}
    if len(dims) != 1:
        raise InputError(f"utterances differ in feature dimension ({sorted(dims)})", archive.path)
    return np.array([s[0] for s in counts]), dims.pop()


def read_frames(features, sample_frames=0, seed=0):
    """Frames of a feature source as one float32 matrix: all, or a random `sample_frames`.

    `features`: an rhmmtk features archive, read one utterance at a time keeping only the
    chosen frames, or a Kaldi/HTK specifier (rhmmtk.io.features), read whole first (a
    Kaldi archive is a stream); the same frames are chosen either way.
    Returns (frames, total frames in the source, source attrs).
    """
    from ..io.features import ArchiveFeatures, open_features
    from ..progress import progress

    with open_features(features) as ar:
        if isinstance(ar, ArchiveFeatures):
            counts, dim = _frame_counts(ar.archive)
            items = progress(ar.items(), desc="read", total=len(ar))
        else:
            read = list(progress(ar.items(), desc="read", total=ar.count()))
            counts = np.array([len(x) for _, x in read])
            dim = ar.dim()
            items = iter(read)
        total = int(counts.sum())
        if sample_frames and sample_frames < total:
            rng = np.random.default_rng(seed)
            chosen = np.sort(rng.choice(total, size=sample_frames, replace=False))
        else:
            chosen = None
        out = np.empty((total if chosen is None else len(chosen), dim), np.float32)
        start = filled = 0
        for (key, x), n in zip(items, counts):
            if not np.isfinite(x).all():
                raise InputError("features are not finite (NaN or infinity)", ar.path, key)
            if chosen is None:
                out[start:start + n] = x
                filled += n
            else:
                lo, hi = np.searchsorted(chosen, [start, start + n])
                out[filled:filled + hi - lo] = x[chosen[lo:hi] - start]
                filled += hi - lo
            start += n
        attrs = dict(ar.attrs)
    return out, total, attrs


def default_init_frames(num_codes):
    """3 x codes, or more while k-means++ stays cheap (its cost grows as frames x codes)."""
    return max(3 * num_codes, int(INIT_BUDGET // max(num_codes, 1)))


def initial_centres(frames, num_codes, init="k-means++", init_frames=None, seed=0):
    """Starting centres from a random subsample of `init_frames` frames (0: all frames)."""
    from sklearn.cluster import kmeans_plusplus

    if init not in INITS:
        raise InputError(f"--init must be one of {', '.join(INITS)} (got {init!r})")
    rng = np.random.default_rng(seed)
    n = len(frames)
    size = default_init_frames(num_codes) if init_frames is None else init_frames
    if size and size < n:
        size = max(size, num_codes)
        sub = frames[np.sort(rng.choice(n, size=size, replace=False))]
    else:
        sub = frames
    if init == "random":
        return sub[rng.choice(len(sub), size=num_codes, replace=False)].copy()
    centres, _ = kmeans_plusplus(sub, num_codes, random_state=int(rng.integers(2**31 - 1)))
    return centres


def learn(frames, num_codes, init="k-means++", iters=20, seed=0, init_frames=None, tol=1e-4):
    """k-means on frames (N, D): returns (Codebook, stats dict)."""
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning

    from ..progress import Timer, log

    frames = np.ascontiguousarray(frames, dtype=np.float32)
    n = len(frames)
    if num_codes < 1:
        raise InputError(f"--codes must be at least 1 (got {num_codes})")
    if iters < 1:
        raise InputError(f"--iters must be at least 1 (got {iters})")
    if n < num_codes:
        raise InputError(f"{n} training frames are too few for {num_codes} codes")
    with Timer(f"{init} initialisation of {num_codes} centres"):
        centres = initial_centres(frames, num_codes, init, init_frames, seed)
    km = KMeans(n_clusters=num_codes, init=centres, n_init=1, max_iter=iters, tol=tol,
                random_state=seed, algorithm="lloyd", copy_x=True)
    with Timer(f"k-means ({num_codes} codes, {n} frames, at most {iters} iterations)"), \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        km.fit(frames)
    for w in caught:
        if issubclass(w.category, ConvergenceWarning):
            log.warning("%s", w.message)
    used = int(np.count_nonzero(np.bincount(km.labels_, minlength=num_codes)))
    stats = {"training_frames": n, "iterations": int(km.n_iter_),
             "mean_distortion": float(km.inertia_) / n, "codes_used": used}
    log.info("%d iterations, mean squared distance %.4g, %d of %d codes hold frames",
             stats["iterations"], stats["mean_distortion"], used, num_codes)
    return Codebook(km.cluster_centers_.astype(np.float32)), stats


def learn_codebook(features, out, num_codes=10000, init="k-means++", sample_frames=0,
                   iters=20, seed=0, init_frames=None, options=None):
    """Learn a codebook from a features archive and write it to `out`; returns the Codebook."""
    from ..progress import log
    from ..provenance import record

    if sample_frames is not None and sample_frames < 0:
        raise InputError(f"--sample-frames must be >= 0 (got {sample_frames})")
    frames, total, fattrs = read_frames(features, sample_frames, seed)
    log.info("training on %d of %d frames (%d dims)", len(frames), total, frames.shape[1])
    book, stats = learn(frames, num_codes, init, iters, seed, init_frames)
    book.attrs.update(stats)
    book.attrs["init"] = init
    book.attrs["seed"] = seed
    for k in ("feature_config", "cmvn", "frame_shift", "frame_length", "sample_rate"):
        if k in fattrs:
            book.attrs[k] = _plain(fattrs[k])
    opts = {"codes": num_codes, "init": init, "sample_frames": sample_frames, "iters": iters,
            "seed": seed, "init_frames": init_frames, "features": str(features),
            **(options or {})}
    book.save(out, record(opts))
    log.info("wrote %d x %d codebook %s (fingerprint %s)", book.num_codes, book.dim, out,
             book.fingerprint())
    return book


def quantize_archive(codebook, features, out, dtype=np.float32, options=None, job=None):
    """Codes of every utterance of a features archive, written as a `codes` archive (or a
    Kaldi integer-vector archive, rhmmtk.io.specifiers).

    `codebook` is a path or a Codebook. The observation symbols are "0".."K-1".
    `job` (rhmmtk.jobs.Job): only that shard of the utterances.
    """
    from ..io.features import ArchiveFeatures, open_features
    from ..io.specifiers import open_codes_writer, resolve_output
    from ..progress import log, progress
    from ..provenance import record
    from ..symbols import SymbolTable

    resolve_output(out, "codes")
    book_path = None
    if not isinstance(codebook, Codebook):
        book_path = os.fspath(codebook)
        codebook = Codebook.load(codebook)
    table = SymbolTable([str(i) for i in range(codebook.num_codes)])
    with open_features(features) as ar:
        fdim = ar.attrs.get("dim")
        # an rhmmtk archive's index gives every shape; other sources (a Kaldi archive is a
        # stream) are checked utterance by utterance as they are read
        dim = _frame_counts(ar.archive)[1] if isinstance(ar, ArchiveFeatures) else codebook.dim
        if dim != codebook.dim or (fdim is not None and int(fdim) != codebook.dim):
            raise InputError(f"features have {dim} dimensions but the codebook"
                             f"{' ' + book_path if book_path else ''} has {codebook.dim}", ar.path)
        fc_book, fc_feats = codebook.attrs.get("feature_config"), ar.attrs.get("feature_config")
        if (fc_book and fc_feats and fc_book != fc_feats) or \
                codebook.attrs.get("cmvn", ar.attrs.get("cmvn")) != ar.attrs.get("cmvn"):
            log.warning("%s was made with other feature settings than the codebook's training "
                        "features (compare `feature_config` and `cmvn` attributes)", ar.path)
        attrs = {"codebook": codebook.fingerprint(), "num_codes": codebook.num_codes,
                 "observation_fingerprint": table.fingerprint()}
        for k in ("feature_config", "cmvn", "frame_shift", "frame_length", "sample_rate"):
            if k in ar.attrs:
                attrs[k] = _plain(ar.attrs[k])
        opts = {"codebook": book_path, "features": str(features),
                "dtype": np.dtype(dtype).name, **(options or {})}
        if job is not None:
            opts["job"] = str(job)
        keys = None if job is None else job.select(ar.keys())
        assigner = Assigner(codebook.centroids, dtype)
        frames = utts = 0
        total_dist = 0.0
        with open_codes_writer(out, record(opts), {"observations": table}, attrs) as w:
            for key, x in progress(ar.items(keys), desc="quantize",
                                   total=ar.count() if keys is None else len(keys)):
                utts += 1
                if x.shape[1] != codebook.dim:
                    raise InputError(f"matrix has {x.shape[1]} columns but the codebook"
                                     f"{' ' + book_path if book_path else ''} has "
                                     f"{codebook.dim} dimensions", ar.path, key)
                if not np.isfinite(x).all():
                    raise InputError("features are not finite (NaN or infinity)", ar.path, key)
                codes, dist = assigner(x, return_distance=True)
                frames += len(codes)
                total_dist += float(dist.sum())
                w.add(key, codes)
            if hasattr(w, "file"):        # an rhmmtk archive (a Kaldi one has no attributes)
                w.file.attrs["mean_distortion"] = total_dist / max(frames, 1)
    log.info("quantised %d utterances, %d frames; mean squared distance %.4g",
             utts, frames, total_dist / max(frames, 1))
    return {"utterances": utts, "frames": frames,
            "mean_distortion": total_dist / max(frames, 1)}
