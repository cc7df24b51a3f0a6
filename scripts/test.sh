#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The whole test suite, as root on a fresh Debian 12 machine: installs what is missing;
# checks the format, the layers (ARCHITECTURE.md) and runs clang-tidy (scripts/lint.sh); on
# this machine's Slurm (22.05)
# builds once for the end-to-end tests and the packages (.deb from that build, RPM by
# rpmbuild; their binaries' hardening checked), runs the unit tests and the fuzz corpus
# under ASan+UBSan, the end-to-end tests against a real, throwaway Slurm cluster and the
# randomized soak (tests/soak/) and its mutants; then
# the same for Slurm 24.11 and 26.05 in Debian trixie and sid roots, each in namespaces of
# its own (scripts/test-release.sh), and the soak in two configurations there. Long
# fuzzing is scripts/fuzz.sh, not run here.
# Ends with the time of each stage (* ran in the background) and one line per release.
#
# The compiles are the critical path on two cores: a cold run compiles the project eight
# times (the host's build, its RPM, each release's build and RPM, the ASan build, and
# clang-tidy reads it all). So they start at once, beside the host's build, in two
# background chains that yield the CPU to the foreground: the releases' builds (trixie,
# then sid) at nice 19, and at SCHED_IDLE, in the gaps the others leave, the ASan build,
# the host's packages (from the host's build) and clang-tidy, which the shortest tests or
# none wait for. The foreground runs each test stage as soon as its build is there: the
# host's e2e tests, each release's tests, the ASan unit tests and fuzz corpus, the host's
# package tests (tests/e2e/test_packages.py, held back from the host's e2e run until the
# RPM exists). Every test that starts processes of the shared test accounts (unit tests,
# e2e) holds /tmp/leftover-e2e.lock, so none overlap. The soaks run in blocks of accounts
# of their own (soak.sh --uid-base: host 46600, trixie 46800, sid 46900), which no other
# test's sweep reaches and whose sweeps reach nothing else, in the background: the host's
# after the host's e2e tests (which share its pid namespace and cgroup hierarchy), a
# release's beside that release's tests. Logs of the background stages: build/suite/.
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
# The free disk (MB) where the builds, the roots and the clusters' files go. A CI run
# ran out of it mid-suite once: each stage's end records it, and the run begins by saying it.
free_mb() { df -BM --output=avail "$top/build" 2>/dev/null | awk 'NR == 2 { print $1 + 0 }'; }
disk_needed_mb=5000
free_at_start=$(free_mb)
echo "== disk: ${free_at_start:-unknown} MB free in $top/build at the start; the suite, with the packages it installs, needs about 5 GB"
[ -z "$free_at_start" ] || [ "$free_at_start" -ge "$disk_needed_mb" ] ||
  echo "== disk: WARNING: less than $disk_needed_mb MB free: stages may fail with 'No space left on device'"
failed=0
in_background=0  # 1 in the background jobs: marks their stages in the time list

# stage <name> <command...>: runs it with its output to the terminal, records its time
# and outcome in $logs/<name>.rc and $logs/times; returns its exit code.
stage() {
  local name=$1 begin=$SECONDS rc=0
  shift
  echo "== stage $name"
  "$@" || rc=$?
  printf '%s\t%d\t%d\t%d\t%s\t%s\n' "$name" "$((begin - start))" "$((SECONDS - begin))" "$rc" "$in_background" \
    "$(free_mb)" >>"$logs/times"
  echo "$rc" >"$logs/$name.rc"
  return "$rc"
}
# The same with the output to $logs/<name>.log (stages that run in the background).
quiet_stage() {
  local name=$1
  shift
  stage "$name" "$@" >"$logs/$name.log" 2>&1
}
# background <command...>: runs it as a job of its own (its own process group, ended with
# the run; its pid in $last_job), or at once with LEFTOVER_OVERLAP=0 ($last_job is $$).
jobs_started=()
last_job=$$
background() {
  if [ "$overlap" = 1 ]; then
    set -m
    # shellcheck disable=SC2030  # the flag is for the job only
    (in_background=1 && "$@") &
    last_job=$!
    jobs_started+=("$last_job")
    set +m
  else
    "$@" || true
  fi
}
# An interrupted run ends them: SIGINT first, which a soak answers by stopping its cluster.
end_jobs() {
  local job alive=0
  for job in "${jobs_started[@]}"; do kill -INT -- -"$job" 2>/dev/null && alive=1; done
  [ "$alive" = 0 ] && return
  sleep 1
  for job in "${jobs_started[@]}"; do kill -TERM -- -"$job" 2>/dev/null || true; done
}
trap end_jobs EXIT
stage deps scripts/install-deps.sh || exit 1
host="Slurm $(slurmd -V | awk '{print $NF}') (host)"

# The releases' roots (debootstrap on a fresh machine: mostly network) while the host compiles.
roots() {
  for suite in "${releases[@]}"; do scripts/release-root.sh "$suite" >/dev/null 2>&1 || true; done
}
[ "${#releases[@]}" -eq 0 ] || roots &

stage format scripts/lint.sh --format || failed=1
stage layers /usr/bin/python3 scripts/check-layers.py || failed=1
stage prefix scripts/check-prefix.sh || failed=1
stage mutants scripts/soak-mutants.sh --check || failed=1

# One build for the e2e tests and the packages (prefix /usr), and the benchmark program
# too, so that a change that breaks it fails here (bench/run runs it).
host_build() {
  stage "host build" scripts/build.sh build/release -DLEFTOVER_TESTS=OFF -DLEFTOVER_BENCH=ON \
    -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_EXPORT_COMPILE_COMMANDS=ON || failed=1
}
[ "$overlap" = 1 ] || host_build

# What compiles and touches no test account, in two chains that yield the CPU to the
# tests and the host's build (the tests' waits for Slurm's log lines are bounded): the
# releases' builds, which the longest tests wait for, at nice 19; the ASan build, the
# host's packages (.deb from the host's build, the RPM by rpmbuild with the distribution's
# flags, their hardening checked) and clang-tidy, which the shortest tests or none wait
# for, at SCHED_IDLE, in the gaps the others leave (links, configures and packaging run
# on one core).
releases_chain() {
  # shellcheck disable=SC2031
  [ "$in_background" = 0 ] || renice -n 19 -p "$BASHPID" >/dev/null || true
  for suite in "${releases[@]}"; do
    quiet_stage "$suite build" scripts/test-release.sh "$suite" --build-only || true
  done
}
host_chain() {
  # shellcheck disable=SC2031
  [ "$in_background" = 0 ] || chrt --idle -p 0 "$BASHPID" >/dev/null || renice -n 19 -p "$BASHPID" >/dev/null || true
  quiet_stage "asan build" scripts/build.sh build/asan -DLEFTOVER_SANITIZE=ON || true
  while [ ! -f "$logs/host build.rc" ]; do sleep 2; done
  quiet_stage "host packages" scripts/package.sh build/release || true
  quiet_stage "clang-tidy" scripts/lint.sh --tidy build/release || true
}
declare -A job_of=()  # a background stage: the job that runs it
background releases_chain
for suite in "${releases[@]}"; do job_of["$suite build"]=$last_job; done
background host_chain
for name in "asan build" "host packages" clang-tidy; do job_of[$name]=$last_job; done
# Whether a background stage has ended (or its job died without saying how).
ended() { [ -f "$logs/$1.rc" ] || ! kill -0 "${job_of[$1]}" 2>/dev/null; }
[ "$overlap" = 0 ] || host_build

soaks=()
# The soaks' seeds: the host's is fixed (2026: a change shows against a known run), the
# releases' changes from run to run (printed here and in each soak's lines, with the
# command that replays a failure).
changing_seed=${LEFTOVER_SOAK_CHANGING_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000 + 1 ))}
echo "== soak seeds: host ${LEFTOVER_SOAK_SEED:-2026}, releases $changing_seed"
# The randomized soak with its oracle: the positive controls that the oracle must catch,
# then four configurations of the three-node cluster, in a block of accounts of its own
# (no e2e lock), beside the stages that follow; then the mutants (tests/soak/mutants/:
# each a plugin with one wrong behaviour, which the soak must report), in the
# configuration without contain, where the slurmctld guards run. Its output:
# build/soak-host.log and build/mutants-host.log.
host_soak() {
  LEFTOVER_PLUGIN="$top/build/release/spank/leftover.so" \
    quiet_stage "host soak" scripts/soak.sh --minutes "${LEFTOVER_SOAK_MINUTES:-0.5}" \
    --seed "${LEFTOVER_SOAK_SEED:-2026}" --controls --uid-base 46600 || true
  cp "$logs/host soak.log" build/soak-host.log
  quiet_stage "host mutants" scripts/soak-mutants.sh --configs linuxproc --minutes 0.5 --tries 3 \
    --seed "${LEFTOVER_SOAK_SEED:-2026}" --uid-base 46500 || true
  cp "$logs/host mutants.log" build/mutants-host.log
}
# The soak in a release's root (the roots cannot run proctrack/cgroup, which needs cgroup
# v1), with its witness (in-release.sh with the host's pids), in a block of its own:
# linuxproc with PrologFlags=contain beside the release's tests, and linuxproc without
# contain (the slurmctld guards) under load, two busy loops, after them.
declare -A soak_uid_base=([trixie]=46800 [sid]=46900)
release_soak() {
  local suite=$1 name=$2 config=$3
  LEFTOVER_RELEASE_HOST_PIDS=1 LEFTOVER_PLUGIN="$top/build/$suite/spank/leftover.so" \
    LEFTOVER_SOAK_OUT="$top/build/$suite/soak" \
    quiet_stage "$name" scripts/in-release.sh "$suite" scripts/soak.sh --minutes "${LEFTOVER_SOAK_MINUTES:-0.5}" \
    --seed "$changing_seed" --configs "$config" --uid-base "${soak_uid_base[$suite]:-46700}" || true
  cp "$logs/$name.log" "build/${name// /-}.log"
}
start_soak() {
  local name=$1 log=$2
  shift 2
  background "$@"
  job_of[$name]=$last_job
  soaks+=("$name:$log")
}

host_e2e() {
  local rc=0
  LEFTOVER_PLUGIN="$top/build/release/spank/leftover.so" \
  LEFTOVER_CLI="$top/build/release/cli/leftover" \
    stage "host e2e" flock /tmp/leftover-e2e.lock /usr/bin/python3 -m pytest -p no:cacheprovider -q "$top/tests/e2e" \
    --ignore="$top/tests/e2e/test_packages.py" "$@" 2>&1 | tee build/e2e-host.log || rc=$?
  [ "$rc" -eq 0 ] || failed=1
  start_soak "host soak" build/soak-host.log host_soak
  job_of["host mutants"]=$last_job
  soaks+=("host mutants:build/mutants-host.log")
}

declare -A release_line=()
release_tests() {
  local suite=$1 rc build_rc
  shift
  rc=$(cat "$logs/$suite build.rc" 2>/dev/null || echo 1)
  build_rc=$rc
  cp "$logs/$suite build.log" "build/test-$suite.log" 2>/dev/null || : >"build/test-$suite.log"
  # The host soak's cgroup clusters name their nodes lo-n1..3 as the roots' test clusters
  # do, so both would share /sys/fs/cgroup/*/slurm_lo-n1: the release waits for it.
  if [ -n "${job_of[host soak]:-}" ]; then while ! ended "host soak"; do sleep 2; done; fi
  # The soak beside the release's own tests (each in namespaces of its own over the root),
  # or after them with LEFTOVER_OVERLAP=0.
  [ "$rc" -ne 0 ] || [ "$overlap" = 0 ] ||
    start_soak "$suite soak" "build/$suite-soak.log" release_soak "$suite" "$suite soak" linuxproc-contain
  if [ "$rc" -eq 0 ]; then
    stage "$suite tests" scripts/test-release.sh "$suite" --tests-only "$@" 2>&1 | tee -a "build/test-$suite.log" || rc=$?
  fi
  if [ "$build_rc" -eq 0 ] && [ "$rc" -ne 77 ] && [ "$overlap" = 0 ]; then
    start_soak "$suite soak" "build/$suite-soak.log" release_soak "$suite" "$suite soak" linuxproc-contain
  fi
  # Under load: in the foreground, beside no other test of this run's.
  if [ "$build_rc" -eq 0 ] && [ "$rc" -ne 77 ]; then
    release_soak "$suite" "$suite soak under load" linuxproc@2
    soaks+=("$suite soak under load:build/$suite-soak-under-load.log")
  fi
  case $rc in
    0) release_line[$suite]=$(grep '^== Slurm .*: unit tests' "build/test-$suite.log" | tail -n1) ;;
    77) release_line[$suite]="== $suite: SKIPPED: $(grep -h -m1 -e 'cannot make' -e 'skipped' "build/test-$suite.log" || echo 'no root')" ;;
    *) failed=1
       release_line[$suite]="$(grep '^== Slurm .*: unit tests' "build/test-$suite.log" | tail -n1 || true) == $suite FAILED (logs: build/test-$suite.log)" ;;
  esac
}

unit="unit tests failed" corpus="fuzz corpus: failed"
asan_tests() {
  if [ "$(cat "$logs/asan build.rc" 2>/dev/null || echo 1)" -eq 0 ]; then
    unit=$(stage "host unit tests (asan)" flock /tmp/leftover-e2e.lock scripts/unit-tests.sh build/asan |
      tee >(cat >&2) | tail -n1) || failed=1
    corpus=$(stage "host fuzz corpus (asan)" scripts/fuzz-replay.sh build/asan | tee >(cat >&2) | tail -n1) || failed=1
  else
    failed=1
    echo "== the ASan build failed:"
    tail -n 30 "$logs/asan build.log"
  fi
}

# The packages' tests, once the RPM exists: their contents, the plugin from the .deb on a
# test cluster. (Exit 5: pytest arguments given to this script selected none of them.)
packages="packages FAILED (log: build/suite/host packages.log)"
packages_tests() {
  local rc=0
  if [ "$(cat "$logs/host packages.rc" 2>/dev/null || echo 1)" -ne 0 ]; then
    failed=1
    tail -n 30 "$logs/host packages.log"
    return
  fi
  LEFTOVER_PLUGIN="$top/build/release/spank/leftover.so" \
  LEFTOVER_CLI="$top/build/release/cli/leftover" \
  LEFTOVER_PACKAGES="$top/build/packages" \
    stage "host packages e2e" flock /tmp/leftover-e2e.lock /usr/bin/python3 -m pytest -p no:cacheprovider -q \
    "$top/tests/e2e/test_packages.py" "$@" 2>&1 | tee build/e2e-host-packages.log || rc=$?
  packages="packages: $(tail -n1 build/e2e-host-packages.log | sed -e 's/=//g' -e 's/^ *//')"
  case $rc in 0 | 5) ;; *) failed=1; packages+=" FAILED" ;; esac
}

# The test stages, one at a time (they share the e2e lock), each as soon as its build has
# ended, the first ready one in this order.
pending=("host e2e")
for suite in "${releases[@]}"; do pending+=("$suite build"); done
pending+=("asan build" "host packages")
while [ "${#pending[@]}" -gt 0 ]; do
  next=""
  for name in "${pending[@]}"; do
    if [ "$name" = "host e2e" ] || ended "$name"; then next=$name; break; fi
  done
  [ -n "$next" ] || { sleep 2; continue; }
  left=()
  for name in "${pending[@]}"; do [ "$name" = "$next" ] || left+=("$name"); done
  pending=("${left[@]}")
  case $next in
    "host e2e") host_e2e "$@" ;;
    "asan build") asan_tests ;;
    "host packages") packages_tests "$@" ;;
    *) release_tests "${next% build}" "$@" ;;
  esac
done
for suite in "${releases[@]}"; do summary+=("${release_line[$suite]}"); done

while ! ended clang-tidy; do sleep 2; done
lint="lint: clang-tidy: passed"
if [ "$(cat "$logs/clang-tidy.rc" 2>/dev/null || echo 1)" -ne 0 ]; then
  failed=1
  lint="lint: clang-tidy FAILED (log: build/suite/clang-tidy.log)"
  tail -n 42 "$logs/clang-tidy.log"
fi
[ "$(cat "$logs/format.rc")" -eq 0 ] || lint+="; format FAILED"
[ "$(cat "$logs/layers.rc")" -eq 0 ] || lint+="; layers FAILED"
[ "$(cat "$logs/prefix.rc")" -eq 0 ] || lint+="; prefix FAILED"
[ "$(cat "$logs/mutants.rc")" -eq 0 ] || lint+="; mutant patches FAILED"

# The soaks' outcomes, each once it has ended; a failed one's log ends with its findings.
soak_lines=()
for entry in "${soaks[@]}"; do
  IFS=: read -r name log <<<"$entry"
  while ! ended "$name"; do sleep 2; done
  rc=$(cat "$logs/$name.rc" 2>/dev/null || echo 1)
  line="== $(sed -e 's/ soak$//' -e "s/^host$/$host/" <<<"$name"): $(tail -n1 "$log" 2>/dev/null || echo "soak: no output")"
  if [ "$rc" -ne 0 ]; then
    failed=1
    line+=" (log: $log)"
    echo "== $name FAILED:"
    # Each violation's own line first (the events around it follow it in the log, which
    # a CI page may not show whole), then how the run ended.
    grep -A1 -e '^-- violation of' -e '^soak: an intended shape' -e '^soak: the witness' "$log" | head -n 60 || true
    echo "   ..."
    tail -n 12 "$log"
  fi
  soak_lines+=("$line")
done

summary=("== $host: ${unit:-unit tests failed}; e2e $(tail -n1 build/e2e-host.log | sed -e 's/=//g' -e 's/^ *//')"
         "== $host: $packages" "== $host: ${corpus:-fuzz corpus: failed}"
         "== $lint" "${summary[@]}" "${soak_lines[@]}")

echo
echo "== stages (start, duration in s; * ran in the background; MB free on disk at its end)"
least_free=""
while IFS=$'\t' read -r name begin took rc in free; do
  mark=" "
  [ "$in" = 1 ] && mark="*"
  printf '  %-28s %5d %5d%s %7s%s\n' "$name" "$begin" "$took" "$mark" "$free" "$(case $rc in 0) ;; 77) echo "  skipped" ;; *) echo "  FAILED (exit $rc)" ;; esac)"
  if [ -n "$free" ] && { [ -z "$least_free" ] || [ "$free" -lt "$least_free" ]; }; then least_free=$free; fi
done < <(sort -s -t$'\t' -k2,2n "$logs/times")
echo "== total $((SECONDS - start)) s; least free disk at a stage's end ${least_free:-unknown} MB"
echo
echo "== summary"
printf '%s\n' "${summary[@]}"
[ "$failed" -eq 0 ] || { echo "== FAILED"; exit 1; }
echo "== all passed"
