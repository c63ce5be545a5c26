"""copy-feats: feature matrices between rhmmtk archives, Kaldi tables and HTK files."""
import click

from .common import command, seconds
from ..io.specifiers import OutputType
from ..options import shared_option


@command("copy-feats")
@shared_option("frame_shift",
               help="Frame shift (ms), recorded in an rhmmtk archive and used as an HTK "
                    "file's sample period when the input does not say.  [default: the "
                    "input's; 10 for HTK output]")
@click.argument("src", metavar="IN")
@click.argument("dst", metavar="OUT", type=OutputType("features"))
def copy_feats(frame_shift, src, dst):
    """Copy features IN -> OUT, each an rhmmtk archive, Kaldi table or HTK list.

    \b
    IN:  archive.h5 | ark:f.ark | ark,t:f.txt | scp:feats.scp | 'ark:CMD |' | ark:-
         | htk:list.scp (HTK script of parameter files, `path` or `name=path` lines)
    OUT: archive.h5 | ark:f.ark | ark,t:f.txt | ark,scp:f.ark,f.scp | ark:-
         | 'ark:| CMD' | htk:DIR (DIR/<utt>.htk and DIR/feats.scp)

    Float matrices are copied bit for bit (Kaldi double matrices become float32).
    Examples:

    \b
      rhmmtk copy-feats train.feats.h5 ark,scp:train.ark,train.scp   # to Kaldi tools
      rhmmtk copy-feats 'ark:copy-feats scp:data/train/feats.scp ark:- |' train.feats.h5
      rhmmtk copy-feats htk:train.scp train.feats.h5                 # HCopy's .mfc files
    """
    from ..io.features import copy_features

    copy_features(src, dst, seconds(frame_shift))
