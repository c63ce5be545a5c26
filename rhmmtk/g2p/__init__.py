"""Grapheme-to-phoneme: lexicons in, per-letter labels for the taggers, lexicons out.

`align` (many-to-many EM alignment of a lexicon into per-letter labels), `labels`
(what a per-letter label means as phonemes: silent letters, compound labels).
"""
