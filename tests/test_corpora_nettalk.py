"""The NETtalk split (rhmmtk.corpora.nettalk): seeded, recorded, and remade exactly when
the record differs -- so a recipe run with another seed or sizes never reuses the old
split (the bug this guards: run_competitors.sh once kept any data/ it found)."""
import os

import pytest

from rhmmtk.corpora import nettalk
from rhmmtk.errors import InputError

WORDS = ["abc", "ab", "cat", "dog", "bird", "fish", "a", "zebra", "ox", "yak", "emu", "gnu"]


@pytest.fixture
def dictionary(tmp_path):
    path = tmp_path / "dict.data"
    path.write_text("".join(f"{w}\t{'x' * len(w)}\t0\t1\n" for w in WORDS))
    return str(path)


def lists(out):
    return {p: (out / p / "list").read_text().split() for p in nettalk.PARTS}


def test_split_is_seeded_disjoint_and_complete(dictionary, tmp_path):
    a = nettalk.prepare(dictionary, tmp_path / "a", (6, 3), seed=4)
    nettalk.prepare(dictionary, tmp_path / "b", (6, 3), seed=4)
    assert a == {"train": 6, "dev": 3, "test": 3}
    la, lb = lists(tmp_path / "a"), lists(tmp_path / "b")
    assert la == lb
    keys = sum(la.values(), [])
    assert sorted(keys) == sorted(f"{i:05d}_{w}" for i, w in enumerate(WORDS, 1))
    nettalk.prepare(dictionary, tmp_path / "c", (6, 3), seed=5)
    assert lists(tmp_path / "c") != la


def test_if_changed_keeps_the_same_split(dictionary, tmp_path):
    out = tmp_path / "data"
    nettalk.prepare(dictionary, out, (6, 3), seed=1)
    before = os.stat(out / "train" / "ali").st_mtime_ns
    assert nettalk.prepare(dictionary, out, (6, 3), seed=1, if_changed=True) is None
    assert os.stat(out / "train" / "ali").st_mtime_ns == before


@pytest.mark.parametrize("sizes, seed", [((6, 3), 2), ((5, 3), 1), ((6, 2), 1)])
def test_if_changed_remakes_another_split(dictionary, tmp_path, sizes, seed):
    out = tmp_path / "data"
    nettalk.prepare(dictionary, out, (6, 3), seed=1)
    counts = nettalk.prepare(dictionary, out, sizes, seed=seed, if_changed=True)
    assert counts["train"] == sizes[0] and counts["dev"] == sizes[1]
    assert lists(out) == lists_of(dictionary, tmp_path / "fresh", sizes, seed)
    assert (out / nettalk.RECORD).read_text() == (tmp_path / "fresh" / nettalk.RECORD).read_text()


def lists_of(dictionary, out, sizes, seed):
    nettalk.prepare(dictionary, out, sizes, seed=seed)
    return lists(out)


def test_if_changed_remakes_when_the_dictionary_or_a_file_changed(dictionary, tmp_path):
    out = tmp_path / "data"
    nettalk.prepare(dictionary, out, (6, 3), seed=1)
    (out / "dev" / "letters").unlink()              # a file lost: made again
    assert nettalk.prepare(dictionary, out, (6, 3), seed=1, if_changed=True) is not None
    assert (out / "dev" / "letters").exists()
    with open(dictionary, "a") as f:                # another dictionary: made again
        f.write("owl\txxx\t0\t1\n")
    assert nettalk.prepare(dictionary, out, (6, 3), seed=1, if_changed=True)["test"] == 4
    (out / nettalk.RECORD).unlink()                 # no record (an older data/): made again
    assert nettalk.prepare(dictionary, out, (6, 3), seed=1, if_changed=True) is not None


def test_record_ignores_the_dictionary_path(dictionary, tmp_path):
    moved = tmp_path / "elsewhere.data"
    moved.write_text(open(dictionary).read())
    out = tmp_path / "data"
    nettalk.prepare(dictionary, out, (6, 3), seed=1)
    assert nettalk.prepare(str(moved), out, (6, 3), seed=1, if_changed=True) is None


def test_too_small_dictionary_is_an_input_error(dictionary, tmp_path):
    with pytest.raises(InputError, match="too few"):
        nettalk.prepare(dictionary, tmp_path / "data", (10, 2), seed=1)
    assert not (tmp_path / "data" / nettalk.RECORD).exists()
