"""WindowIndex (rhmmtk.frontend.observations): many words' observation ids at once, the
same as `symbolize` gives word by word (widest window the table knows, backing off)."""
import numpy as np
import pytest

from rhmmtk.errors import InputError
from rhmmtk.frontend.observations import WindowIndex, learn_vocabulary, symbolize


@pytest.mark.parametrize("context, min_count", [(0, 1), (1, 2), (2, 2), (3, 3)])
def test_window_index_is_symbolize(rng, context, min_count):
    letters = list("abcdefg")
    train = ["".join(rng.choice(letters, rng.integers(1, 8))) for _ in range(300)]
    table = learn_vocabulary([list(w) for w in train], context, min_count)
    words = ["".join(rng.choice(letters, rng.integers(1, 9))) for _ in range(500)] + ["a"]
    ids, offsets = WindowIndex(table, context).ids(words)
    want = [table.ids(symbolize(list(w), table, context)) for w in words]
    for got, w in zip(np.split(ids, offsets[1:-1]), want):
        assert got.tolist() == w.tolist()
    # backing off happens: some positions get narrower windows than the widest
    widths = {table.symbols[i].count("|") for i in ids}
    assert context == 0 or len(widths) > 1


def test_unknown_letter_names_word_and_position():
    table = learn_vocabulary([list("abc")], 1, 1)
    with pytest.raises(InputError) as e:
        WindowIndex(table, 1).ids(["ab", "cza"], "words.txt")
    assert "unknown symbol 'z' at position 2" in str(e.value.describe())
    assert "cza" in e.value.describe()
