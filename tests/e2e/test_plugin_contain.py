# SPDX-License-Identifier: GPL-2.0-or-later
"""leftover.so with PrologFlags=contain: every allocation has an extern step on
the node, so local state alone tells who has work here and slurmctld is never
asked (the summary lines show no controller step, and the extern step's own end
is where a job's strays go)."""

import uuid

import pytest

from plugin_support import (  # noqa: F401 (conf_dir, config, jobs_done_...: fixtures)
    conf_dir, config, jobs_done_after_each_test, LogWatch, daemon_fragment, plugin_config, read_pid,
                            still_alive_after, summary_regex, write_config)
from slurm_cluster import wait_until


@pytest.fixture(scope="module")
def cluster(make_cluster, conf_dir):
    write_config(conf_dir, "debuglevel: debug\n")
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
    log.wait_for(rf"leftover: step {job}\.0 \(user lo_alice uid 41001\): swept \[\]")
    log.assert_absent(r"asking slurmctld")


def test_batch_daemon_survives_both_steps_and_is_reaped_when_the_job_ends(cluster):
    log = LogWatch(cluster)
    tag = uuid.uuid4().hex[:8]
    daemon_file, steps_done, release = (cluster.work_dir / f"{name}-{tag}" for name in ("daemon", "steps", "release"))
    job = cluster.sbatch("lo_alice", "#!/bin/sh\n" + daemon_fragment(daemon_file) +
                         f"srun /bin/true\nsrun /bin/true\ntouch {steps_done}\n"
                         f"while [ ! -e {release} ]; do sleep 0.1; done\n")
    daemon = read_pid(daemon_file)
    wait_until(steps_done.exists, 30, "both srun steps")
    log.wait_for(summary_regex(job, "1"))
    assert still_alive_after(cluster, daemon, 0.5), "the daemon must survive the job's own steps"
    release.touch()
    assert cluster.wait_job_done(job).state == "COMPLETED"
    cluster.wait_gone(daemon, 20)
    log.wait_for(rf"leftover: SIGTERM pid={daemon} user=lo_alice")
    log.assert_absent(r"asking slurmctld")
