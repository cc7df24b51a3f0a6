# SPDX-License-Identifier: GPL-2.0-or-later
"""leftover.so on a real one-node cluster without PrologFlags=contain: what it
reaps, what it spares, what it logs, and how it fails safe.

The harness's own control test (test_harness.py) shows that these strays survive
a job when no plugin is loaded, so every reaping test here can fail."""

import os
import signal
import uuid

import pytest

from harness.e2e_accounts import USERS
from harness.plugin_support import (  # noqa: F401 (conf_dir, config, jobs_done_...: fixtures)
    batch_daemon_survives_steps_and_is_reaped_at_job_end, conf_dir, config, jobs_done_after_each_test, SEED_JSON, LogWatch, daemon_fragment,
                            plugin_config, read_pid, start_background,
                            stepd_pid, still_alive_after, summary_regex,
                            swept_with, write_config, write_leftover_conf)
from harness.e2e_processes import HarnessError, kill_quietly, wait_until
from harness.slurm_config import BIN, slurm_major_minor

# The fixed test accounts' uids, for the lines and outputs the tests expect.
ALICE_UID = USERS["lo_alice"].uid
BOB_UID = USERS["lo_bob"].uid


@pytest.fixture(scope="module")
def cluster(make_cluster, conf_dir):
    # A listed name no account has: slurmd's start-up line must say it protects nobody.
    write_leftover_conf(conf_dir, '{"protected_users": ["lo_alcie"]}\n')
    return make_cluster(plugin_config(conf_dir))


def job_epilog_done(cluster, log, job):
    """The job finished and its epilog sweep has logged its summary."""
    result = cluster.wait_job_done(job)
    log.wait_for(summary_regex(job, "epilog"))
    return result


def test_slurmd_start_names_the_release_and_the_contain_hint(cluster):
    text = cluster.slurmd_log_text()
    assert f"leftover: leftover 0.1.0 built for Slurm {slurm_major_minor()}." in text
    assert "PrologFlags=contain makes this unnecessary" in text


def test_fault_catalogue_slurmd_start_warns_about_a_listed_name_without_an_account(cluster):
    text = cluster.slurmd_log_text()
    assert ("leftover: warning: protected user 'lo_alcie' (listed in protected_users) "
            "has no account: it protects nobody") in text
    assert "protected user 'lo_alice'" not in text


def test_double_forked_stray_of_a_finished_srun_job_is_reaped(cluster, config):
    config("{}\n")
    log = LogWatch(cluster)
    stray, job = cluster.plant_stray_in_step("lo_alice")
    cluster.wait_gone(stray, 20)
    log.wait_for(rf"leftover: SIGTERM pid={stray} user=lo_alice uid={ALICE_UID} comm='sleep' "
                 r"reason=stray \(no live work on this node\)")
    # The step's end sweeps when srun has already released the job (slurmctld then says
    # COMPLETING, not live); otherwise the job epilog does. Either is right, once.
    log.wait_for(rf"leftover: (step {job}\.0|job {job} epilog) \(user lo_alice uid {ALICE_UID}\): "
                 rf"{swept_with('lo_alice')}; killed [1-9]")
    assert cluster.wait_job_done(job).state == "COMPLETED"


def test_dry_run_logs_would_kill_and_kills_nothing(cluster, config):
    config("dry_run: true\n")
    log = LogWatch(cluster)
    stray, job = cluster.plant_stray_in_step("lo_alice")
    log.wait_for(rf"leftover: would kill pid={stray} user=lo_alice .*\(dry run\)")
    job_epilog_done(cluster, log, job)
    assert still_alive_after(cluster, stray, 1.0)


def test_a_user_with_another_running_job_keeps_strays_until_the_last_job_ends(cluster, config):
    config("{}\n")
    log = LogWatch(cluster)
    other_job, release = cluster.sbatch_until_released("lo_alice")
    cluster.wait_job_state(other_job, ["RUNNING"])
    stray, job = cluster.plant_stray_in_step("lo_alice")
    job_epilog_done(cluster, log, job)
    assert still_alive_after(cluster, stray, 1.0)

    release.touch()
    assert cluster.wait_job_done(other_job).state == "COMPLETED"
    cluster.wait_gone(stray, 20)
    log.wait_for(rf"leftover: SIGTERM pid={stray} user=lo_alice")


def test_batch_daemon_survives_its_jobs_srun_steps_and_is_reaped_when_the_job_ends(cluster, config):
    config("{}\n")
    batch_daemon_survives_steps_and_is_reaped_at_job_end(cluster, LogWatch(cluster))


def test_the_predecessors_config_verbatim_spares_its_protected_user(cluster, config):
    config(SEED_JSON)  # with the test accounts' uid range in front, as every config here
    log = LogWatch(cluster)
    spared, job = cluster.plant_stray_in_step("alice")
    job_epilog_done(cluster, log, job)
    reaped, job = cluster.plant_stray_in_step("bobby")  # "bob" is listed, "bobby" is not
    job_epilog_done(cluster, log, job)
    cluster.wait_gone(reaped, 20)
    assert cluster.is_alive(spared)
    log.wait_for(r"kept \d+ \(.*protected 1")
    log.assert_absent(rf"SIGTERM pid={spared}\b")


def test_a_protected_users_file_matches_dotted_names_exactly(cluster, config, conf_dir):
    users_file = write_config(conf_dir, "# operators\nje.kim\n", "localusers.backup")
    config(f"protected_users_files: [{users_file}]\n")
    log = LogWatch(cluster)
    spared = cluster.spawn_outside_slurm("je.kim", ["sleep", "600"])
    reaped = cluster.spawn_outside_slurm("jeXkim", ["sleep", "600"])
    _, job = cluster.srun("lo_alice", ["/bin/true"])
    job_epilog_done(cluster, log, job)
    cluster.wait_gone(reaped, 20)
    assert cluster.is_alive(spared)
    log.wait_for(rf"SIGTERM pid={reaped} user=jeXkim")
    log.wait_for(rf"leftover: job {job} epilog .*kept \d+ \(.*protected 1[,)]")
    log.assert_absent(rf"SIGTERM pid={spared}\b")


def test_uids_outside_the_range_are_spared_and_scope_decides_about_jobless_users(cluster, config):
    config("{}\n")
    log = LogWatch(cluster)
    low = cluster.spawn_outside_slurm("lo_low", ["sleep", "600"])
    high = cluster.spawn_outside_slurm("lo_high", ["sleep", "600"])
    jobless = cluster.spawn_outside_slurm("lo_bob", ["sleep", "600"])
    _, job = cluster.srun("lo_alice", ["/bin/true"])
    job_epilog_done(cluster, log, job)
    cluster.wait_gone(jobless, 20)  # scope node: every user without live work
    assert cluster.is_alive(low) and cluster.is_alive(high)

    config("scope: job_user\n")
    log = LogWatch(cluster)
    jobless = cluster.spawn_outside_slurm("lo_bob", ["sleep", "600"])
    _, job = cluster.srun("lo_alice", ["/bin/true"])
    job_epilog_done(cluster, log, job)
    assert still_alive_after(cluster, jobless, 0.5)
    assert cluster.is_alive(low) and cluster.is_alive(high)


def test_on_a_host_where_slurmctld_runs_a_jobless_users_stray_lives_and_the_log_says_why(cluster, config):
    # This cluster's slurmctld runs on the node's host (SlurmctldHost=localhost), where
    # people log in without a job: without sweep_on_controller_host nothing is killed.
    config("sweep_on_controller_host: false\n")
    log = LogWatch(cluster)
    jobless = cluster.spawn_outside_slurm("lo_bob", ["sleep", "600"])
    _, job = cluster.srun("lo_alice", ["/bin/true"])
    job_epilog_done(cluster, log, job)
    log.wait_for(r"leftover: (slurm\.conf names this host as SlurmctldHost \(\S+\)|slurmctld runs on this host "
                 r"\(pid \d+(, \d+)*\)): a sweep on a host where slurmctld runs kills and removes nothing "
                 r"\(sweep_on_controller_host: true sweeps it\)")
    log.wait_for(rf"leftover: job {job} epilog \(user lo_alice uid {ALICE_UID}\): swept \[\]; killed 0")
    assert still_alive_after(cluster, jobless, 1.0)
    log.assert_absent(rf"SIGTERM pid={jobless}")

    # The same stray is one: with the key (the harness's default) the next job's sweep reaps it.
    config("{}\n")
    log = LogWatch(cluster)
    _, job = cluster.srun("lo_alice", ["/bin/true"])
    job_epilog_done(cluster, log, job)
    cluster.wait_gone(jobless, 20)
    log.wait_for(rf"leftover: SIGTERM pid={jobless} user=lo_bob")


@pytest.mark.parametrize("text, error", [
    ("{ this is not json", r"config error: .*leftover.conf:\d+: syntax error"),
    ('{"protected_user": ["lo_alice"]}\n', r"config error: .*leftover.conf:1: unknown key 'protected_user'"),
    ("protected_users_files: [{conf_dir}/absent.list]\n",
     r"lookup error: protected users file {conf_dir}/absent.list: does not exist"),
], ids=["malformed config", "unknown key", "missing users file"])
def test_a_config_or_lookup_error_fails_no_job_and_kills_nothing(cluster, config, conf_dir, text, error):
    config(text.replace("{conf_dir}", str(conf_dir)))
    log = LogWatch(cluster)
    stray, job = cluster.plant_stray_in_step("lo_alice")
    assert cluster.wait_job_done(job) == ("COMPLETED", 0, 0)
    log.wait_for("leftover: " + error.replace("{conf_dir}", str(conf_dir)) + ".*; nothing killed")
    log.wait_for(summary_regex(job, "epilog"))
    assert still_alive_after(cluster, stray, 1.0)


def test_a_step_end_keeps_jobless_users_and_the_job_epilog_asks_slurmctld(cluster, config):
    # Slurm may kill a child of the ending step while its exit hook runs, so a step end
    # starts no controller query: a user without a local step waits for an epilog.
    config("{}\n")
    log = LogWatch(cluster)
    stray = cluster.spawn_outside_slurm("lo_alice", ["sleep", "600"])
    tag = uuid.uuid4().hex[:8]
    release = cluster.work_dir / f"release-{tag}"
    job = cluster.sbatch("lo_bob", f"#!/bin/sh\nsrun /bin/true\nwhile [ ! -e {release} ]; do sleep 0.1; done\n")
    try:
        log.wait_for(rf"leftover: no PrologFlags=contain: 1 user\(s\) without a step here kept at this step end")
        log.wait_for(summary_regex(job, "0"))
        assert still_alive_after(cluster, stray, 0.5), "a step end must not sweep what it cannot confirm"
    finally:
        release.touch()
    job_epilog_done(cluster, log, job)
    cluster.wait_gone(stray, 20)
    log.wait_for(rf"leftover: SIGTERM pid={stray} user=lo_alice")


def test_job_source_controller_a_step_end_with_slurmctld_down_kills_nothing_and_the_epilog_reaps(cluster, config):
    # A step end never asks slurmctld (Slurm may kill the helper mid-answer); the job's
    # epilog does, once slurmctld ends the job.
    config("job_source: controller\nslurm_timeout: 1\n")
    log = LogWatch(cluster)
    tag = uuid.uuid4().hex[:8]
    daemon_file, release = cluster.work_dir / f"daemon-{tag}", cluster.work_dir / f"release-{tag}"
    job = cluster.sbatch("lo_alice", "#!/bin/sh\n" + daemon_fragment(daemon_file) +
                         f"while [ ! -e {release} ]; do sleep 0.1; done\n")
    daemon = read_pid(daemon_file)
    try:
        cluster.stop_slurmctld()
        release.touch()
        log.wait_for(rf"leftover: step {job}\.batch: job_source controller: slurmctld is asked in the job epilog")
        assert still_alive_after(cluster, daemon, 1.0)
    finally:
        cluster.start_slurmctld()
    assert cluster.wait_job_done(job) == ("COMPLETED", 0, 0)
    cluster.wait_gone(daemon, 20)
    log.wait_for(rf"leftover: SIGTERM pid={daemon} user=lo_alice")


def test_a_stale_step_socket_does_not_block_sweeping(cluster, config):
    config("{}\n")
    # The batch script goes on waiting after its step's slurmstepd is killed: were the
    # job to end now, its sweep could hit this test's srun client below (lo_alice's,
    # jobless on this node until its allocation exists).
    release = cluster.work_dir / f"release-{uuid.uuid4().hex[:8]}"
    wait = f"while [ ! -e {release} ]; do sleep 0.1; done"
    other = cluster.sbatch("lo_bob", f"#!/bin/sh\nsrun /bin/sh -c '{wait}'\n{wait}\n")
    socket_path = cluster.step_socket(other, 0)
    wait_until(socket_path.exists, 30, "the other job's step socket")
    os.kill(stepd_pid(other, "0"), signal.SIGKILL)
    try:
        wait_until(lambda: socket_path.exists(), 5, "the stale socket to stay")
        log = LogWatch(cluster)
        stray, job = cluster.plant_stray_in_step("lo_alice")
        cluster.wait_gone(stray, 20)
        log.wait_for(rf"step {other}\.0 is gone: its slurmstepd does not answer on {socket_path} \(stale socket\)")
    finally:
        release.touch()
        cluster.scancel(other)


def job_named(cluster, name: str):
    """The id of the job called name, None while there is none."""
    try:
        return cluster.job_id_by_name(name)
    except HarnessError:
        return None


def test_a_slurmstepd_that_stops_answering_keeps_everyone_at_a_step_end_and_slurmctld_resolves_it_at_the_epilog(
        cluster, config):
    # lo_bob's srun job has one step and no batch script: nothing on the node tells whose
    # job it is once its stepd stops answering. The step end cannot ask slurmctld: a lookup
    # error, not a hang, and the stray stays. The job epilog asks slurmctld about the job
    # of the socket nobody answers on (lo_bob's, running): lo_bob is live, and lo_alice's
    # unrelated stray is reaped.
    config("slurm_timeout: 1\n")
    name, release = f"e2e-{uuid.uuid4().hex[:8]}", cluster.work_dir / f"release-{uuid.uuid4().hex[:8]}"
    srun = start_background(cluster, "lo_bob", [str(BIN / "srun"), f"--job-name={name}", "/bin/sh", "-c",
                                                f"while [ ! -e {release} ]; do sleep 0.1; done"])
    other = wait_until(lambda: job_named(cluster, name), 30, "lo_bob's srun job")
    wait_until(cluster.step_socket(other, 0).exists, 30, "the other job's step socket")
    stopped = stepd_pid(other, "0")
    os.kill(stopped, signal.SIGSTOP)
    try:
        log = LogWatch(cluster)
        stray, job = cluster.plant_stray_in_step("lo_alice")  # must end: no hang
        log.wait_for(rf"leftover: warning: slurmstepd socket \S*_{other}\.0 of job {other} \(step {other}\.0\) "
                     r"cannot be asked: ")
        log.wait_for(rf"leftover: lookup error: slurmstepd socket \S*_{other}\.0 of job {other}: .*; job {other}'s "
                     r"user cannot be told here .*; nothing (more )?killed")
        log.wait_for(rf"leftover: step {job}\.0 \(user .*\): .*killed 0; .*ms")
        log.wait_for(rf"leftover: job {other} of the unanswered socket \S*_{other}\.0 runs here, says slurmctld: "
                     rf"uid {BOB_UID} is live")
        cluster.wait_gone(stray, 20)
        log.wait_for(rf"leftover: job {job} epilog \(user lo_alice uid {ALICE_UID}\): {swept_with('lo_alice')}; "
                     r"killed [1-9]")
        log.assert_absent(r"user=lo_bob")
    finally:
        os.kill(stopped, signal.SIGCONT)
        release.touch()
        cluster.scancel(other)
        srun.wait(timeout=60)

