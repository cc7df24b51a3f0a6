# SPDX-License-Identifier: GPL-2.0-or-later
"""Two slurmd on one host, one of them a node that slurm.conf does not place on this
host: lo-b's NodeHostname is its own name and its NodeAddr "localhost" (which reaches
this machine but is none of its names), and its slurmd runs here with -N lo-b, as with a
NodeHostname that does not match or a dynamic node (-Z). Only the running slurmds tell
lo-a's plugin that lo-b's steps are on this host: at a step end as in the job epilog.
With PrologFlags=contain a step end judges every user, so one that missed lo-b's steps
would take lo-b's users for jobless."""

import pytest

from harness.plugin_support import (  # noqa: F401 (fixtures)
    conf_dir, jobs_done_after_each_test, LogWatch, plugin_config, still_alive_after, summary_regex,
    write_leftover_conf)

NODES = ("lo-a", "lo-b")


@pytest.fixture(scope="module")
def cluster(make_cluster, conf_dir):
    write_leftover_conf(conf_dir, "grace: 1\n")
    return make_cluster(plugin_config(conf_dir, nodes=NODES, spool_per_node=True, prolog_flags="contain",
                                      node_addrs={"lo-b": "localhost"}))


def test_fault_catalogue_a_live_step_of_a_node_slurm_conf_does_not_place_here_keeps_its_user_at_a_step_end(cluster):
    # lo_bob's job runs on lo-b; his process outside Slurm on this host is his to keep.
    # lo_alice's job on lo-a leaves a stray: the step ends of her job on lo-a reap it and
    # must count lo-b's live step as lo_bob's work.
    running, release = cluster.sbatch_until_released("lo_bob", args=["-w", "lo-b"])
    try:
        cluster.wait_job_state(running, ["RUNNING"])
        busy = cluster.spawn_outside_slurm("lo_bob", ["sleep", "600"])
        log = LogWatch(cluster, "lo-a")
        stray, ended = cluster.plant_stray_in_step("lo_alice", srun_args=["-w", "lo-a"])
        cluster.wait_gone(stray, 20)
        for step in ("0", "extern"):
            summary = log.wait_for(summary_regex(ended, step)).group(0)
            assert "lookup errors 0" in summary, summary
        log.wait_for(summary_regex(ended, "epilog"))
        assert cluster.is_alive(busy), f"lo_bob's process was killed: lo-b's step went unseen\n{log.text()}"
        log.assert_absent(rf"leftover: SIGTERM pid={busy} ")
        assert still_alive_after(cluster, busy, 2)
    finally:
        release.touch()
