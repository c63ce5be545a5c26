"""The grapheme-to-phoneme commands: align (lexicon -> per-letter labels)."""
import click

from ..g2p.align import AlignOptions
from ..io.lexicon import STRESS
from ..options import click_options
from ..params import TEXT_INPUT, TEXT_OUTPUT
from .common import arguments, command


@command("align")
@click_options(AlignOptions)
@click.option("--stress", type=click.Choice(STRESS), default="keep",
              help="Stress digits at the end of phonemes (CMU's AH0): keep them, or strip "
                   "them (AH0 and AH1 become AH).")
@arguments(("lexicon", TEXT_INPUT), ("letters", TEXT_OUTPUT), ("ali", TEXT_OUTPUT))
def align(stress, lexicon, letters, ali, **kw):
    """Align pronunciation LEXICON into per-letter labels: LETTERS and ALI.

    LEXICON: `WORD P1 P2 ...` lines (CMU-style, `WORD(2)` for a variant, `;;;` or `#`
    comments) or `word<TAB>P1 P2 ...` (Phonetisaurus, Sequitur). Many-to-many EM
    alignment as m2m-aligner's: chunks of up to --max-letters letters and
    --max-phones phonemes; a silent letter is labelled `-`, a letter standing for
    several phonemes gets one compound label (`k|s`). LETTERS (`utt-id l e t t e r s`)
    and ALI (`utt-id label ...`, one per letter) are what every tagger here trains on;
    utterance ids are the words, `word(2)` for a second pronunciation.

      rhmmtk align --max-letters 2 --max-phones 2 lexicon.tsv train/letters train/ali
    """
    from ..g2p.align import align_file
    from ..options import take

    align_file(lexicon, letters, ali, take(AlignOptions, kw), stress)
