# SPDX-License-Identifier: GPL-2.0-or-later
"""Cleanup on a real one-node cluster (PrologFlags=contain): what a job leaves besides
processes — a SysV segment, semaphore and message queue (ipcmk), a /dev/shm file and a
scratch tree — is gone after the job's epilog when cleanup is on, and stays with
cleanup off, for a protected user, for a user with a live job, for a segment still
attached, and after a lookup error. The scratch directory is one of root's the test
makes under the cluster's work dir (never the real /tmp); /dev/shm names carry a
unique tag; every object a test makes is removed at its end whatever happened."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import pytest

from harness.e2e_accounts import USERS
from harness.e2e_processes import wait_until
from harness.plugin_support import (  # noqa: F401 (conf_dir, config, jobs_done_...: fixtures)
    PLUGIN, LogWatch, conf_dir, config, jobs_done_after_each_test, plugin_config, summary_regex,
    write_leftover_conf)

# The fixed test accounts' uids, for the lines and outputs the tests expect.
ALICE_UID = USERS["lo_alice"].uid

CHECK_SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "man/leftover-check.schema.json").read_text())
KINDS = {"shm": "Shared memory id", "sem": "Semaphore id", "msg": "Message queue id"}
IPCRM = {"shm": "-m", "sem": "-s", "msg": "-q"}


@pytest.fixture(scope="module")
def cluster(make_cluster, conf_dir):
    write_leftover_conf(conf_dir, "{}\n")
    return make_cluster(plugin_config(conf_dir, prolog_flags="contain"))


@pytest.fixture
def scratch(cluster):
    """A root-owned, sticky, world-writable directory like /tmp, under the work dir."""
    path = cluster.work_dir / f"scratch-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    path.chmod(0o1777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def cleanup_config(scratch: Path, more: str = "") -> str:
    return f"cleanup: [ipc, posix_shm, files]\ncleanup_dirs: [{scratch}]\n{more}"


def sysv_ids(kind: str) -> set[int]:
    lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]
    return {int(line.split()[1]) for line in lines if line.strip()}


@dataclass
class Leftovers:
    """What one job left: its SysV ids, its /dev/shm file and its scratch tree."""
    ids: dict[str, int]
    shm_file: Path
    tree: Path

    def present(self) -> dict[str, bool]:
        found = {kind: ident in sysv_ids(kind) for kind, ident in self.ids.items()}
        found["shm_file"] = self.shm_file.exists()
        found["tree"] = self.tree.exists()
        return found

    def all_present(self) -> bool:
        return all(self.present().values())

    def none_present(self) -> bool:
        return not any(self.present().values())

    def remove(self) -> None:
        for kind, ident in self.ids.items():
            subprocess.run(["ipcrm", IPCRM[kind], str(ident)], capture_output=True)
        self.shm_file.unlink(missing_ok=True)
        shutil.rmtree(self.tree, ignore_errors=True)


def leave_objects(cluster, user: str, scratch: Path, extra: str = "") -> tuple[Leftovers, int, str]:
    """Runs a job as user that leaves a segment, a semaphore, a queue, a /dev/shm file
    and a tree with a symlink to /etc/passwd in it; returns them, the job id and the
    job's output (for `extra`'s)."""
    tag = uuid.uuid4().hex[:8]
    shm_file = Path(f"/dev/shm/lo-e2e-{tag}")
    tree = scratch / f"tree-{tag}"
    script = (f"ipcmk -M 4096 && ipcmk -S 1 && ipcmk -Q && echo data > {shm_file} && "
              f"mkdir -p {tree}/sub && echo x > {tree}/sub/f && ln -s /etc/passwd {tree}/passwd-link && {extra}true")
    res, job = cluster.srun(user, ["/bin/sh", "-c", script])
    ids = {kind: int(m.group(1)) for kind, label in KINDS.items()
           for m in [re.search(rf"{label}: (\d+)", res.stdout)] if m}
    left = Leftovers(ids, shm_file, tree)
    assert res.returncode == 0 and len(ids) == 3, f"the job failed to leave its objects: {res.stdout} {res.stderr}"
    return left, job, res.stdout


def epilog_summary(log: LogWatch, job: int) -> str:
    """The whole summary line of the job's epilog (with what the cleanup did)."""
    return log.wait_for(summary_regex(job, "epilog") + ".*$").group(0)


def test_what_a_job_leaves_is_gone_after_it_ends_and_the_passwd_target_is_untouched(cluster, config, scratch):
    config(cleanup_config(scratch))
    passwd = os.stat("/etc/passwd")
    log = LogWatch(cluster)
    left, job, _ = leave_objects(cluster, "lo_alice", scratch)
    try:
        epilog_summary(log, job)
        wait_until(left.none_present, 10, f"the job's objects to go: {left.present()}")
        # Usually the epilog's; a step end's when it reaped some other process of lo_alice's
        # (a stray another test on this machine left) and so cleaned up after her first.
        log.wait_for(rf"leftover: (?:step {job}\.\S+|job {job} epilog) \(user lo_alice uid {ALICE_UID}\): .* ms; "
                     r"cleanup: removed [1-9]\d* IPC objects, [1-9]\d* files, ")
        log.wait_for(rf"leftover: cleanup: removed shm id={left.ids['shm']} uid={ALICE_UID} bytes=4096$")
        log.wait_for(rf"leftover: cleanup: removed sem id={left.ids['sem']} uid={ALICE_UID} bytes=0$")
        log.wait_for(rf"leftover: cleanup: removed msg id={left.ids['msg']} uid={ALICE_UID} bytes=0$")
        log.wait_for(rf"leftover: cleanup: removed posix_shm path='{left.shm_file}' uid={ALICE_UID} bytes=5$")
        log.wait_for(rf"leftover: cleanup: removed file path='{left.tree}/passwd-link' uid={ALICE_UID} bytes=0$")
        log.wait_for(rf"leftover: cleanup: removed file path='{left.tree}/sub/f' uid={ALICE_UID} bytes=2$")
        log.wait_for(rf"leftover: cleanup: removed dir path='{left.tree}' uid={ALICE_UID} bytes=0$")
        after = os.stat("/etc/passwd")
        assert (after.st_ino, after.st_size, after.st_mtime_ns) == (passwd.st_ino, passwd.st_size, passwd.st_mtime_ns)
    finally:
        left.remove()


def test_with_cleanup_off_everything_stays(cluster, config, scratch):
    config(f"cleanup: []\ncleanup_dirs: [{scratch}]\n")
    log = LogWatch(cluster)
    left, job, _ = leave_objects(cluster, "lo_alice", scratch)
    try:
        summary = epilog_summary(log, job)
        assert "cleanup" not in summary
        assert left.all_present(), left.present()
        log.assert_absent(r"leftover: cleanup: ")
    finally:
        left.remove()


ATTACH = ("import ctypes, sys, time\n"
          "libc = ctypes.CDLL(None, use_errno=True)\n"
          "libc.shmat.restype = ctypes.c_void_p\n"
          "if libc.shmat(int(sys.argv[1]), None, 0) == ctypes.c_void_p(-1).value: sys.exit(1)\n"
          "print('attached', flush=True)\n"
          "time.sleep(120)\n")


def test_a_segment_still_attached_stays_while_the_rest_goes(cluster, config, scratch):
    config(cleanup_config(scratch))
    log = LogWatch(cluster)
    # The job makes one more segment, which root attaches before the job ends.
    attached_file = cluster.work_dir / f"attached-{uuid.uuid4().hex[:8]}"
    release = cluster.work_dir / f"release-{uuid.uuid4().hex[:8]}"
    extra = (f"ipcmk -M 8192 | sed 's/.*: //' > {attached_file} && "
             f"while [ ! -e {release} ]; do sleep 0.1; done && ")
    holder = None
    result = {}

    def run_job():
        result["value"] = leave_objects(cluster, "lo_alice", scratch, extra)

    import threading
    thread = threading.Thread(target=run_job)
    thread.start()
    try:
        wait_until(lambda: attached_file.exists() and attached_file.read_text().strip(), 30, "the extra segment")
        segment = int(attached_file.read_text())
        holder = subprocess.Popen([sys.executable, "-c", ATTACH, str(segment)], stdout=subprocess.PIPE, text=True)
        assert holder.stdout.readline().strip() == "attached"
        release.touch()
        thread.join(60)
        left, job, _ = result["value"]
        try:
            epilog_summary(log, job)
            wait_until(left.none_present, 10, f"the job's other objects to go: {left.present()}")
            assert segment in sysv_ids("shm"), "an attached segment must stay"
            log.assert_absent(rf"cleanup: \S+ shm id={segment} ")
        finally:
            left.remove()
    finally:
        release.touch()
        thread.join(60)
        if holder:
            holder.kill()
            holder.wait()
        if attached_file.exists() and attached_file.read_text().strip():
            subprocess.run(["ipcrm", "-m", attached_file.read_text().strip()], capture_output=True)


def test_a_protected_user_and_a_user_with_a_live_job_keep_their_objects(cluster, config, scratch):
    config(cleanup_config(scratch, "protected_users: [lo_bob]\n"))
    log = LogWatch(cluster)
    running, release = cluster.sbatch_until_released("lo_alice")
    cluster.wait_job_state(running, ["RUNNING"])
    alices = bobs = None
    try:
        alices, job_a, _ = leave_objects(cluster, "lo_alice", scratch)
        bobs, job_b, _ = leave_objects(cluster, "lo_bob", scratch)
        epilog_summary(log, job_a)
        epilog_summary(log, job_b)
        assert alices.all_present(), f"lo_alice has a live job: {alices.present()}"
        assert bobs.all_present(), f"lo_bob is protected: {bobs.present()}"
        # Control: once lo_alice's last job ends, its epilog cleans up after her.
        release.touch()
        assert cluster.wait_job_done(running).state == "COMPLETED"
        epilog_summary(log, running)
        wait_until(alices.none_present, 10, f"lo_alice's objects to go: {alices.present()}")
        assert bobs.all_present(), bobs.present()
    finally:
        release.touch()
        for left in (alices, bobs):
            if left:
                left.remove()


def test_a_lookup_error_removes_nothing(cluster, config, scratch):
    # A spool dir its group can write is a lookup error (a socket planted there would be
    # believed otherwise): no step socket is believed, nothing is removed. (A slurmstepd
    # that does not answer is no longer one in the job epilog: slurmctld is asked.)
    config(cleanup_config(scratch, "slurm_timeout: 1\n"))
    spool = cluster.spool_dir()
    spool.chmod(0o775)
    left = None
    try:
        log = LogWatch(cluster)
        left, job, _ = leave_objects(cluster, "lo_alice", scratch)
        summary = epilog_summary(log, job)
        assert "lookup errors 1" in summary, summary
        log.wait_for(r"leftover: (warning: )?cleanup: nothing removed: lookup error: slurmd spool directory "
                     r"\S+: writable by its group \(mode 0775\)")
        assert left.all_present(), left.present()
        log.assert_absent(r"leftover: cleanup: removed ")
    finally:
        spool.chmod(0o755)
        if left:
            left.remove()


def test_leftover_check_shows_what_a_sweep_would_remove_and_removes_nothing(cluster, config, conf_dir, scratch):
    # A dry run for the plugin, so the job's epilog leaves both the stray and the objects.
    config(cleanup_config(scratch, "dry_run: true\n"))
    cli = Path(os.environ.get("LEFTOVER_CLI", PLUGIN.parent.parent / "cli" / "leftover"))
    log = LogWatch(cluster)
    stray_file = cluster.work_dir / f"stray-{uuid.uuid4().hex[:8]}"
    stray = cluster.spawn_outside_slurm("lo_alice", ["/bin/sh", "-c", f"echo $$ > {stray_file}; exec sleep 120"])
    left = None
    try:
        left, job, _ = leave_objects(cluster, "lo_alice", scratch)
        assert "; cleanup: would remove " in epilog_summary(log, job)
        result = subprocess.run([str(cli), "check", "--node", cluster.node, "--config", str(conf_dir / "leftover.conf")],
                                env=cluster.root_env(), capture_output=True, text=True, timeout=60)
        assert result.returncode == 1, result.stderr
        assert re.search(r"^cleanup: a sweep now would remove [1-9]\d* IPC objects, [1-9]\d* files, ", result.stdout,
                         re.MULTILINE), result.stdout
        assert f"  would remove shm id={left.ids['shm']} uid={ALICE_UID} bytes=4096 (dry run)" in result.stdout
        assert f"  would remove file path='{left.tree}/sub/f' uid={ALICE_UID} bytes=2 (dry run)" in result.stdout
        as_json = subprocess.run([str(cli), "check", "--json", "--node", cluster.node, "--config",
                                  str(conf_dir / "leftover.conf")],
                                 env=cluster.root_env(), capture_output=True, text=True, timeout=60)
        doc = json.loads(as_json.stdout)
        jsonschema.validate(doc, CHECK_SCHEMA)
        objects = {(o["kind"], o["name"]): o for o in doc["cleanup"]["objects"]}
        assert objects[("shm", str(left.ids["shm"]))]["outcome"] == "would_remove"
        assert objects[("file", f"{left.tree}/sub/f")] == {"kind": "file", "name": f"{left.tree}/sub/f",
                                                           "uid": ALICE_UID, "bytes": 2, "outcome": "would_remove",
                                                           "detail": None}
        assert doc["cleanup"]["ipc_objects"] >= 3 and doc["cleanup"]["files"] >= 1, doc["cleanup"]
        assert left.all_present(), left.present()
        assert cluster.is_alive(stray)
    finally:
        cluster.kill_planted()
        if left:
            left.remove()
