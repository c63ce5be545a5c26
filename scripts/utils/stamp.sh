# Sourced by the step scripts and recipes: every output F remembers what it was made from
# in F.stamp: its command line (options) and its inputs' identities. A rerun reuses an
# output only when its stamp matches; an output made with other options or inputs (or
# before stamps existed) is removed and made again, with one line on stderr saying so.
# Never a silent reuse.
#
# An input's identity is the md5 of its stamp when it has one (archives record their
# creation time, so their bytes differ between two identical runs; the stamp says how
# the file was made, recursively), else the md5 of its contents (prepared text files).
#
#   stamp_text [--out FILE]... ARG...   one line per ARG; an ARG naming an existing file
#                                  other than an --out one (an output) gets its identity
#   stamp_current STAMP TEXT OUTPUT...  0 when STAMP holds TEXT and every OUTPUT exists;
#                                  otherwise stale OUTPUTs (and STAMP) are removed, 1
#   stamp_write STAMP TEXT         record TEXT (once the outputs are made; train_em.sh
#                                  writes it first, so that a partly done directory
#                                  resumes only under the same options)
#   once [--out FILE]... OUT LOG COMMAND...   run COMMAND through $cmd (log LOG) unless
#                                  OUT (and every --out FILE, further outputs) is current
#                                  by OUT.stamp
stamp_text() {
  local outs=() a o skip
  while [ "${1:-}" = --out ]; do outs+=("$2"); shift 2; done
  for a in "$@"; do
    skip=
    for o in "${outs[@]}"; do [ "$a" = "$o" ] && skip=1; done
    if [ -n "$skip" ] || [ ! -f "$a" ]; then
      printf '%s\n' "$a"
    elif [ -f "$a.stamp" ]; then
      printf '%s made=%s\n' "$a" "$(md5sum < "$a.stamp" | cut -d' ' -f1)"
    else
      printf '%s md5=%s\n' "$a" "$(md5sum < "$a" | cut -d' ' -f1)"
    fi
  done
}

stamp_current() {
  local stamp=$1 text=$2 f missing= found=
  shift 2
  for f in "$@"; do if [ -e "$f" ]; then found=1; else missing=1; fi; done
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$text" ]; then
    [ -z "$missing" ]
    return
  fi
  if [ -n "$found" ]; then
    if [ -f "$stamp" ]; then
      echo "$0: $1 was made with other options or inputs: redoing it" \
        "(was: $(stamp_lines '>' "$text" "$stamp"); now: $(stamp_lines '<' "$text" "$stamp"))" >&2
    else
      echo "$0: $1 has no record of the options it was made with: redoing it" >&2
    fi
    rm -rf "$@"
  fi
  rm -f "$stamp"
  return 1
}

stamp_lines() {  # < or >, TEXT, STAMP: the lines only in TEXT (<) or only in STAMP (>)
  diff <(echo "$2") "$3" | sed -n "s/^$1 //p" | tr '\n' ' ' | cut -c1-300
}

stamp_write() {
  printf '%s\n' "$2" > "$1"
}

once() {
  local outs=() skip=() text out log
  while [ "${1:-}" = --out ]; do outs+=("$2"); skip+=(--out "$2"); shift 2; done
  out=$1 log=$2
  shift 2
  text=$(stamp_text --out "$out" "${skip[@]}" "$@")
  stamp_current "$out.stamp" "$text" "$out" "${outs[@]}" && return 0
  $cmd "$log" "$@" || return 1
  stamp_write "$out.stamp" "$text"      # after success: a failed job's output is redone
}
