#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The format check and clang-tidy, with the project's .clang-format and .clang-tidy:
#   scripts/lint.sh <build dir>          both
#   scripts/lint.sh --format             clang-format --dry-run -Werror over every tracked C++ file
#   scripts/lint.sh --tidy <build dir>   clang-tidy over the product's .cpp files (not tests/,
#                                        bench/, demo/) and the product headers they include
# clang-tidy reads <build dir>/compile_commands.json (the build is reconfigured to write
# one if it has none) and runs on $(nproc) files at a time; any finding fails.
# Ends with one line, e.g. "lint: 192 files formatted" / "lint: 57 product files tidy".
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
format=1 tidy=1
case "${1-}" in
  --format) tidy=0; shift ;;
  --tidy) format=0; shift ;;
esac
[ $# -eq $((tidy)) ] || { echo "usage: lint.sh <build dir> | --format | --tidy <build dir>" >&2; exit 2; }
cd "$top"

if [ -e .git ]; then
  mapfile -t sources < <(git ls-files '*.cpp' '*.hpp' '*.h')
else
  mapfile -t sources < <(find . -path ./build -prune -o -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \) -print |
    sed 's|^\./||' | sort)
fi

failed=0
if [ "$format" -eq 1 ]; then
  if out=$(clang-format --dry-run -Werror "${sources[@]}" 2>&1); then
    echo "lint: ${#sources[@]} files formatted"
  else
    grep -E 'error:' <<<"$out" | cut -d: -f1 | sort | uniq -c |
      sed 's/^ *\([0-9]*\) \(.*\)/lint: \2: \1 places not as clang-format has them/'
    echo "lint: format FAILED (fix with: clang-format -i <file>)"
    failed=1
  fi
fi

if [ "$tidy" -eq 1 ]; then
  build=$(cd "$1" && pwd)
  mapfile -t product < <(printf '%s\n' "${sources[@]}" | grep -E '\.cpp$' | grep -v -E '^(tests|bench|demo)/')
  if [ ! -f "$build/compile_commands.json" ]; then
    cmake -S "$top" -B "$build" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
  fi
  # The product's own headers: its folders, as ARCHITECTURE.md's layer table lists them.
  dirs=$(python3 "$top/scripts/check-layers.py" --folders "$top" | paste -sd'|')
  log=$build/clang-tidy.log
  # The compile commands are GCC's: clang ignores the warning options it does not know.
  if printf '%s\n' "${product[@]}" |
    xargs -P "$(nproc)" -n 4 clang-tidy -p "$build" --quiet --warnings-as-errors='*' \
      --header-filter="^$top/($dirs)/" --extra-arg=-Wno-unknown-warning-option >"$log" 2>&1; then
    echo "lint: ${#product[@]} product files tidy"
  else
    grep -E '(warning|error): ' "$log" | sort -u | head -n 40
    echo "lint: clang-tidy FAILED (log: $log)"
    failed=1
  fi
fi
[ "$failed" -eq 0 ]
