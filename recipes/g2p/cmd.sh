# How this recipe runs its parallel jobs: Kaldi's contract,
#   $cmd JOB=1:$nj log/name.JOB.log command ... JOB ...
# (scripts/utils/run_local.sh documents it). Change this one variable to move the recipe.
#
# This machine, with GNU parallel (apt-get install parallel):
export cmd="$root/scripts/utils/run_local.sh"
#
# A Slurm cluster: job arrays through sbatch (the repository, data/ and exp/ on a file
# system every node sees; further sbatch options in RHMMTK_SLURM_OPTS):
# export cmd="$root/scripts/utils/run_slurm.sh --mem 4G --time 4:00:00"
