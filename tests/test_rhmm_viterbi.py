"""Whole-word decoding of R-HMMs (`decode --rhmm-decode viterbi`): the best path over
refined (label, hidden state) states, against enumeration of every such path on tiny
random models, and with m = 1 against a plain HMM Viterbi over labels; and
`decode --change-penalty`, the Viterbi over posteriors with a label-change penalty,
against enumeration of every label sequence and a textbook O(N l^2) Viterbi."""
import itertools

import numpy as np
import pytest

from rhmmtk.errors import InputError
from rhmmtk.models.rhmm.operators import RhmmDecodingOptions
from rhmmtk.models.rhmm.viterbi import check_decodable, penalised_labels, refined_viterbi
from test_forward_backward import (diagonal_paths, random_diagonal_operators,
                                   random_general_operators)

MS = [(2, 3), (3, 2, 1), (1, 3), (2, 2, 3)]


def brute_force_best_path(op, x):
    """(log probability, labels) of the best (label, state) sequence, by enumeration."""
    best, arg = -np.inf, None
    for a, p in diagonal_paths(op, x):
        if p > 0 and np.log(p) > best:
            best, arg = np.log(p), a
    return best, arg


def _sparse_emissions(op, rng, share=0.4):
    """Zero a share of the emission entries (as on letters: most labels never emit most
    observations), keeping every observation emitted by some state."""
    for e in op.emit:
        e[rng.random(e.shape) < share] = 0.0
    op.emit[0][:, 0] += (sum(e.sum(axis=1) for e in op.emit) == 0)
    return op


@pytest.mark.parametrize("ms", MS)
@pytest.mark.parametrize("sparse", [False, True])
def test_best_path_matches_enumeration(ms, sparse, rng):
    op = random_diagonal_operators(ms, 3, rng)
    if sparse:
        op = _sparse_emissions(op, rng)
    seqs = [rng.integers(0, 3, size=n) for n in (1, 2, 3, 4, 4)]
    labels, scores = refined_viterbi(op, seqs)
    for x, lab, sc in zip(seqs, labels, scores):
        want, arg = brute_force_best_path(op, x)
        assert np.isfinite(want)
        np.testing.assert_allclose(sc, want, rtol=1e-12)
        np.testing.assert_array_equal(lab, arg)


def test_best_path_is_not_the_max_marginal_labelling(rng):
    """The tests above can fail: on these models the two decoders disagree (seen at seeds
    0-4: 18 to 43 of 60 positions), so matching enumeration is not matching the
    max-marginal decoder."""
    op = random_diagonal_operators((3, 3, 3), 4, rng)
    seqs = [rng.integers(0, 4, size=6) for _ in range(10)]
    vit, _ = refined_viterbi(op, seqs)
    mm = op.decode(seqs).labels
    assert any((v != m_).any() for v, m_ in zip(vit, mm))


def hmm_viterbi(op, x):
    """Viterbi over labels of an m = 1 model, in probabilities (short x: no underflow)."""
    l = op.num_labels
    A = np.zeros((l, l))
    for (a, b), T in op.trans.items():
        A[a, b] = T[0, 0]
    E = np.array([e[:, 0] for e in op.emit])          # (l, n)
    d = np.array([v[0] for v in op.init]) * E[:, x[0]]
    back = []
    for t in range(1, len(x)):
        s = d[:, None] * A
        back.append(s.argmax(axis=0))
        d = s.max(axis=0) * E[:, x[t]]
    d = d * np.array([v[0] for v in op.stop])
    path = [int(d.argmax())]
    for b in reversed(back):
        path.append(int(b[path[-1]]))
    return np.log(d.max()), path[::-1]


def test_one_state_per_label_is_the_hmm_viterbi(rng):
    op = random_diagonal_operators((1,) * 5, 6, rng)
    seqs = [rng.integers(0, 6, size=n) for n in (1, 3, 7, 12, 20)]
    labels, scores = refined_viterbi(op, seqs)
    for x, lab, sc in zip(seqs, labels, scores):
        want, path = hmm_viterbi(op, x)
        np.testing.assert_allclose(sc, want, rtol=1e-12)
        np.testing.assert_array_equal(lab, path)


def test_long_sequences_do_not_underflow(rng):
    """Log domain: 2,000 positions (the probability is far below 1e-308)."""
    op = random_diagonal_operators((2, 3), 3, rng, drop=0.0)
    op.emit = [0.1 * e for e in op.emit]        # each position costs a factor <= 0.1
    x = rng.integers(0, 3, size=2000)
    (lab,), (sc,) = refined_viterbi(op, [x])
    assert np.isfinite(sc) and sc < np.log(1e-308)
    assert len(lab) == 2000


def test_beam_never_beats_exact_and_zero_is_exact(rng):
    op = random_diagonal_operators((3, 3, 2), 4, rng, drop=0.0)
    seqs = [rng.integers(0, 4, size=8) for _ in range(20)]
    _, exact = refined_viterbi(op, seqs, 0.0)
    _, wide = refined_viterbi(op, seqs, 0.9)
    assert (wide <= exact + 1e-12).all()
    # the beam did prune a best path: 1 to 20 of the 20 sequences at seeds 0-4
    assert (wide < exact - 1e-9).any()


def test_no_path_and_empty_sequence(rng):
    op = random_diagonal_operators((2, 2), 2, rng)
    op.emit[0][1] = 0.0
    op.emit[1][1] = 0.0             # observation 1 cannot be emitted
    labels, scores = refined_viterbi(op, [np.array([0, 1, 0]), np.zeros(0, np.int64)])
    assert scores[0] == -np.inf and scores[1] == -np.inf
    assert len(labels[0]) == 3 and len(labels[1]) == 0


def test_spectral_and_signed_models_are_refused(rng):
    general = random_general_operators(2, [2, 2], 3, rng)
    with pytest.raises(InputError, match="spectral"):
        check_decodable(general)
    op = random_diagonal_operators((2, 2), 3, rng)
    op.emit[1][0, 1] = -0.1
    with pytest.raises(InputError, match="negative"):
        check_decodable(op)


# --- decode --change-penalty: Viterbi over the posteriors with a label-change penalty ---

def penalised_score(g, a, penalty):
    return sum(g[i, a[i]] for i in range(len(a))) - penalty * sum(
        a[i] != a[i + 1] for i in range(len(a) - 1))


def brute_force_penalised(g, penalty):
    """(score, labels) of the best label sequence by enumeration of all l^N."""
    best, arg = -np.inf, None
    for a in itertools.product(range(g.shape[1]), repeat=len(g)):
        s = penalised_score(g, a, penalty)
        if s > best:
            best, arg = s, a
    return best, np.array(arg)


def plain_penalised(g, penalty):
    """The same by a textbook O(N l^2) Viterbi with a full transition score matrix (the
    library's pass is O(N l): only 'stay' or 'jump from the best' can win)."""
    N, l = g.shape
    A = -penalty * (1 - np.eye(l))
    d, back = g[0].copy(), []
    for i in range(1, N):
        s = d[:, None] + A
        back.append(s.argmax(axis=0))
        d = s.max(axis=0) + g[i]
    path = [int(d.argmax())]
    for b in reversed(back):
        path.append(int(b[path[-1]]))
    return path[::-1]


@pytest.mark.parametrize("penalty", [0.05, 0.3, 1.0, 3.0])
def test_penalised_labels_match_enumeration(penalty, rng):
    """Signed scores (as a spectral model's posteriors can be), 3 labels, up to 6
    positions: the best sequence and its score equal enumeration's."""
    for n in (1, 2, 3, 5, 6):
        g = rng.normal(size=(n, 3))
        lab = penalised_labels(g, penalty)
        want, arg = brute_force_penalised(g, penalty)
        np.testing.assert_allclose(penalised_score(g, lab, penalty), want, rtol=1e-12)
        np.testing.assert_array_equal(lab, arg)


def test_penalised_labels_zero_is_max_marginal_and_large_is_one_label(rng):
    g = rng.random((40, 5))
    np.testing.assert_array_equal(penalised_labels(g, 0.0), g.argmax(axis=1))
    big = penalised_labels(g, 1e6)
    assert (big == big[0]).all() and big[0] == g.sum(axis=0).argmax()
    # the test can fail: a moderate penalty changes this labelling (seeds 0-4: 9 to 14 of
    # the 40 positions), and to the textbook Viterbi's labels
    mid = penalised_labels(g, 0.3)
    assert (mid != g.argmax(axis=1)).any()
    np.testing.assert_array_equal(mid, plain_penalised(g, 0.3))


@pytest.mark.parametrize("general", [False, True])
def test_decode_change_penalty_smooths_the_returned_posteriors(general, rng):
    """Operators.decode with --change-penalty: the labels are the penalised Viterbi path of
    the very posteriors it returns, for an EM-style and a signed spectral-style model."""
    op = (random_general_operators(3, [2, 3, 2], 4, rng) if general
          else random_diagonal_operators((2, 3, 2), 4, rng))
    seqs = [rng.integers(0, 4, size=n) for n in (1, 4, 9) + (30,) * 12]
    plain = op.decode(seqs, RhmmDecodingOptions(beam=0.0))
    got = op.decode(seqs, RhmmDecodingOptions(beam=0.0, change_penalty=0.5))
    changed = 0
    for p, lab, lab0, post in zip(plain.posteriors, got.labels, plain.labels, got.posteriors):
        np.testing.assert_array_equal(post, p)
        np.testing.assert_array_equal(lab0, p.argmax(axis=1))
        np.testing.assert_array_equal(lab, plain_penalised(p, 0.5))
        changed += int((lab != lab0).sum())
    assert changed > 0       # seeds 0-9: 1 to 161 of the 375 positions changed


def test_change_penalty_is_refused_with_refined_viterbi(rng):
    op = random_diagonal_operators((2, 2), 3, rng)
    with pytest.raises(InputError, match="change-penalty"):
        op.bind_options(RhmmDecodingOptions(rhmm_decode="viterbi", change_penalty=0.1))
