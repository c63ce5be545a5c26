"""Skeletal sequences: observation archives paired with label alignments by key."""
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


def read_corpus(obs_path, ali_path, label_table=None, strict=True):
    """Pair a codes archive with an alignment. Every utterance must be in both and
    have one label per observation. Labels are mapped with `label_table` (unknown
    symbols are errors, or id -1 when not `strict`, as for dev data scored against a
    trained model) or, when None, a table of the alignment's labels, sorted."""
    ali = read_alignment(ali_path)
    with Archive(obs_path, expect_kind="codes") as ar:
        for k in ar.keys():
            if k not in ali:
                raise InputError(f"utterance has observations but no labels in {ali_path}",
                                 obs_path, k)
        for k in ali:
            if k not in ar:
                raise InputError(f"utterance has labels but no observations in {obs_path}",
                                 ali_path, k)
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
