# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Shell pieces the scripts share; sourced, never run.

# require_root <why>: exits 1 with "<script>: run as root (<why>)" unless uid 0.
require_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "$(basename "$0"): run as root ($1)" >&2
    exit 1
  fi
}

# A sanitizer report ends the run with a stack trace, and leaks count.
export_sanitizer_options() {
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:symbolize=1
  export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
}

# What marks a fuzz target's run as failed beside its exit code: a sanitizer report.
# shellcheck disable=SC2034 # used by the scripts that source this file
fuzz_failure_pattern='runtime error:|ERROR: (Address|Leak|UndefinedBehavior)Sanitizer'

# fuzz_corpora_without_target <label>: names each corpus folder without a target (a
# renamed target must not leave its seeds unreplayed) and prints their count last.
fuzz_corpora_without_target() {
  local seeds name orphans=0
  for seeds in "${top:?}"/tests/fuzz/corpus/*/; do
    name=$(basename "$seeds")
    [ -f "$top/tests/fuzz/${name}_fuzz.cpp" ] && continue
    echo "$1: corpus/$name: FAILED: no target tests/fuzz/${name}_fuzz.cpp" >&2
    orphans=$((orphans + 1))
  done
  echo "$orphans"
}
