import click

from .common import command, job_option, short_help
from ..options import shared_option
from ..io.specifiers import OutputType
from ..click_types import Count, HDF5_INPUT, HDF5_OUTPUT


@click.group("quantize", context_settings={"help_option_names": ["-h", "--help"]})
def quantize():
    """Vector quantisation of feature archives: `learn` a k-means codebook, `apply` it.

    \b
      rhmmtk quantize learn --codes 10000 train.feats.h5 codebook.h5
      rhmmtk quantize apply codebook.h5 dev.feats.h5 dev.obs.h5

    FEATURES may also be Kaldi or HTK features (see rhmmtk copy-feats):

    \b
      rhmmtk quantize learn --codes 10000 scp:data/train/feats.scp codebook.h5
      rhmmtk quantize apply codebook.h5 'ark:apply-cmvn ... scp:feats.scp ark:- |' dev.obs.h5
      rhmmtk quantize apply codebook.h5 htk:dev_mfc.scp dev.obs.h5
    """


quantize.short_help = short_help(quantize.help)


@command("quantize learn")
@click.option("--codes", type=Count(1), default=10000, help="Codebook size K.")
@click.option("--seeding", type=click.Choice(["k-means++", "random"]), default="k-means++",
              help="How the starting centres are chosen (on --init-frames frames).")
@click.option("--init-frames", type=Count(0), default=None,
              help="Random frames the initialisation looks at (0: all).  "
                   "[default: max(3 x codes, 3e8 / codes)]")
@click.option("--sample-frames", type=Count(0), default=0,
              help="Train on this many random frames (0: all frames).")
@shared_option("iters", type=Count(1), default=20, help="At most this many Lloyd iterations.")
@shared_option("seed", help="Seed for sampling and initialisation.")
@click.argument("features")
@click.argument("codebook", type=HDF5_OUTPUT)
def learn(codes, seeding, init_frames, sample_frames, iters, seed, features, codebook):
    """Learn a k-means codebook (scikit-learn KMeans) from FEATURES: an rhmmtk features
    archive, a Kaldi `ark:`/`scp:` specifier or `htk:LIST`."""
    from ..frontend.codebook import learn_codebook
    from ..io.text import check_outputs

    check_outputs(codebook, inputs=[features])

    learn_codebook(features, codebook, num_codes=codes, init=seeding, sample_frames=sample_frames,
                   iters=iters, seed=seed, init_frames=init_frames)


@command("quantize apply")
@job_option
@click.option("--precision", type=click.Choice(["float32", "float64"]), default="float32",
              help="Arithmetic of the distance computation.")
@click.argument("codebook", type=HDF5_INPUT)
@click.argument("features")
@click.argument("out", type=OutputType("codes"))
def apply(job, precision, codebook, features, out):
    """Map every frame to its nearest codebook entry: a `codes` archive (symbols "0".."K-1").

    FEATURES: an rhmmtk features archive, a Kaldi `ark:`/`scp:` specifier or `htk:LIST`.
    OUT: an rhmmtk codes archive or a Kaldi archive of integer vectors (ark:F, ark,t:F,
    ark,scp:F.ark,F.scp, ark:-, 'ark:| CMD'). With --job K/N, only shard K of the
    utterances."""
    import numpy as np

    from ..frontend.codebook import quantize_archive
    from ..io.text import check_outputs

    check_outputs(out, inputs=[codebook, features])

    quantize_archive(codebook, features, out, dtype=np.dtype(precision), job=job)


quantize.add_command(learn, "learn")
quantize.add_command(apply, "apply")
