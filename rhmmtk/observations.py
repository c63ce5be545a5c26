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

from .errors import InputError
from .symbols import SymbolTable

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


def context_of(table):
    """The window half-width a table was learned with (from its widest symbol)."""
    return max(s.count(SEP) for s in table.symbols) // 2
