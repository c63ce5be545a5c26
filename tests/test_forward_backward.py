"""The decoder against brute-force enumeration (both operator forms, fixed varied m per
label, marginals and p(x)), invariance under theorem 4.1 checked against brute force, and
the beam against the exact decoder and against what it guarantees.

Every comparison of marginals goes through tests/checks.py first: finite values, rows
summing to one, finite log-likelihood -- a decoder returning zeros cannot pass."""
import itertools

import numpy as np
import pytest

from checks import assert_same_marginals, checked, normalised
from rhmmtk.models.rhmm.decoder import DEFAULT_BEAM, Decoder
from rhmmtk.models.rhmm.operators import Operators
from rhmmtk.models.rhmm.params import random_rhmm
from rhmmtk.symbols import SymbolTable


def brute_force_rhmm(model, x):
    """mu(a, i) by summing p(a, x, h) over every (a, h) sequence."""
    l, m, n = model.shape
    N = len(x)
    mu = np.zeros((N, l))
    for a in itertools.product(range(l), repeat=N):
        for h in itertools.product(range(m), repeat=N):
            p = model.pi[a[0], h[0]] * model.f[a[-1], h[-1]]
            for i in range(N):
                p *= model.o[a[i], x[i], h[i]]
            for i in range(N - 1):
                p *= model.t[a[i], a[i + 1], h[i + 1], h[i]]
            for i in range(N):
                mu[i, a[i]] += p
    return mu


def brute_force_operators(op, x):
    """mu(a, i) by multiplying operators along every label sequence (figure 2 unrolled)."""
    op = op.to_general()
    N, l = len(x), op.num_labels
    mu = np.zeros((N, l))
    for a in itertools.product(range(l), repeat=N):
        v = op.init[a[0]]
        ok = True
        for i in range(N - 1):
            C = op.trans.get((a[i], a[i + 1]))
            if C is None:
                ok = False
                break
            v = np.einsum("hjk,k,j->h", C, op.emit[a[i]][x[i]], v)
        if not ok:
            continue
        p = np.einsum("jk,k,j->", op.stop[a[-1]], op.emit[a[-1]][x[-1]], v)
        for i in range(N):
            mu[i, a[i]] += p
    return mu


def random_general_operators(l, ms, n, rng, drop=0.3):
    """Arbitrary real operators (spectral-style: signed, not probabilities), per-label m."""
    labels = SymbolTable([f"a{i}" for i in range(l)])
    obs = SymbolTable([f"x{i}" for i in range(n)])
    init = [rng.normal(size=ms[a]) for a in range(l)]
    emit = [rng.normal(size=(n, ms[a])) for a in range(l)]
    emit[0][0] = 0  # label 0 cannot emit x0
    trans = {(a, b): rng.normal(size=(ms[b], ms[a], ms[a]))
             for a in range(l) for b in range(l) if rng.random() > drop or a == b}
    stop = [rng.normal(size=(ms[a], ms[a])) for a in range(l)]
    return Operators(labels, obs, "general", init, emit, trans, stop)


def _decode_all(op, seqs):
    mus, ll = Decoder(op).marginals(seqs)
    return mus, ll


@pytest.mark.parametrize("l,m,n", [(2, 2, 2), (3, 2, 3), (2, 3, 3), (3, 1, 2)])
def test_em_style_operators_match_enumeration(l, m, n, rng):
    model = random_rhmm(l, m, n, rng, stop=0.3, sparsity=0.3)
    op = model.operators()
    seqs = [rng.integers(0, n, size=N) for N in (1, 2, 3, 4, 4)]
    mus, ll = _decode_all(op, seqs)
    for x, mu, lp in zip(seqs, checked(mus, ll), ll):
        ref = brute_force_rhmm(model, x)
        # mu is the true marginal divided by a positive per-position constant:
        # normalised rows must agree, and sum_a mu(a, i) must be p(x).
        assert_same_marginals(mu, normalised(ref), atol=1e-10)
        np.testing.assert_allclose(lp, np.log(ref[0].sum()), rtol=0, atol=1e-10)


@pytest.mark.parametrize("l,m,n", [(2, 2, 2), (3, 2, 2)])
def test_diagonal_and_general_forms_agree(l, m, n, rng):
    op = random_rhmm(l, m, n, rng, stop=0.3).operators()
    seqs = [rng.integers(0, n, size=N) for N in (1, 3, 4, 6)]
    a, la = _decode_all(op, seqs)
    b, lb = _decode_all(op.to_general(), seqs)
    for x, y in zip(checked(a, la), checked(b, lb)):
        assert_same_marginals(x, y, atol=1e-12)
    assert_same_marginals(la, lb, atol=1e-10)


def brute_force_diagonal(op, x):
    """mu(a, i) of diagonal-form operators with any m per label, by summing
    init[a1][h1] prod emit[a_i][x_i, h_i] prod T^{a_i+1|a_i}[h_i+1, h_i] stop[a_N][h_N] over
    every (label, state) sequence -- without the decoder's or to_general's algebra."""
    mu = np.zeros((len(x), op.num_labels))
    for a, p in diagonal_paths(op, x):
        for i in range(len(x)):
            mu[i, a[i]] += p
    return mu


def diagonal_paths(op, x):
    """Every (label, state) sequence of diagonal-form operators on x: yields (labels, its
    product init[a1][h1] prod emit[a_i][x_i, h_i] prod T^{a_i+1|a_i}[h_i+1, h_i]
    stop[a_N][h_N]), one per state sequence."""
    N, l, m = len(x), op.num_labels, op.m
    for a in itertools.product(range(l), repeat=N):
        if any((a[i], a[i + 1]) not in op.trans for i in range(N - 1)):
            continue
        for h in itertools.product(*[range(m[a[i]]) for i in range(N)]):
            p = op.init[a[0]][h[0]] * op.stop[a[-1]][h[-1]]
            for i in range(N):
                p *= op.emit[a[i]][x[i], h[i]]
            for i in range(N - 1):
                p *= op.trans[(a[i], a[i + 1])][h[i + 1], h[i]]
            yield a, p


def random_diagonal_operators(ms, n, rng, drop=0.3):
    """Positive diagonal-form operators (an R-HMM-like model, not normalised) with m_a = ms[a]."""
    l = len(ms)
    labels = SymbolTable([f"a{i}" for i in range(l)])
    obs = SymbolTable([f"x{i}" for i in range(n)])
    init = [rng.random(ms[a]) for a in range(l)]
    emit = [rng.random((n, ms[a])) for a in range(l)]
    trans = {(a, b): rng.random((ms[b], ms[a])) for a in range(l) for b in range(l)
             if rng.random() > drop or a == b}
    stop = [rng.random(ms[a]) for a in range(l)]
    return Operators(labels, obs, "diagonal", init, emit, trans, stop)


# fixed, varied m per label: each label's block has its own width in every product
MS = [(2, 3), (3, 2, 1), (1, 3), (2, 2, 3)]


def _compare_to_enumeration(mus, ll, seqs, refs):
    """Marginals up to a positive per-position scale, and the likelihood: the decoder's
    loglik is log p(x) when the (signed) sum of paths p(x) > 0 and nan otherwise."""
    for x, mu, lp, ref in zip(seqs, mus, ll, refs):
        assert np.isfinite(mu).all() and np.isfinite(ref).all()
        px = ref[0].sum()
        np.testing.assert_allclose(ref.sum(1), px, rtol=1e-9)      # p(x) at every position
        for i in range(len(x)):
            scale = np.abs(ref[i]).sum() / np.abs(mu[i]).sum()
            assert np.isfinite(scale) and scale > 0
            np.testing.assert_allclose(mu[i] * scale, ref[i], rtol=1e-10, atol=1e-12)
        if px > 0:
            assert np.isfinite(lp)
            np.testing.assert_allclose(lp, np.log(px), rtol=0, atol=1e-9)
        else:
            assert np.isnan(lp)


@pytest.mark.parametrize("ms", MS, ids=lambda ms: "m=" + "-".join(map(str, ms)))
def test_spectral_style_operators_match_enumeration(ms, rng):
    """General (tensor) form, signed operators, fixed m per label: marginals and p(x)."""
    n = 3
    op = random_general_operators(len(ms), ms, n, rng)
    assert op.m.tolist() == list(ms)
    seqs = [rng.integers(0, n, size=N) for N in (1, 2, 3, 4, 5)]
    mus, ll = _decode_all(op, seqs)
    refs = [brute_force_operators(op, x) for x in seqs]
    _compare_to_enumeration(mus, ll, seqs, refs)
    # (both signs of the estimated p(x) are exercised in test_signed_likelihood_sign_branches)


def test_signed_likelihood_sign_branches(rng):
    """The p(x) <= 0 branch of the likelihood (nan) is exercised against brute force."""
    ms, n = (2, 3), 3
    seen = set()
    for _ in range(20):
        op = random_general_operators(len(ms), ms, n, rng)
        seqs = [rng.integers(0, n, size=N) for N in (2, 3)]
        mus, ll = _decode_all(op, seqs)
        refs = [brute_force_operators(op, x) for x in seqs]
        _compare_to_enumeration(mus, ll, seqs, refs)
        seen |= {bool(r[0].sum() > 0) for r in refs}
    assert seen == {True, False}


@pytest.mark.parametrize("ms", MS, ids=lambda ms: "m=" + "-".join(map(str, ms)))
def test_diagonal_form_with_varied_m_matches_enumeration(ms, rng):
    """Diagonal form (EM-style) with per-label m against a sum over (label, state) paths
    that never builds a tensor; and its general form decodes the same."""
    n = 3
    op = random_diagonal_operators(ms, n, rng)
    seqs = [rng.integers(0, n, size=N) for N in (1, 2, 3, 4)]
    mus, ll = _decode_all(op, seqs)
    refs = [brute_force_diagonal(op, x) for x in seqs]
    checked(mus, ll)                              # positive model: p(x) > 0, all finite
    _compare_to_enumeration(mus, ll, seqs, refs)
    gm, gl = _decode_all(op.to_general(), seqs)
    _compare_to_enumeration(gm, gl, seqs, refs)


def test_marginals_invariant_under_random_transforms(rng):
    """Theorem 4.1: random invertible G^a, H^a leave every marginal unchanged -- checked
    against brute-force enumeration of the untransformed model, not only against the
    decoder on the untransformed operators."""
    l, m, n = 3, 3, 4
    model = random_rhmm(l, m, n, rng, stop=0.25)
    op = model.operators()
    G = [rng.normal(size=(m, m)) + 3 * np.eye(m) for _ in range(l)]
    H = [rng.normal(size=(m, m)) + 3 * np.eye(m) for _ in range(l)]
    op2 = op.transformed(G, H)
    seqs = [rng.integers(0, n, size=N) for N in (1, 2, 3, 4, 9, 20)]
    a, la = _decode_all(op, seqs)
    b, lb = _decode_all(op2, seqs)
    na, nb = checked(a, la), checked(b, lb)
    for x, y in zip(na, nb):
        assert_same_marginals(x, y, atol=1e-10)
    assert_same_marginals(la, lb, atol=1e-9)
    for x, y, lp in zip(seqs[:4], nb, lb):
        ref = brute_force_rhmm(model, x)
        assert_same_marginals(y, normalised(ref), atol=1e-10)
        np.testing.assert_allclose(lp, np.log(ref[0].sum()), rtol=0, atol=1e-9)
    # and the transform really changed the operators (the test could otherwise not fail)
    assert not np.allclose(op2.init[0], op.init[0])
    assert not np.allclose(op2.emit[1], op.to_general().emit[1])


def test_general_operators_invariant_under_random_transforms(rng):
    """Theorem 4.1 for signed general-form operators with varied m, against enumeration."""
    ms, n = (3, 2, 1), 3
    op = random_general_operators(len(ms), ms, n, rng)
    G = [rng.normal(size=(k, k)) + 3 * np.eye(k) for k in ms]
    H = [rng.normal(size=(k, k)) + 3 * np.eye(k) for k in ms]
    op2 = op.transformed(G, H)
    seqs = [rng.integers(0, n, size=N) for N in (1, 2, 3, 4)]
    mus, ll = _decode_all(op2, seqs)
    _compare_to_enumeration(mus, ll, seqs, [brute_force_operators(op, x) for x in seqs])


# --- the beam ----------------------------------------------------------------------------
#
# What the beam guarantees (Decoder(op, beam)): at each position t the decoder keeps the
# set K_t of labels a whose forward mass |alpha_a^t|_1 * |c^a_{x_t}|_1 is above beam times
# the largest label's, where alpha^t sums only over label paths that stayed inside
# K_1 .. K_{t-1}. Its marginals (and p(x)) are then *exactly* those of the label paths
# inside K_1 x ... x K_N; pruned labels get marginal 0. So beam = 0 is exact, and for a
# model with nonnegative operators (EM, HMM) the beam's p(x) and every unnormalised
# marginal are at most the exact ones. Nothing is promised about the decoded labels.

def beam_sets(op, x, beam):
    """K_t by the definition above: a plain forward recursion over labels (no batching,
    no stacked matrices, no rescaling)."""
    op = op.to_general()
    l = op.num_labels
    alpha = [op.init[a] for a in range(l)]
    sets = []
    for t in range(len(x)):
        mass = np.array([np.abs(alpha[a]).sum() * np.abs(op.emit[a][x[t]]).sum()
                         for a in range(l)])
        keep = {a for a in range(l) if mass[a] > beam * mass.max()}
        sets.append(keep)
        nxt = [np.zeros(k) for k in op.m]
        for (a, b), C in op.trans.items():
            if a in keep:
                nxt[b] = nxt[b] + np.einsum("hjk,k,j->h", C, op.emit[a][x[t]], alpha[a])
        alpha = nxt
    return sets


def brute_force_restricted(op, x, sets):
    """mu(a, i) summed over the label paths inside K_1 x ... x K_N only."""
    op = op.to_general()
    mu = np.zeros((len(x), op.num_labels))
    for a in itertools.product(*[sorted(k) for k in sets]):
        v = op.init[a[0]]
        ok = True
        for i in range(len(x) - 1):
            C = op.trans.get((a[i], a[i + 1]))
            if C is None:
                ok = False
                break
            v = np.einsum("hjk,k,j->h", C, op.emit[a[i]][x[i]], v)
        if ok:
            p = np.einsum("jk,k,j->", op.stop[a[-1]], op.emit[a[-1]][x[-1]], v)
            for i in range(len(x)):
                mu[i, a[i]] += p
    return mu


def _beam_case(op, seqs, beam):
    """Run the beam decoder and check it against the restricted enumeration; return the
    number of (position, label) cells pruned that the exact decoder gives nonzero mass."""
    mus, ll = Decoder(op, beam=beam).marginals(seqs)
    emus, ell = Decoder(op).marginals(seqs)
    pruned = 0
    for x, mu, lp, emu, elp in zip(seqs, mus, ll, emus, ell):
        sets = beam_sets(op, x, beam)
        ref = brute_force_restricted(op, x, sets)
        _compare_to_enumeration([mu], [lp], [x], [ref])
        for t, k in enumerate(sets):
            out = [a for a in range(op.num_labels) if a not in k]
            assert (mu[t, out] == 0).all()                    # pruned labels get 0
            pruned += int((emu[t, out] != 0).sum())
        # the unpruned enumeration is the exact decoder's
        _compare_to_enumeration([emu], [elp], [x], [brute_force_operators(op, x)])
    return mus, ll, emus, ell, pruned


def test_beam_prunes_exactly_what_it_promises_nonnegative(rng):
    """A peaked EM-style model and a wide beam: pruning really happens, and the result is
    the restricted enumeration; p(x) and unnormalised marginals never exceed the exact."""
    model = random_rhmm(4, 2, 5, rng, stop=0.2, concentration=0.3)
    op = model.operators()
    seqs = [rng.integers(0, 5, size=N) for N in (1, 3, 5, 6, 6)]
    mus, ll, emus, ell, pruned = _beam_case(op, seqs, beam=0.05)
    assert pruned > 0, "the beam pruned nothing: the test would not test it"
    for mu, lp, emu, elp in zip(mus, ll, emus, ell):
        if np.isnan(lp):                                # every kept path died
            assert (mu == 0).all()
            continue
        assert lp <= elp + 1e-12
        # absolute marginals: mu / sum(mu) * p(x)
        got = mu / mu.sum(1, keepdims=True) * np.exp(lp)
        want = emu / emu.sum(1, keepdims=True) * np.exp(elp)
        assert (got <= want * (1 + 1e-9) + 1e-300).all()
    # some sequence lost probability to the beam (so the inequality was not trivially equal)
    assert any(lp < elp - 1e-9 for lp, elp in zip(ll, ell) if np.isfinite(lp))


def test_beam_on_signed_general_operators(rng):
    """Spectral-style signed operators with varied m: the beam uses |alpha| and still
    decodes exactly the restricted path set."""
    op = random_general_operators(3, (2, 3, 1), 3, rng, drop=0.0)
    seqs = [rng.integers(0, 3, size=N) for N in (2, 4, 5, 5)]
    *_, pruned = _beam_case(op, seqs, beam=0.3)
    assert pruned > 0


def test_zero_beam_is_exact_and_default_beam_is_tiny(rng):
    model = random_rhmm(3, 2, 4, rng, stop=0.2, concentration=0.3)
    op = model.operators()
    seqs = [rng.integers(0, 4, size=N) for N in (1, 4, 5)]
    a, la = Decoder(op, beam=0.0).marginals(seqs)
    b, lb = Decoder(op).marginals(seqs)
    for x, y in zip(checked(a, la), checked(b, lb)):
        assert_same_marginals(x, y, atol=0)
    for x, mu in zip(seqs, a):
        assert_same_marginals(normalised(mu), normalised(brute_force_rhmm(model, x)), atol=1e-10)
    assert 0 < DEFAULT_BEAM <= 1e-6


def test_long_sequences_do_not_underflow(rng):
    model = random_rhmm(3, 2, 5, rng, stop=0.001)
    op = model.operators()
    x = rng.integers(0, 5, size=3000)
    (mu,), (ll,) = _decode_all(op, [x])
    checked([mu], [ll])
    a = rng.integers(0, 3, size=3000)
    assert ll < 0 and ll > -3000 * 20


def test_batching_does_not_change_results(rng):
    model = random_rhmm(3, 2, 4, rng, stop=0.2)
    dec = Decoder(model.operators())
    seqs = [rng.integers(0, 4, size=int(N)) for N in rng.integers(1, 15, size=40)]
    a, la = dec.marginals(seqs, batch_mb=256)
    b, lb = dec.marginals(seqs, batch_mb=0.001)  # one sequence per batch
    checked(a, la)
    checked(b, lb)
    for x, y in zip(a, b):
        assert_same_marginals(x, y, rtol=1e-12, atol=1e-14)
    assert_same_marginals(la, lb, rtol=1e-12, atol=0)
    # and against enumeration for the short ones (batching could hide a shared error)
    for x, mu in [(x, mu) for x, mu in zip(seqs, a) if len(x) <= 4][:3]:
        ref = brute_force_rhmm(model, x)
        assert_same_marginals(normalised(mu), normalised(ref), atol=1e-10)


def test_decode_labels_do_not_depend_on_the_sign_of_the_estimated_likelihood(rng):
    """Spectral estimates can make the estimate of p(x) negative on a sequence; the labels
    are then those of the highest estimated posterior mu / p(x). Negating c^1 negates
    every marginal of every sequence: the decoded labels must not change."""
    from rhmmtk.models.rhmm.decoder import decode

    model = random_rhmm(3, 2, 4, rng, stop=0.2)
    op = model.operators()
    neg = Operators(op.labels, op.observations, op.form, [-v for v in op.init], op.emit,
                    op.trans, op.stop)
    seqs = [rng.integers(0, 4, size=int(N)) for N in rng.integers(1, 12, size=30)]
    a, sa, _ = decode(op, seqs)
    b, sb, mus = decode(neg, seqs)
    assert sa["negative_sequences"] == 0
    assert sb["negative_sequences"] == sb["positions"] > 0
    assert all(np.all(mu <= 0) for mu in mus)        # the paper's argmax would pick the worst
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_decode_keeps_empty_sequences_and_their_places(rng):
    """Empty sequences decode to empty label arrays in their own places, alone or among
    others (a batch of empty ones only once divided by a length of 0), and the labels of
    the others are those of decoding them on their own."""
    from rhmmtk.models.rhmm.decoder import decode

    op = random_rhmm(3, 2, 5, rng, stop=0.3).operators()
    empty = np.zeros(0, dtype=np.int64)
    labels, stats, _ = decode(op, [empty])
    assert len(labels) == 1 and labels[0].size == 0 and stats["positions"] == 0
    assert decode(op, [])[0] == []
    seqs = [rng.integers(0, 5, size=4), empty, rng.integers(0, 5, size=1), empty]
    labels, stats, _ = decode(op, seqs)
    assert [len(x) for x in labels] == [4, 0, 1, 0] and stats["positions"] == 5
    for x, got in zip(seqs, labels):
        if len(x):
            np.testing.assert_array_equal(got, decode(op, [x])[0][0])


def test_decode_labels_do_not_depend_on_the_label_pass_chunks(rng, monkeypatch):
    """decode's label pass runs over chunks of sequences; chunks of one sequence each (or
    of a few marginals) give the same labels and statistics as one chunk."""
    from rhmmtk.models.rhmm.decoder import decoder as fb

    op = random_rhmm(3, 2, 5, rng, stop=0.3).operators()
    seqs = [rng.integers(0, 5, size=int(N)) for N in rng.integers(0, 9, size=60)]
    want = fb.decode(op, seqs)
    for chunk in (1, 7, 40):
        monkeypatch.setattr(fb, "LABEL_CHUNK", chunk)
        got = fb.decode(op, seqs)
        assert got[1] == want[1]
        assert len(got[0]) == len(seqs)
        for x, y in zip(got[0], want[0]):
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("dense", [False, True])
@pytest.mark.parametrize("emission_floor,general", [(0.0, False), (0.5, False), (0.0, True)])
def test_float32_products_match_float64(dense, emission_floor, general, rng, monkeypatch):
    """--precision float32 (the matrix-product schedule's products in single precision):
    normalised marginals within 1e-5 of float64's, log-likelihoods within 1e-6 relative,
    and the same labels wherever float64's best two posteriors differ by more than 1e-4;
    both ways a position is done (per label, and one product with all labels' operators),
    with and without the emission backoff, and in the general (tensor) form. The schedule is checked to be the products one
    (else the test would compare float64 with itself)."""
    from rhmmtk.models.rhmm.decoder.gemm import GemmSchedule
    from rhmmtk.models.rhmm.decoder.products import ProductsSchedule

    model = random_rhmm(6, 12, 30, rng, stop=0.1)
    if emission_floor:
        model.backoff = (emission_floor, rng.dirichlet(np.ones(30)))
    op = model.operators().to_general() if general else model.operators()
    seqs = [rng.integers(0, 30, size=int(N)) for N in rng.integers(15, 40, size=40)]
    monkeypatch.setattr(GemmSchedule, "_dense_is_cheaper", lambda *a: dense)
    # the general form's precomputed C(c) (compiled, float64 whatever the precision) would
    # take these sequences: without them its products are the ones float32 changes
    monkeypatch.setattr(ProductsSchedule, "_batch_products", lambda *a: None)
    d64, d32 = Decoder(op, DEFAULT_BEAM), Decoder(op, DEFAULT_BEAM, precision="float32")
    assert d64._schedule(seqs) == "gemm"
    mu64, ll64 = d64.marginals(seqs)
    mu32, ll32 = d32.marginals(seqs)
    assert d32.gemm_stack[0].dtype == np.float32
    assert_same_marginals(ll32, ll64, atol=0, rtol=1e-6)
    p64, p32 = checked(mu64, ll64), checked(mu32, ll32)
    for a, b in zip(p32, p64):
        assert_same_marginals(a, b, atol=1e-5)
        top2 = np.sort(b, axis=1)[:, -2:]
        clear = top2[:, 1] - top2[:, 0] > 1e-4
        assert (a.argmax(axis=1) == b.argmax(axis=1))[clear].all()
    # float32 is not float64 in disguise
    assert max(np.abs(a - b).max() for a, b in zip(p32, p64)) > 0

