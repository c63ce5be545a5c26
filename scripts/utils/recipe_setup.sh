# Sourced by the recipes and scripts/rhmm.sh once their defaults and help_message are set:
# appends the recipes' note on paths to help_message, parses the options (parse_options.sh:
# $path_options made absolute), then loads the helpers every recipe uses, stages.sh
# (run_stage, stage_begin, stage_end), stamp.sh (once) and parallel.sh (parallel_run,
# parallel_wait), and refuses a bad --parallel in the scripts that have that option.
# One file, so that the recipes set up alike.
# The recipes' note on paths and reuse, in one wording (scripts/rhmm.sh has no $recipe).
[ -z "${recipe:-}" ] || help_message+="
Paths given relative to the directory the recipe is started from; the defaults are
relative to recipes/$(basename "$recipe"). A model or decoding made with other options or
inputs is made again, never reused."
. "$root/scripts/utils/parse_options.sh"
. "$root/scripts/utils/parallel.sh"
. "$root/scripts/utils/stages.sh"
. "$root/scripts/utils/stamp.sh"
[ -z "${parallel:-}" ] || parallel_check "$parallel"
