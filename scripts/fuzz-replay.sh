#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Replays the fuzz corpus, no new fuzzing: runs each fuzz target of a unit test build
# (tests/fuzz/<name>_fuzz.cpp with replay_main.cpp, under that build's sanitizers) once
# over every input of tests/fuzz/corpus/<name>/. A crash, a broken fuzz check or a
# sanitizer report fails it. Long fuzzing with libFuzzer is scripts/fuzz.sh. Ends with:
#   fuzz corpus: 7 targets, 90 inputs: 7 passed, 0 failed
#   scripts/fuzz-replay.sh <build dir>
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$top/scripts/lib.sh"
[ $# -eq 1 ] || { echo "usage: fuzz-replay.sh <build dir>" >&2; exit 2; }
build=$(cd "$1" && pwd)

export_sanitizer_options
targets=0 inputs=0 passed=0 failed=0
for source in "$top"/tests/fuzz/*_fuzz.cpp; do
  name=$(basename "$source" _fuzz.cpp)
  targets=$((targets + 1))
  seeds=$top/tests/fuzz/corpus/$name
  binary=$build/tests/fuzz/fuzz_$name
  log=$build/tests/fuzz/replay-$name.log
  count=$(find "$seeds" -maxdepth 1 -type f 2>/dev/null | wc -l)
  if [ "$count" -eq 0 ]; then
    echo "fuzz corpus: $name: FAILED: no seed corpus in ${seeds#"$top"/}"
    failed=$((failed + 1))
  elif [ ! -x "$binary" ]; then
    echo "fuzz corpus: $name: FAILED: no $binary (a build with -DLEFTOVER_TESTS=ON, without LEFTOVER_FUZZ)"
    failed=$((failed + 1))
  elif "$binary" "$seeds" >"$log" 2>&1 && ! grep -q -E "$fuzz_failure_pattern" "$log"; then
    passed=$((passed + 1)) inputs=$((inputs + count))
  else
    failed=$((failed + 1))
    echo "fuzz corpus: $name: FAILED; log $log:"
    grep -E -B2 -A12 'ERROR|runtime error|fuzz check failed|replay:' "$log" | head -n 40 | sed 's/^/  /'
  fi
done
orphans=$(fuzz_corpora_without_target "fuzz corpus")
targets=$((targets + orphans)) failed=$((failed + orphans))
echo "fuzz corpus: $targets targets, $inputs inputs: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
