import click

from .common import command, job_option
from .params import Count, HDF5_OUTPUT, TEXT_INPUT, TEXT_OUTPUT


@command("make-obs")
@job_option
@click.option("--context", type=Count(0), default=0,
              help="Window half-width K: observation = symbols i-K..i+K (with --write-symbols).")
@click.option("--min-count", type=Count(0), default=1,
              help="Windows seen fewer times back off to narrower ones (with --write-symbols).")
@click.option("--symbols", "symbols_in", type=TEXT_INPUT,
              help="Apply this observation table (dev/test); unknown symbols are errors.")
@click.option("--write-symbols", type=TEXT_OUTPUT,
              help="Learn the observation table from this text (training) and write it here.")
@click.argument("text", type=TEXT_INPUT)
@click.argument("out", type=HDF5_OUTPUT)
def make_obs(job, context, min_count, symbols_in, write_symbols, text, out):
    """Text observations `utt-id sym sym ...` -> an HDF5 archive of observation codes.

    Learn the observation symbol table on training text (--write-symbols), then
    apply that same table to dev and test (--symbols). Example (NETtalk):

      rhmmtk make-obs --context 1 --min-count 2 --write-symbols obs.syms train.letters train.obs.h5
      rhmmtk make-obs --symbols obs.syms dev.letters dev.obs.h5
    """
    from ..io.archive import ArchiveWriter
    from ..errors import InputError
    from ..io.text import check_outputs, read_table
    from ..observations import check_tokens, context_of, learn_vocabulary, symbolize
    from ..progress import log, progress
    from ..provenance import record
    from ..symbols import SymbolTable

    if bool(symbols_in) == bool(write_symbols):
        raise click.UsageError("give exactly one of --symbols (apply) or --write-symbols (learn)")
    if job is not None and write_symbols:
        raise click.UsageError("--job applies a table (--symbols); learning one "
                               "(--write-symbols) needs all of the text")
    check_outputs(out, write_symbols, inputs=[text, symbols_in])
    utts = read_table(text)
    if not utts:
        raise InputError("no utterances", text)
    if job is not None:
        from ..jobs import select

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
