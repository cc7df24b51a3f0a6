# SPDX-License-Identifier: GPL-2.0-or-later
"""A node whose name is not the host name and whose SlurmdSpoolDir holds %n: the
plugin must ask the sockets slurmd really uses (it refuses to decide when the ending
step's own socket is not where it looked)."""

import socket

import pytest

from harness.e2e_accounts import USERS
from harness.plugin_support import (  # noqa: F401 (fixtures)
    conf_dir, jobs_done_after_each_test, LogWatch, plugin_config, write_leftover_conf)

# The fixed test accounts' uids, for the lines and outputs the tests expect.
ALICE_UID = USERS["lo_alice"].uid


@pytest.fixture(scope="module")
def cluster(make_cluster, conf_dir):
    write_leftover_conf(conf_dir, "{}\n")
    return make_cluster(plugin_config(conf_dir, nodes=("lo-named",), spool_per_node=True))


def test_spool_dir_with_percent_n_and_a_node_name_that_is_not_the_host_name(cluster):
    assert cluster.node != socket.gethostname().split(".")[0]
    assert cluster.node in str(cluster.spool_dir())  # %n expanded by slurmd
    log = LogWatch(cluster)
    stray, job = cluster.plant_stray_in_step("lo_alice")
    cluster.wait_gone(stray, 20)
    log.wait_for(rf"leftover: SIGTERM pid={stray} user=lo_alice")
    log.wait_for(rf"leftover: step {job}\.0 \(user lo_alice uid {ALICE_UID}\): .*lookup errors 0")
    assert cluster.wait_job_done(job).state == "COMPLETED"
