# SPDX-License-Identifier: GPL-2.0-or-later
"""Self-tests of the e2e harness: a real Slurm runs jobs the way later
plugin tests rely on, and without any plugin stray processes survive."""

import pwd
import re
import socket

import pytest

from harness.e2e_accounts import OUTSIDE_TEST_UIDS, TEST_UID_MAX, TEST_UID_MIN, TEST_USERS
from harness.e2e_processes import HarnessError, wait_until
from harness.plugin_support import LogWatch
from harness.slurm_config import ClusterConfig, slurm_version
from harness.slurm_jobs import BATCH_STEP, EXTERN_STEP


def test_test_users_exist_with_fixed_uids(test_users):
    for user in TEST_USERS:
        assert pwd.getpwnam(user.name).pw_uid == user.uid
        in_range = TEST_UID_MIN <= user.uid < TEST_UID_MAX
        assert in_range != (user.name in OUTSIDE_TEST_UIDS), user


def test_cluster_is_up_quickly_and_hermetic(cluster):
    assert cluster.startup_seconds < 15
    assert "is UP" in cluster.scontrol("ping").stdout
    node = cluster.scontrol("-o", "show", "node", cluster.node).stdout
    assert "State=IDLE" in node
    assert cluster.node != socket.gethostname()
    config = cluster.scontrol("show", "config").stdout
    assert str(cluster.munge_socket) in config
    assert str(cluster.dir / "etc" / "plugstack.conf") in config
    # No setting may point at the machine's own configuration.
    assert not re.search(r"=\s*/etc/(slurm|munge)", config)


def test_srun_true_completes(cluster):
    res, jobid = cluster.srun("lo_alice", ["true"])
    assert res.returncode == 0, res.stderr
    result = cluster.wait_job_done(jobid)
    assert (result.state, result.exit_code) == ("COMPLETED", 0)
    assert cluster.job_info(jobid)["UserId"].startswith("lo_alice(")


def test_failing_job_reports_exit_code(cluster):
    jobid = cluster.sbatch("lo_bob", "#!/bin/sh\nexit 3\n")
    result = cluster.wait_job_done(jobid)
    assert (result.state, result.exit_code) == ("FAILED", 3)


def test_two_jobs_of_one_user_run_at_once(cluster):
    # Each job announces itself and waits for the other: both can only
    # succeed if they overlap in time.
    flag = cluster.work_dir / "barrier"

    def script(me, other):
        return (f"#!/bin/sh\ntouch {flag}.{me}\n"
                f"i=0; while [ ! -e {flag}.{other} ]; do i=$((i+1)); "
                f"[ $i -gt 200 ] && exit 1; sleep 0.1; done\n")

    first = cluster.sbatch("lo_alice", script("a", "b"))
    second = cluster.sbatch("lo_alice", script("b", "a"))
    for jobid in (first, second):
        assert cluster.wait_job_done(jobid) == ("COMPLETED", 0, 0)


def test_without_plugin_stray_survives_its_job(cluster):
    """Control case: proves the reaping tests can fail."""
    pid, jobid = cluster.plant_stray_in_step("lo_alice")
    assert cluster.wait_job_done(jobid).state == "COMPLETED"
    # The job and all its steps are gone, yet the stray lives on.
    assert not any(cluster.spool_dir().glob(f"*_{jobid}.*"))
    assert cluster.is_alive(pid)
    assert pid in cluster.pids_of_user("lo_alice")
    # ...and it really came from that job's step.
    env = cluster.process_env(pid)
    assert (env["SLURM_JOB_ID"], env["SLURM_STEP_ID"]) == (str(jobid), "0")


def test_run_as_runs_as_the_user(cluster):
    res = cluster.run_as("lo_high", ["id", "-u"])
    assert (res.returncode, res.stdout.strip()) == (0, "61000")


def test_spawn_outside_slurm_and_kill_planted(cluster):
    pid = cluster.spawn_outside_slurm("je.kim", ["sleep", "600"])
    other = cluster.spawn_outside_slurm("jeXkim", ["sleep", "600"])
    assert cluster.is_alive(pid) and cluster.is_alive(other)
    assert cluster.pids_of_user("je.kim") == [pid]
    assert "SLURM_JOB_ID" not in cluster.process_env(pid)
    cluster.kill_planted()
    cluster.wait_gone(pid)
    cluster.wait_gone(other)
    assert cluster.pids_of_user("je.kim") == []


def test_wait_for_log_sees_slurmd_and_step_lines(cluster):
    cluster.wait_for_log(rf"slurmd version {re.escape(slurm_version())} started")
    res, jobid = cluster.srun("lo_low", ["true"])
    assert res.returncode == 0, res.stderr
    # slurmstepd's last line: "done with job" on 22.05, "done with step" on 24.11 and 26.05.
    cluster.wait_for_log(rf"\[{jobid}\.0\] done with (job|step)")


def test_plain_cluster_has_step_socket_but_no_extern_step(cluster):
    jobid, release = cluster.sbatch_until_released("lo_high", in_step=True)
    try:
        wait_until(cluster.step_socket(jobid, 0).exists, 30, "step 0 socket")
        assert cluster.step_socket(jobid, BATCH_STEP).exists()
        assert not cluster.step_socket(jobid, EXTERN_STEP).exists()
    finally:
        release.touch()
    assert cluster.wait_job_done(jobid) == ("COMPLETED", 0, 0)


def test_slurmctld_stop_and_restart_keeps_running_job(cluster):
    jobid, release = cluster.sbatch_until_released("lo_bob")
    cluster.wait_job_state(jobid, {"RUNNING"})
    cluster.stop_slurmctld()
    assert cluster.scontrol("ping", check=False).returncode != 0
    cluster.start_slurmctld()
    assert cluster.job_state(jobid) == "RUNNING"
    release.touch()
    assert cluster.wait_job_done(jobid) == ("COMPLETED", 0, 0)
    res, jobid = cluster.srun("lo_bob", ["true"])
    assert res.returncode == 0, res.stderr


def test_restart_slurmd_keeps_running_job(cluster):
    jobid, release = cluster.sbatch_until_released("lo_alice", in_step=True)
    wait_until(cluster.step_socket(jobid, 0).exists, 30, "step 0 socket")
    cluster.restart_slurmd()
    release.touch()
    assert cluster.wait_job_done(jobid) == ("COMPLETED", 0, 0)
    res, _ = cluster.srun("lo_alice", ["true"])
    assert res.returncode == 0, res.stderr


@pytest.fixture(scope="module")
def contain_cluster(make_cluster):
    """%n in SlurmdSpoolDir, an odd node name and PrologFlags=contain."""
    return make_cluster(ClusterConfig(nodes=("lo-x7",), spool_per_node=True,
                                      prolog_flags="contain"))


def test_spool_per_node_and_extern_step(contain_cluster):
    c = contain_cluster
    assert c.spool_dir().name == "lo-x7"
    jobid, release = c.sbatch_until_released("lo_alice", in_step=True)
    try:
        wait_until(c.step_socket(jobid, 0).exists, 30, "step 0 socket")
        assert c.step_socket(jobid, EXTERN_STEP).exists()
        assert c.step_socket(jobid, BATCH_STEP).exists()
    finally:
        release.touch()
    assert c.wait_job_done(jobid) == ("COMPLETED", 0, 0)
    assert not c.step_socket(jobid, EXTERN_STEP).exists()


def test_a_missed_log_line_shows_what_leftover_said_since_the_watch_began():
    class FakeCluster:
        log = "[1] leftover: before the watch\n"

        def slurmd_log_text(self, node=None):
            return self.log

    fake = FakeCluster()
    watch = LogWatch(fake)
    fake.log += "[2] debug:  not leftover's\n[3] leftover: step 1.0: swept []\n"
    with pytest.raises(HarnessError) as missed:
        watch.wait_for(r"never said", timeout=0.1)
    message = str(missed.value)
    assert "waiting for slurmd log line /never said/" in message
    assert "[3] leftover: step 1.0: swept []" in message
    assert "before the watch" not in message and "not leftover's" not in message
