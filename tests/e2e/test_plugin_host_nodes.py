# SPDX-License-Identifier: GPL-2.0-or-later
"""Several slurmd on one host: two nodes, lo-a and lo-b, whose
NodeHostname is this machine, each with its own spool dir (%n), in one pid namespace.
When a step ends on lo-a, lo-a's plugin must count lo-b's live steps as work on this
host, and the job epilog must ask slurmctld about lo-b too: a user with a job on lo-b
keeps their processes outside it."""

import socket
import uuid

import pytest

from harness.plugin_support import (  # noqa: F401 (fixtures)
    conf_dir, jobs_done_after_each_test, LogWatch, plugin_config, still_alive_after, summary_regex,
    write_leftover_conf)
from harness.slurm_config import BIN

NODES = ("lo-a", "lo-b")


@pytest.fixture(scope="module")
def cluster(make_cluster, conf_dir):
    write_leftover_conf(conf_dir, "grace: 1\n")
    return make_cluster(plugin_config(conf_dir, nodes=NODES, spool_per_node=True,
                                      node_hostname=socket.gethostname().split(".")[0]))


def assert_lo_a_keeps_lo_bob(cluster, what: str) -> None:
    """lo_alice's job on lo-a leaves a stray; its end on lo-a reaps the stray and keeps
    lo_bob's process outside Slurm, since lo_bob has `what` on lo-b."""
    busy = cluster.spawn_outside_slurm("lo_bob", ["sleep", "600"])
    log = LogWatch(cluster, "lo-a")
    stray, ended = cluster.plant_stray_in_step("lo_alice", srun_args=["-w", "lo-a"])
    cluster.wait_gone(stray, 20)
    # Without PrologFlags=contain a step end keeps the users it cannot see; the job
    # epilog on lo-a decides.
    summary = log.wait_for(summary_regex(ended, "epilog")).group(0)
    assert "lookup errors 0" in summary, summary
    assert cluster.is_alive(busy), f"lo_bob's process was killed: {what} on lo-b went unseen\n{log.text()}"
    log.assert_absent(rf"leftover: SIGTERM pid={busy} ")
    assert still_alive_after(cluster, busy, 2)


def test_fault_catalogue_a_live_step_of_the_other_slurmd_on_this_host_keeps_its_user(cluster):
    running, release = cluster.sbatch_until_released("lo_bob", args=["-w", "lo-b"])
    try:
        cluster.wait_job_state(running, ["RUNNING"])
        assert_lo_a_keeps_lo_bob(cluster, "a running step")
    finally:
        release.touch()


def test_fault_catalogue_an_allocation_on_the_other_node_between_steps_keeps_its_user(cluster):
    # An allocation on lo-b with no step at all (salloc --no-shell, no PrologFlags=contain):
    # no step socket shows it, only slurmctld does, so the job epilog on lo-a must ask it
    # about every node of this host, not about lo-a alone.
    name = f"e2e-alloc-{uuid.uuid4().hex[:8]}"
    res = cluster.run_as("lo_bob", [str(BIN / "salloc"), "--no-shell", f"--job-name={name}", "-w", "lo-b"])
    assert res.returncode == 0, res.stderr
    allocation = cluster.job_id_by_name(name)
    try:
        cluster.wait_job_state(allocation, ["RUNNING"])
        assert_lo_a_keeps_lo_bob(cluster, "an allocation between steps")
    finally:
        cluster.scancel(allocation)
