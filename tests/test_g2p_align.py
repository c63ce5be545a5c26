"""rhmmtk align: the many-to-many EM aligner against brute force, and lexicon input."""
import numpy as np
import pytest

from cli_helpers import fails, run
from rhmmtk.g2p.align import AlignOptions, Lattices, align, em
from rhmmtk.g2p.labels import phonemes
from rhmmtk.io.lexicon import Entry, read_lexicon


def cuttings(lets, phs, shapes):
    """Every cutting of (lets, phs) into chunk pairs of the allowed shapes, by recursion."""
    if not lets and not phs:
        yield []
        return
    for i, j in shapes:
        if i <= len(lets) and j <= len(phs):
            for rest in cuttings(lets[i:], phs[j:], shapes):
                yield [(tuple(lets[:i]), tuple(phs[:j]))] + rest


def shapes_of(max_letters, max_phones):
    """The documented chunk shapes, written out here (not the module's): a silent
    letter, and 1..X letters with 1..Y phonemes."""
    return [(1, 0)] + [(i, j) for i in range(1, max_letters + 1)
                       for j in range(1, max_phones + 1)]


def brute_force(pairs, p_of, shapes):
    """Expected chunk-pair counts and sum of log p(entry) by enumerating every cutting."""
    counts, loglik = {}, 0.0
    for lets, phs in pairs:
        paths = list(cuttings(lets, phs, shapes))
        probs = np.array([np.prod([p_of[c] for c in path]) for path in paths])
        z = probs.sum()
        loglik += np.log(z)
        for path, q in zip(paths, probs):
            for c in path:
                counts[c] = counts.get(c, 0.0) + q / z
    return counts, loglik


PAIRS = [("box", ("b", "aa", "k", "s")), ("phone", ("f", "ow", "n")), ("ax", ("ae", "k", "s")),
         ("see", ("s", "iy")), ("a", ("ah",)), ("ab", ("ae", "b"))]


@pytest.mark.parametrize("limits", [(2, 2), (1, 2), (2, 1), (3, 2)])
def test_expected_counts_match_enumeration(rng, limits):
    pairs = [(tuple(w), p) for w, p in PAIRS if len(p) <= limits[1] * len(w)]  # alignable
    lat = Lattices(pairs, *limits)
    p = rng.random(len(lat.chunks)) + 0.05     # a random model, not the uniform start
    p /= p.sum()
    counts, loglik = lat.expected_counts(p)
    want, want_ll = brute_force(pairs, dict(zip(lat.chunks, p)), shapes_of(*limits))
    assert set(want) <= set(lat.chunks)
    got = dict(zip(lat.chunks, counts))
    assert counts.sum() > len(pairs)                  # nonzero: the test can fail
    for c in lat.chunks:
        assert abs(got[c] - want.get(c, 0.0)) < 1e-10, c
    assert abs(loglik - want_ll) < 1e-10


def test_viterbi_is_the_most_probable_cutting(rng):
    pairs = [(tuple(w), p) for w, p in PAIRS]
    lat = Lattices(pairs)
    p = rng.random(len(lat.chunks)) + 0.05
    p /= p.sum()
    p_of = dict(zip(lat.chunks, p))
    for (lets, phs), cut in zip(pairs, lat.best_cuts(p)):
        best = max(np.prod([p_of[c] for c in path])
                   for path in cuttings(lets, phs, shapes_of(2, 2)))
        assert np.prod([p[c] for c in cut]) == pytest.approx(best, rel=1e-12)
        assert tuple(x for c in cut for x in lat.chunks[c][0]) == lets


def test_loglik_never_decreases(nettalk):
    entries = nettalk_entries(nettalk, 2000)
    lat = Lattices([(tuple(e.word), e.phones) for e in entries])
    _, history = em(lat, 8)
    steps = np.diff(history)
    assert (steps >= -1e-9 * abs(history[0])).all(), steps
    assert history[-1] > history[0] + 1000          # EM does learn (seen: +50,000)


def test_one_to_one_lexicon_is_aligned_one_to_one(rng):
    # a letter-to-phoneme cipher: every word's pronunciation is its letters mapped 1:1
    cipher = {c: f"P{c.upper()}" for c in "abcdefgh"}
    words = {"".join(rng.choice(list(cipher), size=rng.integers(2, 7))) for _ in range(300)}
    entries = [Entry(w, tuple(cipher[c] for c in w), k + 1) for k, w in enumerate(sorted(words))]
    result = align(entries, AlignOptions(iters=10))
    for e, labels in zip(entries, result.labels):
        assert labels == [cipher[c] for c in e.word], (e.word, labels)


def test_labels_give_back_the_pronunciation(nettalk):
    entries = nettalk_entries(nettalk, 500)
    result = align(entries, AlignOptions(iters=5))
    for e, labels in zip(entries, result.labels):
        assert len(labels) == len(e.word)
        assert phonemes(labels) == list(e.phones)


def nettalk_entries(path, n):
    """The first n NETtalk words as an unaligned lexicon ('-' removed, one char a phoneme)."""
    out = []
    for k, line in enumerate(open(path), 1):
        word, phones = line.split("\t")[:2]
        out.append(Entry(word, tuple(phones.replace("-", "")), k))
        if len(out) == n:
            break
    return out


# --- the command and its bad input -----------------------------------------------

LEXICON = """;;; a CMU-style lexicon
BOX  B AA1 K S
PHONE  F OW1 N
PHONE(2)  F OW0 N
AX  AE1 K S
"""


def test_align_command_writes_letters_and_labels(tmp_path):
    lex = tmp_path / "lex"
    lex.write_text(LEXICON)
    run("align", "--stress", "strip", lex, tmp_path / "letters", tmp_path / "ali")
    letters = (tmp_path / "letters").read_text().splitlines()
    ali = [line.split() for line in (tmp_path / "ali").read_text().splitlines()]
    assert letters[0] == "BOX B O X"
    assert [a[0] for a in ali] == ["BOX", "PHONE", "AX"]   # stress stripped: one PHONE
    assert phonemes(ali[0][1:]) == ["B", "AA", "K", "S"]
    assert [len(a) - 1 for a in ali] == [3, 5, 2]


@pytest.mark.parametrize("text, message", [
    ("box  b aa k s\nhello\n", "line 2: word 'hello' has no pronunciation"),
    ("box  b aa k s\nbox  b aa k s\n", "line 2: 'box' with this pronunciation again "
                                        "(first on line 1)"),
    (";;; nothing\n\n", "empty lexicon"),
    ("box  b aa k s\nx  eh k s ih z\n", "line 2: 'x' has 5 phonemes, more than --max-phones 2"),
])
def test_bad_lexicons_are_one_line_and_write_nothing(tmp_path, text, message):
    lex = tmp_path / "lex"
    lex.write_text(text)
    err = fails("align", lex, tmp_path / "letters", tmp_path / "ali")
    assert f"{lex}: {message}" in err
    assert len([line for line in err.splitlines() if "error" in line]) == 1
    assert not (tmp_path / "letters").exists() and not (tmp_path / "ali").exists()


def test_skip_duplicates(tmp_path):
    lex = tmp_path / "lex"
    lex.write_text("box  b aa k s\nbox  b aa k s\nbox  b ao k s\n")
    run("align", "--skip-duplicates", lex, tmp_path / "letters", tmp_path / "ali")
    assert [line.split()[0] for line in (tmp_path / "ali").read_text().splitlines()] == [
        "box", "box(2)"]


def test_lexicon_formats_and_stress(tmp_path):
    lex = tmp_path / "lex"
    lex.write_text("# comment\nread\tR IY1 D\nread(2)\tR EH1 D\nLIVE(2)  L IH1 V\n")
    keep = read_lexicon(lex)
    assert [(e.word, e.phones, e.line) for e in keep] == [
        ("read", ("R", "IY1", "D"), 2), ("read", ("R", "EH1", "D"), 3),
        ("LIVE", ("L", "IH1", "V"), 4)]
    assert read_lexicon(lex, "strip")[1].phones == ("R", "EH", "D")


def test_split_keeps_every_pronunciation_of_a_word_in_one_part():
    from rhmmtk.g2p.split import split_words

    entries = [Entry(f"w{i // 2 if i < 100 else i}", (f"p{i}",), i + 1) for i in range(400)]
    parts = split_words(entries, (0.75, 0.05), seed=3)
    words = {name: {e.word for e in es} for name, es in parts.items()}
    assert not (words["train"] & words["dev"] or words["train"] & words["test"]
                or words["dev"] & words["test"])
    assert sum(len(es) for es in parts.values()) == 400
    assert len(words["dev"]) == round(0.05 * 350) and len(words["train"]) == round(0.75 * 350)
    for es in parts.values():                       # file order kept
        assert [e.line for e in es] == sorted(e.line for e in es)
    assert split_words(entries, (0.75, 0.05), seed=3) == parts
    assert split_words(entries, (0.75, 0.05), seed=4) != parts
