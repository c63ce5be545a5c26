"""EM for the R-HMM on data sampled from a random R-HMM: monotone log-likelihood (floor = 0)
and MAP objective (floor > 0), m = 1 is the counting estimate, the E-step's likelihood is
RHMM.loglik summed, and UNIGRAM decodes to argmax_a p(a) p(x | a)."""
import numpy as np
import pytest

from checks import assert_same_marginals, checked, normalised
from rhmmtk.training_data import Corpus
from rhmmtk.models.rhmm.em import (Support, count_stats, e_step, make_buckets, m_step, train,
                       unigram_operators)
from rhmmtk.models.rhmm.decoder import Decoder, decode
from rhmmtk.models.rhmm.params import random_rhmm
from rhmmtk.symbols import SymbolTable


def make_corpus(samples, l, n):
    labels = SymbolTable([f"L{i}" for i in range(l)])
    obs = SymbolTable([f"o{i}" for i in range(n)])
    keys = [f"utt{i}" for i in range(len(samples))]
    return Corpus(keys, [s[0] for s in samples], [s[1] for s in samples], labels, obs)


@pytest.fixture
def data(rng):
    """A random R-HMM (l=3, m=2, n=5, one label bigram missing) and 300 sequences from it."""
    l, m, n = 3, 2, 5
    model = random_rhmm(l, m, n, rng, stop=0.15, sparsity=0.2, concentration=0.5)
    return model, make_corpus(model.sample(300, rng), l, n)


def drops(values, rel=1e-8):
    """Steps i -> i+1 where the sequence decreased by more than rel * |value|."""
    values = np.asarray(values, dtype=float)
    out = [(i, values[i], values[i + 1]) for i in range(len(values) - 1)
           if values[i + 1] < values[i] - rel * abs(values[i])]
    return out


@pytest.mark.parametrize("m, seed_offset", [(2, 0), (3, 1), (4, 2)])
def test_loglik_never_decreases_floor0(data, seed, m, seed_offset):
    _, corpus = data
    _, hist, _ = train(corpus, m, iters=60, seed=seed + seed_offset, floor=0.0)
    ll = [h["loglik"] for h in hist if h["loglik"] is not None]
    assert len(ll) == 60
    print(f"m={m}: loglik {ll[0]:.4f} -> {ll[-1]:.4f}")
    assert not drops(ll), drops(ll)
    assert ll[-1] > ll[0]                       # and EM actually moved


@pytest.mark.parametrize("floor", [1e-3, 0.5])
def test_map_objective_never_decreases(data, seed, floor):
    _, corpus = data
    _, hist, _ = train(corpus, 3, iters=60, seed=seed, floor=floor)
    obj = [h["objective"] for h in hist if h["objective"] is not None]
    assert len(obj) == 60
    print(f"floor={floor}: objective {obj[0]:.4f} -> {obj[-1]:.4f}")
    assert not drops(obj), drops(obj)
    assert obj[-1] > obj[0]


def counting_estimate(corpus):
    """The supervised HMM by counting, written out directly (no em.m_step)."""
    l, n = len(corpus.label_table), len(corpus.obs_table)
    first, last, occ = np.zeros(l), np.zeros(l), np.zeros(l)
    emit, big = np.zeros((l, n)), np.zeros((l, l))
    for a, x in zip(corpus.labels, corpus.obs):
        first[a[0]] += 1
        last[a[-1]] += 1
        for i in range(len(a)):
            occ[a[i]] += 1
            emit[a[i], x[i]] += 1
            if i + 1 < len(a):
                big[a[i], a[i + 1]] += 1
    return first / len(corpus), emit / occ[:, None], big / occ[:, None], last / occ


def test_m1_is_the_counting_estimate(data, seed):
    _, corpus = data
    pi, o, t, f = counting_estimate(corpus)
    # count_stats normalised by hand gives the same numbers
    support = Support(corpus)
    st = count_stats(corpus, support)
    occ = st.o.reshape(support.l, support.n).sum(axis=1)
    np.testing.assert_allclose(st.pi[:, 0] / len(corpus), pi, rtol=0, atol=1e-15)
    np.testing.assert_allclose(st.o.reshape(support.l, support.n) / occ[:, None], o, atol=1e-15)
    np.testing.assert_allclose(st.f[:, 0] / occ, f, atol=1e-15)
    tc = np.zeros_like(t)
    tc[support.pairs[:, 0], support.pairs[:, 1]] = st.t[:, 0, 0]
    np.testing.assert_allclose(tc / occ[:, None], t, atol=1e-15)
    for iters in (0, 1, 5):
        model, hist, _ = train(corpus, 1, iters=iters, seed=seed, floor=0.0)
        assert model.shape[1] == 1
        np.testing.assert_allclose(model.pi[:, 0], pi, atol=1e-12, err_msg=f"iters={iters}")
        np.testing.assert_allclose(model.o[:, :, 0], o, atol=1e-12, err_msg=f"iters={iters}")
        np.testing.assert_allclose(model.t[:, :, 0, 0], t, atol=1e-12, err_msg=f"iters={iters}")
        np.testing.assert_allclose(model.f[:, 0], f, atol=1e-12, err_msg=f"iters={iters}")
        # iterating does not change the likelihood either
        ll = [h["loglik"] for h in hist if h["loglik"] is not None]
        if ll:
            np.testing.assert_allclose(ll, ll[0], rtol=1e-12)


def pair_transitions(model, support):
    """tp (P, m, m) as m_step returns it, from an RHMM's t."""
    return model.t[support.pairs[:, 0], support.pairs[:, 1]]


def test_estep_loglik_is_sum_of_rhmm_loglik(data, rng):
    true, corpus = data
    support = Support(corpus)
    l, m, n = true.shape
    buckets = make_buckets(corpus, support, m)
    # the true model, and a random model restricted to the training support
    other = random_rhmm(l, m, n, rng, stop=0.3)
    for model in (true, other):
        tp = pair_transitions(model, support)
        st = e_step(model, tp, buckets, support)
        want = sum(model.loglik(a, x) for a, x in zip(corpus.labels, corpus.obs))
        assert st.loglik == pytest.approx(want, rel=1e-9, abs=1e-9)
        assert st.positions == corpus.num_positions
        # expected counts are distributions over h: they sum to the plain counts
        cnt = count_stats(corpus, support)
        np.testing.assert_allclose(st.pi.sum(1), cnt.pi[:, 0], rtol=1e-9)
        np.testing.assert_allclose(st.o.sum(1), cnt.o[:, 0], rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(st.t.sum(axis=(1, 2)), cnt.t[:, 0, 0], rtol=1e-9)
        np.testing.assert_allclose(st.f.sum(1), cnt.f[:, 0], rtol=1e-9, atol=1e-9)


def test_estep_loglik_multiple_buckets(data, monkeypatch):
    """Bucketing (many small buckets of different lengths) does not change the E-step."""
    import rhmmtk.models.rhmm.em as em

    true, corpus = data
    support = Support(corpus)
    tp = pair_transitions(true, support)
    one = e_step(true, tp, make_buckets(corpus, support, 2), support)
    monkeypatch.setattr(em, "BUCKET_BYTES", 2000)
    buckets = make_buckets(corpus, support, 2)
    assert len(buckets) > 5
    many = e_step(true, tp, buckets, support)
    assert many.loglik == pytest.approx(one.loglik, rel=1e-12)
    for name in ("pi", "o", "t", "f"):
        np.testing.assert_allclose(getattr(many, name), getattr(one, name), rtol=1e-10,
                                   atol=1e-12)


def test_train_loglik_matches_model_loglik(data, seed):
    """history[i]['loglik'] is the log-likelihood of the model after i M-steps."""
    _, corpus = data
    support = Support(corpus)
    models = {}
    _, hist, _ = train(corpus, 2, iters=3, seed=seed, floor=0.0,
                       on_iteration=lambda it, model, h: models.__setitem__(it, model))
    for it in (1, 2):
        want = sum(models[it].loglik(a, x) for a, x in zip(corpus.labels, corpus.obs))
        assert hist[it]["loglik"] == pytest.approx(want, rel=1e-9)
    # and m_step(e_step(model)) is what train did
    tp = pair_transitions(models[1], support)
    st = e_step(models[1], tp, make_buckets(corpus, support, 2), support)
    nxt, _ = m_step(st, support, 0.0)
    np.testing.assert_allclose(nxt.o, models[2].o, rtol=1e-10, atol=1e-14)


def test_unigram_decodes_to_argmax_prior_times_emission(data, rng):
    true, corpus = data
    l, _, n = true.shape
    op = unigram_operators(corpus, floor=0.0)
    A = np.concatenate(corpus.labels)
    X = np.concatenate(corpus.obs)
    joint = np.bincount(A * n + X, minlength=l * n).reshape(l, n) / len(A)   # p(a) p(x | a)
    # held-out sequences (observations the training data saw, so p(x) > 0)
    seen = joint.sum(0) > 0
    test = [s[1] for s in true.sample(100, rng)]
    test = [x for x in test if seen[x].all()]
    labels, stats, mus = decode(op, test)
    assert stats["nonpositive_best"] == 0 and stats["no_path"] == 0
    for x, lab, mu in zip(test, labels, mus):
        score = joint[:, x].T                                   # (N, l)
        # the decoded label attains the maximum (ties may go either way)
        np.testing.assert_allclose(score[np.arange(len(x)), lab], score.max(1), rtol=1e-12)
        # and the marginals are p(a | x_i) exactly
        assert_same_marginals(normalised(mu), score / score.sum(1, keepdims=True),
                              rtol=1e-10, atol=1e-14)
    # positions on which the unigram differs from a plain HMM exist (the test is not vacuous)
    hmm, _, _ = train(corpus, 1, iters=0, floor=0.0)
    hl, _, _ = decode(hmm.operators(corpus.label_table, corpus.obs_table), test)
    assert any((a != b).any() for a, b in zip(labels, hl))


def test_unigram_marginals_on_training_positions(data):
    _, corpus = data
    op = unigram_operators(corpus, floor=0.0)
    mus, ll = Decoder(op).marginals(corpus.obs)
    l, n = len(corpus.label_table), len(corpus.obs_table)
    A = np.concatenate(corpus.labels)
    X = np.concatenate(corpus.obs)
    joint = np.bincount(A * n + X, minlength=l * n).reshape(l, n).astype(float)
    post = joint / joint.sum(0, keepdims=True)
    got = np.concatenate(checked(mus, ll))
    assert_same_marginals(got, post[:, X].T, rtol=1e-10, atol=1e-14)


def test_m_step_by_hand(rng):
    """The M-step with a floor, element by element: every allowed event gets `floor` added
    to its expected count (the MAP estimate under the prior log_prior scores), then each
    distribution is normalised -- pi over all (a, h); o(. | a, h) over x; t(., . | a, h)
    and f(* | a, h) together over the allowed next labels, next states and stopping."""
    from rhmmtk.models.rhmm.em import Stats

    # label 1 has no successor (it only ends sequences): the transition totals skip it
    l, m, n, floor = 4, 2, 4, 0.3
    pair = np.array([[1, 0, 0, 1], [0, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 1]], dtype=bool)
    emit = rng.random((l, n)) > 0.3
    first, last = np.array([1, 0, 1, 1], bool), np.array([1, 1, 0, 0], bool)
    support = Support(pair=pair, emit=emit, first=first, last=last)
    st = Stats(l, n, len(support.pairs), m)
    st.pi = rng.random((l, m)) * first[:, None]
    st.o = (rng.random((l, n, m)) * emit[:, :, None]).reshape(l * n, m)
    st.t = rng.random((len(support.pairs), m, m))
    st.f = rng.random((l, m)) * last[:, None]
    model, tp = m_step(st, support, floor)
    pid = {tuple(p): i for i, p in enumerate(support.pairs.tolist())}
    zpi = sum(st.pi[a, h] + floor * first[a] for a in range(l) for h in range(m))
    for a in range(l):
        for h in range(m):
            assert model.pi[a, h] == pytest.approx((st.pi[a, h] + floor * first[a]) / zpi)
            zo = sum(st.o[a * n + x, h] + floor * emit[a, x] for x in range(n))
            for x in range(n):
                want = (st.o[a * n + x, h] + floor * emit[a, x]) / zo
                assert model.o[a, x, h] == pytest.approx(want, rel=1e-12, abs=1e-15)
            zt = sum(st.t[pid[(a, b)], h2, h] + floor for b in range(l) if pair[a, b]
                     for h2 in range(m)) + st.f[a, h] + floor * last[a]
            assert model.f[a, h] == pytest.approx((st.f[a, h] + floor * last[a]) / zt)
            for b in range(l):
                for h2 in range(m):
                    want = (st.t[pid[(a, b)], h2, h] + floor) / zt if pair[a, b] else 0.0
                    assert model.t[a, b, h2, h] == pytest.approx(want, rel=1e-12, abs=1e-15)
            # each (a, h) leaves somewhere: transitions and stop sum to one
            assert model.t[a, :, :, h].sum() + model.f[a, h] == pytest.approx(1.0)
    np.testing.assert_allclose(tp, model.t[support.pairs[:, 0], support.pairs[:, 1]])


@pytest.mark.parametrize("floor", [0.3, 0.0])
def test_compact_emissions_are_the_dense_m_step(rng, floor):
    """What train keeps per iteration (Emissions: the visited rows, a default per label)
    is the M-step written out by hand, zero-count allowed pairs (the default), pairs the
    support forbids (0) and a label without counts included; its log-prior term equals
    the dense sum of logs; and m_step, which finds the rows itself, agrees."""
    from rhmmtk.models.rhmm.em import (EmissionRows, Stats, iterate_log_prior, log_prior,
                                       m_step, m_step_rows)

    l, m, n = 4, 3, 7
    pair = np.ones((l, l), dtype=bool)
    emit = rng.random((l, n)) > 0.2
    emit[3] = True
    support = Support(pair=pair, emit=emit, first=np.ones(l, bool), last=np.ones(l, bool))
    seen = emit & (rng.random((l, n)) < 0.5)
    seen[3] = False                                   # a label with no emission counts
    rows = np.flatnonzero(seen.reshape(-1))
    st = Stats(l, n, len(support.pairs), m, num_rows=len(rows))
    st.pi, st.f = rng.random((l, m)), rng.random((l, m))
    st.t = rng.random((len(support.pairs), m, m))
    st.o = rng.random((len(rows), m))
    it = m_step_rows(st, support, floor, EmissionRows(rows, emit))
    o = it.rhmm().o
    dense = np.zeros((l * n, m))
    dense[rows] = st.o
    dense = dense.reshape(l, n, m)
    for a in range(l):
        for h in range(m):
            z = sum(dense[a, x, h] + floor * emit[a, x] for x in range(n))
            for x in range(n):
                want = (dense[a, x, h] + floor * emit[a, x]) / z if z > 0 else 0.0
                assert o[a, x, h] == pytest.approx(want, rel=1e-12, abs=1e-15)
    if floor > 0:
        want = log_prior(it.rhmm(), it.tp, support, floor)
        assert iterate_log_prior(it, support, floor) == pytest.approx(want, rel=1e-12)
        assert np.isfinite(want)
    full = Stats(l, n, len(support.pairs), m)
    full.pi, full.f, full.t, full.o = st.pi, st.f, st.t, dense.reshape(l * n, m)
    model, tp = m_step(full, support, floor)
    np.testing.assert_allclose(model.o, o, rtol=1e-13, atol=1e-16)
    np.testing.assert_allclose(tp, it.tp, rtol=1e-13)


def test_patience_stops_a_run_that_is_the_full_run_cut_short(data, seed):
    """train(patience=P) is the full run up to where dev stalled: the same history prefix
    and bitwise the same best model. The dev 'accuracy' is scripted so the stopping point
    is known: best at iteration 2, then three evaluations without a gain."""
    _, corpus = data
    full_script = [0.1, 0.3, 0.5, 0.4, 0.5, 0.45, 0.9, 0.9, 0.9]
    scorer = lambda values: (lambda rhmm: next(values))
    full, full_hist, full_best = train(corpus, 2, 8, seed=seed, score=scorer(iter(full_script)))
    short, hist, best = train(corpus, 2, 8, seed=seed, score=scorer(iter(full_script)),
                              patience=3)
    assert full_best == 6 and best == 2
    assert [h["iter"] for h in hist] == list(range(6))              # stopped after 5
    assert [h["dev_acc"] for h in hist] == full_script[:6]
    assert [h["loglik"] for h in hist[:-1]] == [h["loglik"] for h in full_hist[:5]]
    # the model kept is iteration 2 of the full run: rerun it without dev for 2 iterations
    two, _, _ = train(corpus, 2, 2, seed=seed)
    for name in ("pi", "o", "t", "f"):
        assert np.array_equal(getattr(short, name), getattr(two, name)), name
    # with dev scored every 2nd iteration, P counts evaluations, not iterations
    every2 = iter([0.1, 0.5, 0.4, 0.4, 0.9])                         # iterations 0, 2, 4, 6, 8
    _, hist2, best2 = train(corpus, 2, 8, seed=seed, score=lambda r: next(every2),
                            dev_every=2, patience=2)
    assert best2 == 2 and hist2[-1]["iter"] == 6
