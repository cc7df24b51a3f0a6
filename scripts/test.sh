#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The whole test suite, as root on a fresh Debian 12 machine:
# installs what is missing, runs the unit tests under ASan+UBSan, then the
# end-to-end tests against a real, throwaway Slurm cluster.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

if [ "$(id -u)" -ne 0 ]; then
  echo "test.sh: run as root (the tests start Slurm daemons and create test accounts)" >&2
  exit 1
fi

scripts/install-deps.sh

echo "== unit tests (AddressSanitizer + UndefinedBehaviorSanitizer)"
scripts/build.sh build/asan -DLEFTOVER_SANITIZE=ON
scripts/unit-tests.sh build/asan

echo "== packages (.deb and RPM)"
scripts/package.sh

echo "== end-to-end tests on a real Slurm"
scripts/build.sh build/release -DLEFTOVER_TESTS=OFF
LEFTOVER_PLUGIN="$top/build/release/spank/leftover.so" \
LEFTOVER_CLI="$top/build/release/cli/leftover" \
LEFTOVER_PACKAGES="$top/build/packages" \
  /usr/bin/python3 -m pytest -p no:cacheprovider -q "$top/tests/e2e" "$@"
