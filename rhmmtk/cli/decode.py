import click

from .common import command


@command("decode")
@click.option("--batch-mb", type=click.FloatRange(0.001), default=256.0,
              help="Memory budget of one batch of sequences (MB).")
@click.option("--posteriors", type=click.Path(dir_okay=False),
              help="Also write each utterance's normalised marginals (N x labels) to this archive.")
@click.argument("model", type=click.Path(dir_okay=False))
@click.argument("obs", type=click.Path(dir_okay=False))
@click.argument("out", type=click.Path(allow_dash=True))
def decode(batch_mb, posteriors, model, obs, out):
    """MODEL + observations OBS -> alignment of max-marginal labels (OUT may be '-').

    One decoder for models from any trainer. OBS is a codes archive (or a
    featurized one, whose template set must be the model's).

      rhmmtk decode spectral24.h5 test.obs.h5 - | rhmmtk score test.ali -
    """
    import numpy as np

    from ..errors import InputError
    from ..forward_backward import decode as run_decode
    from ..io.archive import Archive, ArchiveWriter
    from ..io.text import check_outputs, write_alignment
    from ..operators import Operators
    from ..progress import log, progress
    from ..provenance import record

    check_outputs(out, posteriors)
    op = Operators.load(model)
    with Archive(obs, expect_kind=("codes", "featurized")) as ar:
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
        keys, seqs = [], []
        for k, x in ar.items():
            x = x[:, 1] if ar.kind == "featurized" else x
            if x.ndim != 1 or x.min() < 0 or x.max() >= len(table):
                raise InputError("observation ids out of range or of the wrong shape", obs, k)
            keys.append(k)
            seqs.append(x.astype(np.int64))
    with progress(total=len(seqs), desc="decode") as bar:
        labels, stats, mus = run_decode(op, seqs, batch_mb, bar)
    if stats["nonpositive_best"]:
        log.warning("%d of %d positions had a non-positive best marginal (argmax taken anyway)",
                    stats["nonpositive_best"], stats["positions"])
    if stats["no_path"]:
        log.warning("%d positions had no label sequence with nonzero weight", stats["no_path"])
    log.info("decoded %d utterances, %d positions", len(keys), stats["positions"])
    sym = op.labels.symbols
    write_alignment(out, {k: [sym[i] for i in lab] for k, lab in zip(keys, labels)})
    if posteriors:
        with ArchiveWriter(posteriors, "posteriors", record({"model": model}),
                           {"labels": op.labels}) as w:
            for k, mu in zip(keys, mus):
                z = mu.sum(axis=1, keepdims=True)
                w.add(k, np.divide(mu, z, out=np.zeros_like(mu), where=z != 0))
