#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Proves that a release's root can run a real Slurm:  release-smoke.sh trixie|sid
# Inside in-release.sh's namespaces it starts munged, slurmctld and slurmd with a
# minimal hermetic configuration in /tmp, runs `srun -N1 true` and `srun id` as a
# user created for the run, and prints `slurmd -V`. Exit 0 when both sruns work,
# 77 when the root cannot be made (see release-root.sh).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

if [ "${1-}" != "--inside" ]; then
  [ $# -eq 1 ] || { echo "usage: release-smoke.sh trixie|sid" >&2; exit 2; }
  exec "$top/scripts/in-release.sh" "$1" "$top/scripts/release-smoke.sh" --inside
fi

# ---- from here on, inside the release's namespaces (a throwaway overlay root) ----
d=/tmp/smoke
host=$(hostname)
echo "== $LEFTOVER_RELEASE: $(slurmd -V) on $host, Debian $(cat /etc/debian_version)"
mkdir -p "$d"/{etc,munge,state,spool,log,run}
chmod 0755 "$d"
# munged refuses a socket directory without execute permission for all, and a key
# that others can read.
chmod 0755 "$d/munge"
# leftover refuses a spool dir that group or others can write, whatever the umask made.
chmod 0755 "$d/spool"
head -c 1024 /dev/urandom >"$d/munge/munge.key"
chmod 0400 "$d/munge/munge.key"
# Users must exist in this root's /etc/passwd: slurmd and slurmstepd read it here.
useradd --create-home --shell /bin/sh leftover-smoke

cat >"$d/etc/slurm.conf" <<EOF
ClusterName=smoke
SlurmctldHost=$host
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge/munge.socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/run/slurmctld.pid
SlurmdPidFile=$d/run/slurmd.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
InactiveLimit=0
KillWait=2
MailProg=/bin/true
NodeName=$host CPUs=1 State=UNKNOWN
PartitionName=smoke Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
# Without it 24.11 and 26.05 pick cgroup/v1 on a hybrid host and die in a
# namespace; nothing here needs cgroups (proctrack/linuxproc).
echo "CgroupPlugin=disabled" >"$d/etc/cgroup.conf"
export SLURM_CONF=$d/etc/slurm.conf

logs() {
  for f in "$d"/log/*; do echo "--- $f"; tail -n 25 "$f"; done >&2
}
wait_for() {  # wait_for <seconds> <what> <command...>
  local limit=$1 what=$2 start=$SECONDS
  shift 2
  until "$@" >/dev/null 2>&1; do
    if [ $((SECONDS - start)) -ge "$limit" ]; then
      echo "release-smoke: no $what after $limit s" >&2
      logs
      exit 1
    fi
    sleep 0.2
  done
}

t0=$SECONDS
# Foreground daemons in the background: this shell's namespace ends them all.
munged --foreground --socket="$d/munge/munge.socket" --key-file="$d/munge/munge.key" \
  --pid-file="$d/munge/munged.pid" --seed-file="$d/munge/munged.seed" \
  --log-file="$d/log/munged.log" >"$d/log/munged.out" 2>&1 &
wait_for 10 "munged socket" test -S "$d/munge/munge.socket"
slurmctld -D -f "$SLURM_CONF" >"$d/log/slurmctld.out" 2>&1 &
slurmd -D -f "$SLURM_CONF" >"$d/log/slurmd.out" 2>&1 &
# shellcheck disable=SC2317  # called through wait_for
idle() { [ "$(sinfo -h -N -o %t 2>/dev/null)" = idle ]; }
wait_for 60 "idle node" idle
echo "== daemons up, node idle after $((SECONDS - t0)) s"
sinfo -N

fail=0
if out=$(timeout 60 srun -N1 true 2>&1); then
  echo "== srun -N1 true: ok${out:+ ($out)}"
else
  echo "== srun -N1 true: FAILED: $out"
  fail=1
fi
# The first job's epilog may still hold the node for a second or two.
if out=$(timeout 60 runuser -u leftover-smoke -- srun -N1 id 2>&1); then
  echo "== srun id (as leftover-smoke): $out"
  case "$out" in *"uid="*"(leftover-smoke)"*) ;; *) fail=1 ;; esac
else
  echo "== srun id (as leftover-smoke): FAILED: $out"
  fail=1
fi
[ "$fail" -eq 0 ] || logs
echo "== smoke $LEFTOVER_RELEASE: $([ "$fail" -eq 0 ] && echo passed || echo FAILED) in $((SECONDS - t0)) s"
exit "$fail"
