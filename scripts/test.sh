#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The whole test suite, as root on a fresh Debian 12 machine: installs what is missing;
# checks the format, the layers (ARCHITECTURE.md) and runs clang-tidy (scripts/lint.sh); on
# this machine's Slurm (22.05)
# builds once for the end-to-end tests and the packages (.deb from that build, RPM by
# rpmbuild; their binaries' hardening checked), runs the unit tests and the fuzz corpus
# under ASan+UBSan, the end-to-end tests against a real, throwaway Slurm cluster and the
# randomized soak (tests/soak/); then
# the same for Slurm 24.11 and 26.05 in Debian trixie and sid roots, each in namespaces of
# its own (scripts/test-release.sh), and the soak in one configuration there. Long
# fuzzing is scripts/fuzz.sh, not run here.
# Ends with the time of each stage and one line per release.
#
# Compiling overlaps the end-to-end tests, which mostly wait on Slurm: while the host's
# e2e tests run, the releases' builds, the ASan build and clang-tidy run one after
# another in the background (logs in build/suite/); every test that starts processes of
# the test accounts (unit tests, e2e) holds /tmp/leftover-e2e.lock, so none overlap.
# LEFTOVER_OVERLAP=0 runs everything one after another.
# LEFTOVER_RELEASES="trixie sid" (the default) chooses the other releases; "" skips them.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

# shellcheck source=scripts/lib.sh
. "$top/scripts/lib.sh"
require_root "the tests start Slurm daemons and create test accounts"

read -r -a releases <<<"${LEFTOVER_RELEASES-trixie sid}"
overlap=${LEFTOVER_OVERLAP:-1}
logs=$top/build/suite
rm -rf "$logs"
mkdir -p "$logs"
start=$SECONDS
summary=()
failed=0

# stage <name> <command...>: runs it with its output to the terminal, records its time
# and outcome in $logs/<name>.rc and $logs/times; returns its exit code.
stage() {
  local name=$1 begin=$SECONDS rc=0
  shift
  echo "== stage $name"
  "$@" || rc=$?
  printf '%s\t%d\t%d\t%d\n' "$name" "$((begin - start))" "$((SECONDS - begin))" "$rc" >>"$logs/times"
  echo "$rc" >"$logs/$name.rc"
  return "$rc"
}
# The same with the output to $logs/<name>.log (stages that run in the background).
quiet_stage() {
  local name=$1
  shift
  stage "$name" "$@" >"$logs/$name.log" 2>&1
}
# The exit code of a background stage, once it has finished.
result() {
  local name=$1
  while [ ! -f "$logs/$name.rc" ]; do
    if ! kill -0 "$background" 2>/dev/null; then
      [ -f "$logs/$name.rc" ] || { echo 1; return; }
    fi
    sleep 2
  done
  cat "$logs/$name.rc"
}

stage deps scripts/install-deps.sh || exit 1
host="Slurm $(slurmd -V | awk '{print $NF}') (host)"

# The releases' roots (debootstrap on a fresh machine: mostly network) while the host compiles.
roots() {
  for suite in "${releases[@]}"; do scripts/release-root.sh "$suite" >/dev/null 2>&1 || true; done
}
[ "${#releases[@]}" -eq 0 ] || roots &

stage format scripts/lint.sh --format || failed=1
stage layers /usr/bin/python3 scripts/check-layers.py || failed=1

# One build for the e2e tests and the packages (prefix /usr), and the benchmark program
# too, so that a change that breaks it fails here (bench/run runs it).
stage "host build" scripts/build.sh build/release -DLEFTOVER_TESTS=OFF -DLEFTOVER_BENCH=ON \
  -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_EXPORT_COMPILE_COMMANDS=ON || failed=1
stage "host packages" scripts/package.sh build/release || failed=1

# What compiles and touches no test account: in the background beside the e2e tests.
compiles() {
  local suite rc
  for suite in "${releases[@]}"; do
    rc=0
    quiet_stage "$suite build" scripts/test-release.sh "$suite" --build-only || rc=$?
  done
  quiet_stage "asan build" scripts/build.sh build/asan -DLEFTOVER_SANITIZE=ON || true
  quiet_stage "clang-tidy" scripts/lint.sh --tidy build/release || true
}
if [ "$overlap" = 1 ]; then
  set -m  # its own process group, so that an interrupted run ends it too
  compiles &
  background=$!
  set +m
  # The compiles yield the CPU to the e2e tests, whose waits for Slurm's log lines are bounded.
  renice -n 19 -p "$background" >/dev/null || true
  trap 'kill -- -"$background" 2>/dev/null || true' EXIT
else
  compiles
  background=$$
fi

e2e_rc=0
LEFTOVER_PLUGIN="$top/build/release/spank/leftover.so" \
LEFTOVER_CLI="$top/build/release/cli/leftover" \
LEFTOVER_PACKAGES="$top/build/packages" \
  stage "host e2e" flock /tmp/leftover-e2e.lock /usr/bin/python3 -m pytest -p no:cacheprovider -q "$top/tests/e2e" "$@" \
  2>&1 | tee build/e2e-host.log || e2e_rc=$?
[ "$e2e_rc" -eq 0 ] || failed=1

# The randomized soak with its oracle: four configurations of the three-node cluster, and
# the positive controls that the oracle must catch (soak.sh takes the e2e lock itself).
soak_rc=0
LEFTOVER_PLUGIN="$top/build/release/spank/leftover.so" \
  stage "host soak" scripts/soak.sh --minutes "${LEFTOVER_SOAK_MINUTES:-0.5}" --seed "${LEFTOVER_SOAK_SEED:-2026}" --controls \
  2>&1 | tee build/soak-host.log || soak_rc=$?
[ "$soak_rc" -eq 0 ] || failed=1

# The soak in a release's root: one configuration, linuxproc with PrologFlags=contain (the
# roots cannot run proctrack/cgroup, which needs cgroup v1), as a block of accounts of its
# own (soak.sh --uid-base), which no other test's sweep reaches: it needs no e2e lock.
declare -A soak_uid_base=([trixie]=46800 [sid]=46900)
release_soak() {
  local suite=$1
  LEFTOVER_PLUGIN="$top/build/$suite/spank/leftover.so" LEFTOVER_SOAK_OUT="$top/build/$suite/soak" \
    scripts/in-release.sh "$suite" scripts/soak.sh --minutes "${LEFTOVER_SOAK_MINUTES:-0.5}" \
    --seed "${LEFTOVER_SOAK_SEED:-2026}" --configs linuxproc-contain --uid-base "${soak_uid_base[$suite]:-46700}"
}

for suite in "${releases[@]}"; do
  rc=$(result "$suite build")
  build_rc=$rc
  cp "$logs/$suite build.log" "build/test-$suite.log" 2>/dev/null || : >"build/test-$suite.log"
  soak=""
  if [ "$rc" -eq 0 ]; then
    stage "$suite tests" scripts/test-release.sh "$suite" --tests-only "$@" 2>&1 | tee -a "build/test-$suite.log" || rc=$?
  fi
  if [ "$build_rc" -eq 0 ] && [ "$rc" -ne 77 ]; then
    soak_rc=0
    stage "$suite soak" release_soak "$suite" 2>&1 | tee "build/soak-$suite.log" || soak_rc=$?
    soak="; $(tail -n1 "build/soak-$suite.log")"
    [ "$soak_rc" -eq 0 ] || { failed=1; soak+=" (log: build/soak-$suite.log)"; }
  fi
  case $rc in
    0) summary+=("$(grep '^== Slurm .*: unit tests' "build/test-$suite.log" | tail -n1)$soak") ;;
    77) summary+=("== $suite: SKIPPED: $(grep -h -m1 -e 'cannot make' -e 'skipped' "build/test-$suite.log" || echo 'no root')") ;;
    *) failed=1
       summary+=("$(grep '^== Slurm .*: unit tests' "build/test-$suite.log" | tail -n1 || true)$soak == $suite FAILED (logs: build/test-$suite.log)") ;;
  esac
done

unit="unit tests failed" corpus="fuzz corpus: failed"
if [ "$(result "asan build")" -eq 0 ]; then
  unit=$(stage "host unit tests (asan)" flock /tmp/leftover-e2e.lock scripts/unit-tests.sh build/asan |
    tee >(cat >&2) | tail -n1) || failed=1
  corpus=$(stage "host fuzz corpus (asan)" scripts/fuzz-replay.sh build/asan | tee >(cat >&2) | tail -n1) || failed=1
else
  failed=1
  echo "== the ASan build failed:"
  tail -n 30 "$logs/asan build.log"
fi
lint="lint: clang-tidy: passed"
if [ "$(result clang-tidy)" -ne 0 ]; then
  failed=1
  lint="lint: clang-tidy FAILED (log: build/suite/clang-tidy.log)"
  tail -n 42 "$logs/clang-tidy.log"
fi
[ "$(cat "$logs/format.rc")" -eq 0 ] || lint+="; format FAILED"
[ "$(cat "$logs/layers.rc")" -eq 0 ] || lint+="; layers FAILED"
[ "$(cat "$logs/host packages.rc")" -eq 0 ] || summary+=("== $host: packages FAILED")

summary=("== $host: ${unit:-unit tests failed}; e2e $(tail -n1 build/e2e-host.log | sed -e 's/=//g' -e 's/^ *//')"
         "== $host: ${corpus:-fuzz corpus: failed}" "== $host: $(tail -n1 build/soak-host.log)"
         "== $lint" "${summary[@]}")

echo
echo "== stages (start, duration in s; * ran in the background)"
while IFS=$'\t' read -r name begin took rc; do
  mark=" "
  case "$overlap $name" in "1 host build") ;; "1 "*" build" | "1 clang-tidy") mark="*" ;; esac
  printf '  %-28s %5d %5d%s%s\n' "$name" "$begin" "$took" "$mark" "$(case $rc in 0) ;; 77) echo "  skipped" ;; *) echo "  FAILED (exit $rc)" ;; esac)"
done < <(sort -t$'\t' -k2,2n "$logs/times")
echo "== total $((SECONDS - start)) s"
echo
echo "== summary"
printf '%s\n' "${summary[@]}"
[ "$failed" -eq 0 ] || { echo "== FAILED"; exit 1; }
echo "== all passed"
