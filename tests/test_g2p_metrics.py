"""PER and WER of phoneme strings (score/compare --phonemes) against hand-computed edits."""
import json

import numpy as np
import pytest

from cli_helpers import fails, run
from rhmmtk import scoring
from rhmmtk.g2p import metrics
from rhmmtk.g2p.labels import phonemes


def levenshtein(a, b):
    """Textbook O(n m) edit distance, unit costs."""
    d = np.arange(len(b) + 1)
    for i, x in enumerate(a, 1):
        prev, d[0] = d.copy(), i
        for j, y in enumerate(b, 1):
            d[j] = min(prev[j] + 1, d[j - 1] + 1, prev[j - 1] + (x != y))
    return int(d[-1])


@pytest.mark.parametrize("ref, hyp, errors, phones", [
    # per-letter labels: silents dropped, compounds split before counting
    ("b aa k|s", "b aa k|s", 0, 4),
    ("b aa k|s", "b aa k", 1, 4),                  # k s vs k: one deletion
    ("b aa k|s", "b aa k s", 0, 4),                # a compound is its phonemes
    ("f - ow n -", "f ow - n -", 0, 3),           # same phonemes, other letters
    ("k|s -", "- s", 1, 2),                       # k s vs s
    ("a b c", "x y", 3, 3),                       # two substitutions and a deletion
    ("a", "b c d", 3, 1),                         # a substitution and two insertions
])
def test_phoneme_errors_by_hand(ref, hyp, errors, phones):
    r, h = {"w": ref.split()}, {"w": hyp.split()}
    s = metrics.score(r, h)
    assert int(s.errors[0]) == errors
    assert s.wer == (100.0 if errors else 0.0)
    assert int(s.phones[0]) == phones


def test_per_is_levenshtein_on_random_strings(rng):
    syms = list("abcd") + ["-", "a|b"]
    ref = {f"u{i}": list(rng.choice(syms, rng.integers(1, 9))) for i in range(300)}
    hyp = {k: list(rng.choice(syms, rng.integers(1, 9))) for k in ref}
    s = metrics.score(ref, hyp)
    want = [levenshtein(phonemes(ref[k]), phonemes(hyp[k])) for k in ref]
    assert s.errors.tolist() == want
    assert s.errors.sum() > 100                    # the strings differ: the test can fail
    assert s.per == pytest.approx(100 * sum(want) / sum(len(phonemes(r)) for r in ref.values()))


def test_wer_is_scores_sentence_error_without_silents_or_compounds(rng):
    # labels that are single phonemes: a word is right iff every letter is
    ref = {f"u{i}": list(rng.choice(list("abc"), rng.integers(1, 6))) for i in range(400)}
    hyp = {k: [x if rng.random() < 0.9 else "c" for x in v] for k, v in ref.items()}
    g2p, pos = metrics.score(ref, hyp), scoring.score(ref, hyp)
    assert g2p.wer == pytest.approx(100 - pos.sequence_accuracy)
    assert 0 < g2p.per <= 100 - pos.position_accuracy     # Levenshtein <= Hamming


def test_score_and_compare_phonemes_commands(tmp_path):
    (tmp_path / "ref").write_text("box b aa k|s\nphone f - ow n -\nax ae k|s\n")
    (tmp_path / "a").write_text("box b aa k|s\nphone f ow - n -\nax ae k|s\n")
    (tmp_path / "b").write_text("box b aa k\nphone f aa n\nax ae k s\n")   # plain phonemes
    out = json.loads(run("score", "--phonemes", "--json", tmp_path / "ref",
                         tmp_path / "b").stdout)
    assert (out["phoneme_errors"], out["phonemes"], out["words_wrong"]) == (2, 10, 2)
    assert out["per"] == pytest.approx(100 * 2 / 10)
    text = run("score", "--phonemes", tmp_path / "ref", tmp_path / "a").stdout
    assert "PER=0.00 [E=0, N=10]" in text and "WER=0.00 [E=0, N=3]" in text
    c = json.loads(run("compare", "--phonemes", "--json", "--bootstrap", "200",
                       tmp_path / "ref", tmp_path / "a", tmp_path / "b").stdout)
    assert c["per"]["difference"] == pytest.approx(-100 * 2 / 10)
    assert c["wer"]["difference"] == pytest.approx(-100 * 2 / 3)
    assert c["wer"]["sign_test"]["a_better"] == 2
    text = run("compare", "--phonemes", "--bootstrap", "200", tmp_path / "ref",
               tmp_path / "a", tmp_path / "b").stdout
    assert "PER=20.00 [E=2, N=10]" in text and "WER=66.67 [E=2, N=3]" in text


def test_unpaired_words_are_one_line(tmp_path):
    (tmp_path / "ref").write_text("box b aa k|s\nax ae k|s\n")
    (tmp_path / "hyp").write_text("box b aa k|s\n")
    err = fails("score", "--phonemes", tmp_path / "ref", tmp_path / "hyp")
    assert "utterance ax" in err


def test_mapping_is_refused_with_phonemes(tmp_path):
    (tmp_path / "ref").write_text("box b aa k|s\n")
    (tmp_path / "map").write_text("b b\n")
    for cmd in (["score"], ["compare", tmp_path / "ref"]):
        err = fails(*cmd, "--phonemes", "--mapping", tmp_path / "map", tmp_path / "ref",
                    tmp_path / "ref")
        assert "--mapping does not apply to --phonemes" in err


# two references of `read` (r iy d, r eh d) and one of `ban`; utterances as the recipe keys them
MULTI_REF = {"1_read": "r iy d -".split(), "2_read": "r eh d -".split(), "3_ban": "b ae n".split()}
MULTI_WORDS = {"1_read": "read", "2_read": "read", "3_ban": "ban"}


@pytest.mark.parametrize("hyp_read, errors, phones, wrong", [
    ("r eh d -", 0, 3, 0),        # matches the second reference: right
    ("r iy d -", 0, 3, 0),        # the first
    ("r ey d -", 1, 3, 1),        # one substitution from either: wrong, 1 error
    ("r iy -", 1, 3, 1),          # r iy: one deletion from r iy d
    ("r eh d z", 1, 3, 1),
])
def test_a_word_is_right_when_it_matches_any_reference(hyp_read, errors, phones, wrong):
    hyp = {"1_read": hyp_read.split(), "2_read": hyp_read.split(), "3_ban": "b ae n".split()}
    s = metrics.score(MULTI_REF, hyp, words=MULTI_WORDS)
    assert s.keys == ["1_read", "3_ban"]          # one item per word
    assert s.errors.tolist() == [errors, 0]
    assert s.phones.tolist() == [phones, 3]
    assert s.words_wrong == wrong and s.wer == 50.0 * wrong
    # per utterance instead (no words): each reference counts, so a right word is half wrong
    per_utt = metrics.score(MULTI_REF, hyp)
    assert per_utt.words_wrong == wrong + 1        # the reference it does not match


def test_the_closest_reference_gives_the_phonemes(tmp_path):
    ref = {"a1": "k ae t s".split(), "a2": "k ae t".split()}
    s = metrics.score(ref, {"a1": "k ae t".split(), "a2": "k ae t".split()},
                      words={"a1": "cats", "a2": "cats"})
    assert (int(s.errors[0]), int(s.phones[0])) == (0, 3)      # the 3-phoneme reference
    s = metrics.score(ref, {"a1": "k ae d s".split(), "a2": "k ae d s".split()},
                      words={"a1": "cats", "a2": "cats"})
    assert (int(s.errors[0]), int(s.phones[0])) == (1, 4)      # 1 vs 2 errors: the first


def test_letters_option_groups_utterances_by_spelling(tmp_path):
    (tmp_path / "ref").write_text("1_read r iy d -\n2_read r eh d -\n3_ban b ae n\n")
    (tmp_path / "letters").write_text("1_read r e a d\n2_read r e a d\n3_ban b a n\n")
    (tmp_path / "a").write_text("1_read r eh d -\n2_read r eh d -\n3_ban b ae n\n")
    (tmp_path / "b").write_text("1_read r ey d\n2_read r ey d\n3_ban b ae n\n")
    out = json.loads(run("score", "--phonemes", "--letters", tmp_path / "letters", "--json",
                         tmp_path / "ref", tmp_path / "a").stdout)
    assert (out["words"], out["words_wrong"], out["phoneme_errors"]) == (2, 0, 0)
    plain = json.loads(run("score", "--phonemes", "--json", tmp_path / "ref",
                           tmp_path / "a").stdout)
    assert (plain["words"], plain["words_wrong"]) == (3, 1)
    c = json.loads(run("compare", "--phonemes", "--letters", tmp_path / "letters", "--json",
                       "--bootstrap", "100", tmp_path / "ref", tmp_path / "a",
                       tmp_path / "b").stdout)
    assert (c["a"]["words"], c["b"]["words_wrong"]) == (2, 1)
    assert c["wer"]["difference"] == pytest.approx(-50.0)
    err = fails("score", "--letters", tmp_path / "letters", tmp_path / "ref", tmp_path / "a")
    assert "--letters needs --phonemes" in err
