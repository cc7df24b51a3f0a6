# SPDX-License-Identifier: GPL-2.0-or-later
"""leftover.so with PrologFlags=contain: every allocation has an extern step on
the node, so local state alone tells who has work here and slurmctld is never
asked (the summary lines show no controller step, and the extern step's own end
is where a job's strays go)."""

import uuid

import pytest

from harness.e2e_accounts import USERS
from harness.e2e_processes import kill_quietly
from harness.plugin_support import (  # noqa: F401 (conf_dir, config, jobs_done_...: fixtures)
    LogWatch, batch_daemon_survives_steps_and_is_reaped_at_job_end, conf_dir, config,
    jobs_done_after_each_test, plugin_config, read_pid, start_background, summary_regex, swept_with,
    swept_without, write_leftover_conf)

# The fixed test accounts' uids, for the lines and outputs the tests expect.
ALICE_UID = USERS["lo_alice"].uid
BOB_UID = USERS["lo_bob"].uid


@pytest.fixture(scope="module")
def cluster(make_cluster, conf_dir):
    write_leftover_conf(conf_dir, "debuglevel: debug\n")
    return make_cluster(plugin_config(conf_dir, prolog_flags="contain"))


def test_slurmd_start_gives_no_contain_hint(cluster):
    assert "PrologFlags=contain is not set" not in cluster.slurmd_log_text()


def test_stray_of_an_srun_job_is_reaped_without_asking_slurmctld(cluster):
    log = LogWatch(cluster)
    stray, job = cluster.plant_stray_in_step("lo_alice")
    cluster.wait_gone(stray, 20)
    log.wait_for(rf"leftover: SIGTERM pid={stray} user=lo_alice")
    assert cluster.wait_job_done(job).state == "COMPLETED"
    log.wait_for(summary_regex(job, "epilog"))
    # The step's end kept the stray (the extern step still held the allocation);
    # the extern step's end or the epilog swept it; nobody asked the controller.
    log.wait_for(rf"leftover: step {job}\.0 \(user lo_alice uid {ALICE_UID}\): {swept_without('lo_alice')}")
    log.assert_absent(r"asking slurmctld")


def test_batch_daemon_survives_both_steps_and_is_reaped_when_the_job_ends(cluster):
    log = LogWatch(cluster)
    batch_daemon_survives_steps_and_is_reaped_at_job_end(cluster, log)
    log.assert_absent(r"asking slurmctld")


def test_a_job_that_starts_during_grace_protects_its_users_processes(cluster, config):
    # slurmctld starts no job on a node with a COMPLETING job, so the race is with a
    # sweep at the end of a step whose job goes on: lo_bob's batch job runs a step, its
    # end sweeps jobless lo_alice, and lo_alice starts a job during grace (whose extern
    # step the SIGKILL round's fresh evaluation sees).
    config("grace: 5\n")
    log = LogWatch(cluster)
    stubborn_file = cluster.work_dir / f"stubborn-{uuid.uuid4().hex[:8]}"
    stubborn = cluster.spawn_outside_slurm("lo_alice", [
        "/bin/sh", "-c", f"trap '' TERM; echo $$ > {stubborn_file}; while :; do sleep 1; done"])
    read_pid(stubborn_file)
    name = f"e2e-grace-{uuid.uuid4().hex[:8]}"
    release = cluster.work_dir / f"release-{name}"
    trigger = cluster.sbatch("lo_bob", f"#!/bin/sh\nsrun /bin/true\n"
                                       f"while [ ! -e {release} ]; do sleep 0.1; done\n")
    second = None
    try:
        log.wait_for(rf"leftover: SIGTERM pid={stubborn} user=lo_alice")
        second = start_background(cluster, "lo_alice", ["/usr/bin/srun", f"--job-name={name}", "/bin/sleep", "60"])
        log.wait_for(rf"leftover: step {trigger}\.0 \(user lo_bob uid {BOB_UID}\): {swept_with('lo_alice')}")
        log.assert_absent(rf"SIGKILL pid={stubborn}\b")
        assert cluster.is_alive(stubborn)
        assert second.poll() is None, "the new job's srun must still run"
    finally:
        release.touch()
        if second:
            cluster.scancel(cluster.job_id_by_name(name))
            second.wait(30)
        kill_quietly(stubborn)
    assert cluster.wait_job_done(trigger).state == "COMPLETED"
