# Sourced by this recipe's scripts (Kaldi's path.sh): where the toolkit and the example are.
root=$(cd ../..; pwd)                     # the repository (scripts/, rhmmtk/)
nettalk=${RHMMTK_NETTALK:-$root/../shared/data/nettalk/nettalk.data}
stage=0
stop_stage=100
