# SPDX-License-Identifier: GPL-2.0-or-later
"""Another, independent cluster on the same host: its slurmd and slurmstepds run in this
pid namespace, its step sockets in a spool dir of its own, which this cluster's node does
not read. Its slurmstepds are none of this node's work being set up: a sweep here must
not wait for them, nor skip its rounds, for as long as they run."""

import os
import time

import pytest

from harness.plugin_support import (  # noqa: F401 (fixtures)
    conf_dir, jobs_done_after_each_test, LogWatch, plugin_config, stepd_pid, summary_regex, write_leftover_conf)
from harness.slurm_config import ClusterConfig


@pytest.fixture(scope="module")
def cluster(make_cluster, conf_dir):
    write_leftover_conf(conf_dir, "grace: 1\n")
    return make_cluster(plugin_config(conf_dir, prolog_flags="contain"))


@pytest.fixture(scope="module")
def other_cluster(make_cluster, cluster):
    # No plugin. Its job ids lie far from this cluster's, so no title of its stepds names
    # a job of this cluster's.
    return make_cluster(ClusterConfig(nodes=("lo-x1",), extra_conf=("FirstJobId=500000",)))


def set_up(pid: int) -> bool:
    """slurmd no longer feeds the stepd its launch: /dev/null on its stdin and stdout."""
    return all(not os.readlink(f"/proc/{pid}/fd/{fd}").startswith("pipe:") for fd in (0, 1))


def test_fault_catalogue_a_slurmstepd_of_another_cluster_on_this_host_holds_no_sweep(cluster, other_cluster):
    running, release = other_cluster.sbatch_until_released("lo_bob")
    try:
        other_cluster.wait_job_state(running, ["RUNNING"])
        deadline = time.monotonic() + 20
        while True:  # its batch stepd runs, titled and done with its setup
            try:
                foreign = stepd_pid(running, "batch")
                if set_up(foreign):
                    break
            except (AssertionError, OSError):
                pass
            assert time.monotonic() < deadline, "the other cluster's batch slurmstepd never finished its setup"
            time.sleep(0.05)
        log = LogWatch(cluster)
        stray, ended = cluster.plant_stray_in_step("lo_alice")
        cluster.wait_gone(stray, 20)
        log.wait_for(rf"leftover: SIGTERM pid={stray} user=lo_alice")
        log.wait_for(summary_regex(ended, "epilog"))
        log.assert_absent(r"a job is starting on this node")
        assert os.path.exists(f"/proc/{foreign}"), "the other cluster's slurmstepd is gone"
        assert other_cluster.job_state(running) == "RUNNING"
    finally:
        release.touch()
    assert other_cluster.wait_job_done(running).state == "COMPLETED"
