# SPDX-License-Identifier: GPL-2.0-or-later
"""leftover.so with PrologFlags=contain: every allocation has an extern step on
the node, so local state alone tells who has work here and slurmctld is never
asked (the summary lines show no controller step, and the extern step's own end
is where a job's strays go)."""

import pytest

from plugin_support import (  # noqa: F401 (conf_dir, config, jobs_done_...: fixtures)
    LogWatch, batch_daemon_survives_steps_and_is_reaped_at_job_end, conf_dir, config,
    jobs_done_after_each_test, plugin_config, summary_regex, swept_without, write_leftover_conf)


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
    log.wait_for(rf"leftover: step {job}\.0 \(user lo_alice uid 41001\): {swept_without('lo_alice')}")
    log.assert_absent(r"asking slurmctld")


def test_batch_daemon_survives_both_steps_and_is_reaped_when_the_job_ends(cluster):
    log = LogWatch(cluster)
    batch_daemon_survives_steps_and_is_reaped_at_job_end(cluster, log)
    log.assert_absent(r"asking slurmctld")
