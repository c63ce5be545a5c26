# Sourced by the TIMIT scripts (needs $exp and $root): the 48 -> 39 folding every score
# uses, written once to $exp/map_48_39.txt ($map39), and a scorer printing chosen figures.
mkdir -p "$exp"
map39=$exp/map_48_39.txt
awk 'NF == 3 && !seen[$2]++ {print $2, $3}' conf/phones.60-48-39.map > "$map39"

# REF HYP KEY...: figures of `rhmmtk score --json` on the 39 phones (a.b for nested keys)
score_field() {
  local ref=$1 hyp=$2
  shift 2
  rhmmtk score -q --json --mapping "$map39" "$ref" "$hyp" | python3 "$root/scripts/utils/json_field.py" "$@"
}
