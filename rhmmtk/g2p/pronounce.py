"""A trained tagger applied to a word list, written as a lexicon (`rhmmtk pronounce`).

Any model that labels codes archives (the taggers NETtalk trains: R-HMMs, HKZ, the
max-margin tagger, the CRF, the sub-pattern tagger) labels each word's letters, observed
as its training letters were (the model's observation table and window width); the
labels become the pronunciation (silent letters dropped, compound labels split). With
nbest > 1, a model that can list its k best label sequences (`model.nbest`: the CRF,
first-order, and the sub-pattern tagger, second-order; rhmmtk/kbest.py) gives each word
up to `nbest` distinct pronunciations, best first by the model's own score (the CRF's
unnormalised log-potential; subpat's perceptron score, a sum of weights and not a
probability; no score is written): label sequences that spell the same phonemes (a
silent letter on either side of a `th`) count once, so NBEST_SEARCH x nbest sequences
are searched.
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


def distinct_pronunciations(sym, label_lists, n):
    """The first n distinct phoneme strings of label-id sequences `label_lists`."""
    out = []
    for labels in label_lists:
        p = tuple(phonemes([sym[i] for i in labels]))
        if p not in out:
            out.append(p)
            if len(out) == n:
                break
    return out


def pronounce(model, words, options=None, path=None, nbest=1):
    """[(word, phonemes)] of `words` labelled by `model` (decode options `options`); up
    to `nbest` entries per word, best first."""
    from ..progress import progress

    if "codes" not in model.input_kinds:
        raise InputError(f"a {model.model_type} model does not label letters "
                         "(it needs a model trained on letter codes)")
    if nbest > 1 and not hasattr(model, "nbest"):
        raise InputError(f"a {model.model_type} model gives no n-best list: use --nbest 1 "
                         "(or a CRF or subpat model)")
    seqs = letter_codes(model, words, path)
    model.bind_options(options)
    sym = model.labels.symbols
    spoken = [tuple(phonemes([s])) for s in sym]      # each label's phonemes, once
    out = []
    with progress(total=len(words), desc="pronounce") as bar:
        for start in range(0, len(words), WORDS_PER_BLOCK):
            block = seqs[start:start + WORDS_PER_BLOCK]
            if nbest > 1:
                lists = [[labels for _, labels in k]
                         for k in model.nbest(block, NBEST_SEARCH * nbest)]
                bar.update(len(block))
                for w, label_lists in zip(words[start:start + WORDS_PER_BLOCK], lists):
                    out += [(w, p) for p in distinct_pronunciations(sym, label_lists, nbest)]
            else:
                decoded = model.decode(block, options, bar).labels
                out += [(w, sum(map(spoken.__getitem__, labels.tolist()), ()))
                        for w, labels in zip(words[start:start + WORDS_PER_BLOCK], decoded)]
    return out


def pronounce_file(model_path, words_path, out, options_of=None, fmt="tsv", nbest=1):
    """rhmmtk pronounce: model file + word list -> lexicon file `out` (up to `nbest`
    pronunciations a word). `options_of(model)` gives the decode options of the loaded
    model's family (None: its defaults)."""
    from ..io.lexicon import read_words, write_lexicon
    from ..io.output import check_outputs
    from ..models import load_model
    from ..progress import log

    check_outputs(out, inputs=[model_path, words_path])
    model = load_model(model_path)
    words = read_words(words_path)
    entries = pronounce(model, words, options_of(model) if options_of else None, words_path,
                        nbest)
    if not all(p for _, p in entries):
        log.warning("%d words got no phoneme (every letter silent)",
                    sum(not p for _, p in entries))
    write_lexicon(out, entries, fmt)
    return entries
