"""Decode an archive with any model: the library function behind `rhmmtk decode`.

Utterances are read and decoded a block of positions at a time (bounded memory), in the
archive's order; with a `--job K/N` shard only that block of utterances is decoded, so the
shards' outputs concatenated are the whole.
"""
from .io.archive import Archive
from .jobs import select
from .progress import progress

DECODE_POSITIONS = 1 << 18     # positions read and decoded at a time


def decode_archive(model, obs, job=None, options=None, posteriors=False, totals=None,
                   block_positions=DECODE_POSITIONS):
    """Yield (utterance id, label ids, posteriors or None) for every utterance of archive
    `obs` (of shard `job`), decoded by `model` (a rhmmtk.models.Model) with `options`
    (its decode-option dataclass). Counters the model reports are added into `totals`."""
    totals = {} if totals is None else totals
    with Archive(obs, expect_kind=model.input_kinds) as ar:
        model.check_input(ar)
        model.bind_options(options)
        keys = select(ar.keys(), job)
        with progress(total=len(keys), desc="decode") as bar:
            chunk, seqs, size = [], [], 0
            for k, x in ar.items(keys):
                chunk.append(k)
                seqs.append(model.input_sequence(ar, k, x))
                size += len(x)
                if size >= block_positions:
                    yield from _flush(model, chunk, seqs, options, posteriors, totals, bar)
                    chunk, seqs, size = [], [], 0
            if chunk:
                yield from _flush(model, chunk, seqs, options, posteriors, totals, bar)
    totals["utterances"] = totals.get("utterances", 0) + len(keys)


def _flush(model, keys, seqs, options, posteriors, totals, bar):
    out = model.decode(seqs, options, bar)
    for name, v in out.stats.items():
        totals[name] = totals.get(name, 0) + v
    post = out.posteriors if posteriors and out.posteriors is not None else [None] * len(keys)
    yield from zip(keys, out.labels, post)


def decode_to_files(model, obs, out, posteriors=None, job=None, options=None, model_path=None):
    """decode: write the alignment of archive `obs` (shard `job`) decoded by `model` to
    `out` ('-': stdout), and each utterance's posteriors to archive `posteriors` if given;
    log what the model's counters mean. `out` and `posteriors` may be Kaldi or HTK outputs
    (rhmmtk.io.specifiers: alignment and features forms). Returns the counters."""
    import contextlib

    from .io.features import open_feature_writer
    from .io.specifiers import AlignmentWriter, resolve_output
    from .progress import log
    from .provenance import record

    if resolve_output(out, "alignment").form == "mlf":
        with Archive(obs) as ar:       # MLF times need the frame shift
            shift = ar.attrs.get("frame_shift")
    else:
        shift = None
    sym = model.labels.symbols
    totals = {}
    with contextlib.ExitStack() as stack:
        f = stack.enter_context(AlignmentWriter(out, None if shift is None else float(shift)))
        w = stack.enter_context(open_feature_writer(
            posteriors, record({"model": str(model_path)}), kind="posteriors",
            tables={"labels": model.labels})) if posteriors else None
        for key, labels, post in decode_archive(model, obs, job, options, w is not None, totals):
            f.add(key, [sym[i] for i in labels])
            if w is not None:
                w.add(key, post)
    model.report(totals)
    log.info("decoded %d utterances, %d positions%s", totals.get("utterances", 0),
             totals.get("positions", 0), f" (job {job})" if job else "")
    return totals
