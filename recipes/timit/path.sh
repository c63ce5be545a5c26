# Sourced by this recipe's scripts (Kaldi's path.sh): where the toolkit is, and the
# default data and experiment directories (relative to recipes/timit).
root=$(cd ../..; pwd)                     # the repository (scripts/, rhmmtk/)
data=data
exp=exp
