"""Pronunciation lexicons: the formats G2P practitioners bring, read and written.

Read (one entry a line; the format is told apart per line):
- CMU-style: `WORD  P1 P2 ...` (fields separated by white space), a variant as
  `WORD(2)  ...`; lines starting with `;;;` or `#` are comments;
- tab-separated (Phonetisaurus, Sequitur): `word<TAB>P1 P2 ...`, or with a score
  between them, `word<TAB>score<TAB>P1 P2 ...` (Phonetisaurus's n-best output and
  `rhmmtk pronounce --scores`; the score is dropped).
A variant marker `(N)` at the end of a word is dropped: the entry is another
pronunciation of the same word. Stress digits at the end of a phoneme (CMU's `AH0`)
are kept, or stripped with `stress="strip"` (vowels then merge, `AH0` = `AH1` = `AH`).

Written: `word<TAB>P1 P2 ...` (tab-separated, the form Phonetisaurus trains on; with a
score, `word<TAB>score<TAB>P1 P2 ...`) or CMU-style with `(N)` on the second and later
pronunciations of a word.

Bad input is an InputError naming the file and the line: a word without a
pronunciation, the same word with the same pronunciation twice, an empty lexicon.
"""
import re
from dataclasses import dataclass

from ..errors import InputError

STRESS = ("keep", "strip")
FORMATS = ("tsv", "cmu")
_VARIANT = re.compile(r"^(.+)\((\d+)\)$")
_DIGITS = re.compile(r"\d+$")


@dataclass(frozen=True)
class Entry:
    """One pronunciation: the word, its phonemes and the line it came from (1-based)."""

    word: str
    phones: tuple
    line: int = 0


def parse_line(line):
    """(word, phones) of one lexicon line, None for a comment or blank line, or
    (word, ()) for a word without a pronunciation."""
    if not line.strip() or line.startswith(";;;") or line.lstrip().startswith("#"):
        return None
    if "\t" in line:
        word, *fields = line.strip("\r\n").split("\t")
        if len(fields) > 1 and _is_number(fields[0]):
            fields = fields[1:]                   # word<TAB>score<TAB>phonemes
        word, phones = word.strip(), " ".join(fields).split()
    else:
        word, *phones = line.split()
    m = _VARIANT.match(word)
    if m:
        word = m.group(1)
    return word, tuple(phones)


def _is_number(field):
    try:
        float(field)
    except ValueError:
        return False
    return True


def strip_stress(phones):
    return tuple(_DIGITS.sub("", p) or p for p in phones)


def read_lexicon(path, stress="keep", skip_duplicates=False):
    """[Entry] of lexicon `path` ('-': stdin), in file order; see the module doc. With
    stress stripped, pronunciations that differed only in stress become one entry (the
    first; the number dropped is logged); so do exact duplicates with
    `skip_duplicates` (otherwise an error)."""
    from ..progress import log
    from .text import open_input

    if stress not in STRESS:
        raise ValueError(f"stress must be one of {STRESS}")
    entries, seen, merged, lines = [], {}, set(), 0
    with open_input(path) as f:
        for lineno, line in enumerate(f, 1):
            parsed = parse_line(line)
            if parsed is None:
                continue
            word, phones = parsed
            lines += 1
            if not phones:
                raise InputError(f"line {lineno}: word {word!r} has no pronunciation", path)
            if (word, phones) in seen and skip_duplicates:
                continue
            if (word, phones) in seen:
                raise InputError(f"line {lineno}: {word!r} with this pronunciation again "
                                 f"(first on line {seen[word, phones]})", path)
            seen[word, phones] = lineno
            if stress == "strip":
                phones = strip_stress(phones)
                if (word, phones) in merged:
                    continue
                merged.add((word, phones))
            entries.append(Entry(word, phones, lineno))
    if not entries:
        raise InputError("empty lexicon (no entries)", path)
    if len(entries) < len(seen):
        log.info("%s: %d pronunciations differing only in stress dropped", path,
                 len(seen) - len(entries))
    if skip_duplicates and lines > len(seen):
        log.info("%s: %d duplicate entries skipped", path, lines - len(seen))
    return entries


def read_words(path):
    """The words of a word list (the first field of each non-blank line; a lexicon's words
    also do), duplicates dropped, in file order."""
    from .text import split_lines

    words = dict.fromkeys(parts[0] for _, parts in split_lines(path))
    if not words:
        raise InputError("no words", path)
    return list(words)


def utterance_ids(entries):
    """An id per entry: the word for its first pronunciation, `word(N)` for the N-th."""
    count, ids = {}, []
    for e in entries:
        n = count[e.word] = count.get(e.word, 0) + 1
        ids.append(e.word if n == 1 else f"{e.word}({n})")
    return ids


def word_of(utt):
    """The word of an utterance id made by `utterance_ids`."""
    m = _VARIANT.match(utt)
    return m.group(1) if m else utt


def format_entries(entries, fmt="tsv"):
    """Lexicon lines (without newlines) of (word, phones) pairs in `fmt` (FORMATS), or of
    (word, phones, score) triples in tsv (the score between word and phonemes)."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}")
    count = {}
    for word, phones, *score in entries:
        n = count[word] = count.get(word, 0) + 1
        if score and fmt == "tsv":
            yield f"{word}\t{score[0]:.6f}\t{' '.join(phones)}"
        elif fmt == "tsv":
            yield f"{word}\t{' '.join(phones)}"
        else:
            yield f"{word if n == 1 else f'{word}({n})'}  {' '.join(phones)}"


def write_lexicon(path, entries, fmt="tsv"):
    """Write (word, phones[, score]) entries to `path` ('-': stdout) through the one
    writer."""
    from .output import open_output

    with open_output(path) as f:
        for line in format_entries(entries, fmt):
            f.write(line + "\n")
