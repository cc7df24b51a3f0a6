# SPDX-License-Identifier: GPL-2.0-or-later
"""leftover.so beside ProctrackType=proctrack/cgroup and TaskPlugin=task/cgroup, what
most sites run (cgroup v1 on this machine: Slurm's job cgroups are
/slurm_<node>/uid_<uid>/job_<id>/step_<step> in every v1 hierarchy). Slurm itself
kills everything a step started; what is left for leftover are processes that never
were in a step. The job-cgroup keep rule is exercised on Slurm's real job cgroups:
a process placed into a running job's cgroup is kept although its user has no work."""

import uuid
from pathlib import Path

import pytest

from harness.e2e_accounts import USERS
from harness.e2e_processes import kill_quietly, wait_until
from harness.plugin_support import (  # noqa: F401 (conf_dir, config, jobs_done_...: fixtures)
    LogWatch, conf_dir, config, daemon_fragment, jobs_done_after_each_test, plugin_config, read_pid,
    still_alive_after, summary_regex, swept_with, write_leftover_conf)

# The fixed test accounts' uids, for the lines and outputs the tests expect.
ALICE_UID = USERS["lo_alice"].uid
BOB_UID = USERS["lo_bob"].uid

FREEZER = Path("/sys/fs/cgroup/freezer")


@pytest.fixture(scope="module")
def cluster(make_cluster, conf_dir):
    if not FREEZER.is_dir():
        pytest.skip("no cgroup v1 freezer hierarchy here (proctrack/cgroup needs it on v1)")
    write_leftover_conf(conf_dir, "{}\n")
    return make_cluster(plugin_config(
        conf_dir, prolog_flags="contain",
        extra_conf=("ProctrackType=proctrack/cgroup", "TaskPlugin=task/cgroup"),
        extra_files={"cgroup.conf": "CgroupPlugin=cgroup/v1\nConstrainCores=no\nConstrainRAMSpace=no\n"}))


def job_cgroup(cluster, uid: int, job: int) -> Path:
    return FREEZER / f"slurm_{cluster.node}" / f"uid_{uid}" / f"job_{job}"


def test_slurm_tracks_the_jobs_processes_in_its_job_cgroup(cluster):
    release = cluster.work_dir / f"release-{uuid.uuid4().hex[:8]}"
    job = cluster.sbatch("lo_alice", f"#!/bin/sh\nwhile [ ! -e {release} ]; do sleep 0.1; done\n")
    try:
        wait_until(lambda: (job_cgroup(cluster, ALICE_UID, job) / "step_batch").is_dir(), 30, "the job's cgroup")
    finally:
        release.touch()
    assert cluster.wait_job_done(job).state == "COMPLETED"


def test_a_stray_outside_any_step_is_reaped_at_the_users_job_end(cluster, config):
    config("{}\n")
    log = LogWatch(cluster)
    stray = cluster.spawn_outside_slurm("lo_alice", ["sleep", "600"])
    _, job = cluster.srun("lo_alice", ["/bin/true"])
    cluster.wait_gone(stray, 20)
    log.wait_for(rf"leftover: SIGTERM pid={stray} user=lo_alice")
    assert cluster.wait_job_done(job).state == "COMPLETED"


def test_a_user_with_a_running_job_keeps_processes_outside_it_between_steps(cluster, config):
    config("{}\n")
    tag = uuid.uuid4().hex[:8]
    steps_done, release = cluster.work_dir / f"steps-{tag}", cluster.work_dir / f"release-{tag}"
    outside = cluster.spawn_outside_slurm("lo_bob", ["sleep", "600"])
    log = LogWatch(cluster)
    job = cluster.sbatch("lo_bob", f"#!/bin/sh\nsrun /bin/true\nsrun /bin/true\ntouch {steps_done}\n"
                                   f"while [ ! -e {release} ]; do sleep 0.1; done\n")
    try:
        wait_until(steps_done.exists, 30, "both srun steps")
        log.wait_for(summary_regex(job, "1"))
        assert still_alive_after(cluster, outside, 0.5), "lo_bob still has a job here"
    finally:
        release.touch()
    assert cluster.wait_job_done(job).state == "COMPLETED"
    cluster.wait_gone(outside, 20)
    log.wait_for(rf"leftover: SIGTERM pid={outside} user=lo_bob")


def test_a_process_in_a_running_jobs_cgroup_is_kept_though_its_user_has_no_work(cluster, config):
    config("{}\n")
    release = cluster.work_dir / f"release-{uuid.uuid4().hex[:8]}"
    job = cluster.sbatch("lo_bob", f"#!/bin/sh\nwhile [ ! -e {release} ]; do sleep 0.1; done\n")
    moved = cluster.spawn_outside_slurm("je.kim", ["sleep", "600"])
    control = cluster.spawn_outside_slurm("je.kim", ["sleep", "600"])
    try:
        step_cgroup = job_cgroup(cluster, BOB_UID, job) / "step_batch"
        wait_until(step_cgroup.is_dir, 30, "the job's cgroup")
        # As a setuid helper started inside the job would be: in its cgroup, another uid.
        for hierarchy in Path("/sys/fs/cgroup").iterdir():
            target = hierarchy / f"slurm_{cluster.node}" / f"uid_{BOB_UID}" / f"job_{job}" / "step_batch"
            if (target / "cgroup.procs").exists():
                (target / "cgroup.procs").write_text(f"{moved}\n")
        log = LogWatch(cluster)
        _, trigger = cluster.srun("lo_alice", ["/bin/true"])
        log.wait_for(rf"leftover: SIGTERM pid={control} user=je\.kim")
        log.wait_for(rf"leftover: (step {trigger}\.\S+|job {trigger} epilog) .*{swept_with('je.kim')}.*"
                     rf"live_job_cgroup 1")
        cluster.wait_gone(control, 20)
        assert cluster.is_alive(moved), "a process in a live job's cgroup must be kept"
    finally:
        release.touch()
        kill_quietly(moved)
        kill_quietly(control)
    assert cluster.wait_job_done(job).state == "COMPLETED"
