#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The whole test suite against another Slurm release:
#   test-release.sh <suite> [pytest args...]              suite: trixie (Slurm 24.11) | sid (Slurm 26.05)
#   test-release.sh <suite> --build-only                  the build and the packages only
#   test-release.sh <suite> --tests-only [pytest args...] the tests of an earlier --build-only
# Makes or reuses the suite's Debian root (release-root.sh), then in throwaway
# namespaces over it (in-release.sh): builds once in build/<suite> (unit tests on, no
# sanitizers, prefix /usr), makes the packages into build/packages-<suite> from that
# build (package.sh: the .deb from it, the RPM by rpmbuild), runs ctest and the fuzz
# corpus replay, and the whole end-to-end suite (tests/e2e) against that root's Slurm.
# Ends with one line naming the release and the counts, e.g.
#   == Slurm 24.11.5 (trixie): unit tests 157 passed; e2e 60 passed
# Exit codes: 0 all passed, 77 skipped (the root cannot be made; the reason is
# printed), anything else a failure. Logs: build/<suite>/ctest.log, build/<suite>/e2e.log.
#
# The tests hold /tmp/leftover-e2e.lock, as every e2e run on this machine must: the host's
# pid namespace sees the processes inside the release's namespace, and a leftover plugin
# of a host run sweeping the same test accounts kills them (the unit tests' processes of
# the test accounts too). The build holds nothing: it may run beside another's e2e tests.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

if [ "${1-}" = "--build" ]; then
  # Inside the release's namespaces: one build, the packages from it.
  suite=$LEFTOVER_RELEASE
  build="build/$suite"
  cd "$top"
  version=$(slurmd -V | awk '{print $NF}')
  release="Slurm $version ($suite)"
  echo "== $release: build in $build"
  scripts/build.sh "$build" -DLEFTOVER_TESTS=ON -DLEFTOVER_SANITIZE=OFF -DCMAKE_INSTALL_PREFIX=/usr
  echo "$version" >"$build/slurm-version"
  echo "== $release: packages into build/packages-$suite"
  rm -f "$build/packages.ok"
  scripts/package.sh "$build" && touch "$build/packages.ok"
  exit 0
fi

if [ "${1-}" = "--unit" ]; then
  # Inside the release's namespaces: the unit tests and the fuzz corpus of that build.
  suite=$LEFTOVER_RELEASE
  build="build/$suite"
  cd "$top"
  scripts/unit-tests.sh "$build" >"$build/ctest.log" 2>&1 || true
  sed -n -e '/tests passed/p' -e '/The following tests FAILED/,$p' -e '/^unit tests: /p' "$build/ctest.log"
  rm -f "$build/fuzz-corpus.ok"
  scripts/fuzz-replay.sh "$build" && touch "$build/fuzz-corpus.ok"
  exit 0
fi

if [ "${1-}" = "--e2e" ]; then
  # Inside the release's namespaces: the end-to-end suite.
  shift
  suite=$LEFTOVER_RELEASE
  build="$top/build/$suite"
  cd "$top"
  LEFTOVER_PLUGIN="$build/spank/leftover.so" \
  LEFTOVER_CLI="$build/cli/leftover" \
  LEFTOVER_PACKAGES="$top/build/packages-$suite" \
  PYTHONDONTWRITEBYTECODE=1 \
    exec python3 -m pytest -p no:cacheprovider -q tests/e2e "$@"
fi

[ $# -ge 1 ] || { echo "usage: test-release.sh trixie|sid [--build-only | --tests-only] [pytest args...]" >&2; exit 2; }
suite=$1
shift
phases="build tests"
case "${1-}" in
  --build-only) phases=build; shift ;;
  --tests-only) phases=tests; shift ;;
esac
# shellcheck source=scripts/lib.sh
. "$top/scripts/lib.sh"
require_root "namespaces, Slurm daemons, test accounts"
rc=0
"$top/scripts/release-root.sh" "$suite" >/dev/null || rc=$?
if [ "$rc" -eq 77 ]; then
  echo "== $suite: skipped: no $suite root (release-root.sh says why above)"
  exit 77
fi
[ "$rc" -eq 0 ] || exit "$rc"

start=$SECONDS
build="$top/build/$suite"
if [[ " $phases " == *" build "* ]]; then
  rm -f "$build/slurm-version" "$build/packages.ok"
  if ! "$top/scripts/in-release.sh" "$suite" "$top/scripts/test-release.sh" --build; then
    echo "== $suite: build FAILED after $((SECONDS - start)) s"
    exit 1
  fi
  echo "== $suite: build and packages in $((SECONDS - start)) s"
  [ "$phases" = build ] && { [ -f "$build/packages.ok" ] || echo "== $suite: packages FAILED"; exit 0; }
fi
if [ ! -f "$build/slurm-version" ]; then
  echo "== $suite: no build in $build: run test-release.sh $suite --build-only first"
  exit 1
fi
release="Slurm $(cat "$build/slurm-version") ($suite)"

tests_start=$SECONDS
echo "== $release: unit tests (waiting for /tmp/leftover-e2e.lock if another run holds it)"
rm -f "$build/e2e.log" "$build/ctest.log"
flock /tmp/leftover-e2e.lock "$top/scripts/in-release.sh" "$suite" "$top/scripts/test-release.sh" --unit || true
# "189 cases defined, 189 run (189 ctest entries)" when every case ran and passed
# (scripts/unit-tests.sh says nothing of the kind otherwise).
unit=$(sed -n -e 's/^unit tests: \([0-9]* cases defined, [0-9]* run .*\)$/\1/p' "$build/ctest.log" 2>/dev/null || true)
grep -q '100% tests passed' "$build/ctest.log" 2>/dev/null || unit=""
echo "== $release: unit tests in $((SECONDS - tests_start)) s"

e2e_start=$SECONDS
echo "== $release: end-to-end tests (waiting for /tmp/leftover-e2e.lock if another run holds it)"
e2e_rc=0
flock /tmp/leftover-e2e.lock "$top/scripts/in-release.sh" "$suite" "$top/scripts/test-release.sh" --e2e "$@" \
  2>&1 | tee "$build/e2e.log" || e2e_rc=$?
# pytest's last line: "58 passed, 2 failed in 301.2s (0:05:01)".
e2e=$(tail -n1 "$build/e2e.log" | sed -e 's/=//g' -e 's/ in [0-9.]*s.*//' -e 's/^ *//')
echo "== $release: end-to-end tests in $((SECONDS - e2e_start)) s"

summary="== $release: unit tests ${unit:-failed}; e2e ${e2e:-failed}"
[ -f "$build/packages.ok" ] || summary+="; packages FAILED"
[ -f "$build/fuzz-corpus.ok" ] || summary+="; fuzz corpus FAILED"
echo "$summary"
echo "== $suite: $((SECONDS - start)) s"
[ -f "$build/packages.ok" ] && [ -f "$build/fuzz-corpus.ok" ] && [ "$e2e_rc" -eq 0 ] && [ -n "$unit" ]
