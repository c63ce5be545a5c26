"""train-hcrf, acc-hcrf, est-hcrf, train-hcrf-tagger: thin shims over rhmmtk.models.hcrf."""

from ..models.cdhmm import CdhmmDecodeOptions
from ..models.hcrf.train import HcrfOptions, RpropOptions
from ..options import click_options
from ..click_types import HDF5_INPUT, HDF5_OUTPUT, TEXT_INPUT
from ..selection import DevOptions
from .common import arguments, command, job_option


@command("train-hcrf")
@click_options(HcrfOptions, RpropOptions, DevOptions)
@arguments(("init", HDF5_INPUT), ("feats", HDF5_INPUT), ("segments", TEXT_INPUT),
           ("model", HDF5_OUTPUT))
def train_hcrf(init, feats, segments, model, **kw):
    """HCRF phone classifier (paper 003) from INIT + FEATS + SEGMENTS -> MODEL.

    INIT is an ML CDHMM (train-cdhmm), converted exactly (every state-Gaussian pair
    becomes a hidden state; before training the class posterior is the HMM's), or an
    HCRF to continue. Trains the conditional likelihood of each segment's class by RPROP
    with moment or distribution (spline) constraints. With --dev-obs (dev features) and
    --dev-ali (the dev segment list) every iteration is scored and the best kept.
    Classify with `rhmmtk decode --phone-segments`.

    \b
      rhmmtk train-hcrf --constraints distribution --knots 5 --mapping map_48_39.txt \\
          --dev-obs dev/feats.h5 --dev-ali dev/phone_segments s3m4.h5 train/feats.h5 \\
          train/phone_segments hcrf_dc5.h5
    """
    from ..models.hcrf.train import train_file

    _train(train_file, init, feats, segments, model, kw)


def _train(train, init, feats, labels, model, kw, extra=None):
    """Both HCRF trainers: options, outputs checked first, the model and its history;
    `extra`: further options (a dataclass) passed on to `train` as its last argument."""
    from ..io.text import check_outputs
    from ..options import as_dict, take
    from ..provenance import record
    from ..selection import write_history

    o, r, d = take(HcrfOptions, kw), take(RpropOptions, kw), take(DevOptions, kw).check()
    check_outputs(model, d.history, inputs=[init, feats, labels, d.dev_obs, d.dev_ali])
    m = train(init, feats, labels, o, d.dev_obs, d.dev_ali, r, *([extra] if extra else []))
    m.save(model, record({**as_dict(o), **as_dict(r), **(as_dict(extra) if extra else {}),
                          "init": init}))
    if d.history:
        write_history(d.history, m.info["history"])


@command("acc-hcrf")
@job_option
@arguments(("model", HDF5_INPUT), ("feats", HDF5_INPUT), ("segments", TEXT_INPUT),
           ("stats", HDF5_OUTPUT))
def acc_hcrf(job, model, feats, segments, stats):
    """Gradient of the conditional likelihood of (shard --job K/N of) SEGMENTS under HCRF
    MODEL -> STATS (for est-hcrf).

    train-hcrf's iterations over shards: the shards' gradients sum to one process's.

    \b
      rhmmtk train-hcrf --iters 0 s3m4.h5 train/feats.h5 train/phone_segments 0.h5
      $cmd JOB=1:4 log/acc.JOB.log rhmmtk acc-hcrf --job JOB/4 0.h5 train/feats.h5 \\
          train/phone_segments 0.JOB.acc
      rhmmtk est-hcrf 0.h5 0.*.acc 1.h5
    """
    from ..io.text import check_outputs
    from ..models.hcrf.train import acc_files

    check_outputs(stats, inputs=[model, feats, segments])
    acc_files(model, feats, segments, stats, job)


@command("est-hcrf")
@click_options(RpropOptions)
@arguments(("model_in", HDF5_INPUT), ("stats...", HDF5_INPUT), ("model_out", HDF5_OUTPUT))
def est_hcrf(model_in, stats, model_out, **kw):
    """Sum acc-hcrf gradients STATS... (made with MODEL_IN) -> one RPROP step -> MODEL_OUT
    (which keeps RPROP's state for the next step)."""
    from ..io.text import check_outputs
    from ..models.hcrf.train import est_files
    from ..options import take

    check_outputs(model_out, inputs=[model_in, *stats])
    est_files(model_in, list(stats), model_out, take(RpropOptions, kw))


@command("train-hcrf-tagger")
@click_options(HcrfOptions, RpropOptions, DevOptions, CdhmmDecodeOptions)
@arguments(("init", HDF5_INPUT), ("feats", HDF5_INPUT), ("ali", TEXT_INPUT),
           ("model", HDF5_OUTPUT))
def train_hcrf_tagger(init, feats, ali, model, **kw):
    """Frame-tagging HCRF from ML CDHMM INIT + FEATS + frame alignment ALI -> MODEL.

    The hidden states refine each phone (the CDHMM's state-Gaussian pairs, on its phone
    loop); trained by RPROP on the conditional likelihood of the frame labels, the phone
    bigram included, decoded (`rhmmtk decode`) by max-marginals. The bigram starts as the
    HMM's, weighted by --lm-scale and --insertion-penalty as the CDHMM decoder weights it.
    With --dev-obs (dev features) and --dev-ali (dev frame alignment) the iteration with
    the best dev frame accuracy is kept.
    """
    from ..models.hcrf.tagger import train_tagger_file
    from ..options import take

    lm = take(CdhmmDecodeOptions, kw)
    _train(train_tagger_file, init, feats, ali, model, kw, lm)
