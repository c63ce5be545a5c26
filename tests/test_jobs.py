"""--job K/N: the shards of every per-utterance command partition its utterances
exactly and in order, and their outputs concatenate (or merge) to the whole."""
import numpy as np
import pytest

from cli_helpers import fails, run
from synthetic import archive_arrays, h5_datasets
from shards import NJ


@pytest.mark.parametrize("count, n", [(10, 3), (7, 7), (3, 5), (1000, 8), (0, 2)])
def test_job_split_partitions_in_order(count, n):
    from rhmmtk.jobs import Job

    items = [f"u{i}" for i in range(count)]
    shards = [Job(k, n).select(items) for k in range(1, n + 1)]
    assert sum(shards, []) == items                       # all, once each, in order
    sizes = [len(s) for s in shards]
    assert max(sizes) - min(sizes) <= 1


def test_job_spec_errors():
    from rhmmtk.errors import InputError
    from rhmmtk.jobs import Job

    assert Job.parse("2/8") == Job(2, 8) and str(Job.parse(" 3 / 4 ")) == "3/4"
    for bad in ("0/3", "4/3", "2", "a/b", "1/0"):
        with pytest.raises(InputError):
            Job.parse(bad)


def test_job_option_rejects_bad_spec(shard_corpus, tmp_path):
    err = fails("decode", "--job", "4/3", shard_corpus["feats"], shard_corpus["obs"], tmp_path / "x.ali")
    assert "--job" in err and "Traceback" not in err


def test_sharded_featurize_and_decode_concatenate_to_the_whole(shard_corpus, tmp_path):
    whole = archive_arrays(shard_corpus["feats"])
    model = tmp_path / "sp.h5"
    run("train-spectral", "-m", "2", shard_corpus["feats"], model)
    run("decode", model, shard_corpus["obs"], tmp_path / "all.ali")
    keys, hyp = [], ""
    for j in range(1, NJ + 1):
        out = tmp_path / f"f.{j}.h5"
        run("featurize", "--job", f"{j}/{NJ}", "--templates", shard_corpus["templates"], shard_corpus["obs"],
            shard_corpus["train_ali"], out)
        part = archive_arrays(out)
        for k, v in part.items():
            np.testing.assert_array_equal(v, whole[k])
        keys += list(part)
        run("decode", "--job", f"{j}/{NJ}", model, shard_corpus["obs"], tmp_path / f"hyp.{j}")
        hyp += (tmp_path / f"hyp.{j}").read_text()
    assert keys == list(whole)
    assert hyp == (tmp_path / "all.ali").read_text()
    # merge-archives puts the shards back together: the same archive, in order
    run("merge-archives", tmp_path / "merged.h5",
        *[tmp_path / f"f.{j}.h5" for j in range(1, NJ + 1)])
    merged = archive_arrays(tmp_path / "merged.h5")
    assert list(merged) == list(whole)
    for k in whole:
        np.testing.assert_array_equal(merged[k], whole[k], err_msg=k)
    from rhmmtk.io.archive import Archive

    with Archive(tmp_path / "merged.h5") as a, Archive(shard_corpus["feats"]) as b:
        assert a.keys() == b.keys()
        assert a.attrs["template_fingerprint"] == b.attrs["template_fingerprint"]
    err = fails("merge-archives", tmp_path / "bad.h5", tmp_path / "f.1.h5", shard_corpus["obs"])
    assert "train.obs.h5" in err and "kind" in err
    err = fails("merge-archives", tmp_path / "bad.h5", tmp_path / "f.1.h5", tmp_path / "f.1.h5")
    assert "more than one" in err
    # make-obs applies a table per shard; learning one needs all of the text
    from rhmmtk.io.archive import Archive
    from rhmmtk.jobs import Job

    run("make-obs", "--job", f"2/{NJ}", "--symbols", shard_corpus["d"] / "obs.syms", shard_corpus["train_txt"],
        tmp_path / "o2.h5")
    with Archive(tmp_path / "o2.h5") as ar:
        assert ar.keys() == Job(2, NJ).select(shard_corpus["train_keys"])
    fails("make-obs", "--job", "1/2", "--write-symbols", tmp_path / "s", shard_corpus["train_txt"],
          tmp_path / "o.h5")


def test_front_end_shards_merge_to_the_whole(tmp_path, rng):
    """feats --job (per-speaker CMVN: whole speakers per shard) and quantize apply --job,
    merged, equal the single-process archives."""
    import soundfile as sf

    from rhmmtk.io.archive import Archive

    lines, spk = [], []
    for i, sec in enumerate((0.3, 0.5, 0.4, 0.35, 0.45)):
        t = np.arange(int(sec * 16000)) / 16000
        x = 5000 * np.sin(2 * np.pi * (150 + 900 * i + 700 * t) * t)
        x += 200 * rng.standard_normal(len(t))
        path = tmp_path / f"u{i}.wav"
        sf.write(str(path), np.round(x).astype(np.int16), 16000, subtype="PCM_16")
        lines.append(f"u{i} {path}")
        spk.append(f"u{i} s{[0, 0, 1, 2, 2][i]}")
    (tmp_path / "wav.scp").write_text("\n".join(lines) + "\n")
    (tmp_path / "utt2spk").write_text("\n".join(spk) + "\n")
    opts = ["--cmvn", "spk", "--utt2spk", tmp_path / "utt2spk", tmp_path / "wav.scp"]
    run("feats", *opts, tmp_path / "feats.h5")
    for j in (1, 2):
        run("feats", "--job", f"{j}/2", *opts, tmp_path / f"feats.{j}.h5")
    with Archive(tmp_path / "feats.1.h5") as a:
        assert a.keys() == ["u0", "u1"]          # speakers s0 | s1, s2
    run("merge-archives", tmp_path / "merged.h5", tmp_path / "feats.1.h5",
        tmp_path / "feats.2.h5")
    whole, merged = archive_arrays(tmp_path / "feats.h5"), archive_arrays(tmp_path / "merged.h5")
    assert list(whole) == list(merged)
    for k in whole:
        np.testing.assert_array_equal(whole[k], merged[k], err_msg=k)
    run("quantize", "learn", "--codes", "4", "--iters", "3", tmp_path / "feats.h5",
        tmp_path / "book.h5")
    run("quantize", "apply", tmp_path / "book.h5", tmp_path / "feats.h5", tmp_path / "codes.h5")
    for j in (1, 2, 3):
        run("quantize", "apply", "--job", f"{j}/3", tmp_path / "book.h5", tmp_path / "feats.h5",
            tmp_path / f"codes.{j}.h5")
    run("merge-archives", tmp_path / "cm.h5", *[tmp_path / f"codes.{j}.h5" for j in (1, 2, 3)])
    whole, merged = archive_arrays(tmp_path / "codes.h5"), archive_arrays(tmp_path / "cm.h5")
    assert list(whole) == list(merged)
    for k in whole:
        np.testing.assert_array_equal(whole[k], merged[k], err_msg=k)
