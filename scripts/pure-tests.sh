#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The unit tests that need no root, as any user, in seconds: builds the unit_tests_pure
# target only (the parsers, the decision, the config keys, the reports, the step-socket
# protocol, ...; tests/CMakeLists.txt lists its files) and runs it as an ordinary user
# (scripts/unprivileged.sh: as root, as nobody), so a test there that needs root fails
# here. scripts/quick.sh runs it first; the other unit tests need root
# (scripts/unit-tests.sh).
#   scripts/pure-tests.sh [build dir] [doctest options...]   e.g. -tc='decision*'
# The build dir (build/dev by default) is configured as scripts/quick.sh's if it is new.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
case ${1-} in
  "" | -*) build=$top/build/dev ;;
  *) build=$1; shift ;;
esac

if [ ! -f "$build/CMakeCache.txt" ]; then
  LEFTOVER_BUILD_TARGET=unit_tests_pure "$top/scripts/build.sh" "$build" \
    -DLEFTOVER_TESTS=ON -DLEFTOVER_SANITIZE=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
elif grep -q '^LEFTOVER_TESTS:BOOL=OFF$' "$build/CMakeCache.txt"; then
  echo "pure-tests.sh: $build is configured without the unit tests (-DLEFTOVER_TESTS=ON)" >&2
  exit 2
else
  cmake --build "$build" -j "$(nproc)" --target unit_tests_pure
fi
# A test that hangs fails after 5 minutes, as under ctest.
timeout 300 "$top/scripts/unprivileged.sh" "$build/tests/unit_tests_pure" --no-version "$@"
