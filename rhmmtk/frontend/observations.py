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
