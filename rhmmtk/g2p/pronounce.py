"""A trained tagger applied to a word list, written as a lexicon (`rhmmtk pronounce`).

Any model that labels codes archives (the taggers NETtalk trains: R-HMMs, HKZ, the
max-margin tagger, the CRF) labels each word's letters, observed as its training
letters were (the model's observation table and window width); the labels become
the pronunciation (silent letters dropped, compound labels split).
"""
import numpy as np

from ..errors import InputError
from .labels import phonemes

WORDS_PER_BLOCK = 4096      # words decoded at a time (bounded memory, progress)


def letter_codes(model, words, path=None):
    """Each word's letters as the model's observation ids; a letter the table never saw
    is an InputError naming the list and the word."""
    from ..frontend.observations import context_of, symbolize

    table = model.observations
    context = context_of(table)
    return [np.asarray(table.ids(symbolize(list(w), table, context, path, w), path, w),
                       dtype=np.int64) for w in words]


def pronounce(model, words, options=None, path=None):
    """[(word, phonemes)] of `words` labelled by `model` (decode options `options`)."""
    from ..progress import progress

    if "codes" not in model.input_kinds:
        raise InputError(f"a {model.model_type} model does not label letters "
                         "(it needs a model trained on letter codes)")
    seqs = letter_codes(model, words, path)
    model.bind_options(options)
    sym = model.labels.symbols
    out = []
    with progress(total=len(words), desc="pronounce") as bar:
        for start in range(0, len(words), WORDS_PER_BLOCK):
            block = seqs[start:start + WORDS_PER_BLOCK]
            decoded = model.decode(block, options, bar)
            for w, labels in zip(words[start:start + WORDS_PER_BLOCK], decoded.labels):
                out.append((w, tuple(phonemes([sym[i] for i in labels]))))
    return out


def pronounce_file(model_path, words_path, out, options_of=None, fmt="tsv"):
    """rhmmtk pronounce: model file + word list -> lexicon file `out`. `options_of(model)`
    gives the decode options of the loaded model's family (None: its defaults)."""
    from ..io.lexicon import read_words, write_lexicon
    from ..io.output import check_outputs
    from ..models import load_model
    from ..progress import log

    check_outputs(out, inputs=[model_path, words_path])
    model = load_model(model_path)
    words = read_words(words_path)
    entries = pronounce(model, words, options_of(model) if options_of else None, words_path)
    if not all(p for _, p in entries):
        log.warning("%d words got no phoneme (every letter silent)",
                    sum(not p for _, p in entries))
    write_lexicon(out, entries, fmt)
    return entries
