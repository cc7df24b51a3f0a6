# SPDX-License-Identifier: GPL-2.0-or-later
"""leftover.so with PrologFlags=contain: every allocation has an extern step on
the node, so local state alone tells who has work here and slurmctld is never
asked (the summary lines show no controller step, and the extern step's own end
is where a job's strays go)."""

import os
import signal
import uuid

import pytest

from harness.e2e_accounts import USERS
from harness.e2e_processes import kill_quietly, wait_until
from harness.plugin_support import (  # noqa: F401 (conf_dir, config, jobs_done_...: fixtures)
    LogWatch, batch_daemon_survives_steps_and_is_reaped_at_job_end, conf_dir, config, daemon_fragment,
    jobs_done_after_each_test, plugin_config, read_pid, start_background, stepd_pid, summary_regex, swept_with,
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


def test_fault_catalogue_a_slurmstepd_that_stops_answering_keeps_only_its_jobs_user_at_a_step_end(cluster, config):
    # lo_alice's batch job leaves a stray and waits. lo_bob's batch job, submitted after
    # hers (so its step sockets are asked after hers), runs a step; then its slurmstepds
    # stop answering: the step's holds the step end's questions to their deadline, and
    # none of lo_bob's sockets is answered. All three are stopped: a look past its
    # deadline still takes what is ready at once, and on a loaded node a running stepd,
    # woken by the question, can answer before the look polls (CI saw his batch step
    # answer so, and the uid told by that answer). The step end cannot ask slurmctld,
    # but lo_bob's batch script in the spool dir, which slurmstepd chowned to him, tells
    # whose job it is: lo_bob (and his process outside Slurm) is kept, lo_alice is
    # judged, and her stray is reaped at her job's last step end rather than left to the
    # job epilog. Each look at the sockets costs slurm_timeout while the stepds hang:
    # grace leaves the sweep the time for its looks.
    config("slurm_timeout: 1\ngrace: 5\n")
    tag = uuid.uuid4().hex[:8]
    stray_file, done = cluster.work_dir / f"stray-{tag}", cluster.work_dir / f"done-{tag}"
    job = cluster.sbatch("lo_alice", "#!/bin/sh\n" + daemon_fragment(stray_file) +
                         f"while [ ! -e {done} ]; do sleep 0.1; done\n")
    stray = read_pid(stray_file)
    other, release = cluster.sbatch_until_released("lo_bob", in_step=True)
    wait_until(cluster.step_socket(other, 0).exists, 30, "lo_bob's step socket")
    busy = cluster.spawn_outside_slurm("lo_bob", ["sleep", "600"])
    stopped = [stepd_pid(other, step) for step in ("0", "batch", "extern")]
    for pid in stopped:
        os.kill(pid, signal.SIGSTOP)
    try:
        log = LogWatch(cluster)
        done.touch()
        log.wait_for(rf"\[{job}\.extern\] leftover: SIGTERM pid={stray} user=lo_alice")
        cluster.wait_gone(stray, 20)
        log.wait_for(rf"leftover: job {other} of the unanswered socket \S*_{other}\.0 is uid {BOB_UID}'s \(its batch "
                     rf"script \S*/job{other:05d}/slurm_script\): that user is kept, the others are judged")
        summary = log.wait_for(summary_regex(job, "extern")).group(0)
        assert "lookup errors 0" in summary and swept_with("lo_alice"), summary
        log.wait_for(summary_regex(job, "epilog"))
        assert cluster.is_alive(busy), f"lo_bob's process was killed\n{log.text()}"
        log.assert_absent(r"user=lo_bob")
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
        release.touch()
        kill_quietly(busy)
    assert cluster.wait_job_done(job).state == "COMPLETED"
