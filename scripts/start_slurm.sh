#!/usr/bin/env bash
# Start a single-node Slurm cluster on this machine: munged, slurmctld and slurmd, one
# partition `debug` holding this node's CPUs and memory. For the Slurm runner's test
# (tests/test_jobs.py) and for trying a recipe with cmd=scripts/utils/run_slurm.sh without a
# cluster. Needs root and Debian's slurm-wlm and munge packages.
#
#   bash scripts/start_slurm.sh             # start (nothing to do if `sinfo` answers)
#   bash scripts/start_slurm.sh --install   # apt-get install slurm-wlm munge first if missing
#
# Writes /etc/slurm/slurm.conf only if there is none (or it is one this script wrote);
# daemons log to /var/log/slurm/. Exit status 0 when a node is up and idle.
set -euo pipefail
me=start_slurm.sh
install=0
[ "${1:-}" = --install ] && install=1
if sinfo -h > /dev/null 2>&1 && [ -n "$(sinfo -h -o %t 2> /dev/null | grep -E 'idle|mix|alloc' || true)" ]; then
  echo "$me: Slurm is already running" >&2
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "$me: error: needs root (starts munged, slurmctld, slurmd)" >&2
  exit 1
fi
if ! command -v slurmctld > /dev/null || ! command -v munged > /dev/null; then
  if [ "$install" = 1 ] && command -v apt-get > /dev/null; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge; } > /dev/null
  else
    echo "$me: error: Slurm is not installed (apt-get install slurm-wlm munge, or --install)" >&2
    exit 1
  fi
fi
marker="# written by rhmmtk scripts/start_slurm.sh"
conf=/etc/slurm/slurm.conf
if [ -f "$conf" ] && ! grep -qF "$marker" "$conf"; then
  echo "$me: $conf exists and is not ours: using it as it is" >&2
else
  host=$(hostname -s)
  cpus=$(nproc)
  mem=$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
  mkdir -p /etc/slurm
  cat > "$conf" <<EOF
$marker
ClusterName=rhmmtk
SlurmctldHost=$host
AuthType=auth/munge
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmdSpoolDir=/var/lib/slurm/slurmd
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
fi
mkdir -p /var/lib/slurm/slurmd /var/lib/slurm/slurmctld /var/log/slurm /run/munge
chown munge:munge /run/munge
if [ ! -s /etc/munge/munge.key ]; then
  if command -v mungekey > /dev/null; then mungekey --create > /dev/null 2>&1 || true; fi
  [ -s /etc/munge/munge.key ] || dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2> /dev/null
  chown munge:munge /etc/munge/munge.key
  chmod 400 /etc/munge/munge.key
fi
pgrep -x munged > /dev/null || runuser -u munge -- /usr/sbin/munged
pgrep -x slurmctld > /dev/null || slurmctld
pgrep -x slurmd > /dev/null || slurmd
for _ in $(seq 30); do
  state=$(sinfo -h -o %t 2> /dev/null | head -n 1 || true)
  case "$state" in
    idle*|mix*|alloc*) echo "$me: single-node Slurm up (partition debug, node $(hostname -s): $state)" >&2; exit 0 ;;
    down*|drain*) scontrol update nodename="$(hostname -s)" state=resume 2> /dev/null || true ;;
  esac
  sleep 1
done
echo "$me: error: Slurm did not come up; see /var/log/slurm/slurmctld.log and slurmd.log" >&2
exit 1
