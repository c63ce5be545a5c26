"""train-cdhmm, acc-cdhmm, init-cdhmm, est-cdhmm, train-largemargin: thin shims over
rhmmtk.models.cdhmm_train and rhmmtk.models.largemargin."""
import click

from ..options import click_options, shared_option
from ..click_types import HDF5_INPUT, HDF5_OUTPUT, TEXT_INPUT
from .common import arguments, command, job_option


def _write_history(path, rows):
    from ..io.text import open_output

    if not rows:
        return
    cols = list(rows[0])
    with open_output(path) as f:
        f.write("\t".join(cols) + "\n")
        for r in rows:
            f.write("\t".join(f"{r[c]:.6g}" if isinstance(r[c], float) else str(r[c])
                              for c in cols) + "\n")


from ..models.cdhmm_train import CdhmmOptions  # noqa: E402  (options declared once, there)


@command("train-cdhmm")
@click_options(CdhmmOptions)
@shared_option("phones", help="Symbol table of the phones to model (`phone id` lines); every "
                               "one needs training frames.  [default: the alignment's phones]")
@shared_option("history", help="Write the per-iteration log (TSV: mixtures, iter, "
                               "loglik_per_frame) here.")
@arguments(("feats", HDF5_INPUT), ("ali", TEXT_INPUT), ("model", HDF5_OUTPUT))
def train_cdhmm(phones, history, feats, ali, model, **kw):
    """ML phone HMMs from features FEATS (`rhmmtk feats`) and frame labels ALI -> MODEL.

    HTK's recipe on frame-aligned data: uniform segmentation of every labelled segment
    into the states, Baum-Welch (or Viterbi) re-estimation within the segments, mixture
    splitting 1 -> 2 -> 4 -> ... -> --mixtures, variance floors. The model also holds a
    phone bigram of the training transcriptions; `rhmmtk decode` recognises phones with
    it (--lm-scale, --insertion-penalty).

      rhmmtk train-cdhmm --states 3 --mixtures 8 train/feats.h5 train/ali.48 cdhmm_s3m8.h5
    """
    from ..models.cdhmm_train import train_cdhmm as train
    from ..io.text import check_outputs
    from ..options import as_dict, take
    from ..provenance import record
    from ..symbols import SymbolTable

    check_outputs(model, history, inputs=[feats, ali, phones])
    opts = take(CdhmmOptions, kw)
    labels = SymbolTable.read(phones) if phones else None
    m = train(feats, ali, opts, labels)
    m.save(model, record(as_dict(opts)))
    if history:
        _write_history(history, m.info["history"])


from ..models.cdhmm import CdhmmDecodeOptions  # noqa: E402
from ..models.largemargin import FrameDevOptions, LargeMarginOptions  # noqa: E402


@command("train-largemargin")
@click_options(LargeMarginOptions, CdhmmDecodeOptions, FrameDevOptions)
@shared_option("history", help="Write the per-iteration log (TSV: objective, gap, dev "
                               "accuracy, ...) here.")
@arguments(("ml_model", HDF5_INPUT), ("feats", HDF5_INPUT), ("ali", TEXT_INPUT),
           ("model", HDF5_OUTPUT))
def train_largemargin(history, ml_model, feats, ali, model, **kw):
    """Large-margin CDHMM (paper 004, NCO-H or NCO-S) from ML_MODEL + FEATS + ALI -> MODEL.

    Minimises lambda/2 ||v||^2 + sum_i max_y [F(x_i,y,w) + Hamming(y_i,y)] -
    F(x_i,y_i,w), w = w_ML + D v (F: best-path score; with --objective nco-s, F and the
    max over y are log-sums over paths; D: --scaling) by the non-convex bundle method,
    from the ML model (train-cdhmm), until the gap is below --tol of the objective or
    --max-iter; the gap at the stop is logged and kept in MODEL's info ("stop").
    With --segmentation hidden, F(x_i,y_i,w) maximises over every segmentation of the
    reference phone sequence instead of keeping the alignment's boundaries. --lm-scale and
    --insertion-penalty are the phone loop's during training (use the values tuned for
    the ML model on dev). With a dev set every iteration is scored and the best kept.

    \b
      rhmmtk train-largemargin --lambda 1000 --dev-feats dev/feats.h5 --dev-ali dev/ali.48 \\
          --mapping map_48_39.txt s3m4.h5 train/feats.h5 train/ali.48 lm_s3m4.h5
    """
    from ..io.text import check_outputs
    from ..models import load_model
    from ..models.largemargin import train_largemargin as train
    from ..options import as_dict, take
    from ..provenance import record

    dev = take(FrameDevOptions, kw).check()
    check_outputs(model, history, inputs=[ml_model, feats, ali, dev.dev_feats, dev.dev_ali,
                                          dev.mapping])
    o, d = take(LargeMarginOptions, kw), take(CdhmmDecodeOptions, kw)
    ml = load_model(ml_model, expect="cdhmm")
    m = train(ml, feats, ali, o, d, dev.dev, dev.label_map())
    m.save(model, record({**as_dict(o), **as_dict(d), "ml_model": ml_model}))
    if history:
        _write_history(history, m.info["history"])


@command("acc-cdhmm")
@job_option
@shared_option("init", "init", help="Accumulate the boundary initialisation's statistics (for "
                                    "init-cdhmm).")
@click_options(CdhmmOptions, only=("states", "update"))
@shared_option("phones", help="With --init: symbol table of the phones.  [default: the "
                              "alignment's]")
@shared_option("model", help="Accumulate one E-step's statistics under this ML CDHMM (for "
                             "est-cdhmm).")
@arguments(("feats", HDF5_INPUT), ("ali", TEXT_INPUT), ("stats", HDF5_OUTPUT))
def acc_cdhmm(job, init, states, phones, model, update, feats, ali, stats):
    """Accumulate CDHMM statistics of (shard --job K/N of) FEATS + ALI -> STATS.

    train-cdhmm's steps over shards (HERest's -p parallel mode). Example, 4 jobs, 1
    Gaussian then 2:

    \b
      $cmd JOB=1:4 log/acc0.JOB.log rhmmtk acc-cdhmm --init --states 3 --job JOB/4 feats.h5 ali 0.JOB.acc
      rhmmtk init-cdhmm 0.*.acc 0.h5
      $cmd JOB=1:4 log/acc1.JOB.log rhmmtk acc-cdhmm --model 0.h5 --job JOB/4 feats.h5 ali 1.JOB.acc
      rhmmtk est-cdhmm --mixtures 2 0.h5 1.*.acc 1.h5
    """
    from ..models.cdhmm_train import acc_files
    from ..io.text import check_outputs
    from ..symbols import SymbolTable

    if init == bool(model):
        raise click.UsageError("give exactly one of --init or --model")
    check_outputs(stats, inputs=[feats, ali, model, phones])
    acc_files(feats, ali, stats, job, states if init else None, model, update,
              SymbolTable.read(phones) if phones else None)


@command("init-cdhmm")
@click_options(CdhmmOptions, only=("var_floor", "lm_smooth"))
@arguments(("stats...", HDF5_INPUT), ("model", HDF5_OUTPUT))
def init_cdhmm(var_floor, lm_smooth, stats, model):
    """Sum `acc-cdhmm --init` statistics STATS... -> the initial ML CDHMM (1 Gaussian)."""
    from ..models.cdhmm_train import init_files
    from ..io.text import check_outputs

    check_outputs(model, inputs=stats)
    init_files(list(stats), model, var_floor, lm_smooth)


@command("est-cdhmm")
@click_options(CdhmmOptions, only=("mixtures",), defaults={"mixtures": None})
@arguments(("model_in", HDF5_INPUT), ("stats...", HDF5_INPUT), ("model_out", HDF5_OUTPUT))
def est_cdhmm(mixtures, model_in, stats, model_out):
    """Sum one E-step's statistics STATS... (acc-cdhmm --model MODEL_IN) -> MODEL_OUT."""
    from ..models.cdhmm_train import est_files
    from ..io.text import check_outputs

    check_outputs(model_out, inputs=[model_in, stats])
    est_files(model_in, list(stats), model_out, mixtures)


@command("acc-largemargin")
@job_option
@click_options(LargeMarginOptions, only=("objective", "segmentation"))
@click_options(CdhmmDecodeOptions)
@arguments(("point", HDF5_INPUT), ("feats", HDF5_INPUT), ("ali", TEXT_INPUT),
           ("stats", HDF5_OUTPUT))
def acc_largemargin(job, point, feats, ali, stats, **kw):
    """Risk and subgradient at CDHMM POINT over (shard --job K/N of) FEATS + ALI -> STATS.

    train-largemargin's loss-augmented searches over shards; est-largemargin sums them
    and takes one bundle step. POINT is the ML model at the first iteration, then
    est-largemargin's NEXT. One iteration, 4 jobs:

    \b
      $cmd JOB=1:4 log/acc.JOB.log rhmmtk acc-largemargin --job JOB/4 --lm-scale 4 \\
          next.h5 feats.h5 ali risk.JOB.acc
      rhmmtk est-largemargin --lm-scale 4 [--state-in b.h5] ml.h5 risk.*.acc b.h5 next.h5 lm.h5
    """
    from ..io.text import check_outputs
    from ..models.largemargin import acc_files
    from ..options import take

    check_outputs(stats, inputs=[point, feats, ali])
    acc_files(point, feats, ali, stats, job, take(LargeMarginOptions, kw),
              take(CdhmmDecodeOptions, kw))


@command("est-largemargin")
@click_options(LargeMarginOptions, CdhmmDecodeOptions, FrameDevOptions)
@click.option("--state-in", type=HDF5_INPUT,
              help="The bundle state of the previous iteration (none at the first).")
@arguments(("ml_model", HDF5_INPUT), ("stats...", HDF5_INPUT), ("state_out", HDF5_OUTPUT),
           ("next_model", HDF5_OUTPUT), ("model", HDF5_OUTPUT))
def est_largemargin(state_in, ml_model, stats, state_out, next_model, model, **kw):
    """One bundle step: sum STATS... (acc-largemargin at the state's next point) ->
    STATE_OUT, NEXT_MODEL (where to accumulate next) and MODEL (the iteration --select
    keeps so far). Prints the iteration as JSON; "done" is true when the gap is below
    --tol or --max-iter is reached. The steps equal train-largemargin's."""
    import json

    from ..io.text import check_outputs
    from ..models import load_model
    from ..models.largemargin import est_files
    from ..options import take

    dev = take(FrameDevOptions, kw).check()
    check_outputs(state_out, next_model, model, inputs=[ml_model, state_in, dev.dev_feats,
                                                        dev.dev_ali, dev.mapping, *stats])
    out = est_files(load_model(ml_model, expect="cdhmm"), list(stats), state_in, state_out,
                    next_model, model, take(LargeMarginOptions, kw), take(CdhmmDecodeOptions, kw),
                    dev.dev, dev.label_map())
    click.echo(json.dumps(out))
