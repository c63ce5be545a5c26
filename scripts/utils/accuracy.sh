#!/usr/bin/env bash
# Per-position accuracy (%, two decimals) of a hypothesis alignment:
#
#   scripts/utils/accuracy.sh [--mapping FILE] REF HYP
#
# --mapping folds both sides first (e.g. TIMIT's 48 -> 39 phones), as `rhmmtk score`.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
map=()
if [ "${1:-}" = --mapping ]; then map=(--mapping "$2"); shift 2; fi
[ $# -eq 2 ] || { echo "usage: $0 [--mapping FILE] REF HYP" >&2; exit 1; }
rhmmtk score -q --json "${map[@]}" "$1" "$2" | python3 "$here/json_field.py" position_accuracy
