#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The randomized soak (tests/soak/, python3 -m soak.soak) in each configuration, one after the other:
#   scripts/soak.sh [--minutes M] [--seed N] [--configs "linuxproc cgroup-contain@2 ..."] [--controls] [--load K]
#                   [--uid-base B] [--parallel P]
# M defaults to 1 per configuration, N to a new random seed (printed, the same for every
# configuration); --controls first runs the positive controls, which must report violations
# (wrong-kill, stray-left, and lie: a fake leftover that logs nothing);
# --load K runs K busy loops beside each cluster; a configuration named <config>@K runs K
# beside its own. --parallel P: the workload's actions at once (the soak's default, 6,
# keeps a 2-core machine at a load of 12-17 on its own over a long run).
# A failed run's last line names the seed and the command that replays it.
# LEFTOVER_PLUGIN names the plugin (default build/release/spank/leftover.so).
# LEFTOVER_SOAK_OUT: where the logs and a failed run's evidence go (default /tmp; a run in a
# release's root, whose /tmp vanishes, names a directory of the tree).
#
# Test accounts. By default the soak runs as the e2e harness's shared test accounts
# (uids 41001-41099, plus 900 and 61000), which every test cluster's plugin sweeps: each
# configuration holds /tmp/leftover-e2e.lock while its cluster runs (LEFTOVER_SOAK_NO_LOCK=1:
# the caller holds it already).
# --uid-base B (or LEFTOVER_SOAK_UID_BASE=B), B a multiple of 100 from 46000 to 59900: the
# soak runs as a block of accounts of its own, uids B..B+99 (lo<B/100>_ann, _bob, .kim,
# Xkim, _prot, _bobby with its alias _alias, _low at B and _high at B+99; created if
# missing), and its leftover.conf sweeps only B+1..B+98, so its plugin signals and removes
# nothing of anyone else's, and no other test's plugin (41001-41099) anything of the soak's.
# The rest stays inside its own cluster: its nodes' pid and mount namespaces, /dev/shm and
# scratch directories, free ports, its own files under /tmp (its SysV objects share the
# host's IPC namespace, where only the block's uids are swept). So it needs no e2e lock and
# runs beside other e2e tests and other soaks, each with its own block; a second run with
# the same block waits for the first (/tmp/leftover-soak-uids-B.lock). Its logs are
# $LEFTOVER_SOAK_OUT/leftover-soak-<config>-uB.log. A long run beside other work, e.g.:
#   scripts/soak.sh --minutes 30 --seed 7 --configs "linuxproc-contain cgroup" --uid-base 46200
# In a release's root (scripts/test.sh does this after the release's tests; the roots have
# no cgroup v1, so linuxproc only):
#   LEFTOVER_PLUGIN=$PWD/build/sid/spank/leftover.so LEFTOVER_SOAK_OUT=$PWD/build/sid/soak \
#     scripts/in-release.sh sid scripts/soak.sh --configs linuxproc-contain --uid-base 46400
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
minutes=1
seed=$(( (RANDOM << 15 | RANDOM) % 1000000 + 1 ))
configs="linuxproc linuxproc-contain cgroup cgroup-contain linuxproc-job_user linuxproc-controller"
controls=0
load=0
parallel=()
uid_base=${LEFTOVER_SOAK_UID_BASE:-}
while [ $# -gt 0 ]; do
  case $1 in
    --minutes) minutes=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --configs) configs=$2; shift 2 ;;
    --controls) controls=1; shift ;;
    --load) load=$2; shift 2 ;;
    --uid-base) uid_base=$2; shift 2 ;;
    --parallel) parallel=(--parallel "$2"); shift 2 ;;
    *) echo "soak.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
export LEFTOVER_PLUGIN=${LEFTOVER_PLUGIN:-$top/build/release/spank/leftover.so}
# The packages soak and harness live in tests/.
export PYTHONPATH="$top/tests${PYTHONPATH:+:$PYTHONPATH}"
out=${LEFTOVER_SOAK_OUT:-/tmp}
mkdir -p "$out"
tag=""
if [ -n "$uid_base" ]; then
  export LEFTOVER_SOAK_UID_BASE=$uid_base
  tag="-u$uid_base"
else
  unset LEFTOVER_SOAK_UID_BASE
fi
locked() {
  if [ -n "$uid_base" ]; then
    flock "/tmp/leftover-soak-uids-$uid_base.lock" "$@"
  elif [ "${LEFTOVER_SOAK_NO_LOCK:-0}" = 1 ]; then
    "$@"
  else
    flock /tmp/leftover-e2e.lock "$@"
  fi
}
results=()
failed=0
caught=0
# The totals over the configurations, from each run's "soak summary:" and "soak violations:" lines.
keys=("job ends" "strays planted" "kills" "removals" "lookup errors" "violations")
declare -A total=()
for key in "${keys[@]}"; do total[$key]=0; done
add_counts() {
  local log=$1 key n
  for key in "${keys[@]}"; do
    if [ "$key" = violations ]; then
      n=$(sed -n 's/^soak violations: .*; total \([0-9]*\)$/\1/p' "$log" | head -n1)
    else
      n=$(grep -m1 '^soak summary' "$log" | grep -o "$key [0-9]*" | head -n1 | awk '{print $NF}')
    fi
    total[$key]=$((total[$key] + ${n:-0}))
  done
}
if [ "$controls" = 1 ]; then
  for control in wrong-kill stray-left lie; do
    rc=0
    locked /usr/bin/python3 -m soak.soak --seed "$seed" --minutes 0.5 --no-faults \
      --config linuxproc-contain --control "$control" || rc=$?
    if [ "$rc" -eq 0 ]; then caught=$((caught + 1)); else failed=1; fi
    results+=("soak control $control: $([ "$rc" -eq 0 ] && echo caught || echo MISSED)")
  done
fi
read -r -a config_list <<<"$configs"
failed_configs=()
for entry in "${config_list[@]}"; do
  rc=0
  config=${entry%@*}
  config_load=$load
  [ "$entry" = "$config" ] || config_load=${entry#*@}
  log="$out/leftover-soak-$config$tag.log"
  locked /usr/bin/python3 -m soak.soak --seed "$seed" --minutes "$minutes" --config "$config" --load "$config_load" \
    "${parallel[@]}" 2>&1 | tee "$log" || rc=$?
  [ "$rc" -eq 0 ] || { failed=1; failed_configs+=("$entry"); }
  add_counts "$log"
  results+=("$(grep -m1 '^soak witness' "$log" | sed "s/^soak/soak $config/" || true)")
  results+=("$(grep -m1 '^soak violations' "$log" | sed "s/^soak/soak $config/" || echo "soak $config: no summary (exit $rc)")")
done
printf '%s\n' "${results[@]}"
counts=""
for key in "${keys[@]}"; do counts+=", $key ${total[$key]}"; done
[ "$controls" = 0 ] || counts+=", controls caught $caught of 3"
if [ "$failed" -ne 0 ]; then
  replay="scripts/soak.sh --seed $seed --minutes $minutes --load $load${uid_base:+ --uid-base $uid_base}${parallel[*]:+ ${parallel[*]}}"
  [ "${#failed_configs[@]}" -eq 0 ] || replay+=" --configs '${failed_configs[*]}'"
  [ "$controls" = 0 ] || [ "$caught" -eq 3 ] || replay+=" --controls"
  echo "soak: FAILED (seed $seed, $minutes min x ${#config_list[@]} configurations$counts; replay: $replay)"
  exit 1
fi
echo "soak: passed (seed $seed, $minutes min x ${#config_list[@]} configurations$counts)"
