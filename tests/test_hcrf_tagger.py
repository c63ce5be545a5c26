"""The frame-tagging HCRF (rhmmtk.models.hcrf.tagger): log p(y|x) against brute-force
enumeration of phone-loop paths, the gradient against finite differences, the exact
conversion from an ML CDHMM, and the command."""
import itertools
import json

import numpy as np
from scipy.special import logsumexp

from cdhmm_data import sample, sample_loop, train_and_dev, true_model
from cli_helpers import run
from rhmmtk.models import load_model
from rhmmtk.models.cdhmm import CdhmmDecodeOptions
from rhmmtk.models.hcrf.tagger import WEIGHTS, HcrfTagger, HcrfTaggerDecodeOptions
from rhmmtk.models.phoneloop import forward_backward


def tiny(rng, constraints="moment"):
    hmm = true_model(rng, P=2, S=2, M=2, D=2, sep=1.0)
    X = rng.normal(size=(40, 2)) * 2
    m = HcrfTagger.from_cdhmm(hmm, X, "variance", constraints, 3)
    w = {k: v + 0.3 * rng.normal(size=v.shape) for k, v in m.w.items()}
    w["nxt"][:, -1] = 0.0
    return hmm, m.with_weights(w)


def brute_log_p(model, X, y):
    """log p(y | x) by enumerating every phone-loop path (stay, advance, or leave and
    enter any phone's first state, re-entering the same phone included)."""
    P, S, M, _ = model.w["W"].shape
    E, _ = model.scores(model.features(X))
    w = model.w
    init, bigram, final = w["init"], w["bigram"], w["final"]
    states = [(p, j) for p in range(P) for j in range(S)]
    num, den = [], []
    for path in itertools.product(states, repeat=len(X)):
        if path[0][1] != 0:
            continue
        for moves in itertools.product(range(2), repeat=len(X) - 1):   # 1: via a phone exit
            s = init[path[0][0]] + sum(E[t, p * S + j] for t, (p, j) in enumerate(path))
            ok = True
            for (a, b), via in zip(zip(path, path[1:]), moves):
                (p, j), (q, k) = a, b
                if via:
                    ok &= k == 0
                    s += w["ext"][p, j] + bigram[p, q]
                elif q == p and k == j:
                    s += w["loop"][p, j]
                elif q == p and k == j + 1:
                    s += w["nxt"][p, j]
                else:
                    ok = False
            if not ok:
                continue
            s += w["ext"][path[-1]] + final[path[-1][0]]
            den.append(s)
            if all(p == y[t] for t, (p, _) in enumerate(path)):
                num.append(s)
    return logsumexp(num) - logsumexp(den)


def test_brute_force_and_gradient(rng):
    for constraints in ("moment", "distribution"):
        _, model = tiny(rng, constraints)
        X = rng.normal(size=(4, 2))
        y = np.array([0, 0, 1, 1])
        ll, g = model.utterance_gradient(model.features(X), y)
        assert np.isclose(ll, brute_log_p(model, X, y), atol=1e-9)
        h = 1e-5
        for k in WEIGHTS:
            for i in rng.choice(model.w[k].size, size=min(4, model.w[k].size), replace=False):
                if k == "nxt" and np.unravel_index(i, model.w[k].shape)[-1] == 1:
                    continue    # the last state's advance does not exist
                vals = []
                for d in (h, -h):
                    w = {kk: v.copy() for kk, v in model.w.items()}
                    w[k].reshape(-1)[i] += d
                    vals.append(model.with_weights(w).utterance_gradient(model.features(X), y)[0])
                assert np.isclose(g[k].reshape(-1)[i], (vals[0] - vals[1]) / (2 * h),
                                  rtol=1e-5, atol=1e-7), (constraints, k, i)
        post = model.frame_posteriors(model.features(X))
        assert np.allclose(post.sum(1), 1.0)


def test_conversion_reproduces_hmm_posteriors(rng):
    hmm = true_model(rng, P=3, S=2, M=2, D=3)
    feats, _ = sample(hmm, rng, n_utts=3)
    X = np.concatenate(feats).astype(np.float64)
    for c in ("moment", "distribution"):
        m = HcrfTagger.from_cdhmm(hmm, X, "variance", c, 4)
        x = feats[0].astype(np.float64)
        _, gamma, _ = forward_backward(hmm.state_scores(x), *hmm.graph())
        ref = gamma.reshape(len(x), 3, 2).sum(2)
        assert np.allclose(m.frame_posteriors(m.features(x)), ref, atol=1e-8, rtol=0)
    # the best path is the CDHMM decoder's, at its default weights and at others
    for o in (None, CdhmmDecodeOptions(lm_scale=3.0, insertion_penalty=-2.0)):
        m = HcrfTagger.from_cdhmm(hmm, X, lm=o)
        for x in feats:
            x = x.astype(np.float64)
            want = hmm.decode([x], o).labels[0]
            assert np.array_equal(m.decode([x], HcrfTaggerDecodeOptions("viterbi")).labels[0],
                                  want)
    # the LM weighted as the Viterbi decoder weights it: the HMM's posteriors on that graph
    lm = CdhmmDecodeOptions(lm_scale=3.0, insertion_penalty=-2.0)
    m = HcrfTagger.from_cdhmm(hmm, X, lm=lm)
    _, gamma, _ = forward_backward(hmm.state_scores(x), *hmm.graph(3.0, -2.0))
    assert np.allclose(m.frame_posteriors(m.features(x)), gamma.reshape(len(x), 3, 2).sum(2),
                       atol=1e-8, rtol=0)


def test_train_and_decode_cli(tmp_path, rng):
    truth = true_model(rng, P=3, S=2, M=1, D=3, sep=1.0)
    ((f, a), _), ((df, da), (dev_x, _)) = train_and_dev(tmp_path, truth, rng, 8, 4)
    run("train-cdhmm", "--states", 2, "--iters", 1, f, a, tmp_path / "ml.h5")
    run("train-hcrf-tagger", "--iters", 3, "--dev-obs", df, "--dev-ali", da,
        "--lm-scale", 2, "--insertion-penalty", -1, tmp_path / "ml.h5", f, a, tmp_path / "tag.h5")
    m = load_model(tmp_path / "tag.h5")
    opts = json.loads(m.attrs["options"])
    assert opts["lm_scale"] == 2.0 and opts["insertion_penalty"] == -1.0
    hmm = load_model(tmp_path / "ml.h5")
    # the bigram started at 2 x the HMM's - 1; 3 RPROP steps move it by at most 0.0364
    assert np.abs(m.w["bigram"] - (2 * hmm.lm_bigram - 1)).max() <= 0.0365
    h = m.info["history"]
    assert h[-1]["loglik"] > h[0]["loglik"]
    out = run("decode", tmp_path / "tag.h5", df, "-").stdout
    rep = run("score", da, "-", input=out).stdout
    acc = float(rep.split("POS:  %Acc=")[1].split()[0])
    assert abs(acc - 100 * max(r["dev_acc"] for r in h)) < 0.006
    out = run("decode", "--tagger-decode", "viterbi", tmp_path / "tag.h5", df, "-").stdout
    want = m.decode([x.astype(np.float64) for x in dev_x], HcrfTaggerDecodeOptions("viterbi"))
    assert [line.split()[1:] for line in out.splitlines()] == \
        [[m.labels.symbols[k] for k in lab] for lab in want.labels]


def test_score_has_mean_zero_at_the_sampling_model(rng):
    """Consistency on sampled data: at the model the data came from, the gradient of log
    p(y | x) averages to zero (within sampling error) in every weight, the bigram's
    included; with a bigram weight moved off, its gradient points back, significantly."""
    hmm = true_model(rng, P=2, S=2, M=1, D=2, sep=1.0)
    data = sample_loop(hmm, rng, 400)
    truth = HcrfTagger.from_cdhmm(hmm, np.concatenate([x for x, _ in data]))
    off = {k: v.copy() for k, v in truth.w.items()}
    off["bigram"][0, 1] += 2.0
    for model, want in ((truth, None), (truth.with_weights(off), True)):
        g = {k: [] for k in WEIGHTS}
        for x, y in data:
            _, gr = model.utterance_gradient(model.features(x), y)
            for k in WEIGHTS:
                g[k].append(gr[k].ravel())
        z = {k: np.mean(v, 0) / (np.std(v, 0) / np.sqrt(len(data)) + 1e-12)
             for k, v in g.items()}
        if want is None:
            assert max(np.abs(v).max() for v in z.values()) < 4.5, z
        else:
            assert z["bigram"][1] < -4, z["bigram"]
