"""A lexicon split into train/dev/test by word, fixed by a seed (recipes/g2p).

Words, not entries, are drawn: every pronunciation of a word lands in the same part,
so no test word's spelling was seen in training. Each part keeps the lexicon's order
and is written as `data/<part>/lexicon` (tab-separated) and `data/<part>/words`.
"""
import numpy as np

from ..errors import InputError

PARTS = ("train", "dev", "test")


def split_words(entries, fractions=(0.75, 0.05), seed=1):
    """{part: [Entry]}: the distinct words (in sorted order) permuted by `seed`; the first
    fractions[0] of them train, the next fractions[1] dev, the rest test."""
    words = sorted({e.word for e in entries})
    n_train = int(round(fractions[0] * len(words)))
    n_dev = int(round(fractions[1] * len(words)))
    if min(n_train, n_dev, len(words) - n_train - n_dev) < 1:
        raise InputError(f"{len(words)} words: too few for train, dev and test parts of "
                         f"{fractions[0]:g}, {fractions[1]:g} and the rest")
    order = np.random.default_rng(seed).permutation(len(words))
    part_of = {}
    for rank, i in enumerate(order):
        part_of[words[i]] = 0 if rank < n_train else 1 if rank < n_train + n_dev else 2
    return {name: [e for e in entries if part_of[e.word] == k] for k, name in enumerate(PARTS)}


def split_file(lexicon, out_dir, fractions=(0.75, 0.05), seed=1, stress="keep",
               skip_duplicates=False):
    """Write the split of lexicon file `lexicon` under `out_dir`; {part: (words, entries)}."""
    import os

    from ..io.lexicon import read_lexicon, write_lexicon
    from ..io.output import open_output, transaction

    parts = split_words(read_lexicon(lexicon, stress, skip_duplicates), fractions, seed)
    with transaction():             # all six files, or none
        for name, entries in parts.items():
            os.makedirs(os.path.join(out_dir, name), exist_ok=True)
            write_lexicon(os.path.join(out_dir, name, "lexicon"),
                          [(e.word, e.phones) for e in entries])
            with open_output(os.path.join(out_dir, name, "words")) as f:
                f.writelines(w + "\n" for w in dict.fromkeys(e.word for e in entries))
    return {name: (len({e.word for e in es}), len(es)) for name, es in parts.items()}
