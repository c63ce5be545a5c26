#!/usr/bin/env bash
# The one way the recipes and steps choose on dev: the best row of TSV tables.
#
#   scripts/utils/select_best.sh [--lower] KEY COLUMN[,COLUMN...] TABLE...
#
# Prints the COLUMNs (tab-separated, as written in the table) of the row with the highest
# KEY (--lower: the lowest); ties go to the first row, in the order of the TABLEs and
# their rows; rows without a KEY value are skipped. Each TABLE has a header line; - reads
# stdin. This is rhmmtk.selection.best_row, the rule every trainer keeps its best dev
# iteration by, so a configuration, a decoding weight and an EM iteration are chosen alike.
exec python3 -m rhmmtk.selection "$@"
