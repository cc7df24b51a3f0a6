#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs the unit tests of one build under ctest and proves that every test case ran:
#   scripts/unit-tests.sh <build dir>
# The test cases are in two programs (tests/CMakeLists.txt): unit_tests_pure, whose
# entries run as an ordinary user (nobody when ctest runs as root), and unit_tests.
# doctest_discover_tests makes one ctest entry per test case, selected by its name
# (--test-case=<name>). A name doctest cannot select that way (';' splits the entry in
# two, '[' ']' merge entries, '*' '?' are wildcards, '\' escapes), or one both programs
# define (one entry would hide the other), would make entries that run nothing, so the
# names are checked first, and after the run the test cases the programs define are
# compared with the ones the entries ran, as doctest counted them.
set -euo pipefail
build=$(cd "$1" && pwd)
binaries=("$build/tests/unit_tests_pure" "$build/tests/unit_tests")
log=$build/Testing/Temporary/LastTest.log

fail() {
  echo "unit tests: $*" >&2
  exit 1
}
lines() { grep -c . <<<"$1" || true; }

# Every test case name, as doctest_discover_tests reads them, and how many each program
# defines.
names="" defined=0 counts=()
for binary in "${binaries[@]}"; do
  listed=$("$binary" --list-test-cases --no-colors --no-version | grep -v -e '^\[doctest\] ' -e '^=\{20,\}$' || true)
  count=$("$binary" --count --no-colors --no-version | sed -n 's/^\[doctest\] unskipped test cases passing the current filters: \([0-9]*\)$/\1/p')
  [ -n "$count" ] || fail "$binary --count gave no count"
  [ "$count" -eq "$(lines "$listed")" ] || fail "$binary: --count says $count test cases, --list-test-cases lists $(lines "$listed")"
  names+=$listed$'\n'
  defined=$((defined + count))
  counts+=("$count")
done
if bad=$(grep -n -e '[][;*?\\]' <<<"$names"); then
  echo "unit tests: these test case names cannot be selected by ctest (no ; [ ] * ? or backslash in a name):" >&2
  sed 's/^[0-9]*:/  /' <<<"$bad" >&2
  exit 1
fi
if twice=$(grep . <<<"$names" | sort | uniq -d | grep .); then
  echo "unit tests: these test case names are defined twice (each ctest entry needs its own):" >&2
  sed 's/^/  /' <<<"$twice" >&2
  exit 1
fi

rm -f "$log"
status=0
# As root, in a pid namespace of their own: the tests' processes of the test uids are the
# only ones they can see or signal, none of the machine's are, and nothing they leave
# (a zombie, a process a failing test did not reap) outlives the run.
isolate=()
if [ "$(id -u)" -eq 0 ] && unshare --pid --fork --mount-proc true 2>/dev/null; then
  isolate=(unshare --pid --fork --mount-proc)
fi
(cd "$build" && "${isolate[@]}" ctest --output-on-failure -j "$(nproc)") || status=$?
[ -f "$log" ] || fail "ctest wrote no $log"

# One "[doctest] test cases: N | ..." line per entry that ran to its end.
entries=$(grep -c -E '^[0-9]+/[0-9]+ Test: ' "$log" || true)
summaries=$(grep -E '^\[doctest\] test cases: +[0-9]+ \|' "$log" || true)
run=$(sed -E 's/^\[doctest\] test cases: +([0-9]+) .*/\1/' <<<"$summaries" | awk '{ n += $1 } END { print n + 0 }')
empty=$(grep -c -E '^\[doctest\] test cases: +0 \|' <<<"$summaries" || true)
echo "unit tests: $defined cases defined, $run run ($entries ctest entries; ${counts[0]} pure, run unprivileged)"

[ "$status" -eq 0 ] || fail "ctest failed (exit $status)"
[ "$empty" -eq 0 ] || fail "$empty ctest entries ran no test case"
[ "$(lines "$summaries")" -eq "$entries" ] || fail "$entries ctest entries, but $(lines "$summaries") doctest summaries in $log"
[ "$run" -eq "$defined" ] || fail "$defined test cases defined, but $run run"
