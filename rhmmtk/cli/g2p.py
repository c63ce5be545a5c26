"""The grapheme-to-phoneme commands: align (lexicon -> per-letter labels), pronounce
(a trained tagger + a word list -> lexicon)."""
import click

from ..g2p.align import AlignOptions
from ..io.lexicon import FORMATS, STRESS
from ..options import click_options
from ..click_types import HDF5_INPUT, TEXT_INPUT, TEXT_OUTPUT
from .common import arguments, command
from .decode import _decode_options


@command("align")
@click_options(AlignOptions)
@click.option("--stress", type=click.Choice(STRESS), default="keep",
              help="Stress digits at the end of phonemes (CMU's AH0): keep them, or strip "
                   "them (AH0 and AH1 become AH).")
@click.option("--skip-duplicates", is_flag=True,
              help="Skip an entry that repeats a word and pronunciation (the count is "
                   "logged) instead of stopping at it.")
@arguments(("lexicon", TEXT_INPUT), ("letters", TEXT_OUTPUT), ("ali", TEXT_OUTPUT))
def align(stress, skip_duplicates, lexicon, letters, ali, **kw):
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

    align_file(lexicon, letters, ali, take(AlignOptions, kw), stress, skip_duplicates)


@command("pronounce")
@_decode_options
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="tsv",
              help="OUT's lexicon format: `word<TAB>P1 P2 ...` or CMU-style `WORD  P1 P2`.")
@click.option("--nbest", type=click.IntRange(1), default=1,
              help="Up to this many distinct pronunciations a word, best first (CRF and "
                   "subpat models: k-best Viterbi, ranked by the model's score: the CRF's "
                   "log-probability log p(y|x), subpat's perceptron score, not a "
                   "probability).")
@click.option("--scores/--no-scores", default=False,
              help="Write each pronunciation's score (as --nbest ranks them) between word "
                   "and phonemes, `word<TAB>score<TAB>P1 P2 ...` as Phonetisaurus does "
                   "(tsv format only; CRF and subpat models).")
@arguments(("model", HDF5_INPUT), ("words", TEXT_INPUT), ("out", TEXT_OUTPUT))
def pronounce(fmt, nbest, scores, model, words, out, **options):
    """Pronounce WORDS (a word list, or a lexicon's words) with tagger MODEL -> lexicon OUT.

    MODEL is any model trained on letter codes (train-em, train-spectral, train-hkz,
    train-maxmargin, train-crf, train-subpat): each word's letters are observed as its
    training letters were (the model's observation table and window) and labelled; silent
    letters are dropped and compound labels split. A letter the model never saw is
    an error naming the word. The decode options of the model's family apply, as in
    `rhmmtk decode`. OUT may be '-'. With --nbest K, up to K distinct pronunciations
    a word (CMU format: `WORD(2)` for the second), best first.

      rhmmtk pronounce exp/crf/final.h5 words.txt lexicon.tsv
    """
    from ..g2p.pronounce import pronounce_file
    from ..options import take

    def options_of(m):
        return take(m.decode_options, options) if m.decode_options else None

    pronounce_file(model, words, out, options_of, fmt, nbest, scores)
