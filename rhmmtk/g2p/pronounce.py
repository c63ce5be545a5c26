"""A trained tagger applied to a word list, written as a lexicon (`rhmmtk pronounce`).

Any model that labels codes archives (the taggers NETtalk trains: R-HMMs, HKZ, the
max-margin tagger, the CRF, the sub-pattern tagger) labels each word's letters, observed
as its training letters were (the model's observation table and window width); the
labels become the pronunciation (silent letters dropped, compound labels split). With
nbest > 1, a model that can list its k best label sequences (`model.nbest`: the CRF,
first-order, and the sub-pattern tagger, second-order; rhmmtk/kbest.py) gives each word
up to `nbest` distinct pronunciations, best first by the model's own score (the CRF's
log-probability log p(y | x); subpat's perceptron score, a sum of weights and not a
probability): label sequences that spell the same phonemes (a silent letter on either
side of a `th`) count once, each with the score of its best sequence, so NBEST_SEARCH x
nbest sequences are searched. With `scores`, each entry carries that score (written as
Phonetisaurus writes its n-best lists: `word<TAB>score<TAB>phonemes`).
"""
import numpy as np

from ..errors import InputError
from .labels import phonemes

WORDS_PER_BLOCK = 4096      # words decoded at a time (bounded memory, progress)
NBEST_SEARCH = 4            # label sequences searched per distinct pronunciation wanted


def letter_codes(model, words, path=None):
    """Each word's letters as the model's observation ids (all words at once: numpy over
    integer windows, frontend.observations.WindowIndex); a letter the table never saw is
    an InputError naming the list and the word."""
    from ..frontend.observations import WindowIndex, context_of

    table = model.observations
    ids, offsets = WindowIndex(table, context_of(table)).ids(words, path)
    return np.split(ids, offsets[1:-1])


def distinct_pronunciations(sym, scored, n):
    """[(phonemes, score)] of the first n distinct phoneme strings of the (score,
    label ids) list `scored`, best first; each with its first (best) sequence's score."""
    out = {}
    for score, labels in scored:
        out.setdefault(tuple(phonemes([sym[i] for i in labels])), score)
        if len(out) == n:
            break
    return list(out.items())


def pronounce(model, words, options=None, path=None, nbest=1, scores=False):
    """[(word, phonemes)] of `words` labelled by `model` (decode options `options`); up
    to `nbest` entries per word, best first; with `scores`, [(word, phonemes, score)]."""
    from ..progress import progress

    if "codes" not in model.input_kinds:
        raise InputError(f"a {model.model_type} model does not label letters "
                         "(it needs a model trained on letter codes)")
    if (nbest > 1 or scores) and not hasattr(model, "nbest"):
        raise InputError(f"a {model.model_type} model gives no n-best list or scores: use "
                         "--nbest 1 without --scores (or a CRF or subpat model)")
    seqs = letter_codes(model, words, path)
    model.bind_options(options)
    sym = model.labels.symbols
    spoken = [tuple(phonemes([s])) for s in sym]      # each label's phonemes, once
    out = []
    with progress(total=len(words), desc="pronounce") as bar:
        for start in range(0, len(words), WORDS_PER_BLOCK):
            block = seqs[start:start + WORDS_PER_BLOCK]
            if nbest > 1 or scores:
                lists = model.nbest(block, NBEST_SEARCH * nbest if nbest > 1 else 1)
                bar.update(len(block))
                for w, scored in zip(words[start:start + WORDS_PER_BLOCK], lists):
                    out += [(w, p, s) if scores else (w, p)
                            for p, s in distinct_pronunciations(sym, scored, nbest)]
            else:
                decoded = model.decode(block, options, bar).labels
                out += [(w, sum(map(spoken.__getitem__, labels.tolist()), ()))
                        for w, labels in zip(words[start:start + WORDS_PER_BLOCK], decoded)]
    return out


def pronounce_file(model_path, words_path, out, options_of=None, fmt="tsv", nbest=1,
                   scores=False):
    """rhmmtk pronounce: model file + word list -> lexicon file `out` (up to `nbest`
    pronunciations a word; with `scores`, each with the model's score, tsv only).
    `options_of(model)` gives the decode options of the loaded model's family (None: its
    defaults)."""
    from ..io.lexicon import read_words, write_lexicon
    from ..io.output import check_outputs
    from ..models import load_model
    from ..progress import log

    if scores and fmt != "tsv":
        raise InputError("scores are written in the tsv format only (word, score, phonemes)")
    check_outputs(out, inputs=[model_path, words_path])
    model = load_model(model_path)
    words = read_words(words_path)
    entries = pronounce(model, words, options_of(model) if options_of else None, words_path,
                        nbest, scores)
    if not all(e[1] for e in entries):
        log.warning("%d words got no phoneme (every letter silent)",
                    sum(not e[1] for e in entries))
    write_lexicon(out, entries, fmt)
    return entries
