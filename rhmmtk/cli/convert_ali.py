"""convert-ali: alignments to and from Kaldi integer alignments, HTK labels/MLFs and CTM."""
import click

from .common import command, seconds
from ..io.specifiers import OutputType
from ..options import shared_option


@command("convert-ali")
@click.option("--from", "fmt_in", type=click.Choice(["text", "int", "mlf", "lab"]),
              default="text",
              help="IN's format: rhmmtk alignment (text), Kaldi integer alignment (int, with "
                   "--symbols; a text file, or a Kaldi table ark:F, ark,t:F, scp:F, 'ark:CMD |' "
                   "binary or text), HTK master label file (mlf), or a list of HTK .lab files "
                   "(lab).")
@click.option("--to", "fmt_out", type=click.Choice(["text", "int", "mlf", "ctm"]),
              default="text", help="OUT's format (ctm: for NIST sclite).")
@shared_option("symbols", type=click.Path(dir_okay=False),
               help="Kaldi symbol table (`sym id`, e.g. phones.txt): needed for int; with mlf "
                   "or lab input every label must be in it.")
@shared_option("frame_shift",
               help="Frame shift (ms), converting HTK times (100 ns units) and CTM times.  "
                    "[default: --features' frame shift, else 10]")
@click.option("--features", help="Features of the same utterances (rhmmtk archive, Kaldi "
                                 "ark:/scp: or htk:LIST): their frame shift is used, and each "
                                 "alignment is fitted to their frame count.")
@click.option("--tolerance", type=click.IntRange(0), default=2,
              help="With --features: pad (repeating the last label) or cut alignments up to "
                   "this many frames off; more is an error.")
@shared_option("segments", help="Kaldi segments file: CTM times on the recordings' time "
                                 "lines.")
@shared_option("reco2file_and_channel", help="Kaldi reco2file_and_channel: the CTM's file and "
                                              "channel columns.")
@click.option("--strip-word-position", is_flag=True,
              help="Map Kaldi's position-dependent phones (aa_B, aa_E, aa_I, aa_S) to aa.")
@click.option("--mlf-ext", default="rec",
              help="Extension of the label file names in an output MLF (HResults looks up "
                   "references as *.lab, hypotheses as *.rec).")
@click.argument("src", metavar="IN", type=click.Path(allow_dash=True))
@click.argument("dst", metavar="OUT", type=OutputType("text"))
def convert_ali(fmt_in, fmt_out, symbols, frame_shift, features, tolerance, segments,
                reco2file_and_channel, strip_word_position, mlf_ext, src, dst):
    """Convert alignments between rhmmtk, Kaldi, HTK and CTM formats (IN, OUT may be '-').

    HTK label times are in 100 ns units; a label [start, end) gets frames
    round(start/shift) .. round(end/shift)-1, and frames are written back the same way,
    so frames -> MLF -> frames is exact. Examples:

    \b
      # Kaldi per-frame phone alignment -> rhmmtk labels
      ali-to-phones --per-frame=true exp/tri3_ali/final.mdl "ark:gunzip -c ali.1.gz|" \\
          ark,t:- | rhmmtk convert-ali --from int --symbols data/lang/phones.txt \\
          --strip-word-position - train.ali
      # the same from a binary archive ali-to-phones wrote
      rhmmtk convert-ali --from int --symbols data/lang/phones.txt ark:phones.1.ark train.ali
      # HTK MLF -> rhmmtk labels, fitted to the features' frames
      rhmmtk convert-ali --from mlf --features train.feats.h5 aligned.mlf train.ali
      # rhmmtk hypotheses -> HResults / sclite
      rhmmtk convert-ali --to mlf --mlf-ext lab test.ali test.ref.mlf
      rhmmtk convert-ali --to mlf test.hyp test.rec.mlf
      HResults -I test.ref.mlf phones.list test.rec.mlf
      rhmmtk convert-ali --to ctm test.hyp test.ctm
    """
    from ..io.labels import convert_alignment
    from ..io.text import check_outputs

    check_outputs(dst)
    convert_alignment(src, dst, fmt_in, fmt_out, symbols, seconds(frame_shift), features, tolerance,
                      segments, reco2file_and_channel, strip_word_position, mlf_ext)
