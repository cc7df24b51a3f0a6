#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The randomized soak (tests/soak/soak.py) in each configuration, one after the other,
# each holding /tmp/leftover-e2e.lock only while its cluster runs:
#   scripts/soak.sh [--minutes M] [--seed N] [--configs "linuxproc cgroup-contain ..."] [--controls] [--load K]
# M defaults to 1 per configuration, N to a new random seed (printed, the same for every
# configuration); --controls first runs the positive controls, which must report violations;
# --load K runs K busy loops beside each cluster.
# LEFTOVER_PLUGIN names the plugin (default build/release/spank/leftover.so).
# LEFTOVER_SOAK_NO_LOCK=1: the caller holds the lock already.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
minutes=1
seed=$(( (RANDOM << 15 | RANDOM) % 1000000 + 1 ))
configs="linuxproc linuxproc-contain cgroup cgroup-contain"
controls=0
load=0
while [ $# -gt 0 ]; do
  case $1 in
    --minutes) minutes=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --configs) configs=$2; shift 2 ;;
    --controls) controls=1; shift ;;
    --load) load=$2; shift 2 ;;
    *) echo "soak.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
export LEFTOVER_PLUGIN=${LEFTOVER_PLUGIN:-$top/build/release/spank/leftover.so}
locked() {
  if [ "${LEFTOVER_SOAK_NO_LOCK:-0}" = 1 ]; then "$@"; else flock /tmp/leftover-e2e.lock "$@"; fi
}
results=()
failed=0
if [ "$controls" = 1 ]; then
  for control in wrong-kill stray-left; do
    rc=0
    locked /usr/bin/python3 "$top/tests/soak/soak.py" --seed "$seed" --minutes 0.5 --no-faults \
      --config linuxproc-contain --control "$control" || rc=$?
    [ "$rc" -eq 0 ] || failed=1
    results+=("soak control $control: $([ "$rc" -eq 0 ] && echo caught || echo MISSED)")
  done
fi
for config in $configs; do
  rc=0
  locked /usr/bin/python3 "$top/tests/soak/soak.py" --seed "$seed" --minutes "$minutes" --config "$config" --load "$load" \
    2>&1 | tee "/tmp/leftover-soak-$config.log" || rc=$?
  [ "$rc" -eq 0 ] || failed=1
  results+=("$(grep -m1 '^soak violations' "/tmp/leftover-soak-$config.log" | sed "s/^soak/soak $config/" \
               || echo "soak $config: no summary (exit $rc)")")
done
printf '%s\n' "${results[@]}"
[ "$failed" -eq 0 ] || { echo "soak: FAILED (seed $seed)"; exit 1; }
echo "soak: passed (seed $seed, $minutes min per configuration)"
