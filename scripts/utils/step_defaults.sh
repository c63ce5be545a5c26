# Sourced first by every step script (scripts/steps/*.sh): the repository root and the
# defaults every step shares, --nj (shards) and --cmd (the job runner), as Kaldi's steps
# start with nj=4 cmd=run.pl.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
nj=1
cmd=$root/scripts/utils/run_local.sh
