"""Discrete observations from text: plain symbols, or symbol windows with backoff.

A position's observation can be its own symbol or, like the deltas in the
paper's speech codes, a window of its neighbourhood: `--context K` makes the
symbol of position i the window x_{i-K}..x_{i+K} (parts joined by '|', '<b>'
past either end). Windows seen fewer than `min_count` times in the training
text are replaced by the window one step narrower, down to the single symbol,
so rare contexts train the backoff symbols that unseen contexts get at test
time. The vocabulary (the observation symbol table) is learned once, on
training text, and then applied unchanged to dev and test.
"""
from collections import Counter

import numpy as np

from ..errors import InputError
from ..symbols import SymbolTable

BOUNDARY = "<b>"
SEP = "|"


def check_tokens(tokens, path=None, utt=None):
    """Tokens may not contain the window separator or be the boundary symbol: the
    context of a table is read back from its symbols."""
    for t in tokens:
        if SEP in t or t == BOUNDARY:
            raise InputError(f"symbol {t!r} contains {SEP!r} or is {BOUNDARY!r}, which "
                             "observation windows reserve", path, utt)


def windows(tokens, k):
    """The width-(2k+1) window symbol at every position."""
    pad = [BOUNDARY] * k + list(tokens) + [BOUNDARY] * k
    if k == 0:
        return list(tokens)
    return [SEP.join(pad[i: i + 2 * k + 1]) for i in range(len(tokens))]


def learn_vocabulary(seqs, context, min_count):
    """Observation table from training sequences of tokens."""
    for toks in seqs:
        check_tokens(toks)
    keep = set()
    for k in range(context, -1, -1):
        counts = Counter(w for toks in seqs for w in windows(toks, k))
        keep |= {w for w, c in counts.items() if k == 0 or c >= min_count}
    return SymbolTable(sorted(keep))


def symbolize(tokens, table, context, path=None, utt=None):
    """The observation symbol of every position: the widest window the table knows."""
    check_tokens(tokens, path, utt)
    levels = [windows(tokens, k) for k in range(context, -1, -1)]
    out = []
    for i in range(len(tokens)):
        for lev in levels:
            if lev[i] in table:
                out.append(lev[i])
                break
        else:
            raise InputError(f"unknown symbol {tokens[i]!r} at position {i + 1} "
                             "(not in the observation symbol table)", path, utt)
    return out


class WindowIndex:
    """A table's windows as integers, to symbolize many words at once with numpy: a
    window of 2k+1 letters (BOUNDARY included) is the number with those letters' codes
    as digits (base: letters + 1); per k, the sorted numbers of the table's windows and
    their ids. Gives what `symbolize` gives, without a Python loop over positions."""

    def __init__(self, table, context):
        self.context = context
        singles = [s for s in table.symbols if SEP not in s]
        self.code = {s: n for n, s in enumerate([BOUNDARY] + singles)}
        self.base = len(self.code)
        if self.base ** (2 * context + 1) >= 2 ** 62:
            raise ValueError("window too wide for integer keys")
        self.levels = []
        for k in range(context + 1):
            syms = [s for s in table.symbols if s.count(SEP) == 2 * k]
            keys = np.array([self.key([self.code.get(c, -1) for c in s.split(SEP)])
                             for s in syms], dtype=np.int64)
            ids = np.array([table.index[s] for s in syms], dtype=np.int64)
            order = np.argsort(keys)
            self.levels.append((keys[order], ids[order]))

    def key(self, codes):
        return sum(int(c) * self.base ** i for i, c in enumerate(codes))

    def ids(self, words, path=None):
        """Observation ids of every letter of `words` (flat, word after word), and the
        words' offsets into them; an unknown letter is an InputError naming the word."""
        K = self.context
        lengths = np.fromiter((len(w) for w in words), dtype=np.int64, count=len(words))
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        letters = "".join(words)
        # letter codes via a lookup over code points; -1: not a letter of the table
        points = np.frombuffer(letters.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
        lut = np.full(int(points.max(initial=0)) + 1, -1, dtype=np.int64)
        for s, c in self.code.items():
            if len(s) == 1 and ord(s) < len(lut):
                lut[ord(s)] = c
        codes = lut[points]
        if (codes < 0).any():
            i = int(np.argmax(codes < 0))
            w = int(np.searchsorted(offsets, i, side="right") - 1)
            raise InputError(f"unknown symbol {letters[i]!r} at position {i - offsets[w] + 1} "
                             "(not in the observation symbol table)", path, words[w])
        # every word framed by K boundaries (code 0) on either side
        framed = np.zeros(len(codes) + 2 * K * len(words), dtype=np.int64)
        pos = np.arange(len(codes)) + K * (2 * np.repeat(np.arange(len(words)), lengths) + 1)
        framed[pos] = codes
        out = np.full(len(codes), -1, dtype=np.int64)
        for k in range(K, -1, -1):            # widest first: keep the first window known
            keys = np.zeros(len(codes), dtype=np.int64)
            for i, d in enumerate(range(-k, k + 1)):
                keys += framed[pos + d] * self.base ** i
            known, ids = self.levels[k]
            at = np.minimum(np.searchsorted(known, keys), max(len(known) - 1, 0))
            hit = (out < 0) & (known[at] == keys) if len(known) else np.zeros(len(keys), bool)
            out[hit] = ids[at[hit]]
        return out, offsets


def context_of(table):
    """The window half-width a table was learned with (from its widest symbol)."""
    return max(s.count(SEP) for s in table.symbols) // 2


def make_obs_file(text, out, symbols_in=None, write_symbols=None, context=0, min_count=1,
                  job=None):
    """make-obs: text `utt-id sym ...` -> codes archive `out`. With `symbols_in` the table is
    read and applied (unknown symbols are errors); otherwise it is learned from the text
    (windows of half-width `context`, backing off below `min_count`) and written to
    `write_symbols`. `job` keeps one shard of the utterances. Returns the table."""
    from ..errors import InputError
    from ..io.archive import ArchiveWriter
    from ..io.text import check_outputs, read_table
    from ..jobs import select
    from ..progress import log, progress
    from ..provenance import record
    from ..symbols import SymbolTable

    check_outputs(out, write_symbols, inputs=[text, symbols_in])
    utts = read_table(text)
    if not utts:
        raise InputError("no utterances", text)
    if job is not None:
        utts = {k: utts[k] for k in select(utts, job)}
    for key, toks in utts.items():
        check_tokens(toks, text, key)
    if symbols_in:
        table = SymbolTable.read(symbols_in)
        context = context_of(table)
    else:
        table = learn_vocabulary(utts.values(), context, min_count)
        log.info("learned %d observation symbols (context %d, min count %d)",
                 len(table), context, min_count)
    opts = {"context": context, "min_count": min_count, "symbols": symbols_in}
    with ArchiveWriter(out, "codes", record(opts), {"observations": table},
                       {"observation_fingerprint": table.fingerprint()}) as w:
        for key, toks in progress(utts.items(), desc="make-obs", total=len(utts)):
            w.add(key, table.ids(symbolize(toks, table, context, text, key), text, key))
    if write_symbols:
        table.write(write_symbols)
    log.info("wrote %d utterances to %s", len(utts), out)
    return table
