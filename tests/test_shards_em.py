"""EM over shards: acc-em/init-em/est-em on N = 3 shards equal train-em to 1e-10
relative, whatever the corpus block size; mismatched statistics are refused with one
line naming the file."""
import numpy as np

from cli_helpers import fails, run
from shards import NJ, rel_diff


def test_em_shards_equal_train_em(shard_corpus, tmp_path):
    """The library steps (as acc-em/init-em/est-em run them) with 3 shards, 3 iterations."""
    from rhmmtk.models.rhmm import em_files
    from rhmmtk.jobs import Job

    counts = [tmp_path / f"0.{j}.acc" for j in range(1, NJ + 1)]
    for j, out in enumerate(counts, 1):
        em_files.acc_counts(shard_corpus["obs"], shard_corpus["train_ali"], out, Job(j, NJ))
    em_files.init_files(counts, tmp_path / "0.h5", m=3, seed=5, noise=0.5, floor=1e-3)
    for it in (1, 2, 3):
        accs = [tmp_path / f"{it}.{j}.acc" for j in range(1, NJ + 1)]
        for j, out in enumerate(accs, 1):
            em_files.acc_estep(tmp_path / f"{it - 1}.h5", shard_corpus["obs"], shard_corpus["train_ali"], out,
                         Job(j, NJ))
        em_files.est_files(tmp_path / f"{it - 1}.h5", accs, tmp_path / f"{it}.h5")
    run("train-em", "-m", "3", "--iters", "3", "--seed", "5", shard_corpus["obs"], shard_corpus["train_ali"],
        tmp_path / "single.h5")
    a, _ = em_files.load_model(tmp_path / "3.h5")
    b, op = em_files.load_model(tmp_path / "single.h5")
    for name in ("pi", "o", "t", "f"):
        assert rel_diff(getattr(a, name), getattr(b, name)) < 1e-10, name
    # the log-likelihoods of every iteration agree too
    _, info = em_files.load_model(tmp_path / "3.h5")
    ll_a = [h["loglik"] for h in info.info["history"][:3]]
    ll_b = [h["loglik"] for h in op.info["history"][:3]]
    np.testing.assert_allclose(ll_a, ll_b, rtol=1e-12)


def test_corpus_blocks_and_small_blocks_do_not_change_statistics(shard_corpus, tmp_path, monkeypatch):
    """CorpusReader's blocks are read_corpus cut in pieces; an E-step over many small
    blocks gives the statistics of one block."""
    from rhmmtk.models.rhmm import em_files
    from rhmmtk.training_data import CorpusReader, read_corpus
    from rhmmtk.io.stats import StatsFile
    from rhmmtk.jobs import Job

    whole = read_corpus(shard_corpus["obs"], shard_corpus["train_ali"])
    blocks = list(CorpusReader(shard_corpus["obs"], shard_corpus["train_ali"], block_positions=40).blocks())
    assert len(blocks) > 5
    assert sum((b.keys for b in blocks), []) == whole.keys
    for a, b in zip(sum((b.labels for b in blocks), []), whole.labels):
        np.testing.assert_array_equal(a, b)
    shard = CorpusReader(shard_corpus["obs"], shard_corpus["train_ali"], job=Job(2, 3))
    assert shard.keys == Job(2, 3).select(whole.keys)
    assert sum((b.keys for b in shard.blocks()), []) == shard.keys
    em_files.acc_counts(shard_corpus["obs"], shard_corpus["train_ali"], tmp_path / "c.acc")
    em_files.init_files([tmp_path / "c.acc"], tmp_path / "0.h5", m=2)
    em_files.acc_estep(tmp_path / "0.h5", shard_corpus["obs"], shard_corpus["train_ali"], tmp_path / "big.acc")
    monkeypatch.setattr(em_files, "BLOCK_POSITIONS", 40)
    em_files.acc_estep(tmp_path / "0.h5", shard_corpus["obs"], shard_corpus["train_ali"], tmp_path / "small.acc")
    with StatsFile(tmp_path / "big.acc") as a, StatsFile(tmp_path / "small.acc") as b:
        for name in ("pi", "o", "t", "f", "loglik"):
            np.testing.assert_allclose(a[name], b[name], rtol=1e-12, atol=1e-12)


def test_em_statistics_refused(shard_corpus, tmp_path):
    from rhmmtk.models.rhmm import em_files
    from rhmmtk.jobs import Job

    run("acc-em", "--init", shard_corpus["obs"], shard_corpus["train_ali"], tmp_path / "c.acc")
    run("init-em", "-m", "2", tmp_path / "c.acc", tmp_path / "0.h5")
    run("acc-em", "--model", tmp_path / "0.h5", shard_corpus["obs"], shard_corpus["train_ali"], tmp_path / "s1.acc")
    run("est-em", tmp_path / "0.h5", tmp_path / "s1.acc", tmp_path / "1.h5")
    # statistics of iteration 1's E-step summed into iteration 2's M-step: another model
    err = fails("est-em", tmp_path / "1.h5", tmp_path / "s1.acc", tmp_path / "2.h5")
    assert "model" in err and "s1.acc" in err
    # counts where E-step statistics belong, and the reverse
    err = fails("est-em", tmp_path / "0.h5", tmp_path / "c.acc", tmp_path / "2.h5")
    assert "em-stats" in err and "c.acc" in err
    err = fails("init-em", tmp_path / "s1.acc", tmp_path / "x.h5")
    assert "em-counts" in err
    # another observation table (windows of 3 letters)
    ctx = tmp_path / "ctx.h5"
    run("make-obs", "--context", "1", "--write-symbols", tmp_path / "ctx.syms", shard_corpus["train_txt"],
        ctx)
    run("acc-em", "--init", ctx, shard_corpus["train_ali"], tmp_path / "cx.acc")
    err = fails("init-em", tmp_path / "c.acc", tmp_path / "cx.acc", tmp_path / "x.h5")
    assert "observation symbol table" in err and "cx.acc" in err
    err = fails("acc-em", "--model", tmp_path / "0.h5", ctx, shard_corpus["train_ali"], tmp_path / "y.acc")
    assert "observation symbol table" in err
    # a shard missing: the positions do not add up (and the job is named)
    for j in (1, 3):
        em_files.acc_estep(tmp_path / "0.h5", shard_corpus["obs"], shard_corpus["train_ali"], tmp_path / f"p{j}.acc",
                     Job(j, 3))
    err = fails("est-em", tmp_path / "0.h5", tmp_path / "p1.acc", tmp_path / "p3.acc",
                tmp_path / "2.h5")
    assert "2/3" in err and "missing" in err
    # a spectral model cannot be re-estimated by EM
    run("train-spectral", "-m", "2", shard_corpus["feats"], tmp_path / "sp.h5")
    err = fails("acc-em", "--model", tmp_path / "sp.h5", shard_corpus["obs"], shard_corpus["train_ali"],
                tmp_path / "z.acc")
    assert "sp.h5" in err
    fails("acc-em", shard_corpus["obs"], shard_corpus["train_ali"], tmp_path / "z.acc")     # --init or --model
    assert not (tmp_path / "2.h5").exists() and not (tmp_path / "x.h5").exists()
