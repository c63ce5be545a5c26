"""Training data: skeletal sequences, observation archives paired with label alignments by
key, read whole or in blocks (preparing a corpus from its distribution is rhmmtk.corpora)."""
import json

import numpy as np

from .errors import InputError
from .io.archive import Archive
from .io.text import read_alignment
from .symbols import SymbolTable


class Corpus:
    """Parallel lists of keys, label-id arrays and observation-id arrays."""

    def __init__(self, keys, labels, obs, label_table, obs_table):
        self.keys, self.labels, self.obs = keys, labels, obs
        self.label_table, self.obs_table = label_table, obs_table

    def __len__(self):
        return len(self.keys)

    @property
    def num_positions(self):
        return int(sum(len(x) for x in self.obs))


def read_observations(path, keys=None):
    """(keys, list of int arrays, observation SymbolTable) from a codes archive."""
    with Archive(path, expect_kind="codes") as ar:
        table = ar.symbols("observations")
        keys = ar.keys() if keys is None else keys
        seqs = []
        for k in keys:
            x = ar[k]
            if x.ndim != 1:
                raise InputError(f"expected a 1-d array of observation ids, found shape {x.shape}",
                                 path, k)
            if x.min() < 0 or x.max() >= len(table):
                raise InputError(f"observation id out of range 0..{len(table) - 1}", path, k)
            seqs.append(x.astype(np.int64))
    return keys, seqs, table


def check_pairing(ar, ali_keys, ali_path, ali_set=None):
    """Every utterance of archive `ar` must have labels and every labelled one observations."""
    ali_set = set(ali_keys) if ali_set is None else ali_set
    for k in ar.keys():
        if k not in ali_set:
            raise InputError(f"utterance has observations but no labels in {ali_path}",
                             ar.path, k)
    for k in ali_keys:
        if k not in ar:
            raise InputError(f"utterance has labels but no observations in {ar.path}",
                             ali_path, k)


def read_corpus(obs_path, ali_path, label_table=None, strict=True):
    """Pair a codes archive with an alignment. Every utterance must be in both and
    have one label per observation. Labels are mapped with `label_table` (unknown
    symbols are errors, or id -1 when not `strict`, as for dev data scored against a
    trained model) or, when None, a table of the alignment's labels, sorted.
    (CorpusReader reads the same in blocks, or one --job shard.)"""
    ali = read_alignment(ali_path)
    with Archive(obs_path, expect_kind="codes") as ar:
        check_pairing(ar, ali, ali_path)
    keys, obs, obs_table = read_observations(obs_path, list(ali))
    if label_table is None:
        label_table = SymbolTable(sorted({s for syms in ali.values() for s in syms}))
    labels = []
    for k, x in zip(keys, obs):
        syms = ali[k]
        if len(syms) != len(x):
            raise InputError(f"{len(syms)} labels but {len(x)} observations", ali_path, k)
        if strict:
            labels.append(label_table.ids(syms, ali_path, k).astype(np.int64))
        else:
            labels.append(np.array([label_table.index.get(s, -1) for s in syms], dtype=np.int64))
    return Corpus(keys, labels, obs, label_table, obs_table)


class CorpusReader:
    """read_corpus in blocks of utterances, for bounded memory: the alignment is read
    twice, streaming (keys and label set, then the shard's lines), the observations one
    utterance at a time. Same checks and label table as read_corpus; with `job`, only that
    shard of the alignment's utterances.

      reader = CorpusReader(obs, ali, job=job)      # .label_table, .obs_table, .keys
      for corpus in reader.blocks(): ...            # Corpus objects of ~block_positions
    """

    def __init__(self, obs_path, ali_path, label_table=None, strict=True, job=None,
                 block_positions=1 << 18):
        from .jobs import select

        self.obs_path, self.ali_path, self.strict = obs_path, ali_path, strict
        self.block_positions = block_positions
        self._stdin = None
        if str(ali_path) == "-":               # a pipe is read once, into memory
            self._stdin = list(self._lines_of(ali_path))
        keys, seen, labels = [], set(), set()
        for lineno, k, syms in self._lines():
            if k in seen:
                raise InputError(f"line {lineno}: key appears twice", ali_path, k)
            seen.add(k)
            keys.append(k)
            if label_table is None:
                labels.update(syms)
        if not keys:
            raise InputError("no utterances", ali_path)
        self.label_table = label_table or SymbolTable(sorted(labels))
        with Archive(obs_path, expect_kind="codes") as ar:
            check_pairing(ar, keys, ali_path, seen)
            self.obs_table = ar.symbols("observations")
        self.all_keys = keys
        self.keys = select(keys, job)
        self._range = (0, len(keys)) if job is None else job.bounds(len(keys))

    @staticmethod
    def _lines_of(path):
        from .io.text import open_input

        with open_input(path) as f:
            for lineno, line in enumerate(f, 1):
                parts = line.split()
                if not parts:
                    continue
                if len(parts) < 2:
                    raise InputError(f"line {lineno}: empty utterance (no symbols after the key)",
                                     path, parts[0])
                yield lineno, parts[0], parts[1:]

    def _lines(self):
        return iter(self._stdin) if self._stdin is not None else self._lines_of(self.ali_path)

    def blocks(self):
        lo, hi = self._range
        n = len(self.obs_table)
        with Archive(self.obs_path, expect_kind="codes") as ar:
            keys, labels, obs, size = [], [], [], 0
            for i, (_, k, syms) in enumerate(self._lines()):
                if i < lo:
                    continue
                if i >= hi:
                    break
                x = ar[k]
                if x.ndim != 1:
                    raise InputError(f"expected a 1-d array of observation ids, found shape "
                                     f"{x.shape}", self.obs_path, k)
                if x.min() < 0 or x.max() >= n:
                    raise InputError(f"observation id out of range 0..{n - 1}", self.obs_path, k)
                if len(syms) != len(x):
                    raise InputError(f"{len(syms)} labels but {len(x)} observations",
                                     self.ali_path, k)
                if self.strict:
                    a = self.label_table.ids(syms, self.ali_path, k).astype(np.int64)
                else:
                    a = np.array([self.label_table.index.get(s, -1) for s in syms],
                                 dtype=np.int64)
                keys.append(k)
                labels.append(a)
                obs.append(x.astype(np.int64))
                size += len(x)
                if size >= self.block_positions:
                    yield Corpus(keys, labels, obs, self.label_table, self.obs_table)
                    keys, labels, obs, size = [], [], [], 0
            if keys:
                yield Corpus(keys, labels, obs, self.label_table, self.obs_table)


def read_featurized(path):
    """A featurized archive: (Corpus, per-view feature matrices over all positions, attrs)."""
    with Archive(path, expect_kind="featurized") as ar:
        label_table = ar.symbols("labels")
        obs_table = ar.symbols("observations")
        attrs = dict(ar.attrs)
        keys, labels, obs, mats = [], [], [], []
        ncols = 2 + len(json.loads(attrs["columns"]))
        for k, arr in ar.items():
            if arr.ndim != 2 or arr.shape[1] != ncols:
                raise InputError(f"expected {ncols} columns, found shape {arr.shape}", path, k)
            keys.append(k)
            labels.append(arr[:, 0])
            obs.append(arr[:, 1])
            mats.append(arr)
    corpus = Corpus(keys, labels, obs, label_table, obs_table)
    return corpus, np.concatenate(mats), attrs


class FeaturizedArchive:
    """A featurized archive read block by block (bounded memory): header, keys, blocks.

    .label_table, .obs_table, .attrs, .slices (view -> (first, last) column), .ncols,
    .meta (what statistics computed from it must agree on).
    """

    def __init__(self, path):
        self.path = path
        self.archive = Archive(path, expect_kind="featurized")
        ar = self.archive
        self.label_table = ar.symbols("labels")
        self.obs_table = ar.symbols("observations")
        self.attrs = dict(ar.attrs)
        try:
            self.ncols = 2 + len(json.loads(self.attrs["columns"]))
            self.slices = {k: tuple(v) for k, v in json.loads(self.attrs["view_slices"]).items()}
            self.template_fingerprint = self.attrs["template_fingerprint"]
        except (KeyError, ValueError):
            ar.close()
            raise InputError("featurized archive lacks its template attributes "
                             "(columns, view_slices, template_fingerprint)", path) from None
        self.meta = {"template_fingerprint": self.template_fingerprint,
                     "view_slices": self.attrs["view_slices"],
                     "label_fingerprint": self.label_table.fingerprint(),
                     "observation_fingerprint": self.obs_table.fingerprint()}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.archive.close()

    def keys(self, job=None):
        from .jobs import select

        return select(self.archive.keys(), job)

    def blocks(self, keys, block_positions):
        """Yield (F, lengths) for consecutive groups of whole utterances of `keys`, about
        `block_positions` positions each (F rows in utterance order)."""
        l, n = len(self.label_table), len(self.obs_table)
        mats, lengths, size = [], [], 0
        for k, arr in self.archive.items(keys):
            if arr.ndim != 2 or arr.shape[1] != self.ncols:
                raise InputError(f"expected {self.ncols} columns, found shape {arr.shape}",
                                 self.path, k)
            if arr[:, 0].min() < 0 or arr[:, 0].max() >= l or arr[:, 1].min() < 0 \
                    or arr[:, 1].max() >= n:
                raise InputError("label or observation id out of range of the symbol tables",
                                 self.path, k)
            mats.append(arr)
            lengths.append(len(arr))
            size += len(arr)
            if size >= block_positions:
                yield np.concatenate(mats), np.array(lengths)
                mats, lengths, size = [], [], 0
        if mats:
            yield np.concatenate(mats), np.array(lengths)
