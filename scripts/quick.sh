#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The developer's loop, as root, in a few minutes: first the unit tests that need no root,
# as nobody (scripts/pure-tests.sh: their target alone, built and run in seconds), then
# builds build/dev once (unit tests on, no sanitizers, ccache when installed), runs every
# unit test (scripts/unit-tests.sh),
# replays the fuzz corpus (scripts/fuzz-replay.sh) and a handful of end-to-end tests that
# prove the most (a stray reaped, a user with a live job spared, doubt kills nothing,
# dry run, the command's check and sweep, the cleanup) on a throwaway Slurm. The tests
# hold /tmp/leftover-e2e.lock like every e2e run. Prints each stage's time.
#   scripts/quick.sh [pytest args...]        e.g. -x
# The whole suite stays scripts/test.sh. LEFTOVER_QUICK_BUILD moves build/dev.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
# shellcheck source=scripts/lib.sh
. "$top/scripts/lib.sh"
require_root "the tests start Slurm daemons and use test accounts"
build=${LEFTOVER_QUICK_BUILD:-build/dev}
case $build in /*) ;; *) build=$top/$build ;; esac

# The smoke subset: a renamed or removed test makes pytest fail with "not found" here.
smoke=(
  tests/e2e/test_harness.py::test_without_plugin_stray_survives_its_job
  tests/e2e/test_plugin_basics.py::test_double_forked_stray_of_a_finished_srun_job_is_reaped
  tests/e2e/test_plugin_basics.py::test_a_user_with_another_running_job_keeps_strays_until_the_last_job_ends
  tests/e2e/test_plugin_basics.py::test_a_config_or_lookup_error_fails_no_job_and_kills_nothing
  tests/e2e/test_plugin_basics.py::test_dry_run_logs_would_kill_and_kills_nothing
  tests/e2e/test_cli.py::test_check_table_for_a_stray_a_protected_user_and_a_user_with_a_running_job
  tests/e2e/test_cli.py::test_sweep_kills_a_stray_and_exits_0
  tests/e2e/test_plugin_cleanup.py::test_what_a_job_leaves_is_gone_after_it_ends_and_the_passwd_target_is_untouched
  tests/e2e/test_plugin_cleanup.py::test_a_lookup_error_removes_nothing
)

start=$SECONDS
times=()
stage() {  # stage <name> <command...>
  local name=$1 begin=$SECONDS rc=0
  shift
  echo "== quick: $name"
  "$@" || rc=$?
  times+=("$(printf '  %-22s %4d s%s' "$name" $((SECONDS - begin)) "$([ "$rc" -eq 0 ] || echo "  FAILED (exit $rc)")")")
  if [ "$rc" -ne 0 ]; then
    printf '%s\n' "== quick: FAILED at $name after $((SECONDS - start)) s" "${times[@]}"
    exit "$rc"
  fi
}

stage "pure tests" scripts/pure-tests.sh "$build"
stage build scripts/build.sh "$build" -DLEFTOVER_TESTS=ON -DLEFTOVER_SANITIZE=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
# The unit tests start processes of the test accounts, which an e2e run's plugin sweeps.
stage "unit tests" flock /tmp/leftover-e2e.lock scripts/unit-tests.sh "$build"
stage "fuzz corpus" scripts/fuzz-replay.sh "$build"
stage "e2e smoke" env LEFTOVER_PLUGIN="$build/spank/leftover.so" LEFTOVER_CLI="$build/cli/leftover" \
  PYTHONDONTWRITEBYTECODE=1 flock /tmp/leftover-e2e.lock \
  /usr/bin/python3 -m pytest -p no:cacheprovider -q "${smoke[@]}" "$@"
printf '%s\n' "== quick: passed in $((SECONDS - start)) s" "${times[@]}"
