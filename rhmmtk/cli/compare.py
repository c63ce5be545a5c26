"""`rhmmtk compare`: is system A significantly better than system B?"""
import click

from .common import arguments, command
from ..options import shared_option
from ..click_types import TEXT_INPUT
from .score import RULE, banner, check_phoneme_options, header, read_inputs, read_words


def _block(title, value_a, value_b, bs, sign, better, sizes):
    """One measure's lines: both systems, A - B with its interval, the two tests."""
    return [
        banner(title, "-"),
        f"A:     {value_a}",
        f"B:     {value_b}",
        f"A-B:   {bs.difference:+.2f} points, {100 * bs.confidence:g}% CI "
        f"[{bs.ci_low:+.2f}, {bs.ci_high:+.2f}]",
        f"Bootstrap: p={bs.p_value:.4g} (two-sided; {sizes})",
        f"Sign test: p={sign.p_value:.4g} (two-sided exact binomial; A {better} on "
        f"{sign.a_better}, B {better} on {sign.b_better}, tied on {sign.ties} utterances)",
    ]


def format_comparison(c, ref, hyp_a, hyp_b, mapping):
    bs = c.bootstrap
    lines = header("rhmmtk compare: paired significance",
                   [("Ref", ref), ("A", hyp_a), ("B", hyp_b), ("Map", mapping)])
    lines += _block("Per-position accuracy",
                    f"%Acc={c.accuracy_a:.2f} [H={int(c.correct_a.sum())}, N={c.positions}]",
                    f"%Acc={c.accuracy_b:.2f} [H={int(c.correct_b.sum())}, N={c.positions}]",
                    bs, c.sign, "better",
                    f"{bs.resamples} resamples of {len(c.keys)} utterances, seed {bs.seed}")
    n = int(c.phones.sum())
    lines += _block("Phone error rate (runs of equal labels; S+D+I over N)",
                    f"PER={c.per_a:.2f} [E={int(c.errors_a.sum())}, N={n}]",
                    f"PER={c.per_b:.2f} [E={int(c.errors_b.sum())}, N={n}]",
                    c.per_bootstrap, c.per_sign, "fewer errors", "the same resamples")
    return "\n".join(lines + [RULE]) + "\n"


def format_phonemes(c, ref, hyp_a, hyp_b):
    lines = header("rhmmtk compare: paired significance, phoneme strings (G2P)",
                   [("Ref", ref), ("A", hyp_a), ("B", hyp_b)])
    sizes = (f"{c.per_bootstrap.resamples} resamples of {len(c.a.keys)} words, "
             f"seed {c.per_bootstrap.seed}")
    lines += _block("Phoneme error rate (Levenshtein errors over reference phonemes)",
                    f"PER={c.a.per:.2f} [E={int(c.a.errors.sum())}, N={int(c.a.phones.sum())}]",
                    f"PER={c.b.per:.2f} [E={int(c.b.errors.sum())}, N={int(c.b.phones.sum())}]",
                    c.per_bootstrap, c.per_sign, "fewer errors", sizes)
    lines += _block("Word error rate (words with any phoneme wrong)",
                    f"WER={c.a.wer:.2f} [E={c.a.words_wrong}, N={len(c.a.keys)}]",
                    f"WER={c.b.wer:.2f} [E={c.b.words_wrong}, N={len(c.b.keys)}]",
                    c.wer_bootstrap, c.wer_sign, "right", "the same resamples")
    return "\n".join(lines + [RULE]) + "\n"


@command("compare")
@shared_option("mapping")
@click.option("--bootstrap", "resamples", type=click.IntRange(min=1), default=10_000,
              help="Bootstrap resamples of the utterances.")
@shared_option("seed", help="Random seed of the bootstrap.")
@shared_option("phonemes")
@shared_option("letters")
@shared_option("json", "as_json")
@arguments(("ref", TEXT_INPUT), ("hyp_a", TEXT_INPUT), ("hyp_b", TEXT_INPUT))
def compare(mapping, resamples, seed, phonemes, letters, as_json, ref, hyp_a, hyp_b):
    """Compare two systems' alignments HYP_A and HYP_B against reference REF.

    Reports each system's per-position accuracy, the difference A - B in
    points with a 95% paired-bootstrap interval (utterances resampled with
    replacement) and its two-sided p-value, and a sign test over utterances
    (A better vs B better, exact binomial p). The same for the phone error rate
    of the collapsed label strings (HResults' S+D+I over reference phones). One
    of the files may be `-`.

    With --phonemes (G2P: `rhmmtk score --phonemes`), the same tests on PER and WER
    of the phoneme strings instead; with --letters, per word (a word with several
    reference pronunciations right when it matches any; words resampled).
    """
    import json

    from ..significance import compare as compare_systems

    check_phoneme_options(phonemes, mapping, letters)
    ref_ali, (a_ali, b_ali), label_map = read_inputs(ref, [hyp_a, hyp_b], mapping)
    if phonemes:
        from ..g2p.metrics import compare as compare_phonemes

        c = compare_phonemes(ref_ali, a_ali, b_ali, (ref, hyp_a, hyp_b), resamples, seed,
                             read_words(letters))
        if as_json:
            click.echo(json.dumps({"ref": ref, "hyp_a": hyp_a, "hyp_b": hyp_b, **c.as_dict()},
                                  indent=1))
        else:
            click.echo(format_phonemes(c, ref, hyp_a, hyp_b), nl=False)
        return
    result = compare_systems(ref_ali, a_ali, b_ali, (ref, hyp_a, hyp_b), label_map, mapping,
                             resamples=resamples, seed=seed)
    if as_json:
        out = {"ref": ref, "hyp_a": hyp_a, "hyp_b": hyp_b, "mapping": mapping, **result.as_dict()}
        click.echo(json.dumps(out, indent=1))
    else:
        click.echo(format_comparison(result, ref, hyp_a, hyp_b, mapping), nl=False)
