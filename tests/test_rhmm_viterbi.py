"""Whole-word decoding of R-HMMs (`decode --rhmm-decode viterbi`): the best path over
refined (label, hidden state) states, against enumeration of every such path on tiny
random models, and with m = 1 against a plain HMM Viterbi over labels."""
import numpy as np
import pytest

from rhmmtk.errors import InputError
from rhmmtk.models.rhmm.viterbi import check_decodable, refined_viterbi
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
