# Sourced by the stage scripts local/run_cdhmm.sh and local/run_hcrf.sh (after ../path.sh):
# the inputs and outputs they share with run.sh, which passes its own --data, --exp, --cmd.
data=data                   # relative to recipes/timit, or to where the script is started
exp=exp                     # when given
. "$recipe/cmd.sh"          # cmd
