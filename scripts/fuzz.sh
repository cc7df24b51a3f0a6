#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds the libFuzzer targets (tests/fuzz/<name>_fuzz.cpp) with clang++ under
# ASan+UBSan into build/fuzz and runs each for LEFTOVER_FUZZ_SECONDS (default 20) from a
# throwaway copy of its seed corpus (tests/fuzz/corpus/<name>/; what the fuzzer adds is
# never written back). A crash, leak, timeout, out-of-memory or sanitizer report fails
# it; the input is kept in build/fuzz/artifacts/. Ends with one line:
#   fuzz: 7 targets, 0 crashes: 7 passed, 0 failed
#   scripts/fuzz.sh [cmake options...]
# Long fuzzing, run on its own (LEFTOVER_FUZZ_SECONDS=600 scripts/fuzz.sh): the test
# command only replays the corpus (scripts/fuzz-replay.sh), finding nothing new.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$top/scripts/lib.sh"
build=${LEFTOVER_FUZZ_BUILD:-$top/build/fuzz}
seconds=${LEFTOVER_FUZZ_SECONDS:-20}

if ! cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DLEFTOVER_FUZZ=ON -DLEFTOVER_TESTS=OFF "$@" >/dev/null ||
  ! cmake --build "$build" -j "$(nproc)" --target fuzz_targets; then
  echo "fuzz: the targets did not build: 0 passed, 1 failed"
  exit 1
fi

work=$(mktemp -d /tmp/leftover-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
artifacts=$build/artifacts
mkdir -p "$artifacts"

export_sanitizer_options
targets=0 passed=0 failed=0 crashes=0
for source in "$top"/tests/fuzz/*_fuzz.cpp; do
  name=$(basename "$source" _fuzz.cpp)
  targets=$((targets + 1))
  seeds=$top/tests/fuzz/corpus/$name
  log=$build/fuzz-$name.log
  if ! compgen -G "$seeds/*" >/dev/null; then
    echo "fuzz: $name: FAILED: no seed corpus in ${seeds#"$top"/}"
    failed=$((failed + 1))
    continue
  fi
  mkdir "$work/$name"
  cp "$seeds"/* "$work/$name/"
  rc=0
  "$build/tests/fuzz/fuzz_$name" "$work/$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=4096 -print_final_stats=1 -artifact_prefix="$artifacts/$name-" >"$log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  entries=$(find "$work/$name" -type f | wc -l)
  if [ "$rc" -ne 0 ] || grep -q -E "$fuzz_failure_pattern|ERROR: libFuzzer|fuzz check failed" "$log"; then
    failed=$((failed + 1)) crashes=$((crashes + 1))
    echo "fuzz: $name: FAILED (exit $rc) after ${runs:-?} runs; log $log:"
    grep -E -A12 'ERROR|runtime error|fuzz check failed|Test unit written' "$log" | head -n 40 | sed 's/^/  /'
  else
    passed=$((passed + 1))
    echo "fuzz: $name: ${runs:-?} runs in ${seconds} s, ${rate:-?} exec/s, corpus $(find "$seeds" -type f | wc -l) seeds -> $entries entries"
  fi
done
orphans=$(fuzz_corpora_without_target "fuzz")
targets=$((targets + orphans)) failed=$((failed + orphans))
echo "fuzz: $targets targets, $crashes crashes: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
