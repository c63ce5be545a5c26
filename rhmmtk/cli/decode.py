import click

from .common import command, job_option
from .params import HDF5_INPUT, HDF5_OUTPUT, Real, TEXT_OUTPUT


DECODE_POSITIONS = 1 << 18     # positions read and decoded at a time (bounded memory)


@command("decode")
@job_option
@click.option("--batch-mb", type=Real(0, min_open=True), default=256.0,
              help="Memory budget of one batch of sequences (MB).")
@click.option("--beam", type=Real(0, 1), default=1e-8,
              help="Do not extend labels whose forward x emission mass is below beam times the "
                   "best label's at that position (0: exact; 1: only the best label, which is "
                   "always kept).")
@click.option("--posteriors", type=HDF5_OUTPUT,
              help="Also write each utterance's normalised marginals (N x labels) to this archive.")
@click.argument("model", type=HDF5_INPUT)
@click.argument("obs", type=HDF5_INPUT)
@click.argument("out", type=TEXT_OUTPUT)
def decode(job, batch_mb, beam, posteriors, model, obs, out):
    """MODEL + observations OBS -> alignment of max-marginal labels (OUT may be '-').

    One decoder for models from any trainer. OBS is a codes archive (or a
    featurized one, whose template set must be the model's). Utterances are read
    and decoded a block at a time; with --job K/N only shard K is decoded, and
    the shards' outputs 1..N concatenated are the whole alignment.

      rhmmtk decode spectral24.h5 test.obs.h5 - | rhmmtk score test.ali -
    """
    import contextlib

    import numpy as np

    from ..errors import InputError
    from ..forward_backward import decode as run_decode
    from ..io.archive import Archive, ArchiveWriter
    from ..io.text import check_outputs, open_output
    from ..jobs import select
    from ..operators import Operators
    from ..progress import log, progress
    from ..provenance import record

    check_outputs(out, posteriors, inputs=[model, obs])
    op = Operators.load(model)
    sym = op.labels.symbols
    totals = {"positions": 0, "negative_sequences": 0, "nonpositive_best": 0, "no_path": 0}
    with Archive(obs, expect_kind=("codes", "featurized")) as ar, \
            contextlib.ExitStack() as stack:
        table = ar.symbols("observations")
        if table != op.observations:
            raise InputError("observation symbol table differs from the model's "
                             f"({table.fingerprint()} vs {op.observations.fingerprint()}): "
                             "observations made with another table or options", obs)
        if ar.kind == "featurized":
            want = op.info.get("template_fingerprint")
            if want is not None and ar.attrs.get("template_fingerprint") != want:
                raise InputError("features come from another template set than the model's "
                                 f"(templates {ar.attrs.get('template_fingerprint')} vs {want})",
                                 obs)
        keys = select(ar.keys(), job)
        f = stack.enter_context(open_output(out))
        w = stack.enter_context(ArchiveWriter(posteriors, "posteriors", record({"model": model}),
                                              {"labels": op.labels})) if posteriors else None
        bar = stack.enter_context(progress(total=len(keys), desc="decode"))

        def flush(chunk, seqs):
            labels, stats, mus = run_decode(op, seqs, batch_mb, bar, beam)
            for name in totals:
                totals[name] += stats[name]
            for k, lab in zip(chunk, labels):
                f.write(k + " " + " ".join(sym[i] for i in lab) + "\n")
            if w is not None:
                for k, mu in zip(chunk, mus):
                    z = mu.sum(axis=1, keepdims=True)
                    w.add(k, np.divide(mu, z, out=np.zeros_like(mu), where=z != 0))

        chunk, seqs, size = [], [], 0
        for k, x in ar.items(keys):
            x = x[:, 1] if ar.kind == "featurized" else x
            if x.ndim != 1 or x.min() < 0 or x.max() >= len(table):
                raise InputError("observation ids out of range or of the wrong shape", obs, k)
            chunk.append(k)
            seqs.append(x.astype(np.int64))
            size += len(x)
            if size >= DECODE_POSITIONS:
                flush(chunk, seqs)
                chunk, seqs, size = [], [], 0
        if chunk:
            flush(chunk, seqs)
    if totals["negative_sequences"]:
        log.warning("%d of %d positions lie in sequences whose estimated p(x) is not positive "
                    "(a signed spectral estimate): labels chosen by mu / p(x)",
                    totals["negative_sequences"], totals["positions"])
    if totals["nonpositive_best"]:
        log.warning("%d of %d positions had a non-positive best posterior (argmax taken anyway)",
                    totals["nonpositive_best"], totals["positions"])
    if totals["no_path"]:
        log.warning("%d positions had no label sequence with nonzero weight", totals["no_path"])
    log.info("decoded %d utterances, %d positions%s", len(keys), totals["positions"],
             f" (job {job})" if job else "")
