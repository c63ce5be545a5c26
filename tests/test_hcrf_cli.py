"""HCRF commands: train-hcrf from a train-cdhmm model, decode --phone-segments, score, info,
and bad input (one line, exit 1, nothing written)."""
import numpy as np

from cdhmm_data import sample, train_and_dev, true_model, write_data
from cli_helpers import fails, run
from rhmmtk.models import load_model


def write_segments(path, labels, syms):
    """The runs of equal labels as a segment list."""
    with open(path, "w") as f:
        for i, y in enumerate(labels):
            cut = np.flatnonzero(np.diff(y)) + 1
            for s, e in zip(np.concatenate([[0], cut]), np.concatenate([cut, [len(y)]])):
                f.write(f"u{i:03d} {s} {e} {syms[y[s]]}\n")
    return path


def test_train_decode_score(tmp_path, rng):
    truth = true_model(rng, P=3, S=2, M=2, D=3, sep=1.5)
    ((f, a), (feats, labels)), ((df, da), (dfeats, dlabels)) = train_and_dev(
        tmp_path, truth, rng, 12, 6)
    syms = truth.labels.symbols
    seg = write_segments(tmp_path / "train.seg", labels, syms)
    dseg = write_segments(tmp_path / "dev.seg", dlabels, syms)
    run("train-cdhmm", "--states", 2, "--mixtures", 2, "--iters", 2, f, a, tmp_path / "ml.h5")
    for c in ("moment", "distribution"):
        model = tmp_path / f"{c}.h5"
        run("train-hcrf", "--constraints", c, "--knots", 3, "--iters", 2, "--step", 0.01,
            "--dev-obs", df, "--dev-ali", dseg, "--history", tmp_path / f"{c}.tsv",
            tmp_path / "ml.h5", f, seg, model)
        m = load_model(model)
        assert m.constraints == c and len(m.info["history"]) == 3
        assert (tmp_path / f"{c}.tsv").read_text().count("\n") == 4
        hyp = run("decode", "--phone-segments", dseg, model, df, "-").stdout
        lines = hyp.splitlines()
        assert len(lines) == 6
        assert sum(len(l.split()) - 1 for l in lines) == len(dseg.read_text().splitlines())
        ref = tmp_path / "dev.ref"
        ref.write_text("".join(f"u{i:03d} " + " ".join(
            syms[y[s]] for s in np.concatenate([[0], np.flatnonzero(np.diff(y)) + 1])) + "\n"
            for i, y in enumerate(dlabels)))
        rep = run("score", "--confusion", ref, "-", input=hyp).stdout
        acc = float(rep.split("POS:  %Acc=")[1].split()[0])
        best = max(h["dev_acc"] for h in m.info["history"])
        assert abs(acc - 100 * best) < 0.006      # decode agrees (score rounds) with the trainer's dev score
        assert acc > 60
        assert "hcrf" in run("info", model).stdout
    # an HCRF continues from an HCRF; an MC model starts a DC one
    run("train-hcrf", "--constraints", "distribution", "--iters", 1, tmp_path / "moment.h5",
        f, seg, tmp_path / "dc2.h5")


def test_bad_input(tmp_path, rng):
    truth = true_model(rng, P=3, S=1, M=1, D=3)
    feats, labels = sample(truth, rng, 6)
    f, a = write_data(tmp_path, truth, feats, labels)
    syms = truth.labels.symbols
    seg = write_segments(tmp_path / "ok.seg", labels, syms)
    ml = tmp_path / "ml.h5"
    run("train-cdhmm", "--states", 1, "--iters", 1, f, a, ml)
    out = tmp_path / "x.h5"
    # a segment beyond its utterance's frames
    lines = seg.read_text().splitlines()
    last = max(i for i, l in enumerate(lines) if l.startswith("u000 "))
    u, s, e, lab = lines[last].split()
    lines[last] = f"{u} {s} {int(e) + 1} {lab}"
    (tmp_path / "long.seg").write_text("\n".join(lines) + "\n")
    for cmd, labs in (("train-hcrf", seg), ("train-hcrf-tagger", a)):
        assert "--patience needs a dev set" in fails(cmd, "--patience", 2, ml, f, labs, out)
    assert not out.exists()
    err = fails("train-hcrf", ml, f, tmp_path / "long.seg", out)
    assert "long.seg" in err and "utterance u000" in err and "outside the utterance" in err
    # an empty segment
    (tmp_path / "empty.seg").write_text("u000 0 4 ph0\nu000 4 4 ph1\n")
    err = fails("train-hcrf", ml, f, tmp_path / "empty.seg", out)
    assert "line 2" in err and "empty segment" in err and "u000" in err
    # a class with no training segments
    keep = [l for l in seg.read_text().splitlines() if not l.endswith(" ph2")]
    (tmp_path / "no2.seg").write_text("\n".join(keep) + "\n")
    err = fails("train-hcrf", ml, f, tmp_path / "no2.seg", out)
    assert "'ph2' has no training segments" in err
    # a label the model lacks
    (tmp_path / "bad.seg").write_text("u000 0 2 zz\n")
    err = fails("train-hcrf", ml, f, tmp_path / "bad.seg", out)
    assert "'zz'" in err and "line 1" in err
    # features of another dimension
    f4, _ = write_data(tmp_path, truth, [np.hstack([x, x[:, :1]]) for x in feats], labels, "w")
    err = fails("train-hcrf", ml, f4, seg, out)
    assert "u000" in err and "(frames, 3)" in err
    # K < 2 is a usage error
    p = fails("train-hcrf", "--constraints", "distribution", "--knots", 1, ml, f, seg, out)
    assert "--knots" in p
    assert not out.exists()
    # decode without --phone-segments, or on an utterance the list lacks
    run("train-hcrf", "--iters", 0, ml, f, seg, out)
    assert "--phone-segments" in fails("decode", out, f, tmp_path / "h.txt")
    (tmp_path / "one.seg").write_text("u000 0 2 ph0\n")
    err = fails("decode", "--phone-segments", tmp_path / "one.seg", out, f, tmp_path / "h.txt")
    assert "u001" in err and "no segments" in err
    assert not (tmp_path / "h.txt").exists()


def test_shards_sum_to_one_process(tmp_path, rng):
    """acc-hcrf over 3 shards + est-hcrf continue train-hcrf exactly: from the model of
    one iteration they give the model of two."""
    truth = true_model(rng, P=3, S=2, M=1, D=3, sep=1.5)
    feats, labels = sample(truth, rng, 9)
    f, a = write_data(tmp_path, truth, feats, labels)
    seg = write_segments(tmp_path / "train.seg", labels, truth.labels.symbols)
    run("train-cdhmm", "--states", 2, "--iters", 1, f, a, tmp_path / "ml.h5")
    for n in (1, 2):
        run("train-hcrf", "--constraints", "distribution", "--knots", 3, "--iters", n,
            tmp_path / "ml.h5", f, seg, tmp_path / f"it{n}.h5")
    accs = [tmp_path / f"g.{k}.acc" for k in (1, 2, 3)]
    for k, acc in enumerate(accs, 1):
        run("acc-hcrf", "--job", f"{k}/3", tmp_path / "it1.h5", f, seg, acc)
    run("est-hcrf", tmp_path / "it1.h5", *accs, tmp_path / "est2.h5")
    one, two = load_model(tmp_path / "it2.h5"), load_model(tmp_path / "est2.h5")
    for k in one.w:
        assert np.allclose(one.w[k], two.w[k], rtol=0, atol=1e-12), k
    assert not np.allclose(one.w["W"], load_model(tmp_path / "it1.h5").w["W"])
    h1, h2 = one.info["history"][-2], two.info["history"][-1]
    assert np.isclose(h1["objective"], h2["objective"], rtol=1e-10)
    # a missing shard, or statistics of another model, are refused
    assert "missing" in fails("est-hcrf", tmp_path / "it1.h5", *accs[:2], tmp_path / "x.h5")
    err = fails("est-hcrf", tmp_path / "it2.h5", *accs, tmp_path / "x.h5")
    assert "another model" in err and not (tmp_path / "x.h5").exists()
