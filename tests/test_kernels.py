"""The compiled kernels (the decoder's rhmmtk/models/rhmm/decoder/kernels.py, EM's
rhmmtk/models/rhmm/kernels_em.py, rhmmtk/edit_distance.py, the CDHMM's mixture_combine)
against straightforward numpy references.

Decoder: every schedule (compiled loops, GEMM over sequences, blocked C(c) for long
general-form sequences) against a per-sequence, per-position numpy forward-backward
written from figure 2, for both operator forms, per-label m_a, beam 0 and a beam
that prunes, and long sequences. EM: the compiled E-step against the numpy one.
Scoring: the banded edit distance against the full numpy dynamic programme.
"""
import numpy as np
import pytest

from references import e_step_reference, edit_counts_reference
from rhmmtk.models.rhmm.em import Support, e_step, initial_model, make_buckets
from rhmmtk.models.rhmm.decoder import Decoder
from rhmmtk.models.rhmm.operators import Operators
from rhmmtk.models.rhmm.params import random_rhmm
from rhmmtk.scoring import collapse, edit_counts
from rhmmtk.symbols import SymbolTable

TOL = 1e-10


# ------------------------------------------------------------------------------ decoder
def reference_decode(op, x, beam):
    """mu (N, l) and loglik of one sequence, one position and one label pair at a time:
    figure 2 with the decoder's rescaling and beam (labels whose |alpha_a|_1 |c^a_x|_1
    is not above beam times the best at a position are not extended, except the best
    one; their mu is 0)."""
    l, N = op.num_labels, len(x)
    general = op.form == "general"

    def apply(C, a, v, c):             # C^{b|a}(c) v
        return np.einsum("hjk,j,k->h", C, v, c) if general else C @ (v * c)

    def apply_t(C, a, w, c):           # w^T C^{b|a}(c), a vector over a's states
        return np.einsum("h,hjk,k->j", w, C, c) if general else (w @ C) * c

    enorm = [np.abs(e).sum(axis=1) for e in op.emit]
    alpha = [[v.copy() for v in op.init]]
    keep = []
    for t in range(N):
        mass = np.array([np.abs(alpha[t][a]).sum() * enorm[a][x[t]] for a in range(l)])
        keep.append((mass > beam * mass.max()) | ((mass == mass.max()) & (mass.max() > 0)))
        if t == N - 1:
            break
        nxt = [np.zeros(len(v)) for v in op.init]
        for (a, b), C in op.trans.items():
            if keep[t][a]:
                nxt[b] += apply(C, a, alpha[t][a], op.emit[a][x[t]])
        s = sum(np.abs(v).sum() for v in nxt)
        alpha.append([v / s for v in nxt] if s > 0 else nxt)
    mu = np.zeros((N, l))
    logscale = 0.0
    beta = None
    for t in range(N - 1, -1, -1):
        new = [np.zeros(len(v)) for v in op.init]
        for a in range(l):
            if not keep[t][a]:
                continue
            c = op.emit[a][x[t]]
            if t == N - 1:
                new[a] = op.stop[a] @ c if general else op.stop[a] * c
                continue
            for b in range(l):
                if (a, b) in op.trans:
                    new[a] = new[a] + apply_t(op.trans[(a, b)], a, beta[b], c)
        s = sum(np.abs(v).sum() for v in new)
        if s > 0:
            new = [v / s for v in new]
            logscale += np.log(s)
        mu[t] = [new[a] @ alpha[t][a] for a in range(l)]
        beta = new
    total = mu[0].sum()
    return mu, (np.log(total) + logscale if total > 0 else np.nan)


def random_operators(rng, form, m, n, density=0.7, signed=True):
    """Operators with per-label m_a (the list m), a random label-pair support, signed
    entries for the general form (as spectral estimates are) and some zero emissions."""
    l = len(m)
    labels = SymbolTable([f"L{a}" for a in range(l)])
    obs = SymbolTable([f"o{x}" for x in range(n)])
    sample = (lambda *s: rng.standard_normal(s) + 0.5) if signed else (lambda *s: rng.random(s))
    init = [sample(m[a]) for a in range(l)]
    emit = []
    for a in range(l):
        e = sample(n, m[a])
        e[rng.random(n) < 0.2] = 0.0                 # observations label a cannot emit
        emit.append(e)
    pairs = rng.random((l, l)) < density
    pairs[np.arange(l), rng.integers(0, l, size=l)] = True
    if form == "general":
        trans = {(a, b): sample(m[b], m[a], m[a]) / m[a] for a in range(l) for b in range(l)
                 if pairs[a, b]}
        stop = [sample(m[a], m[a]) for a in range(l)]
    else:
        trans = {(a, b): sample(m[b], m[a]) / m[a] for a in range(l) for b in range(l)
                 if pairs[a, b]}
        stop = [sample(m[a]) for a in range(l)]
    return Operators(labels, obs, form, init, emit, trans, stop)


def check_against_reference(dec, seqs, got_mu, got_ll):
    for x, mu, ll in zip(seqs, got_mu, got_ll):
        ref_mu, ref_ll = reference_decode(dec.op, x, dec.beam)
        scale = max(np.abs(ref_mu).max(), 1e-300)
        np.testing.assert_allclose(mu / scale, ref_mu / scale, rtol=0, atol=TOL)
        if np.isnan(ref_ll):
            assert np.isnan(ll)
        else:
            assert abs(ll - ref_ll) <= TOL * max(1.0, abs(ref_ll))


SCHEDULES = ("compiled", "gemm", "cached", "blocked")


def run_schedule(dec, how, seqs):
    """(mus, lls) of seqs by one schedule: the compiled loops, the products over sequences
    without precomputed C(c) ("gemm"; for the general form with cache_bytes 0) or with
    them ("cached", general form only: in groups when cache_bytes is small), or blocked
    (general form only)."""
    if how == "compiled":
        return dec._batch_compiled(seqs)
    if how == "blocked":
        out = [dec._blocked(np.asarray(x)) for x in seqs]
        return [o[0] for o in out], [o[1] for o in out]
    budget = dec.cache_bytes
    if how == "gemm":
        dec.cache_bytes = 0
    try:
        used = []
        products = dec._batch_products
        dec._batch_products = lambda *a: used.append(products(*a)) or used[-1]
        groups = dec._product_groups(seqs)
        if how == "cached" and groups is not None and len(groups) > 1:
            out = [dec._batch_gemm([seqs[i] for i in g]) for g in groups]
            mus, lls = [mu for o in out for mu in o[0]], np.concatenate([o[1] for o in out])
            order = np.concatenate(groups)
            assert np.array_equal(order, np.arange(len(seqs)))
        else:
            mus, lls = dec._batch_gemm(seqs)
        assert all((u is not None) == (how == "cached") for u in used)
        return mus, lls
    finally:
        dec.cache_bytes = budget
        del dec._batch_products


@pytest.mark.parametrize("beam", [-1.0, -1e-12, float("nan"), float("inf")])
def test_the_decoder_refuses_a_beam_that_is_not_a_share(rng, beam):
    """A negative beam would extend labels without forward mass (the blocked schedule
    precomputes C(c) only for labels reachable from forward mass); the CLI takes 0..1,
    the library refuses what is not a number >= 0."""
    op = random_operators(rng, "general", [1, 2], 3)
    with pytest.raises(ValueError, match="beam"):
        Decoder(op, beam)


@pytest.mark.parametrize("form", ["general", "diagonal"])
@pytest.mark.parametrize("beam", [0.0, 0.05, 1.0])
def test_every_schedule_matches_the_reference(rng, form, beam):
    """(beam 1: only the best label at each position, in every schedule; the compiled
    and blocked ones used to extend no label at all there.)"""
    m = [1, 3, 2, 4, 2]
    op = random_operators(rng, form, m, 7, signed=form == "general")
    seqs = [rng.integers(0, 7, size=int(N)) for N in rng.integers(1, 12, size=25)]
    dec = Decoder(op, beam)
    free = sum(int((mu == 0).sum()) for mu in Decoder(op, 0.0)._batch_compiled(seqs)[0])
    for how in SCHEDULES:
        if how in ("cached", "blocked") and form == "diagonal":
            continue                    # C(c) is precomputed only for the general form
        mus, lls = run_schedule(dec, how, seqs)
        check_against_reference(dec, seqs, mus, lls)
        if beam > 0:
            # the beam must actually prune something in each schedule, or the test proves
            # nothing about it
            assert sum(int((mu == 0).sum()) for mu in mus) > free, how


@pytest.mark.parametrize("form", ["general", "diagonal"])
def test_many_runs_of_successor_states_in_every_schedule(rng, form):
    """Labels whose successors are scattered (every other label): each label's successor
    states are several runs of consecutive states, which the compiled loops add into and
    read from run by run."""
    l = 9
    op = random_operators(rng, form, [2, 1, 3, 2, 1, 2, 3, 1, 2], 6, density=0.0,
                          signed=form == "general")
    trans = {}
    for a in range(l):
        for b in range(a % 2, l, 2):                   # successors 0, 2, 4, ... or 1, 3, ...
            C = op.trans.get((a, b))
            shape = (op.m[b], op.m[a], op.m[a]) if form == "general" else (op.m[b], op.m[a])
            trans[(a, b)] = C if C is not None else rng.random(shape) / op.m[a]
    op = Operators(op.labels, op.observations, form, op.init, op.emit, trans, op.stop)
    dec = Decoder(op, 0.0)
    assert min(len(r[0]) for r in dec.runs) >= 4
    seqs = [rng.integers(0, 6, size=int(N)) for N in rng.integers(1, 12, size=25)]
    for how in SCHEDULES:
        if how in ("cached", "blocked") and form == "diagonal":
            continue
        mus, lls = run_schedule(dec, how, seqs)
        check_against_reference(dec, seqs, mus, lls)


def test_successor_columns_and_runs_match_their_definition(rng):
    """The decoder's successor states of each label, built from the whole pair matrix at
    once, against the definition: every state of every successor listed one by one, cut
    into maximal runs of consecutive states. Random pair matrices of every density (empty
    rows, full rows, the first and last labels) and state counts 1-4."""
    for trial in range(200):
        l = int(rng.integers(1, 9))
        m = rng.integers(1, 5, size=l)
        off = np.concatenate([[0], np.cumsum(m)])
        pair = (rng.random((l, l)) < rng.random()).astype(np.int64)
        op = random_operators(rng, "diagonal", list(m), 3, density=0.0)
        trans = {(a, b): rng.random((m[b], m[a])) for a in range(l) for b in range(l)
                 if pair[a, b]}
        dec = Decoder(Operators(op.labels, op.observations, "diagonal", op.init, op.emit,
                                trans, op.stop), 0.0)
        np.testing.assert_array_equal(dec.pair, pair)
        for a in range(l):
            cols = [s for b in range(l) if pair[a, b] for s in range(off[b], off[b + 1])]
            if not cols:
                assert dec.cols[a] is None and dec.runs[a] is None
                continue
            np.testing.assert_array_equal(dec.cols[a], cols)
            first = [c for i, c in enumerate(cols) if i == 0 or cols[i - 1] != c - 1]
            last = [c for i, c in enumerate(cols) if i == len(cols) - 1 or cols[i + 1] != c + 1]
            starts, lens = dec.runs[a]
            np.testing.assert_array_equal(starts, first)
            np.testing.assert_array_equal(lens, np.array(last) - np.array(first) + 1)
            assert starts.dtype == lens.dtype == np.int64


@pytest.mark.parametrize("form", ["general", "diagonal"])
def test_a_sparse_subset_of_observations_and_empty_sequences_in_every_schedule(rng, form):
    """The compiled loops get the emissions of the batch's observations only, renumbered
    (here 3 of 12, not contiguous); an empty sequence in a batch gives no marginals and a
    nan loglik in every schedule (the compiled loops assume a position), the others as
    the reference."""
    op = random_operators(rng, form, [2, 3, 1, 2], 12, signed=form == "general")
    used = np.array([1, 5, 10])
    seqs = [used[rng.integers(0, 3, size=int(N))] for N in rng.integers(1, 9, size=12)]
    seqs.insert(4, np.zeros(0, dtype=np.int64))
    for how in SCHEDULES:
        if how in ("cached", "blocked") and form == "diagonal":
            continue
        dec = Decoder(op, 0.0)
        dec._schedule = lambda s, groups=None, how=how: "gemm" if how == "cached" else how
        if how == "gemm":
            dec.cache_bytes = 0
        mus, lls = dec.batch(seqs)
        assert mus[4].shape == (0, 4) and np.isnan(lls[4])
        rest = [i for i in range(len(seqs)) if i != 4]
        check_against_reference(dec, [seqs[i] for i in rest], [mus[i] for i in rest],
                                [lls[i] for i in rest])


@pytest.mark.parametrize("form", ["general", "diagonal"])
def test_long_sequences_match_the_reference_in_every_schedule(rng, form):
    """One long sequence: rescaling keeps it finite, blocks of positions (several, of
    uneven size) give the reference's numbers, and the dispatch picks a per-sequence
    schedule."""
    # general form, 300 observations: more distinct ones than a block of 7 positions
    # holds, so the blocked schedule cannot take the whole sequence as one block
    n = 300 if form == "general" else 5
    op = random_operators(rng, form, [2, 3, 1, 2], n, signed=form == "general")
    x = rng.integers(0, n, size=1500)
    dec = Decoder(op, 1e-3)
    ref_mu, ref_ll = reference_decode(op, x, dec.beam)
    assert np.isfinite(ref_ll) or form == "general"
    results = [run_schedule(dec, how, [x]) for how in SCHEDULES[:2 if form == "diagonal" else 3]]
    if form == "general":
        dec.BLOCK_BYTES = 8 * 7 * int(dec._cc_sizes().sum())
        mu, ll = dec._blocked(x)                       # blocks of 7 positions
        results.append(([mu], [ll]))
    for mus, lls in results:
        check_against_reference(dec, [x], mus, lls)
    assert dec._schedule([x]) != "gemm"


def test_the_dispatch_agrees_with_the_reference_on_a_mixed_batch(rng):
    """Decoder.marginals on short and long sequences together (several batches)."""
    op = random_operators(rng, "general", [3, 2, 4], 6)
    seqs = [rng.integers(0, 6, size=int(N)) for N in rng.integers(1, 8, size=30)]
    seqs += [rng.integers(0, 6, size=400)]
    dec = Decoder(op, 0.0)
    mus, lls = dec.marginals(seqs, batch_mb=0.05)
    check_against_reference(dec, seqs, mus, lls)


def test_schedules_agree_on_a_probabilistic_model(rng):
    """An R-HMM (diagonal form, and the same operators in the general form): every
    schedule gives the same marginals and log-likelihood, and both forms agree."""
    model = random_rhmm(4, 3, 6, rng, stop=0.1, sparsity=0.3)
    seqs = [rng.integers(0, 6, size=int(N)) for N in rng.integers(1, 40, size=20)]
    lls = []
    for op in (model.operators(), model.operators().to_general()):
        dec = Decoder(op)
        a, la = dec._batch_compiled(seqs)
        for how in SCHEDULES[1:3 if op.form == "general" else 2]:
            b, lb = run_schedule(dec, how, seqs)
            for x, y in zip(a, b):
                np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-13)
            np.testing.assert_allclose(la, lb, rtol=1e-12)
        assert np.all(np.isfinite(la))
        lls.append(la)
    np.testing.assert_allclose(lls[0], lls[1], rtol=1e-10)


@pytest.mark.parametrize("form", ["general", "diagonal"])
@pytest.mark.parametrize("beam", [0.0, 0.05])
def test_gemm_with_and_without_the_dense_product_match_the_reference(rng, form, beam):
    """The gemm schedule's two ways: one product per position with every label's operator
    side by side (forced by a prohibitive scatter cost), one product per label with a
    scatter into the successors' columns (forced by a zero size budget), and the two
    mixed position by position as the cost model chooses."""
    op = random_operators(rng, form, [1, 3, 2, 4, 2], 7, density=0.5, signed=form == "general")
    seqs = [rng.integers(0, 7, size=int(N)) for N in rng.integers(1, 12, size=25)]
    dense = Decoder(op, beam)
    dense.SCATTER_COST = 1e30
    assert dense._dense_ops()[0] is not None
    sparse = Decoder(op, beam)
    sparse.DENSE_MAX_BYTES = 0
    assert sparse._dense_ops()[0] is None
    mixed = Decoder(op, beam)
    # per-label products cost only their round trips: dense once fewer than about half
    # the sequences still run
    mixed.LABEL_COST = mixed._dense_ops()[0].size * len(seqs) / 2 / op.num_labels
    mixed._label_cost[:] = 0
    chosen = []
    cheaper = mixed._dense_is_cheaper
    mixed._dense_is_cheaper = lambda keep, xt: chosen.append(cheaper(keep, xt)) or chosen[-1]
    for dec in (dense, sparse, mixed):
        check_against_reference(dec, seqs, *run_schedule(dec, "gemm", seqs))
    assert any(chosen) and not all(chosen)        # both ways were used


def with_floor(rng, op, share=0.6):
    """The same operators with an EmissionFloor: for each label about `share` of the
    observations get the row scale[x] g_a (a pair "never seen in training")."""
    from rhmmtk.models.rhmm.operators import EmissionFloor

    n = len(op.observations)
    scale = rng.random(n) * 0.1 + 0.01
    g = [rng.standard_normal(len(v)) + 0.5 for v in op.init]
    seen = rng.random((op.num_labels, n)) > share
    emit = [e.copy() for e in op.emit]
    for a, e in enumerate(emit):
        e[~seen[a]] = scale[~seen[a], None] * g[a][None, :]
    return Operators(op.labels, op.observations, op.form, op.init, emit, op.trans, op.stop,
                     floor=EmissionFloor(scale, g, seen))


@pytest.mark.parametrize("beam", [0.0, 0.05])
def test_the_floor_path_matches_the_reference_in_every_schedule(rng, beam):
    """Rows that are the floor alone go through M (gemm: one product per position with all
    labels' M_a; blocked: C(c) = scale[x] C(g_a)); every schedule still gives the reference's marginals, and the same
    as a decoder told nothing of the floor."""
    op = with_floor(rng, random_operators(rng, "general", [1, 3, 2, 4, 2], 7, density=0.8))
    seqs = [rng.integers(0, 7, size=int(N)) for N in rng.integers(1, 12, size=25)]
    dec = Decoder(op, beam)
    dec.DENSE_MAX_BYTES = 0               # the per-label products, where the floor path is
    used = []
    floor_z = dec._floor_z
    dec._floor_z = lambda v, floor, xs: used.append(floor.sum()) or floor_z(v, floor, xs)
    plain = Operators(op.labels, op.observations, op.form, op.init, op.emit, op.trans, op.stop)
    assert plain.floor is None
    ref = Decoder(plain, beam)._batch_compiled(seqs)
    for how in SCHEDULES:
        mus, lls = run_schedule(dec, how, seqs)
        check_against_reference(dec, seqs, mus, lls)
        for x, y in zip(mus, ref[0]):
            np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-13)
    assert sum(used) > 0


def test_the_floor_path_on_one_long_sequence_in_blocks_of_uneven_size(rng):
    """The blocked schedule with a floor: only the positions' seen rows take buffer space,
    so blocks hold different numbers of positions; floor-only rows share one C(g_a)."""
    op = with_floor(rng, random_operators(rng, "general", [2, 3, 1, 2], 200))
    x = rng.integers(0, 200, size=400)
    dec = Decoder(op, 1e-3)
    size = dec._cc_sizes()
    dec.BLOCK_BYTES = 8 * 5 * int(size.max())
    blocks, _ = dec._position_blocks(x, size)
    sizes = {t1 - t0 for t0, t1 in blocks}
    assert len(blocks) > 10 and len(sizes) > 1
    assert [b[0] for b in blocks[1:]] == [b[1] for b in blocks[:-1]] and blocks[-1][1] == len(x)
    mu, ll = dec._blocked(x)
    check_against_reference(dec, [x], [mu], [ll])


@pytest.mark.parametrize("floor", [False, True])
def test_blocked_computes_c_once_per_distinct_observation(rng, floor):
    """Positions that repeat an observation share its C^{b|a}(c^a_x): a long sequence over
    6 observations is one block whose products have at most 6 rows per label (a
    floor-only row none: it uses C(g_a)), with the reference's marginals; and when the
    distinct observations' products do not fit, blocks of positions as before."""
    op = random_operators(rng, "general", [2, 3, 1, 2], 6)
    if floor:
        op = with_floor(rng, op, share=0.5)
    x = rng.integers(0, 6, size=900)
    dec = Decoder(op, 0.0)
    rows = []
    size = dec._cc_sizes()
    blocks, cap = dec._position_blocks(x, size)
    assert blocks == [(0, len(x))] and cap <= 6 * size.sum()
    cc = dec._cc
    dec._cc = lambda a, v, out: rows.append(len(v)) or cc(a, v, out)
    mu, ll = dec._blocked(x)
    assert rows and max(rows) <= 6
    if floor:
        assert sum(rows) < 6 * np.count_nonzero(size)
    check_against_reference(dec, [x], [mu], [ll])
    def need(t0, t1):          # entries of the distinct (label, observation) C(c) of t0..t1-1
        return product_entries(dec, [np.append(x[t0:t1], -1)])   # -1: a last position

    budget = 2 * max(need(t, t + 1) for t in range(len(x)))     # two positions' worth
    dec.BLOCK_BYTES = 8 * budget
    blocks, cap = dec._position_blocks(x, size)
    assert len(blocks) > 100
    assert [b[0] for b in blocks[1:]] == [b[1] for b in blocks[:-1]] and blocks[-1][1] == len(x)
    # each block fits, and could not take the next position (greedy, maximal blocks);
    # blocks hold more positions than fit without sharing repeated observations
    assert cap <= budget                              # the buffer stays within the budget
    assert all(need(t0, t1) <= cap for t0, t1 in blocks)
    assert all(need(t0, t1 + 1) > budget for t0, t1 in blocks[:-1])
    assert max(t1 - t0 for t0, t1 in blocks) > 2
    mu2, ll2 = dec._blocked(x)
    check_against_reference(dec, [x], [mu2], [ll2])


def test_both_ways_to_c_of_c_agree_and_the_copy_is_made_when_it_pays(rng):
    """`Decoder._cc`: C^{b|a}(v) from the stack as it is (a transpose of the product per
    call) and from the copy with the c index first give the same numbers, against the
    definition sum_k v_k C^{b|a}[:, :, k]; a label takes the copy once its rows without
    it would exceed m_a, and the blocked schedule gives the reference's marginals either
    way."""
    op = random_operators(rng, "general", [3, 4, 2], 5, density=1.0)
    dec = Decoder(op, 0.0)
    a, ma = 1, 4
    succ = [b for b in range(3) if (a, b) in op.trans]
    for p in (1, 2, 3):
        v = rng.standard_normal((p, ma))
        out = np.empty((p, int(dec._cc_sizes()[a])))
        dec._cc(a, v, out)
        want = np.stack([np.concatenate([np.einsum("hjk,k->jh", op.trans[(a, b)], vp)
                                         for b in succ], axis=1).ravel() for vp in v])
        np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
        assert (dec._wstack[a] is not None) == (p == 3)      # 1 + 2 rows, then 3 > m_a
    x = rng.integers(0, 2, size=300)              # 2 distinct observations: no copy
    fresh = Decoder(op, 0.0)
    check_against_reference(fresh, [x], *([o] for o in fresh._blocked(x)))
    assert all(w is None for w in fresh._wstack)
    x = rng.integers(0, 5, size=300)              # 5 > m_a: every label copies
    for d in (fresh, dec):
        check_against_reference(d, [x], *([o] for o in d._blocked(x)))
    assert all(w is not None for w in fresh._wstack)


def product_pairs(dec, seqs):
    """The (label, observation) pairs whose C(c) the products schedule precomputes for
    seqs: labels with successors, observations at a position that is not a sequence's
    last, emission neither zero nor the floor alone."""
    size = dec._cc_sizes()
    return {(a, int(o)) for x in seqs for o in x[:-1] for a in range(len(size))
            if size[a] and np.any(dec.op.emit[a][o] != 0)
            and (dec.op.floor is None or dec.op.floor.seen[a, o])}


def product_entries(dec, seqs):
    size = dec._cc_sizes()
    return sum(int(size[a]) for a, _ in product_pairs(dec, seqs))


@pytest.mark.parametrize("floor", [False, True])
@pytest.mark.parametrize("density", [0.5, 1.0])
@pytest.mark.parametrize("beam", [0.0, 0.05, 1.0])
def test_the_precomputed_products_in_groups_match_the_reference(rng, floor, density, beam):
    """The products schedule with C(c) precomputed per group of sequences (cache_bytes a
    few sequences' worth): several groups, each within the budget and greedy (the next
    sequence would not have fit), C(c) once per distinct (label, observation) of a group,
    the floor rows through C(g_a), every label's successors all labels (density 1: the
    compiled step's dense row) or scattered; marginals as the reference; the stacked
    operators never built."""
    op = random_operators(rng, "general", [1, 3, 2, 4, 2], 40, density=density)
    if floor:
        op = with_floor(rng, op, share=0.5)
    seqs = [rng.integers(0, 40, size=int(N)) for N in rng.integers(1, 7, size=40)]
    dec = Decoder(op, beam)
    fixed = len(dec._floor_products()[1])
    per_seq = max(product_entries(dec, [x]) for x in seqs)
    dec.cache_bytes = 8 * (fixed + 2 * per_seq)
    groups = dec._product_groups(seqs)
    assert groups is not None and len(groups) >= 3
    assert np.array_equal(np.concatenate(groups), np.arange(len(seqs)))
    cap = dec.cache_bytes // 8 - fixed
    for k, g in enumerate(groups):
        assert product_entries(dec, [seqs[i] for i in g]) <= cap
        if k + 1 < len(groups):
            nxt = [seqs[i] for i in g] + [seqs[groups[k + 1][0]]]
            assert product_entries(dec, nxt) > cap
    rows = []
    cc = dec._cc
    dec._cc = lambda a, v, out: rows.append(len(v)) or cc(a, v, out)
    mus, lls = run_schedule(dec, "cached", seqs)
    check_against_reference(dec, seqs, mus, lls)
    assert sum(rows) == sum(len(product_pairs(dec, [seqs[i] for i in g])) for g in groups)
    # the stacked operators (a copy of all of them) were never built: this path reads
    # the model's own C^{b|a}
    assert "stack" not in vars(dec)


@pytest.mark.parametrize("floor", [False, True])
def test_float32_precomputed_products_match_the_reference(rng, floor):
    """--precision float32 on the general form's precomputed C(c) (SPECTRAL's dev
    decoding): the C(c) buffer in single precision (the floor rows' shared C(g_a)
    included), alpha and beta float64; marginals within 1e-5 of the float64 reference
    (scaled as `check_against_reference`), log-likelihoods within 1e-5 relative, the same
    labels wherever the reference's best two posteriors differ by more than 1e-4 -- and
    not the float64 numbers."""
    op = random_operators(rng, "general", [3, 4, 2, 4, 3], 40, density=0.8, signed=False)
    if floor:
        op = with_floor(rng, op, share=0.5)
    seqs = [rng.integers(0, 40, size=int(N)) for N in rng.integers(5, 30, size=30)]
    dec = Decoder(op, 1e-8, precision="float32")
    bufs = []
    products = dec._batch_products
    dec._batch_products = lambda *a: bufs.append(products(*a)) or bufs[-1]
    mus, lls = dec._batch_gemm(seqs)
    assert bufs and all(b is not None and b[3].dtype == np.float32 for b in bufs)
    if floor:
        assert any((b[1] >= 0).any() for b in bufs)        # floor rows took C(g_a)
    worst = 0.0
    for x, mu, ll in zip(seqs, mus, lls):
        ref_mu, ref_ll = reference_decode(op, x, dec.beam)
        scale = np.abs(ref_mu).max()
        np.testing.assert_allclose(mu / scale, ref_mu / scale, rtol=0, atol=1e-5)
        assert abs(ll - ref_ll) <= 1e-5 * abs(ref_ll)
        post, ref = mu / mu.sum(axis=1, keepdims=True), ref_mu / ref_mu.sum(axis=1, keepdims=True)
        top2 = np.sort(ref, axis=1)[:, -2:]
        clear = top2[:, 1] - top2[:, 0] > 1e-4
        assert (post.argmax(axis=1) == ref.argmax(axis=1))[clear].all()
        worst = max(worst, np.abs(mu / scale - ref_mu / scale).max())
    assert worst > 1e-12                                    # single precision, not double


@pytest.mark.parametrize("floor", [False, True])
def test_batch_runs_each_group_on_one_shared_buffer(rng, floor):
    """Decoder.batch itself with several groups: each group is scheduled on its own (a
    group of one sequence goes blocked, as a batch of one would; the others take the
    precomputed products), the groups' products share one buffer (grown when a later
    group needs more), and the marginals are the reference's."""
    op = random_operators(rng, "general", [2, 3, 1, 2, 3], 40, density=0.6)
    if floor:
        op = with_floor(rng, op, share=0.5)
    short = [rng.integers(0, 20, size=int(N)) for N in rng.integers(2, 6, size=12)]
    # observations of its own, all 20 of them: its products alone fill the budget
    long_one = np.concatenate([rng.permutation(np.arange(20, 40)) for _ in range(3)])
    seqs = short[:6] + [long_one] + short[6:]
    dec = Decoder(op, 0.0)
    dec.SMALL_STACK_BYTES = dec.TINY_STACK = 0        # "large" operators: the products rule
    fixed = len(dec._floor_products()[1])
    dec.cache_bytes = 8 * (fixed + product_entries(dec, [long_one]))
    groups = dec._product_groups(seqs)
    assert groups is not None and len(groups) >= 3
    assert [6] in [list(g) for g in groups]           # the long one alone
    assert dec._schedule(seqs, groups) == "gemm"
    buffers, blocked = [], []
    gemm, one = dec._batch_gemm, dec._blocked

    def spy_gemm(part, scratch=None):
        buffers.append(scratch)
        return gemm(part, scratch)

    dec._batch_gemm = spy_gemm
    dec._blocked = lambda x: blocked.append(len(x)) or one(x)
    mus, lls = dec.batch(seqs)
    check_against_reference(dec, seqs, mus, lls)
    assert blocked == [60]
    assert len(buffers) == len(groups) - 1 and all(b is buffers[0] for b in buffers)
    assert len(buffers[0]["buf"]) >= fixed + max(
        product_entries(dec, [seqs[i] for i in g]) for g in groups if list(g) != [6])


def test_the_products_budget_is_a_share_of_the_batch_budget(rng):
    """--batch-mb bounds the precomputed products too: CACHE_SHARE of it (512 MB of the
    default 2048), and decode passes it on."""
    from rhmmtk.models.rhmm.decoder import DEFAULT_BATCH_MB, decode

    op = random_operators(rng, "general", [2, 3], 5)
    assert Decoder(op).cache_bytes == 512 * 2**20 == DEFAULT_BATCH_MB * 2**20 // 4
    assert Decoder(op, 0.0, 64).cache_bytes == 16 * 2**20
    seqs = [rng.integers(0, 5, size=int(N)) for N in rng.integers(1, 9, size=20)]
    tiny = decode(op, seqs, batch_mb=1e-6)[2]         # no room for any products
    for x, y in zip(tiny, decode(op, seqs)[2]):
        np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-13)


def test_product_groups_refuse_a_sequence_that_alone_passes_the_budget(rng):
    """When one sequence's C(c) alone would not fit cache_bytes there are no groups (the
    schedules then do without precomputed products), and a budget that holds everything
    makes one group."""
    op = random_operators(rng, "general", [2, 3, 2], 8)
    seqs = [rng.integers(0, 8, size=int(N)) for N in rng.integers(2, 9, size=12)]
    dec = Decoder(op, 0.0)
    need = [product_entries(dec, [x]) for x in seqs]
    dec.cache_bytes = 8 * (max(need) - 1)
    assert dec._product_groups(seqs) is None
    dec.cache_bytes = 8 * product_entries(dec, seqs)
    assert [len(g) for g in dec._product_groups(seqs)] == [len(seqs)]


def test_a_floor_that_does_not_match_the_rows_is_refused(rng):
    op = with_floor(rng, random_operators(rng, "general", [2, 3], 5))
    emit = [e.copy() for e in op.emit]
    a, x = np.argwhere(~op.floor.seen)[0]
    emit[a][x, 0] += 1e-6
    with pytest.raises(ValueError, match="emission floor"):
        Operators(op.labels, op.observations, op.form, op.init, emit, op.trans, op.stop,
                  floor=op.floor)
    diag = random_operators(rng, "diagonal", [2, 3], 5)
    with pytest.raises(ValueError, match="general form"):
        Operators(diag.labels, diag.observations, "diagonal", diag.init, diag.emit,
                  diag.trans, diag.stop, floor=op.floor)


def test_blocked_schedule_is_chosen_for_large_general_operators(rng):
    """Large general-form operators: GEMM over many sequences, blocked for one long one."""
    op = random_operators(rng, "general", [12] * 6, 4, density=1.0)
    dec = Decoder(op)
    dec.SMALL_STACK_BYTES = 0
    short = [rng.integers(0, 4, size=5) for _ in range(100)]
    assert dec._schedule(short) == "gemm"
    assert dec._schedule([rng.integers(0, 4, size=300)]) == "blocked"
    # long sequences whose C(c) do not fit (groups None): blocked below MIN_GEMM_ROWS_LONG
    # rows, products from there on
    frames = [rng.integers(0, 4, size=300) for _ in range(dec.MIN_GEMM_ROWS_LONG + 4)]
    assert dec._schedule(frames[:dec.MIN_GEMM_ROWS + 8]) == "blocked"
    assert dec._schedule(frames) == "gemm"
    # with the precomputed products: from two sequences on, one stays blocked
    groups = dec._product_groups(frames)
    assert groups is not None
    assert dec._schedule(frames[:dec.MIN_GEMM_ROWS + 8], groups) == "gemm"
    assert dec._schedule(frames[:2], groups) == "gemm"
    assert dec._schedule(frames[:1], groups) == "blocked"
    mus, lls = dec.batch(frames[:3])
    check_against_reference(dec, frames[:3], mus, lls)



def test_small_general_operators_go_blocked_only_for_long_sequences(rng):
    """Operators that fit in cache: a few short sequences stay in the compiled loops
    (blocked costs about a millisecond per sequence), a long one goes blocked (C(c) once
    per distinct observation); the diagonal form has no blocked schedule."""
    for form, m, long_one in (("general", 8, "blocked"), ("diagonal", 16, "compiled")):
        dec = Decoder(random_operators(rng, form, [m] * 5, 4, density=1.0))
        assert np.mean([s.size for s in dec.stack]) > dec.TINY_STACK
        assert 8 * sum(s.size for s in dec.stack) <= dec.SMALL_STACK_BYTES
        assert dec._schedule([rng.integers(0, 4, size=8) for _ in range(5)]) == "compiled"
        assert dec._schedule([rng.integers(0, 4, size=dec.LONG_SEQUENCE)]) == long_one


def test_tiny_diagonal_operators_go_to_the_products_with_many_sequences(rng):
    """EM-style operators too small for per-label products: compiled loops for a few
    sequences, the one-product-per-position gemm from MIN_GEMM_ROWS running rows on (and
    compiled again when all labels' operators side by side would not fit)."""
    op = random_operators(rng, "diagonal", [2, 3, 2], 5, signed=False)
    dec = Decoder(op)
    assert np.mean([s.size for s in dec.stack]) <= dec.TINY_STACK
    many = [rng.integers(0, 5, size=6) for _ in range(dec.MIN_GEMM_ROWS + 4)]
    assert dec._schedule(many[:4]) == "compiled"
    assert dec._schedule(many) == "gemm"
    mus, lls = dec.batch(many)
    check_against_reference(dec, many, mus, lls)
    dec = Decoder(op)
    dec.DENSE_MAX_BYTES = 0
    assert dec._schedule(many) == "compiled"
    assert Decoder(op.to_general())._schedule(many) == "compiled"

# ------------------------------------------------------------------------------ EM
class _Corpus:
    def __init__(self, labels, obs, l, n):
        self.labels, self.obs = labels, obs
        self.label_table = SymbolTable([f"L{a}" for a in range(l)])
        self.obs_table = SymbolTable([f"o{x}" for x in range(n)])

    def __len__(self):
        return len(self.labels)


@pytest.mark.parametrize("m", [1, 2, 3, 4, 5, 8])
def test_em_e_step_matches_the_numpy_reference(rng, m):
    """Both compiled E-steps (m <= kernels.EM_UNROLL_MAX: m a compile-time constant, the
    recursions of kernels_em_steps, 16 sequences in lockstep; above: m from the arrays,
    8) against plain numpy, on 62 sequences of mixed lengths (groups of unequal lengths
    and a partial last group)."""
    l, n = 4, 9
    model = random_rhmm(l, 2, n, rng, stop=0.2)
    samples = model.sample(60, rng)
    samples.append(model.sample(1, rng)[0])
    long_a = np.concatenate([s[0] for s in samples[:20]])
    long_x = np.concatenate([s[1] for s in samples[:20]])
    corpus = _Corpus([s[0] for s in samples] + [long_a], [s[1] for s in samples] + [long_x],
                     l, n)
    support = Support(corpus)
    buckets = make_buckets(corpus, support, m)
    em_model, tp = initial_model(corpus, support, m, rng, 0.5, 1e-3)
    got = e_step(em_model, tp, buckets, support)
    want = e_step_reference(em_model, tp, buckets, support)
    for name in ("pi", "o", "t", "f"):
        g, w = getattr(got, name), getattr(want, name)
        np.testing.assert_allclose(g, w, rtol=TOL, atol=TOL * np.abs(w).max())
    assert abs(got.loglik - want.loglik) <= TOL * abs(want.loglik)
    assert got.positions == want.positions


def test_written_out_em_steps_are_what_the_generator_writes(tmp_path):
    """rhmmtk/models/rhmm/kernels_em_steps.py is generated (scripts/make_em_steps.py); an edit of one
    without the other must not go unnoticed."""
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    out = tmp_path / "steps.py"
    subprocess.run([sys.executable, str(repo / "scripts" / "make_em_steps.py"), str(out)],
                   check=True)
    assert out.read_text() == (repo / "rhmmtk" / "models" / "rhmm" / "kernels_em_steps.py").read_text(), (
        "rhmmtk/models/rhmm/kernels_em_steps.py is stale: run python scripts/make_em_steps.py")


def test_an_edit_of_the_written_out_steps_is_not_hidden_by_numbas_cache(tmp_path):
    """numba caches the compiled E-step on disk, keyed by kernels_em.py's time stamp and the
    kernel's constants; kernels_em_steps.py's hash is one of those constants, so a
    changed step (here: a wrong alpha in one expected transition) must change the counts
    on the next run, not reuse the cached kernel."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    pkg = Path(__file__).resolve().parents[1] / "rhmmtk"
    shutil.copytree(pkg, tmp_path / "rhmmtk", ignore=shutil.ignore_patterns("__pycache__"))
    script = tmp_path / "xi.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "import numpy as np\n"
        "import rhmmtk\n"
        f"assert rhmmtk.__file__.startswith({str(tmp_path)!r})\n"
        "from rhmmtk.models.rhmm.kernels_em import em_forward_backward\n"
        "rng = np.random.default_rng(0)\n"
        "m, P, n = 4, 3, 40\n"
        "tp = rng.random((P, m, m))\n"
        "A = np.zeros(n, dtype=np.int64)\n"
        "pair = rng.integers(0, P, n)\n"
        "xi = np.zeros((P, m, m))\n"
        "em_forward_backward(A, np.arange(n), np.array([0, 20]), np.array([20, 20]), pair,\n"
        "                    rng.random((1, m)), rng.random((n, m)), tp, rng.random((1, m)),\n"
        "                    np.zeros((1, m)), np.zeros((n, m)), xi, np.zeros((1, m)))\n"
        "print(repr(xi.sum()))\n")
    run = lambda: subprocess.run([sys.executable, str(script)], check=True, cwd=tmp_path,
                                 capture_output=True, text=True).stdout.strip()
    before = run()
    assert run() == before                                    # cached, same answer
    steps = tmp_path / "rhmmtk" / "models" / "rhmm" / "kernels_em_steps.py"
    text = steps.read_text()
    assert "Xi[3, 2] + p3_2 * a2" in text
    steps.write_text(text.replace("Xi[3, 2] + p3_2 * a2", "Xi[3, 2] + p3_2 * a3"))
    assert run() != before


def test_written_out_em_steps_match_the_loops(rng):
    """Each written-out recursion (m = 1..EM_UNROLL_MAX) against the loops it replaces, on
    random positive inputs, called directly (not inlined in the kernel)."""
    from rhmmtk.models.rhmm import kernels_em_steps as ks
    from rhmmtk.models.rhmm.kernels_em import EM_UNROLL_MAX

    for m in range(1, EM_UNROLL_MAX + 1):
        P, prev, emt = rng.random((m, m)), rng.random(m), rng.random(m)
        now = np.zeros(m)
        ss = getattr(ks, f"forward_m{m}")(P, prev, emt, now)
        x = (P @ prev) * emt
        assert ss == pytest.approx(x.sum(), rel=1e-14)
        np.testing.assert_allclose(now, x / x.sum(), rtol=1e-14)
        Xi0 = rng.random((m, m))
        Xi, nxt, emn, at, bt = Xi0.copy(), rng.random(m), rng.random(m), rng.random(m), np.zeros(m)
        getattr(ks, f"backward_m{m}")(P, Xi, nxt, emn, 0.7, at, bt)
        v = nxt * emn * 0.7
        np.testing.assert_allclose(bt, v @ P, rtol=1e-14)
        np.testing.assert_allclose(Xi, Xi0 + v[:, None] * P * at[None, :], rtol=1e-14)


def test_em_e_step_refuses_a_sequence_of_probability_zero(rng):
    """The compiled E-step divides without checks; a model that gives a training sequence
    probability 0 must be refused, not turned into nan counts."""
    from rhmmtk.errors import InputError

    l, n, m = 3, 5, 4
    model = random_rhmm(l, 2, n, rng, stop=0.2)
    samples = model.sample(20, rng)
    corpus = _Corpus([s[0] for s in samples], [s[1] for s in samples], l, n)
    support = Support(corpus)
    buckets = make_buckets(corpus, support, m)
    em_model, tp = initial_model(corpus, support, m, rng, 0.5, 1e-3)
    e_step(em_model, tp, buckets, support)                       # fine as it is
    em_model.pi[corpus.labels[0][0]] = 0.0
    with pytest.raises(InputError, match="probability 0"):
        e_step(em_model, tp, buckets, support)


def test_emission_normalisation_matches_numpy(rng):
    """EM's emission M-step kernel against the formula in numpy: kept rows sorted by
    label, labels without rows, a label whose total is 0, floor 0 and floor > 0."""
    from rhmmtk.models.rhmm.kernels_em import normalise_emission_rows

    l, R, m = 6, 40, 3
    label = np.sort(rng.choice([0, 1, 3, 4], size=R))
    counts = rng.random((R, m))
    counts[label == 4] = 0.0
    allowed = (rng.random(R) < 0.8).astype(np.float64)
    others = rng.integers(0, 5, size=l).astype(np.float64)
    others[4] = 0.0
    for floor in (0.0, 0.3):
        num = counts + floor * allowed[:, None]
        tot = np.zeros((l, m))
        np.add.at(tot, label, num)
        tot += floor * others[:, None]
        tot[tot == 0] = 1.0
        values, got_tot = np.empty_like(counts), np.empty((l, m))
        normalise_emission_rows(counts, label, allowed, others, floor, values, got_tot)
        np.testing.assert_allclose(got_tot, tot, rtol=TOL)
        np.testing.assert_allclose(values, num / tot[label], rtol=TOL, atol=0)


def test_support_log_sum_matches_numpy_with_runs_of_equal_values(rng):
    """The EM prior's emission term: runs of equal values (an M-step's unseen pairs) are
    summed as count x log; interleaved values, unsupported pairs and a label without
    support must give numpy's sum of logs over the supported entries."""
    from rhmmtk.models.rhmm.kernels_em import support_log_sum

    l, n, m = 5, 40, 3
    o = rng.random((l, n, m)) + 0.01
    seen = rng.random((l, n)) < 0.3
    o[~seen] = rng.random((l, 1, m)).repeat(n, axis=1)[~seen]   # one value per (a, h)
    o[1, ::2] = o[1, 1]                                          # runs broken by others
    support = rng.random((l, n)) < 0.8
    support[3] = False
    want = np.log(o[support]).sum()
    got = support_log_sum(o, support)
    assert abs(got - want) <= TOL * abs(want)
    support[:] = True
    assert abs(support_log_sum(o, support) - np.log(o).sum()) <= TOL * abs(np.log(o).sum())


# ------------------------------------------------------------------------------ scoring
@pytest.mark.parametrize("weights", [(10, 7, 7), (4, 3, 3), (1, 1, 1), (3, 2, 5), (9, 1, 1)])
def test_banded_edit_counts_match_the_full_dynamic_programme(rng, weights):
    for _ in range(300):
        k = int(rng.integers(1, 5))
        ref = rng.integers(0, k, size=int(rng.integers(0, 40)))
        if rng.random() < 0.5:                   # a few edits of the reference
            hyp = ref.copy()
            for _ in range(int(rng.integers(0, 6))):
                op = rng.integers(0, 3)
                if op == 0 and len(hyp):
                    hyp = np.delete(hyp, rng.integers(0, len(hyp)))
                elif op == 1:
                    hyp = np.insert(hyp, rng.integers(0, len(hyp) + 1), rng.integers(0, k))
                elif len(hyp):
                    hyp[rng.integers(0, len(hyp))] = rng.integers(0, k)
        else:                                     # unrelated (the band must widen)
            hyp = rng.integers(0, k, size=int(rng.integers(0, 40)))
        assert edit_counts(ref, hyp, *weights) == edit_counts_reference(ref, hyp, *weights)


def test_banded_edit_counts_on_long_segment_strings(rng):
    """Frame-like strings of a few thousand segments, the band well below their length."""
    seg = rng.integers(0, 30, size=600)
    ref = np.repeat(seg, 5)
    hyp = ref.copy()
    flip = rng.random(len(hyp)) < 0.05
    hyp[flip] = rng.integers(0, 30, size=int(flip.sum()))
    r, h = collapse(ref), collapse(hyp)
    assert edit_counts(r, h) == edit_counts_reference(r, h)


@pytest.mark.parametrize("M", [2, 3, 8])
def test_mixture_combine_matches_numpy(rng, M):
    """The compiled component max / log-sum-exp against numpy's argmax and logaddexp,
    ties (first of equals) and masked (-inf) states included."""
    from rhmmtk.models.cdhmm import mixture_combine

    Z = rng.normal(size=(7, 5 * M)) * 10
    Z[0, :M] = -np.inf                      # a masked state
    Z[1, M:2 * M] = 3.0                     # all components tied
    z = Z.reshape(7, 5, M)
    top, best = mixture_combine(Z, M, False)
    np.testing.assert_array_equal(best, z.argmax(axis=2))
    np.testing.assert_array_equal(top, z.max(axis=2))
    lse, best2 = mixture_combine(Z, M, True)
    with np.errstate(invalid="ignore"):
        want = np.logaddexp.reduce(z, axis=2)
    want[0, 0] = -np.inf
    np.testing.assert_allclose(lse, want, rtol=1e-12, atol=1e-12)
    assert lse[1, 1] == pytest.approx(3.0 + np.log(M)) and np.array_equal(best2, best)
