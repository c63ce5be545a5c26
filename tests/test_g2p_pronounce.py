"""rhmmtk pronounce: a trained tagger + a word list -> a lexicon, as `decode` labels them."""
import pytest

from cli_helpers import fails, run
from rhmmtk.g2p.labels import phonemes
from rhmmtk.io.lexicon import read_lexicon

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
    test = ["chax", "boxo", "ahcha", "xx"]
    (d / "words").write_text("\n".join(test) + "\n")
    (d / "test.letters").write_text("".join(f"{w} {' '.join(w)}\n" for w in test))
    return d, test


@pytest.mark.parametrize("model, syms", [("hmm", "win"), ("crf", "let")])
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
