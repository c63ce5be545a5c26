"""rhmmtk pronounce: a trained tagger + a word list -> a lexicon, as `decode` labels them."""
import numpy as np
import pytest

from cli_helpers import fails, run
from rhmmtk.g2p.labels import phonemes
from rhmmtk.io.lexicon import read_lexicon
from rhmmtk.models import load_model

# a toy language: c is silent before h, x is two phonemes, the rest one each
RULES = {"a": ["AE"], "b": ["B"], "c": ["K"], "h": ["HH"], "x": ["K", "S"], "o": ["OW"]}


def pronunciation(word):
    out = []
    for i, c in enumerate(word):
        if c == "c" and word[i + 1: i + 2] == "h":
            continue
        out += RULES[c]
    return out


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    import numpy as np

    d = tmp_path_factory.mktemp("pron")
    rng = np.random.default_rng(7)
    words = sorted({"".join(rng.choice(list(RULES), rng.integers(2, 7))) for _ in range(400)})
    (d / "lex").write_text("".join(f"{w}\t{' '.join(pronunciation(w))}\n" for w in words))
    run("align", d / "lex", d / "letters", d / "ali")
    run("make-obs", "--context", "1", "--write-symbols", d / "win.syms", d / "letters",
        d / "win.h5")
    run("make-obs", "--write-symbols", d / "let.syms", d / "letters", d / "let.h5")
    run("train-em", "-m", "1", "--iters", "0", d / "win.h5", d / "ali", d / "hmm.h5")
    run("train-crf", "--iters", "30", d / "let.h5", d / "ali", d / "crf.h5")
    run("train-subpat", "--iters", "5", "--hash-bits", "14", "--window", "1", "--ngram", "2",
        d / "let.h5", d / "ali", d / "subpat.h5")
    test = ["chax", "boxo", "ahcha", "xx"]
    (d / "words").write_text("\n".join(test) + "\n")
    (d / "test.letters").write_text("".join(f"{w} {' '.join(w)}\n" for w in test))
    return d, test


@pytest.mark.parametrize("model, syms", [("hmm", "win"), ("crf", "let"), ("subpat", "let")])
def test_pronounce_is_decode_as_phonemes(trained, tmp_path, model, syms):
    d, test = trained
    run("pronounce", d / f"{model}.h5", d / "words", tmp_path / "out.lex")
    got = {e.word: list(e.phones) for e in read_lexicon(tmp_path / "out.lex")}
    run("make-obs", "--symbols", d / f"{syms}.syms", d / "test.letters", tmp_path / "t.h5")
    run("decode", d / f"{model}.h5", tmp_path / "t.h5", tmp_path / "hyp")
    for line in (tmp_path / "hyp").read_text().splitlines():
        word, *labels = line.split()
        assert got[word] == phonemes(labels)
    # the toy rules are learnable: the CRF gets them all (seen: every word right)
    if model == "crf":
        assert got == {w: pronunciation(w) for w in test}


def test_pronounce_cmu_format_and_unseen_letter(trained, tmp_path):
    d, _ = trained
    out = run("pronounce", "--format", "cmu", d / "crf.h5", d / "words", "-").stdout
    assert out.splitlines()[0] == "chax  HH AE K S"
    (tmp_path / "words").write_text("box\nbzz\n")
    err = fails("pronounce", d / "crf.h5", tmp_path / "words", tmp_path / "out")
    assert f"{tmp_path / 'words'}: utterance bzz: unknown symbol 'z'" in err
    assert not (tmp_path / "out").exists()


def test_crf_nbest_is_crfsuites_ranking_by_brute_force(trained):
    """The CRF's k best label sequences of short words: CRFsuite's own probabilities of
    every label sequence, sorted, give the same list; the first is `decode`'s."""
    import itertools

    from rhmmtk.models.crf import features

    d, _ = trained
    model = load_model(d / "crf.h5")
    tagger, sym = model.tagger(), model.labels.symbols
    for word in ("ch", "xo", "bax"):
        x = model.observations.ids(list(word))
        got = model.nbest([x], 6)[0]
        tagger.set(features(list(word), model.info["window"]))
        probs = {ys: tagger.probability([sym[i] for i in ys])
                 for ys in itertools.product(range(len(sym)), repeat=len(word))}
        want = sorted(probs, key=lambda ys: -probs[ys])[:6]
        assert [tuple(ys) for _, ys in got] == want
        assert list(got[0][1]) == list(model.decode([x]).labels[0])
        # scores are log-probabilities log p(y|x): CRFsuite's own (to the 6 decimals of
        # its dump, where the weights are read)
        assert [score for score, _ in got] == pytest.approx(
            [np.log(probs[ys]) for ys in want], abs=1e-4)


def distinct_spellings(model, word):
    """How many distinct phoneme strings the labellings `model` allows for `word` spell
    (subpat: the labels seen with each letter; the CRF: every label)."""
    import itertools

    sym = model.labels.symbols
    x = model.observations.ids(list(word))
    bis = getattr(model, "bis", None)
    allowed = [bis.pair_label[bis.first[a]:bis.first[a] + bis.count[a]] if bis else
               range(len(sym)) for a in x]
    return len({tuple(phonemes([sym[i] for i in ys])) for ys in itertools.product(*allowed)})


@pytest.mark.parametrize("model", ["crf", "subpat"])
def test_pronounce_nbest(trained, tmp_path, model):
    d, test = trained
    out = run("pronounce", "--nbest", "3", "--format", "cmu", d / f"{model}.h5", d / "words",
              "-").stdout.splitlines()
    first = run("pronounce", "--format", "cmu", d / f"{model}.h5", d / "words", "-").stdout
    spellable = {w: distinct_spellings(load_model(d / f"{model}.h5"), w) for w in test}
    assert [line for line in out if "(" not in line.split()[0]] == first.splitlines()
    for w in test:
        prons = [line.split(None, 1)[1] for line in out
                 if line.split()[0] in (w, f"{w}(2)", f"{w}(3)")]
        assert len(set(prons)) == len(prons) == min(3, spellable[w])    # distinct, up to 3
    err = fails("pronounce", "--nbest", "2", d / "hmm.h5", d / "words", tmp_path / "o")
    assert "gives no n-best list" in err and not (tmp_path / "o").exists()


@pytest.mark.parametrize("model", ["crf", "subpat"])
def test_pronounce_scores_are_the_nbest_scores_and_read_back(trained, tmp_path, model):
    """--scores writes `word<TAB>score<TAB>phonemes`, each score its best labelling's
    (model.nbest); the lexicon reader drops the score (align, split-lexicon read it)."""
    d, test = trained
    out = run("pronounce", "--nbest", "2", "--scores", d / f"{model}.h5", d / "words",
              tmp_path / "scored")
    plain = run("pronounce", "--nbest", "2", d / f"{model}.h5", d / "words", tmp_path / "plain")
    assert out.returncode == plain.returncode == 0
    lines = [line.split("\t") for line in (tmp_path / "scored").read_text().splitlines()]
    assert all(len(f) == 3 for f in lines)
    m = load_model(d / f"{model}.h5")
    for word in test:
        best = m.nbest([m.observations.ids(list(word))], 1)[0][0][0]
        assert float(next(f[1] for f in lines if f[0] == word)) == pytest.approx(best, abs=1e-6)
    scores = {}
    for w, s, _ in lines:
        scores.setdefault(w, []).append(float(s))
    assert all(s == sorted(s, reverse=True) for s in scores.values())
    if model == "crf":                                  # probabilities of distinct labellings
        assert all(np.exp(s).sum() <= 1 + 1e-6 for s in scores.values())
    assert read_lexicon(tmp_path / "scored") == read_lexicon(tmp_path / "plain")


def test_pronounce_scores_refused_where_not_given(trained, tmp_path):
    d, _ = trained
    err = fails("pronounce", "--scores", "--format", "cmu", d / "crf.h5", d / "words",
                tmp_path / "o")
    assert "tsv format only" in err and not (tmp_path / "o").exists()
    err = fails("pronounce", "--scores", d / "hmm.h5", d / "words", tmp_path / "o")
    assert "gives no n-best list or scores" in err and not (tmp_path / "o").exists()


def test_lexicon_line_with_a_score():
    from rhmmtk.io.lexicon import parse_line

    assert parse_line("word\t-1.25\tAH B\n") == ("word", ("AH", "B"))
    assert parse_line("word\tAH B\n") == ("word", ("AH", "B"))
    assert parse_line("word\tAH\tB\n") == ("word", ("AH", "B"))     # tabs between phonemes
    assert parse_line("word(2)\t3e-2\tK\n") == ("word", ("K",))
