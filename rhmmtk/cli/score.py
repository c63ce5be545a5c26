"""`rhmmtk score`: score a hypothesis alignment against a reference, HResults-style."""
import click

from .common import command
from ..options import shared_option
from ..click_types import TEXT_INPUT

RULE = "=" * 67


def banner(title, fill="="):
    """A HResults-style section rule: `====== title ======`, 67 wide."""
    title = f" {title} "
    left = (67 - len(title)) // 2
    return fill * left + title + fill * (67 - left - len(title))


def display_name(path):
    return "(stdin)" if path == "-" else path


def read_inputs(ref_path, hyp_paths, mapping_path):
    """Read the reference, the hypotheses and the optional mapping (at most one from stdin)."""
    from ..errors import InputError
    from ..io.labelmap import read_label_map
    from ..io.text import read_alignment

    paths = [ref_path, *hyp_paths, mapping_path]
    if sum(p == "-" for p in paths) > 1:
        raise InputError("only one input can be read from stdin ('-')")
    mapping = None if mapping_path is None else read_label_map(mapping_path)
    return read_alignment(ref_path), [read_alignment(p) for p in hyp_paths], mapping


def header(title, rows):
    lines = [banner(title)]
    lines += [f"  {name:<4}: {display_name(path)}" for name, path in rows if path is not None]
    return lines


def format_report(report, ref_path, hyp_path, mapping_path, per_label, confusion, per_utt):
    lines = header("rhmmtk score: HResults-style report",
                   [("Ref", ref_path), ("Hyp", hyp_path), ("Map", mapping_path)])
    if per_utt:
        lines += format_per_utterance(report)
    lines.append(banner("Overall Results", "-"))
    seg = report.segments
    lines += [
        f"SENT: %Correct={report.sequence_accuracy:.2f} [H={report.sequences_correct}, "
        f"S={report.sequences - report.sequences_correct}, N={report.sequences}]",
        f"POS:  %Acc={report.position_accuracy:.2f} [H={report.positions_correct}, N={report.positions}]",
        f"PHONE: %Corr={seg.corr:.2f}, Acc={seg.acc:.2f} [H={seg.H}, D={seg.D}, S={seg.S}, "
        f"I={seg.I}, N={seg.N}]",
    ]
    if per_label:
        lines += format_per_label(report)
    if confusion:
        lines.append(banner("Confusion Matrix (rows: reference, columns: hypothesis)", "-"))
        lines += format_confusion(report.labels, report.confusion)
    lines.append(RULE)
    return "\n".join(lines) + "\n"


def format_per_utterance(report):
    lines = [banner("File Results", "-")]
    width = max(len(k) for k in report.keys)
    for k, n, c, seg in zip(report.keys, report.lengths, report.correct, report.utt_segments):
        lines.append(f"{k:<{width}}:  POS %Acc={100.0 * c / n:6.2f} [H={c}, N={n}]  "
                     f"PHONE %Corr={seg.corr:6.2f}, Acc={seg.acc:7.2f} "
                     f"[H={seg.H}, D={seg.D}, S={seg.S}, I={seg.I}, N={seg.N}]")
    return lines


def format_per_label(report):
    lines = [banner("Per-label Results (by reference label)", "-")]
    table = report.per_label()
    width = max(5, max(len(lab) for lab in table))
    lines.append(f"{'label':<{width}}  {'%Acc':>6}  {'H':>8}  {'N':>8}")
    for lab, (n, c, acc) in table.items():
        lines.append(f"{lab:<{width}}  {acc:6.2f}  {c:8d}  {n:8d}")
    return lines


def format_confusion(labels, counts):
    """HResults-like matrix: one column per label, then the row's %correct [%c]."""
    width = max(5, max(len(lab) for lab in labels) + 1, len(str(counts.max())) + 1)
    lab_w = max(len(lab) for lab in labels)
    lines = [" " * lab_w + "".join(f"{lab:>{width}}" for lab in labels) + "    [%c]"]
    for i, lab in enumerate(labels):
        n = counts[i].sum()
        pc = f"[{100.0 * counts[i, i] / n:5.1f}]" if n else "[  -  ]"
        lines.append(f"{lab:<{lab_w}}" + "".join(f"{c:>{width}d}" for c in counts[i]) + "  " + pc)
    return lines


@command("score")
@shared_option("mapping")
@click.option("--confusion", is_flag=True, help="Also print the position confusion matrix.")
@click.option("--per-label", is_flag=True, help="Also print accuracy per reference label.")
@click.option("--per-utt", is_flag=True, help="Also print one line of results per utterance.")
@shared_option("phonemes")
@shared_option("letters")
@shared_option("json", "as_json")
@click.argument("ref", type=TEXT_INPUT)
@click.argument("hyp", type=TEXT_INPUT, nargs=-1, required=True)
def score(mapping, confusion, per_label, per_utt, phonemes, letters, as_json, ref, hyp):
    """Score alignment HYP against reference REF (either may be `-` for stdin).

    Both are `utt-id label label ...` files, paired by utterance id. Reported:
    SENT, utterances labelled entirely right; POS, per-position label accuracy
    (each utterance must have as many labels in HYP as in REF); PHONE, HResults'
    segment scores: runs of equal labels collapse to segments, aligned with
    penalties substitution 10, deletion 7, insertion 7, giving %Corr = H/N and
    Acc = (H-I)/N (phone error rate = 100 - Acc). With --json, all rates are
    percentages and the keys are position_accuracy, sequence_accuracy,
    positions, sequences, segments {H,D,S,I,N,corr,acc,per} and, if asked,
    per_label, confusion and per_utt.

    Several HYP files are scored against the same REF in one run (a dev grid:
    one start-up instead of one per file): one report each, in order; with
    --json, a JSON list of the objects.

    With --phonemes (grapheme-to-phoneme), each side is read as phonemes instead:
    silent letters (`-`) dropped, compound labels (`k|s`) split, so a tagger's
    per-letter labels and a plain phoneme string (Phonetisaurus') score alike.
    Reported: PER, the Levenshtein distance to the reference phonemes over their
    number, and WER, the words with any phoneme wrong (JSON keys per, wer,
    phonemes, phoneme_errors, words, words_wrong). With --letters, a word with several
    reference pronunciations counts once, right when it matches any of them.
    """
    import json

    from .. import scoring

    check_phoneme_options(phonemes, mapping, letters)
    ref_ali, hyp_alis, label_map = read_inputs(ref, hyp, mapping)
    if phonemes:
        return _score_phonemes(ref, ref_ali, hyp, hyp_alis, as_json, read_words(letters))
    reports = [scoring.score(ref_ali, h_ali, ref, h, label_map, mapping)
               for h, h_ali in zip(hyp, hyp_alis)]
    if as_json:
        out = [{"ref": ref, "hyp": h, "mapping": mapping,
                **r.as_dict(per_label=per_label, confusion=confusion, per_utt=per_utt)}
               for h, r in zip(hyp, reports)]
        click.echo(json.dumps(out[0] if len(out) == 1 else out, indent=1))
    else:
        click.echo("".join(format_report(r, ref, h, mapping, per_label, confusion, per_utt)
                           for h, r in zip(hyp, reports)), nl=False)


def check_phoneme_options(phonemes, mapping, letters):
    """--mapping and --letters (score, compare): what goes with --phonemes."""
    if phonemes and mapping:
        raise click.UsageError("--mapping does not apply to --phonemes")
    if letters and not phonemes:
        raise click.UsageError("--letters needs --phonemes")


def read_words(letters):
    """utt -> word of a --letters file (None without one)."""
    if letters is None:
        return None
    from ..g2p.metrics import words_of_letters
    from ..io.text import read_table

    return words_of_letters(read_table(letters))


def _score_phonemes(ref, ref_ali, hyp, hyp_alis, as_json, words=None):
    """score --phonemes: PER and WER of each hypothesis."""
    import json

    from ..g2p import metrics

    reports = [metrics.score(ref_ali, h_ali, ref, h, words) for h, h_ali in zip(hyp, hyp_alis)]
    if as_json:
        out = [{"ref": ref, "hyp": h, **r.as_dict()} for h, r in zip(hyp, reports)]
        click.echo(json.dumps(out[0] if len(out) == 1 else out, indent=1))
        return
    for h, r in zip(hyp, reports):
        lines = header("rhmmtk score: phoneme strings (G2P)", [("Ref", ref), ("Hyp", h)])
        lines += [f"PHONEMES: PER={r.per:.2f} [E={int(r.errors.sum())}, N={int(r.phones.sum())}]",
                  f"WORDS:    WER={r.wer:.2f} [E={r.words_wrong}, N={len(r.keys)}]", RULE]
        click.echo("\n".join(lines))
