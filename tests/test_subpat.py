"""The sub-pattern trigram tagger (rhmmtk.models.subpat): second-order Viterbi against
brute force, the perceptron update by hand, averaging as the mean of the iterates, the
reduction to first-order Viterbi, the command and bad input."""
import dataclasses
import itertools

import numpy as np
import pytest

from rhmmtk.models.subpat import (SubpatModel, SubpatOptions, attribute_keys, kernels,
                                  templates)
from rhmmtk.models.trigram import Batch
from rhmmtk.symbols import SymbolTable
from test_trigram import random_bisymbols, random_words

SEED = 20261127


def make_model(rng, bis, num_labels, tmpl, bits=12):
    labels = SymbolTable([f"y{i}" for i in range(num_labels)])
    obs = SymbolTable([f"x{i}" for i in range(bis.num_inputs)])
    return SubpatModel(labels, obs, bis, tmpl, rng.normal(size=1 << bits))


def reference_score(model, x, y):
    """Score of labelling y of word x, written out from the module docstring: each
    template's letter n-gram (boundary symbol past the ends) packed as attribute_keys
    does, with the last `order` labels (START before the word), and END's label-only
    factor; weights by the compiled hash `slot`."""
    slot = kernels()["slot"]
    B = len(model.observations)
    bits = B.bit_length()
    L = len(model.labels)
    T = len(x)
    s = 0.0
    for i in range(T + 1):
        last = i == T
        lab = [L, L] + list(y) + [L + 1]
        yo, yp, yc = lab[i], lab[i + 1], lab[i + 2]
        for t, (off, n, order) in enumerate(model.templates):
            if last and (n != 0 or order == 1):
                continue
            key = 0
            for j in range(n):
                k = i + off + j
                key |= (int(x[k]) if 0 <= k < T else B) << (bits * j)
            idx = slot(key, t, yc + 1, yp + 1 if order >= 2 else 0,
                       yo + 1 if order == 3 else 0, model.mask)
            s += model.weights[idx]
    return s


def brute(model, x):
    bis = model.bis
    choices = [bis.pair_label[bis.first[a]:bis.first[a] + bis.count[a]] for a in x]
    scored = [(reference_score(model, x, y), y) for y in itertools.product(*choices)]
    return max(scored, key=lambda p: p[0])


G2P = SubpatOptions(window=2, ngram=3, graphone_window=1, label_order=2)


@pytest.mark.parametrize("opts", [G2P, SubpatOptions(features="paper"),
                                  dataclasses.replace(G2P, label_order=1)],
                         ids=["g2p", "paper", "g2p-order1"])
def test_viterbi_is_the_best_labelling_by_brute_force(opts):
    rng = np.random.default_rng(SEED)
    print(f"[seed] {SEED}")
    bis = random_bisymbols(rng, 4, 5)
    model = make_model(rng, bis, 5, templates(opts))
    obs, _ = random_words(rng, bis, 12, 4)
    batch = Batch(bis, obs)
    paths, total = model.label_paths(batch)
    scores = model.path_scores(batch, paths)
    got = batch.split(paths)
    assert any(len(x) >= 3 for x in obs)          # trigram factors inside a word
    for x, y, s in zip(obs, got, scores):
        best, arg = brute(model, x)
        assert s == pytest.approx(best, abs=1e-10)
        np.testing.assert_array_equal(y, arg)
        assert reference_score(model, x, y) == pytest.approx(s, abs=1e-10)
    assert total == pytest.approx(sum(scores), abs=1e-9)


def test_order_three_templates_change_the_score():
    """The label-trigram templates are read: zeroing their weights changes some scores."""
    rng = np.random.default_rng(SEED)
    bis = random_bisymbols(rng, 3, 4, fewest=2)
    m2 = make_model(rng, bis, 4, templates(G2P))
    m1 = make_model(rng, bis, 4, templates(dataclasses.replace(G2P, label_order=1)))
    x = np.array([0, 1, 2])
    y = [bis.pair_label[bis.first[a]] for a in x]
    m1.weights = m2.weights
    assert reference_score(m2, x, y) != pytest.approx(reference_score(m1, x, y))


def test_first_order_templates_reduce_to_first_order_viterbi():
    """Without order-3 templates the second-order decoder finds the best path of a
    first-order chain with position-dependent scores e_i(y) + g_i(y', y)."""
    rng, model = first_order_model(SEED + 1)
    bis, L = model.bis, len(model.labels)
    obs, _ = random_words(rng, bis, 10, 6)
    batch = Batch(bis, obs)
    got = batch.split(model.label_paths(batch)[0])
    for x, y in zip(obs, got):
        # first-order Viterbi; a factor's score is reference_score's difference
        states = chain_states(model, x)
        delta = {L: 0.0}
        back = []
        for i in range(1, len(states)):
            new, bp = {}, {}
            for q in states[i]:
                best = max(states[i - 1], key=lambda p: delta[p] + pair(model, x, i - 1, p, q))
                new[q] = delta[best] + pair(model, x, i - 1, best, q)
                bp[q] = best
            delta = new
            back.append(bp)
        q, path = L + 1, []
        for bp in reversed(back):
            q = bp[q]
            path.append(q)
        np.testing.assert_array_equal(y, path[::-1][1:])


def first_order_model(seed):
    """A model of the g2p templates without the order-3 ones (6 labels), and its rng."""
    rng = np.random.default_rng(seed)
    opts = dataclasses.replace(G2P, label_order=1)
    model = make_model(rng, random_bisymbols(rng, 4, 6, fewest=2), 6, templates(opts))
    assert (model.templates[:, 2] < 3).all()
    return rng, model


def chain_states(model, x):
    """The first-order chain's candidate labels: START, each letter's, END."""
    bis, L = model.bis, len(model.labels)
    return [[L]] + [list(bis.pair_label[bis.first[a]:bis.first[a] + bis.count[a]])
                    for a in x] + [[L + 1]]


def pair(model, x, i, p, q):
    """The first-order factor at position i (i = len(x): END) for labels p -> q: the
    score of the order-1 and order-2 templates there, from a model whose order-3
    templates are absent."""
    slot = kernels()["slot"]
    B = len(model.observations)
    bits = B.bit_length()
    T = len(x)
    s = 0.0
    for t, (off, n, order) in enumerate(model.templates):
        if i == T and (n != 0 or order == 1):
            continue
        key = 0
        for j in range(n):
            k = i + off + j
            key |= (int(x[k]) if 0 <= k < T else B) << (bits * j)
        s += model.weights[slot(key, t, q + 1, p + 1 if order == 2 else 0, 0, model.mask)]
    return s


def test_attribute_keys_pack_the_window():
    """x = (0, 1, 2), 3 input symbols (2 bits a letter, boundary 3)."""
    bis = random_bisymbols(np.random.default_rng(0), 3, 4)
    batch = Batch(bis, [np.array([0, 1, 2])])
    tmpl = np.array([[-1, 2, 1], [0, 0, 2], [1, 1, 1]])
    keys = attribute_keys(batch, tmpl, 3)
    # position 0: (B, 0) -> 3 | 0 << 2 = 3; position 2: (1, 2) -> 1 | 2 << 2 = 9
    np.testing.assert_array_equal(keys[:, 0], [3, 0 | 1 << 2, 1 | 2 << 2])
    np.testing.assert_array_equal(keys[:, 1], [0, 0, 0])
    np.testing.assert_array_equal(keys[:, 2], [1, 2, 3])


def one_word_model(weights_bits=12):
    """A word of two letters, each allowing labels 0 and 1; template set: the label
    with the letter (order 1) and the label bigram (order 2)."""
    from rhmmtk.models.trigram import BiSymbols

    bis = BiSymbols([0, 0, 1, 1], [0, 1, 0, 1], 2)
    tmpl = np.array([[0, 1, 1], [0, 0, 2]])
    labels, obs = SymbolTable(["A", "B"]), SymbolTable(["a", "b"])
    return SubpatModel(labels, obs, bis, tmpl, np.zeros(1 << weights_bits))


def run_epoch(model, batch, order, w, u, c):
    keys, bounds, tlen = model.arrays(batch)
    work = np.zeros(len(batch.inputs), dtype=np.int64)
    bis = model.bis
    return kernels()["perceptron_epoch"](
        w, u, c, model.mask, keys, bounds, tlen, batch.inputs, batch.offsets, batch.max_len,
        bis.first, bis.count, bis.pair_label, len(model.labels), batch.labels,
        np.asarray(order, dtype=np.int64), work)


def test_perceptron_update_by_hand():
    """From w = 0 every labelling scores 0 and Viterbi keeps the first candidates (A A);
    gold is (B A): w gains +1 on gold's features and -1 on (A A)'s, the shared ones
    cancel. By hand: (a,B) +1, (a,A) -1; bigrams START->B +1, START->A -1, B->A +1,
    A->A -1; (b,A) and A->END cancel."""
    model = one_word_model()
    batch = Batch(model.bis, [np.array([0, 1])], [np.array([1, 0])])
    w, u = np.zeros_like(model.weights), np.zeros_like(model.weights)
    mistakes, c = run_epoch(model, batch, [0], w, u, 5.0)
    assert (mistakes, c) == (1, 6.0)
    slot = kernels()["slot"]
    m = model.mask
    L = 2
    # letter keys: 'a' = 0, 'b' = 1; template 0 (letter, label), template 1 (bigram)
    want = {slot(0, 0, 2, 0, 0, m): 1, slot(0, 0, 1, 0, 0, m): -1,
            slot(0, 1, 2, L + 1, 0, m): 1, slot(0, 1, 1, L + 1, 0, m): -1,
            slot(0, 1, 1, 2, 0, m): 1, slot(0, 1, 1, 1, 0, m): -1}
    assert len(want) == 6                      # no two features share a slot here
    expect = np.zeros_like(w)
    for i, v in want.items():
        expect[i] += v
    np.testing.assert_array_equal(w, expect)
    np.testing.assert_array_equal(u, 5.0 * expect)    # u += c * update
    # now the word is right: a second pass makes no mistake and no update
    w2 = w.copy()
    mistakes, c = run_epoch(model, batch, [0], w, u, c)
    assert mistakes == 0 and c == 7.0
    np.testing.assert_array_equal(w, w2)


def test_averaging_is_the_mean_of_the_iterates():
    """w - u / c after epochs = the mean of the weight vectors after every word, the
    iterates taken one word at a time by separate calls."""
    rng = np.random.default_rng(SEED + 2)
    bis = random_bisymbols(rng, 4, 5, fewest=2)
    model = make_model(rng, bis, 5, templates(G2P))
    obs, labels = random_words(rng, bis, 8, 5)
    batch = Batch(bis, obs, labels)
    orders = [rng.permutation(len(batch)) for _ in range(3)]
    w, u, c = np.zeros_like(model.weights), np.zeros_like(model.weights), 0.0
    for order in orders:
        mistakes, c = run_epoch(model, batch, order, w, u, c)
    avg = w - u / c
    w1, u1, c1, iterates = np.zeros_like(w), np.zeros_like(w), 0.0, []
    for order in orders:
        for k in order:
            _, c1 = run_epoch(model, batch, [k], w1, u1, c1)
            iterates.append(w1.copy())
    assert c == len(iterates) == 24
    assert np.abs(iterates[-1]).sum() > 0 and np.abs(avg - iterates[-1]).max() > 0.1
    np.testing.assert_allclose(avg, np.mean(iterates, axis=0), atol=1e-12)


def test_train_decode_info_and_bad_input(tmp_path):
    """The command trains on a tiny lexicon, learns it, keeps the best dev epoch; decode
    and info read the model; an unknown letter and empty data are one line each."""
    from cli_helpers import fails, run

    words = ["cat", "act", "tac", "at", "ta", "cab", "bat", "tab", "abc"]
    sym = {"a": "AE", "b": "B", "c": "K", "t": "T"}
    (tmp_path / "w.txt").write_text("".join(f"w{i} {' '.join(w)}\n" for i, w in enumerate(words)))
    (tmp_path / "w.ali").write_text("".join(f"w{i} {' '.join(sym[c] for c in w)}\n"
                                            for i, w in enumerate(words)))
    d = str(tmp_path)
    run("make-obs", "-q", "--write-symbols", f"{d}/let.syms", f"{d}/w.txt", f"{d}/w.h5")
    run("train-subpat", "-q", "--iters", "3", "--hash-bits", "14", "--window", "1",
        "--ngram", "2", "--dev-obs", f"{d}/w.h5", "--dev-ali", f"{d}/w.ali",
        "--history", f"{d}/hist.tsv", f"{d}/w.h5", f"{d}/w.ali", f"{d}/m.h5")
    run("decode", "-q", f"{d}/m.h5", f"{d}/w.h5", f"{d}/w.hyp")
    assert (tmp_path / "w.hyp").read_text() == (tmp_path / "w.ali").read_text()
    info = run("info", "--json", f"{d}/m.h5").stdout
    assert '"model_type": "subpat"' in info and '"best_iteration"' in info
    assert len((tmp_path / "hist.tsv").read_text().splitlines()) == 4
    # a letter never seen in training: train on the words without 'b', decode all
    sub = [i for i, w in enumerate(words) if "b" not in w]
    (tmp_path / "s.ali").write_text("".join(f"w{i} {' '.join(sym[c] for c in words[i])}\n"
                                            for i in sub))
    (tmp_path / "s.txt").write_text("".join(f"w{i} {' '.join(words[i])}\n" for i in sub))
    run("make-obs", "-q", "--symbols", f"{d}/let.syms", f"{d}/s.txt", f"{d}/s.h5")
    run("train-subpat", "-q", "--iters", "1", "--hash-bits", "14", f"{d}/s.h5", f"{d}/s.ali",
        f"{d}/s.h5m")
    line = fails("decode", "-q", f"{d}/s.h5m", f"{d}/w.h5", f"{d}/s.hyp").strip()
    assert len(line.splitlines()) == 1 and "never seen in training" in line and "'b'" in line
    # empty training data
    (tmp_path / "e.ali").write_text("")
    err = fails("train-subpat", "-q", f"{d}/w.h5", f"{d}/e.ali", f"{d}/e.h5")
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "e.h5").exists()


def enumeration(model, x):
    """Every labelling of word x with its reference score, best first (stable: ties in
    itertools' order)."""
    bis = model.bis
    choices = [bis.pair_label[bis.first[a]:bis.first[a] + bis.count[a]] for a in x]
    scored = [(reference_score(model, x, y), list(y)) for y in itertools.product(*choices)]
    return sorted(scored, key=lambda p: -p[0])


@pytest.mark.parametrize("opts", [G2P, SubpatOptions(features="paper")], ids=["g2p", "paper"])
def test_nbest_is_the_top_of_the_enumeration(opts):
    """The k best labellings of short words against brute force: the same sequences in
    the same order, scores to 1e-10; the first is decode's Viterbi path; k above the
    number of labellings gives them all."""
    rng = np.random.default_rng(SEED + 3)
    print(f"[seed] {SEED + 3}")
    bis = random_bisymbols(rng, 4, 5, fewest=2)
    model = make_model(rng, bis, 5, templates(opts))
    obs, _ = random_words(rng, bis, 10, 4)
    viterbi = Batch(bis, obs).split(model.label_paths(Batch(bis, obs))[0])
    assert any(len(x) >= 3 for x in obs)
    enumerated = [enumeration(model, x) for x in obs]
    assert max(map(len, enumerated)) < 100
    for k in (1, 4, 100):
        for want, got, v in zip(enumerated, model.nbest(obs, k), viterbi):
            assert len(got) == min(k, len(want))
            assert [ys for _, ys in got] == [ys for _, ys in want[:k]]
            np.testing.assert_allclose([s for s, _ in got], [s for s, _ in want[:k]],
                                       rtol=0, atol=1e-10)
            assert got[0][1] == list(v)


def test_nbest_ties_are_deterministic_and_exact():
    """All weights zero: every labelling ties at 0. The list is the first k of them,
    distinct, the same on every call, its first Viterbi's (the first candidates); with
    weights on a few values (many ties) the scores are still brute force's top k."""
    rng = np.random.default_rng(SEED + 4)
    bis = random_bisymbols(rng, 3, 4, fewest=2)
    model = make_model(rng, bis, 4, templates(G2P))
    obs, _ = random_words(rng, bis, 6, 4)
    model.weights = np.zeros_like(model.weights)
    first = model.nbest(obs, 5)
    assert first == model.nbest(obs, 5)
    viterbi = Batch(bis, obs).split(model.label_paths(Batch(bis, obs))[0])
    for x, got, v in zip(obs, first, viterbi):
        assert all(s == 0.0 for s, _ in got)
        assert len({tuple(ys) for _, ys in got}) == len(got) == min(5, len(enumeration(model, x)))
        assert got[0][1] == list(v)
    model.weights = rng.integers(-1, 2, size=len(model.weights)).astype(float)
    for x, got in zip(obs, model.nbest(obs, 6)):
        want = enumeration(model, x)
        assert [s for s, _ in got] == pytest.approx([s for s, _ in want[:6]], abs=1e-10)
        assert all(reference_score(model, x, ys) == pytest.approx(s, abs=1e-10)
                   for s, ys in got)
        assert len({tuple(ys) for _, ys in got}) == len(got)


# --- the CRF loss (rhmmtk.models.subpat_crf) --------------------------------------------------

def labellings(model, x):
    """Every labelling of word x allowed by the candidate sets, with its reference score."""
    bis = model.bis
    choices = [bis.pair_label[bis.first[a]:bis.first[a] + bis.count[a]] for a in x]
    return [(reference_score(model, x, y), list(y)) for y in itertools.product(*choices)]


def brute_log_z(model, x):
    scores = np.array([s for s, _ in labellings(model, x)])
    return float(np.logaddexp.reduce(scores))


def brute_nll(model, xs, ys):
    return sum(brute_log_z(model, x) - reference_score(model, x, y) for x, y in zip(xs, ys))


@pytest.mark.parametrize("opts", [G2P, SubpatOptions(features="paper")], ids=["g2p", "paper"])
def test_crf_log_z_and_marginals_by_brute_force(opts):
    """log Z of short words and every trigram marginal p(y_{i-2}, y_{i-1}, y_i | x) (START
    and END included) against enumeration of all labellings; the weights are scaled up so
    that the distribution is far from uniform."""
    from rhmmtk.models.subpat_crf import word_marginals

    rng = np.random.default_rng(SEED + 5)
    print(f"[seed] {SEED + 5}")
    bis = random_bisymbols(rng, 4, 5, fewest=2)
    model = make_model(rng, bis, 5, templates(opts))
    model.weights *= 2.0
    L = len(model.labels)
    obs, _ = random_words(rng, bis, 8, 4)
    assert any(len(x) >= 3 for x in obs)
    for x in obs:
        log_z, mu = word_marginals(model, x)
        assert np.isfinite(log_z)
        assert log_z == pytest.approx(brute_log_z(model, x), abs=1e-10)
        want = {}
        for s, y in labellings(model, x):
            lab = [L, L] + y + [L + 1]
            for jj in range(2, len(x) + 3):
                key = (jj, lab[jj - 2], lab[jj - 1], lab[jj])
                want[key] = want.get(key, 0.0) + np.exp(s - log_z)
        assert max(want.values()) > 0.5 and len(want) > len(x) + 1     # not uniform, not one
        assert set(want) <= set(mu)
        for key, p in mu.items():
            assert p == pytest.approx(want.get(key, 0.0), abs=1e-10), key
        for jj in range(2, len(x) + 3):                 # each position's marginals sum to 1
            assert sum(p for k, p in mu.items() if k[0] == jj) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("opts", [G2P, SubpatOptions(features="paper")], ids=["g2p", "paper"])
def test_crf_gradient_against_finite_differences(opts):
    """The objective's value against brute force, and its gradient at every slot of the
    words' features (and a few others, where it must be l2 w) against central
    differences."""
    from rhmmtk.models.subpat_crf import objective

    rng = np.random.default_rng(SEED + 6)
    print(f"[seed] {SEED + 6}")
    bis = random_bisymbols(rng, 4, 5, fewest=2)
    model = make_model(rng, bis, 5, templates(opts))
    obs, labels = random_words(rng, bis, 5, 4)
    batch = Batch(bis, obs, labels)
    l2 = 0.3
    value, grad = objective(model, batch, l2)
    w0 = model.weights.copy()
    assert value == pytest.approx(brute_nll(model, obs, labels) + 0.5 * l2 * w0 @ w0, rel=1e-10)
    touched = np.flatnonzero(np.abs(grad - l2 * w0) > 1e-6)
    assert len(touched) > 20
    check = np.concatenate([touched, rng.choice(len(w0), 5, replace=False)])
    h = 1e-5
    for i in check:
        model.weights = w0.copy()
        model.weights[i] += h
        up, _ = objective(model, batch, l2)
        model.weights[i] -= 2 * h
        down, _ = objective(model, batch, l2)
        assert grad[i] == pytest.approx((up - down) / (2 * h), abs=1e-6), i


def test_crf_without_trigram_templates_is_a_first_order_crf():
    """With no order-3 templates the likelihood is a first-order CRF's over the chain
    START -> x_1 .. x_T -> END with factors `pair` (test above): log Z by the first-order
    forward recursion, written here on its own."""
    from rhmmtk.models.subpat_crf import objective, word_marginals

    rng, model = first_order_model(SEED + 7)
    bis, L = model.bis, len(model.labels)
    obs, labels = random_words(rng, bis, 8, 6)
    want_nll = 0.0
    for x, y in zip(obs, labels):
        states = chain_states(model, x)
        alpha = {L: 0.0}
        for i in range(1, len(states)):
            alpha = {q: np.logaddexp.reduce([alpha[p] + pair(model, x, i - 1, p, q)
                                             for p in states[i - 1]]) for q in states[i]}
        log_z = alpha[L + 1]
        path = [L] + list(y) + [L + 1]
        gold = sum(pair(model, x, i, path[i], path[i + 1]) for i in range(len(x) + 1))
        assert word_marginals(model, x)[0] == pytest.approx(log_z, abs=1e-10)
        want_nll += log_z - gold
    assert objective(model, Batch(bis, obs, labels))[0] == pytest.approx(want_nll, rel=1e-10)


def test_crf_sgd_step_by_hand_and_lazy_scale():
    """One epoch of SGD over one word from w = 0 (uniform p over the 4 labellings of the
    two-letter word): eta = rate; w = -rate (E[phi] - phi(gold)), the L2 shrink of
    w = 0 is 0; a second word-step equals the eager update (1 - eta l2 / N) w - eta g."""
    from rhmmtk.models.subpat_crf import _arguments, kernels as crf_kernels, objective

    model = one_word_model()
    batch = Batch(model.bis, [np.array([0, 1])], [np.array([1, 0])])
    rate, l2 = 0.5, 0.2
    v = np.zeros_like(model.weights)
    args = _arguments(model, batch)
    order = np.array([0], dtype=np.int64)
    nll, scale, t, eta, _ = crf_kernels()["crf_epoch"](v, 1.0, 0.0, rate, l2, *args,
                                                       batch.labels, order, None, 0.0,
                                                       0.0)
    assert nll == pytest.approx(np.log(4)) and eta == rate and t == 1.0
    _, g0 = objective(model, batch)           # model.weights = 0
    np.testing.assert_allclose(scale * v, -rate * g0, atol=1e-12)
    slot = kernels()["slot"]
    # (a, B) is gold's, half the labellings have it: E - gold = 1/2 - 1
    assert g0[slot(0, 0, 2, 0, 0, model.mask)] == pytest.approx(-0.5)
    w1 = scale * v
    model.weights = w1.copy()
    _, g1 = objective(model, batch)
    eta2 = rate / (1 + rate * l2 * 1.0)
    _, scale2, _, eta_2, _ = crf_kernels()["crf_epoch"](v, scale, t, rate, l2, *args,
                                                         batch.labels, order, None,
                                                         0.0, 0.0)
    assert eta_2 == pytest.approx(eta2) and scale2 == pytest.approx(scale * (1 - eta2 * l2))
    np.testing.assert_allclose(scale2 * v, (1 - eta2 * l2) * w1 - eta2 * g1, atol=1e-12)


def crf_sgd_problem():
    """A random model (G2P templates, weights from 0) and 6 random words, with 3 epochs'
    word orders."""
    rng = np.random.default_rng(SEED + 5)
    bis = random_bisymbols(rng, 4, 5, fewest=2)
    model = make_model(rng, bis, 5, templates(G2P))
    model.weights[:] = 0.0
    obs, labels = random_words(rng, bis, 6, 4)
    orders = [rng.permutation(len(obs)).astype(np.int64) for _ in range(3)]
    return model, obs, labels, orders


def crf_epochs(model, batch, orders, rate, l2, average, rescale_below):
    """crf_epoch over `orders` from w = 0: (v, scale, t, a, u)."""
    from rhmmtk.models.subpat_crf import _arguments, kernels as crf_kernels

    args = _arguments(model, batch)
    v = np.zeros_like(model.weights)
    u = np.zeros_like(v) if average else None
    scale, t, a = 1.0, 0.0, 0.0
    for order in orders:
        _, scale, t, _, a = crf_kernels()["crf_epoch"](v, scale, t, rate, l2, *args,
                                                       batch.labels, order, u, a,
                                                       rescale_below)
    return v, scale, t, a, u


@pytest.mark.parametrize("rescale_below", [0.0, 0.5])
def test_crf_averaging_is_the_mean_of_the_iterates(rescale_below):
    """(a v - u) / t after 3 epochs = the mean of the 18 iterates of a dense reference
    SGD written from the docstring (w <- (1 - eta l2 / N) w - eta grad NLL_k(w), the
    gradient from `objective`), with the scale folded into v at every step below 0.5 or
    never; the iterates themselves are unchanged by averaging, bit for bit."""
    from rhmmtk.models.subpat_crf import objective

    model, obs, labels, orders = crf_sgd_problem()
    batch = Batch(model.bis, obs, labels)
    rate, l2, N = 0.3, 2.0, len(obs)
    v, scale, t, a, u = crf_epochs(model, batch, orders, rate, l2, True, rescale_below)
    w, step, iterates = np.zeros_like(model.weights), 0, []
    for order in orders:
        for k in order:
            eta = rate / (1 + rate * l2 * step / N)
            model.weights = w
            _, g = objective(model, Batch(model.bis, [obs[k]], [labels[k]]))
            w = (1 - eta * l2 / N) * w - eta * g
            iterates.append(w)
            step += 1
    assert t == len(iterates) == 18
    assert (scale >= 0.5) == (rescale_below == 0.5)    # the fold happened, or never did
    np.testing.assert_allclose(scale * v, iterates[-1], atol=1e-12)
    mean = np.mean(iterates, axis=0)
    assert np.abs(mean - iterates[-1]).max() > 0.01
    np.testing.assert_allclose((a * v - u) / t, mean, atol=1e-12)
    v0, scale0, t0, a0, u0 = crf_epochs(model, batch, orders, rate, l2, False, rescale_below)
    np.testing.assert_array_equal(v0, v)
    assert (scale0, t0, a0, u0) == (scale, t, 0.0, None)


@pytest.mark.parametrize("args,what", [
    (["--loss", "svm"], "--loss"),
    (["--loss", "crf", "--l2", "-1"], "--l2"),
    (["--loss", "crf", "--rate", "0"], "--rate"),
    (["--loss", "crf", "--rate", "nan"], "--rate"),
])
def test_crf_bad_options_are_one_line(tmp_path, args, what):
    """Bad --loss, --l2 and --rate values: click's one error line naming the option, no
    traceback, no model."""
    from cli_helpers import fails

    (tmp_path / "w.txt").write_text("w0 a b\n")
    (tmp_path / "w.ali").write_text("w0 A B\n")
    err = fails("train-subpat", *args, tmp_path / "w.txt", tmp_path / "w.ali", tmp_path / "m.h5")
    lines = [line for line in err.splitlines() if "error" in line.lower()]
    assert len(lines) == 1 and what in lines[0] and "Invalid value" in lines[0], err
    assert not (tmp_path / "m.h5").exists()


def test_crf_training_learns_a_lexicon_and_decodes(tmp_path):
    """train-subpat --loss crf on a tiny lexicon whose letters a and c have two labels each
    (chosen by the letter before): the objective falls over the epochs, the model (the
    same file type) decodes its training words right."""
    from cli_helpers import run

    words = ["cat", "act", "tac", "at", "ta", "cab", "bat", "tab", "abc", "aca", "cca"]
    sym = {"a": "AE", "b": "B", "c": "K", "t": "T"}

    def label(w, i):
        if w[i] == "a" and i and w[i - 1] == "c":
            return "EY"
        return "S" if w[i] == "c" and i and w[i - 1] == "a" else sym[w[i]]

    (tmp_path / "w.txt").write_text("".join(f"w{i} {' '.join(w)}\n" for i, w in enumerate(words)))
    (tmp_path / "w.ali").write_text("".join(
        f"w{i} {' '.join(label(w, j) for j in range(len(w)))}\n" for i, w in enumerate(words)))
    d = str(tmp_path)
    run("make-obs", "-q", "--write-symbols", f"{d}/let.syms", f"{d}/w.txt", f"{d}/w.h5")
    run("train-subpat", "-q", "--features", "paper", "--loss", "crf", "--l2", "0.1", "--iters",
        "4", "--hash-bits", "14", "--history", f"{d}/hist.tsv", f"{d}/w.h5", f"{d}/w.ali",
        f"{d}/m.h5")
    rows = [r.split("\t") for r in (tmp_path / "hist.tsv").read_text().splitlines()]
    loss = [float(r[rows[0].index("loss")]) for r in rows[1:]]
    assert len(loss) == 4 and loss[0] > 1 and all(b < a for a, b in zip(loss, loss[1:])), loss
    run("decode", "-q", f"{d}/m.h5", f"{d}/w.h5", f"{d}/w.hyp")
    assert (tmp_path / "w.hyp").read_text() == (tmp_path / "w.ali").read_text()
    info = run("info", "--json", f"{d}/m.h5").stdout
    assert '"loss": "crf"' in info
