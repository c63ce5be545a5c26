"""Second-order Viterbi over trigram tables (rhmmtk.models.trigram) against brute force."""
import itertools

import numpy as np
import pytest

from rhmmtk.errors import InputError
from rhmmtk.models.trigram import END, START, Batch, BiSymbols, hinge_subgradient, viterbi


def random_bisymbols(rng, num_inputs, num_labels, fewest=1):
    """Bi-symbols in which each input allows `fewest`..3 labels at random."""
    xs, ys = [], []
    for x in range(num_inputs):
        for y in rng.choice(num_labels, size=rng.integers(fewest, 4), replace=False):
            xs.append(x)
            ys.append(int(y))
    return BiSymbols(xs, ys, num_inputs)


def random_words(rng, bis, words, max_len):
    """`words` random words of 1..max_len inputs, each letter with a label it allows."""
    obs, labels = [], []
    for _ in range(words):
        x = rng.integers(0, bis.num_inputs, size=int(rng.integers(1, max_len + 1)))
        labels.append(np.array([rng.choice(bis.pair_label[bis.first[a]:bis.first[a] + bis.count[a]])
                                for a in x]))
        obs.append(x)
    return obs, labels


def random_problem(rng, num_inputs=4, num_labels=5, words=6, max_len=4):
    """Random bi-symbols (each input allows 1..3 labels), words and gold labels."""
    bis = random_bisymbols(rng, num_inputs, num_labels)
    obs, labels = random_words(rng, bis, words, max_len)
    H = rng.normal(size=(bis.nb * bis.nb, bis.nb))
    return bis, obs, labels, H


def padded_score(H, nb, path):
    s, u, a = 0.0, START, START
    for v in list(path) + [END]:
        s += H[u * nb + a, v]
        u, a = a, v
    return s


def brute(H, bis, x, y=None):
    """Best (score + Hamming loss vs y) over every output sequence the inputs allow."""
    choices = [range(bis.first[a], bis.first[a] + bis.count[a]) for a in x]
    best, arg = -np.inf, None
    for path in itertools.product(*choices):
        s = padded_score(H, bis.nb, path)
        if y is not None:
            s += sum(bis.pair_label[b] != t for b, t in zip(path, y))
        if s > best:
            best, arg = s, path
    return best, np.array(arg)


@pytest.mark.parametrize("augmented", [False, True])
def test_viterbi_matches_brute_force(rng, augmented):
    for _ in range(5):
        bis, obs, labels, H = random_problem(rng)
        batch = Batch(bis, obs, labels)
        paths, total = viterbi(H, bis, batch, batch.labels if augmented else None,
                               1.0 if augmented else 0.0)
        want_total = 0.0
        for w, (x, y) in enumerate(zip(obs, labels)):
            best, arg = brute(H, bis, x, y if augmented else None)
            want_total += best
            got = paths[batch.offsets[w]:batch.offsets[w + 1]]
            np.testing.assert_array_equal(got, arg)     # continuous scores: ties have prob. 0
        assert total == pytest.approx(want_total, abs=1e-9)


def hinge(H, bis, obs, labels):
    total = 0.0
    for x, y in zip(obs, labels):
        gold = bis.index_all(x, y)
        best, _ = brute(H, bis, x, y)
        total += best - padded_score(H, bis.nb, gold)
    return total


def test_hinge_loss_and_subgradient(rng):
    bis, obs, labels, H = random_problem(rng, words=5)
    batch = Batch(bis, obs, labels)
    loss, errors, G = hinge_subgradient(H, bis, batch)
    assert loss == pytest.approx(hinge(H, bis, obs, labels), abs=1e-9)
    assert 0 <= errors <= len(obs)
    # subgradient inequality: L(H') >= L(H) + <G, H' - H> at random points
    for _ in range(20):
        H2 = H + rng.normal(scale=rng.choice([0.01, 0.3, 3.0]), size=H.shape)
        assert hinge(H2, bis, obs, labels) >= loss + np.sum(G * (H2 - H)) - 1e-9


def test_gold_is_zero_loss_under_its_own_indicator(rng):
    """A table scoring exactly the gold trigrams high has zero hinge loss and zero subgradient."""
    bis, obs, labels, H = random_problem(rng, words=1)
    batch = Batch(bis, obs, labels)
    H = np.zeros_like(H)
    u, a = START, START
    for v in list(batch.gold) + [END]:
        H[u * bis.nb + a, v] += 10.0
        u, a = a, v
    loss, errors, G = hinge_subgradient(H, bis, batch)
    assert loss == 0 and errors == 0 and not G.any()


def test_unseen_input_symbol_is_refused():
    bis = BiSymbols([0, 0, 2], [1, 2, 0], 3)     # input 1 never seen
    with pytest.raises(InputError, match="never seen in training"):
        Batch(bis, [np.array([0, 1])], keys=["w1"])
