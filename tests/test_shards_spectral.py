"""The spectral estimator over shards: acc-spectral/svd-spectral/est-spectral on N = 3
shards equal train-spectral to 1e-10 relative; statistics of another template set, m,
symbol table or kind, and missing, duplicated or differently split shards are refused
with one line."""
import numpy as np

from cli_helpers import fails, run
from synthetic import h5_datasets
from shards import NJ, assert_same_model, rel_diff


def test_spectral_shards_equal_one_process(shard_spectral):
    import json

    from synthetic import h5_attrs

    assert_same_model(shard_spectral["d"] / "sharded.h5", shard_spectral["d"] / "single.h5")
    ia = json.loads(h5_attrs(shard_spectral["d"] / "sharded.h5")["info"])
    ib = json.loads(h5_attrs(shard_spectral["d"] / "single.h5")["info"])
    for k in ("m_requested", "label_counts", "singular_values", "train_utts", "train_positions",
              "template_fingerprint", "options"):
        assert ia[k] == ib[k], k


def test_svd_workers_do_not_change_the_projections(shard_spectral, tmp_path):
    run("svd-spectral", "-m", "3", "--workers", "2", *shard_spectral["omega"], tmp_path / "p2.h5")
    a, b = h5_datasets(tmp_path / "p2.h5"), h5_datasets(shard_spectral["proj"])
    assert sorted(a) == sorted(b)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def test_estimate_is_the_composition_of_the_steps(shard_corpus):
    """spectral.estimate (in memory, blocks of any size) = the file steps' model."""
    import json

    from rhmmtk.training_data import read_featurized
    from rhmmtk.models.rhmm.operators import Operators
    from rhmmtk.models.rhmm.spectral import estimate

    corpus, F, attrs = read_featurized(shard_corpus["feats"])
    slices = {k: tuple(v) for k, v in json.loads(attrs["view_slices"]).items()}
    ref = Operators.load(shard_corpus["d"] / "spectral" / "single.h5")
    for block in (50, 10**7):
        op = estimate(corpus, F, slices, m=3, smooth=20, emission_floor=1e-3,
                      block_positions=block)
        assert op.m.tolist() == ref.m.tolist()
        for x, y in zip(op.emit + op.init + op.stop, ref.emit + ref.init + ref.stop):
            assert rel_diff(x, y) < 1e-10
        assert sorted(op.trans) == sorted(ref.trans)
        for k in op.trans:
            assert rel_diff(op.trans[k], ref.trans[k]) < 1e-10


def test_spectral_statistics_refused(shard_corpus, shard_spectral, tmp_path):
    d = shard_spectral["d"]
    om, mo, proj = shard_spectral["omega"], shard_spectral["moments"], shard_spectral["proj"]
    # a shard missing, a shard twice, a file that does not exist
    err = fails("est-spectral", proj, mo[0], mo[2], tmp_path / "m.h5")
    assert f"2/{NJ}" in err and "missing" in err
    err = fails("svd-spectral", om[0], om[1], om[1], om[2], tmp_path / "p.h5")
    assert "twice" in err and om[1].name in err
    # shards of two splits: 1/2 with 2/3 and 3/3 (every job number once, none missing)
    run("acc-spectral", "--job", "1/2", shard_corpus["feats"], tmp_path / "half.acc")
    err = fails("svd-spectral", tmp_path / "half.acc", om[1], om[2], tmp_path / "p.h5")
    assert "different splits" in err and "half.acc" in err
    err = fails("est-spectral", proj, mo[0], mo[1], d / "nope.acc", tmp_path / "m.h5")
    assert "nope.acc" in err
    # another kind of statistics
    err = fails("est-spectral", proj, *om, tmp_path / "m.h5")
    assert "spectral-moments" in err and om[0].name in err
    # another template set
    other = tmp_path / "other.feats.h5"
    run("featurize", "--templates", shard_corpus["other_templates"], shard_corpus["obs"], shard_corpus["train_ali"], other)
    run("acc-spectral", other, tmp_path / "other.acc")
    err = fails("svd-spectral", om[0], tmp_path / "other.acc", tmp_path / "p.h5")
    assert "template" in err and "other.acc" in err
    err = fails("acc-spectral", "--projections", proj, other, tmp_path / "x.acc")
    assert "template" in err and "other.feats.h5" in err
    # another m: moments of m = 3 with projections of m = 2
    run("svd-spectral", "-m", "2", *om, tmp_path / "proj2.h5")
    err = fails("est-spectral", tmp_path / "proj2.h5", *mo, tmp_path / "m.h5")
    assert "another number of hidden states m" in err and "(m 3 vs 2)" in err, err
    assert mo[0].name in err and "proj2.h5" in err
    assert not (tmp_path / "m.h5").exists() and not (tmp_path / "p.h5").exists()
