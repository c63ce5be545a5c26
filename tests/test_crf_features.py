"""The CRF peer's letter-window features (rhmmtk.models.crf.features)."""
from rhmmtk.models.crf import BOUNDARY, features


def test_default_features_are_unigrams_bigrams_trigrams_of_the_window():
    f = features(list("ab"), 1)
    b = BOUNDARY
    assert f[0] == ["bias", f"u-1={b}", "u0=a", "u1=b", f"b-1={b}a", "b0=ab", f"t-1={b}ab"]
    assert f[1] == ["bias", "u-1=a", "u0=b", f"u1={b}", "b-1=ab", f"b0=b{b}", f"t-1=ab{b}"]


def test_ngram_adds_longer_ngrams_and_never_more_than_the_window_holds():
    word = list("abcde")
    three, five = features(word, 2), features(word, 2, ngram=5)
    for f3, f5 in zip(three, five):
        assert f5[:len(f3)] == f3            # the 3-gram model's features, then the new ones
        extra = f5[len(f3):]
        assert len(extra) == 2 + 1           # two 4-grams and one 5-gram in a width-5 window
    assert five[2][-1] == "g5_-2=abcde"
    assert features(word, 1, ngram=9) == features(word, 1, ngram=3)   # width 3 caps n at 3
    assert [len(f) for f in features(word, 2, ngram=1)] == [6] * 5      # bias + 5 letters
