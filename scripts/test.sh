#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The whole test suite, as root on a fresh Debian 12 machine: installs what is missing;
# on this machine's Slurm (22.05) runs the unit tests under ASan+UBSan and the fuzz
# targets (scripts/fuzz.sh), builds the packages and runs the end-to-end tests against a
# real, throwaway Slurm cluster; then does the same for Slurm 24.11 and 26.05 in Debian
# trixie and sid roots, each in namespaces of its own (scripts/test-release.sh). Ends with
# one line per release (and the host's fuzz line).
# LEFTOVER_RELEASES="trixie sid" (the default) chooses the other releases; "" skips them.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

if [ "$(id -u)" -ne 0 ]; then
  echo "test.sh: run as root (the tests start Slurm daemons and create test accounts)" >&2
  exit 1
fi

scripts/install-deps.sh
host="Slurm $(slurmd -V | awk '{print $NF}') (host)"
summary=()
failed=0

echo "== $host: unit tests (AddressSanitizer + UndefinedBehaviorSanitizer)"
scripts/build.sh build/asan -DLEFTOVER_SANITIZE=ON
unit=$(scripts/unit-tests.sh build/asan | tee >(cat >&2) | tail -n1) || failed=1

echo "== $host: fuzz targets (libFuzzer, ASan+UBSan, ${LEFTOVER_FUZZ_SECONDS:-20} s each)"
fuzz=$(scripts/fuzz.sh | tee >(cat >&2) | tail -n1) || failed=1

echo "== $host: packages (.deb and RPM)"
scripts/package.sh || failed=1

echo "== $host: end-to-end tests"
# The benchmark program too, so that a change that breaks it fails here (bench/run runs it).
scripts/build.sh build/release -DLEFTOVER_TESTS=OFF -DLEFTOVER_BENCH=ON
e2e_rc=0
LEFTOVER_PLUGIN="$top/build/release/spank/leftover.so" \
LEFTOVER_CLI="$top/build/release/cli/leftover" \
LEFTOVER_PACKAGES="$top/build/packages" \
  flock /tmp/leftover-e2e.lock /usr/bin/python3 -m pytest -p no:cacheprovider -q "$top/tests/e2e" "$@" \
  2>&1 | tee build/e2e-host.log || e2e_rc=$?
[ "$e2e_rc" -eq 0 ] || failed=1
summary+=("== $host: ${unit:-unit tests failed}; e2e $(tail -n1 build/e2e-host.log | sed -e 's/=//g' -e 's/^ *//')")
summary+=("== $host: ${fuzz:-fuzz: failed}")

for suite in ${LEFTOVER_RELEASES-trixie sid}; do
  rc=0
  scripts/test-release.sh "$suite" "$@" 2>&1 | tee "build/test-$suite.log" || rc=$?
  case $rc in
    0) summary+=("$(grep '^== Slurm .*: unit tests' "build/test-$suite.log" | tail -n1)") ;;
    77) summary+=("== $suite: SKIPPED: $(grep -m1 -e 'cannot make' -e 'skipped' "build/test-$suite.log" || echo 'no root')") ;;
    *) failed=1
       summary+=("$(grep '^== Slurm .*: unit tests' "build/test-$suite.log" | tail -n1 || true) == $suite FAILED") ;;
  esac
done

echo
echo "== summary"
printf '%s\n' "${summary[@]}"
[ "$failed" -eq 0 ] || { echo "== FAILED"; exit 1; }
echo "== all passed"
