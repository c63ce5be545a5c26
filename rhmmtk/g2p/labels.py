"""Per-letter labels as phonemes.

Every tagger here labels each letter with one symbol. A letter that is not
pronounced gets SILENT (NETtalk's `-`); a letter that stands for several phonemes
gets one compound label, its phonemes joined by JOIN (`k|s` for the x of `box`).
A label sequence becomes a phoneme string by dropping the silent letters and
splitting the compounds.
"""
SILENT = "-"
JOIN = "|"


def compound(phones):
    """The label of a letter pronounced as `phones` (a sequence, maybe empty)."""
    return JOIN.join(phones) if len(phones) else SILENT


def phonemes(labels):
    """The phoneme string of per-letter `labels`: silents dropped, compounds split."""
    out = []
    for lab in labels:
        if lab != SILENT:
            out.extend(lab.split(JOIN))
    return out
