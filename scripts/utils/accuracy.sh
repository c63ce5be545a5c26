#!/usr/bin/env bash
# Per-position accuracy (%, two decimals) of hypothesis alignments, one line per HYP:
#
#   scripts/utils/accuracy.sh [--mapping FILE] REF HYP [HYP ...]
#
# All HYPs are scored by one `rhmmtk score` (one start-up for a whole dev grid).
# --mapping folds both sides first (e.g. TIMIT's 48 -> 39 phones), as `rhmmtk score`.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
map=()
if [ "${1:-}" = --mapping ]; then map=(--mapping "$2"); shift 2; fi
[ $# -ge 2 ] || { echo "usage: $0 [--mapping FILE] REF HYP [HYP ...]" >&2; exit 1; }
rhmmtk score -q --json "${map[@]}" "$@" | python3 "$here/json_field.py" position_accuracy
