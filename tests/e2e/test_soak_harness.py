# SPDX-License-Identifier: GPL-2.0-or-later
"""Self-tests of the soak harness's own hand on processes: what it ends must be exactly
what it means to end, since the oracle excuses those kills as the harness's."""

import os
import subprocess
import tempfile
from pathlib import Path

from harness.e2e_accounts import TEST_USERS
from harness.e2e_processes import is_alive, kill_quietly, wait_gone, wait_until
from soak.records import processes_named
from soak.soak import end_setuid_strays
from soak.soak_cluster import SETUID_PROGRAM
from soak.workload import EventLog

ALICE = next(u.uid for u in TEST_USERS if u.name == "lo_alice")
BOB = next(u.uid for u in TEST_USERS if u.name == "lo_bob")


def start_detached(uid: int, program: Path) -> int:
    """`program 600` as uid, in a session of its own and re-parented away from the test
    (so that a kill leaves no zombie of ours); its pid once it runs under its own name."""
    res = subprocess.run(
        ["setsid", "/bin/sh", "-c", '"$@" </dev/null >/dev/null 2>&1 & echo $!', "sh",
         "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", str(program), "600"],
        capture_output=True, text=True, check=True, timeout=30)
    pid = int(res.stdout.strip())
    wait_until(lambda: Path(f"/proc/{pid}/comm").read_text().strip() == program.name,
               10, f"pid {pid} to run {program.name}")
    return pid


def test_the_drain_ends_the_setuid_strays_of_the_soak_uids_and_nothing_else(test_users):
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        setuid = Path(tmp) / SETUID_PROGRAM
        setuid.symlink_to("/bin/sleep")
        other = Path(tmp) / "soak-body"
        other.symlink_to("/bin/sleep")
        stray = start_detached(ALICE, setuid)
        not_a_soak_uid = start_detached(BOB, setuid)
        not_setuid = start_detached(ALICE, other)
        try:
            assert processes_named(SETUID_PROGRAM, {ALICE}) == [stray]
            assert processes_named("soak-body", {ALICE, BOB}) == [not_setuid]
            assert is_alive(stray)   # it lives without the drain's hand
            planned: list[tuple] = []
            events = EventLog()
            end_setuid_strays({ALICE}, planned, events)
            wait_gone(stray)
            assert [(pid, how) for _, pid, how in planned] == [(stray, "drain")]
            assert [text for _, text in events.events] == \
                [f"drain: the harness ended 1 setuid stray(s), host pids [{stray}]"]
            assert is_alive(not_a_soak_uid) and is_alive(not_setuid)
        finally:
            kill_quietly(stray, not_a_soak_uid, not_setuid)
