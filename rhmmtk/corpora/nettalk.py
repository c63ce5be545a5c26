"""NETtalk: the pronunciation dictionary -> data/{train,dev,test}/{list,letters,ali}.

The split of paper 002 (15,000 / 1,034 / 3,974 words of its 20,008; our copy of the
dictionary has 20,007 entries, so test gets the remaining 3,973), drawn at random with a
fixed seed and written out as lists, so every system uses the same words. Utterance ids
are `NNNNN_word` (NNNNN the 1-based line number: NETtalk repeats some spellings with
different pronunciations).

  letters: `utt-id l e t t e r s`    ali: `utt-id p h o n e m e s` (one per letter)
"""
import hashlib
import os

import numpy as np

from ..errors import InputError

SIZES = (15000, 1034)       # train, dev; test takes every remaining word
RECORD = "split.txt"        # in the data directory: what made the split
PARTS = ("train", "dev", "test")
FILES = ("list", "letters", "ali")


def read_dictionary(path):
    """[(utt-id, word, phonemes)] of `word<TAB>phonemes<TAB>stress<TAB>flag` lines."""
    from ..io.text import open_input

    entries = []
    with open_input(path) as f:
        for lineno, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 2:
                raise InputError(f"line {lineno}: expected 'word<TAB>phonemes<TAB>stress<TAB>"
                                 "flag'", path)
            word, phones = parts[0], parts[1]
            if len(word) != len(phones) or not word:
                raise InputError(f"line {lineno}: word and phoneme string differ in length "
                                 f"({word!r}, {phones!r})", path)
            entries.append((f"{lineno:05d}_{word}", word, phones))
    return entries


def split(entries, sizes=SIZES, seed=1):
    """{"train": [...], "dev": [...], "test": [...]}: a seeded random split, each part in
    dictionary order. InputError if the dictionary is too small."""
    sizes = list(sizes)
    if sum(sizes) >= len(entries):
        raise InputError(f"{len(entries)} words, too few for train + dev = {sum(sizes)} and "
                         "a test set")
    sizes.append(len(entries) - sum(sizes))
    order = np.random.default_rng(seed).permutation(len(entries))
    parts, start = {}, 0
    for name, size in zip(PARTS, sizes):
        parts[name] = [entries[i] for i in sorted(order[start: start + size])]
        start += size
    return parts


def prepare(data_file, out_dir, sizes=SIZES, seed=1, if_changed=False):
    """Write the split as data directories and its record (`split_record`); returns
    {part: word count}, or None when `if_changed` and `out_dir` already holds this split."""
    from ..io.output import open_output, transaction

    entries = read_dictionary(data_file)
    record = split_record(entries, sizes, seed)
    if if_changed and _holds(out_dir, record):
        return None
    parts = split(entries, sizes, seed)
    with transaction():     # all ten files appear together, or none: a recipe that skips
        _write_split(parts, out_dir)    # this step when they exist never sees half of them
        with open_output(os.path.join(out_dir, RECORD)) as f:
            f.write(record)
    return {name: len(words) for name, words in parts.items()}


def split_record(entries, sizes=SIZES, seed=1):
    """The split's identity: an md5 of the dictionary's entries (`read_dictionary`; not
    its path, so a moved copy makes the same split), the seed and the sizes."""
    md5 = hashlib.md5("".join(f"{k}\t{p}\n" for k, _, p in entries).encode()).hexdigest()
    return f"entries_md5 {md5}\nseed {seed}\nsizes {','.join(str(n) for n in sizes)}\n"


def _holds(out_dir, record):
    """Whether `out_dir` has every file of a split made with `record`. A directory without
    a record (made before records were kept) never holds it, so it is made again."""
    try:
        with open(os.path.join(out_dir, RECORD)) as f:
            if f.read() != record:
                return False
    except FileNotFoundError:
        return False
    return all(os.path.isfile(os.path.join(out_dir, p, n)) for p in PARTS for n in FILES)


def _write_split(parts, out_dir):
    from ..io.output import open_output

    for name, words in parts.items():
        d = os.path.join(out_dir, name)
        os.makedirs(d, exist_ok=True)
        with open_output(f"{d}/list") as fl, open_output(f"{d}/letters") as fx, \
                open_output(f"{d}/ali") as fa:
            for key, word, phones in words:
                fl.write(key + "\n")
                fx.write(key + " " + " ".join(word) + "\n")
                fa.write(key + " " + " ".join(phones) + "\n")
