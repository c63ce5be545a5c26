"""What the shard tests share: the synthetic corpus every --job test splits, the
spectral statistics of its three shards, and model comparison to a relative tolerance.
The fixtures built from them (`shard_corpus`, `shard_spectral`) are in conftest.py."""
from pathlib import Path

import numpy as np

from cli_helpers import run
from synthetic import SEED, h5_datasets, make_corpus

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "scripts"
NJ = 3


def build_corpus(d):
    """Train/dev codes, alignments and train features of a small synthetic corpus in d."""
    print(f"[seed] shard corpus: {SEED}")
    p = make_corpus(d, SEED, sizes=(150, 30, 30))     # d is the session's (conftest.py)
    f = dict(p)
    f["d"] = d
    f["obs"], f["dev_obs"], f["feats"] = d / "train.obs.h5", d / "dev.obs.h5", d / "train.feats.h5"
    run("make-obs", "--write-symbols", d / "obs.syms", p["train_txt"], f["obs"])
    run("make-obs", "--symbols", d / "obs.syms", p["dev_txt"], f["dev_obs"])
    run("featurize", "--templates", p["templates"], f["obs"], p["train_ali"], f["feats"])
    return f


def build_spectral(corpus):
    """acc/svd/acc/est-spectral over NJ shards (sharded.h5) and train-spectral (single.h5)."""
    d = corpus["d"] / "spectral"
    d.mkdir()
    omega = [d / f"omega.{j}.acc" for j in range(1, NJ + 1)]
    moments = [d / f"moments.{j}.acc" for j in range(1, NJ + 1)]
    for j, out in enumerate(omega, 1):
        run("acc-spectral", "--job", f"{j}/{NJ}", corpus["feats"], out)
    run("svd-spectral", "-m", "3", *omega, d / "proj.h5")
    for j, out in enumerate(moments, 1):
        run("acc-spectral", "--job", f"{j}/{NJ}", "--projections", d / "proj.h5",
            corpus["feats"], out)
    run("est-spectral", "--smooth", "20", d / "proj.h5", *moments, d / "sharded.h5")
    run("train-spectral", "-m", "3", "--smooth", "20", corpus["feats"], d / "single.h5")
    return {"d": d, "omega": omega, "moments": moments, "proj": d / "proj.h5"}


def rel_diff(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def assert_same_model(path_a, path_b, rtol=1e-10):
    a, b = h5_datasets(path_a), h5_datasets(path_b)
    assert sorted(a) == sorted(b)
    for k in a:
        if a[k].dtype.kind == "f":
            assert rel_diff(a[k], b[k]) <= rtol, (k, rel_diff(a[k], b[k]))
        else:
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)

