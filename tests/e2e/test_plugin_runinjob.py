# SPDX-License-Identifier: GPL-2.0-or-later
"""PrologFlags=RunInJob (24.05 and later): the job epilog runs inside the job's extern
slurmstepd after that stepd set itself ENDING, and RunInJob implies Contain. The job's
stray is reaped all the same: the extern step's own end, which reads its stepd as
ENDING (4), sweeps the user."""

import pytest

from harness.e2e_accounts import USERS
from harness.plugin_support import (  # noqa: F401 (conf_dir, jobs_done_...: fixtures)
    LogWatch, conf_dir, jobs_done_after_each_test, plugin_config, swept_with, write_leftover_conf)
from harness.slurm_release import RELEASE

# The fixed test accounts' uids, for the lines and outputs the tests expect.
ALICE_UID = USERS["lo_alice"].uid

pytestmark = pytest.mark.skipif(RELEASE < (24, 5), reason="PrologFlags=RunInJob exists from Slurm 24.05 on")


@pytest.fixture(scope="module")
def cluster(make_cluster, conf_dir):
    write_leftover_conf(conf_dir, "debuglevel: debug\n")
    return make_cluster(plugin_config(conf_dir, prolog_flags="RunInJob"))


def test_the_jobs_stray_is_reaped_when_its_extern_step_ends(cluster):
    log = LogWatch(cluster)
    stray, job = cluster.plant_stray_in_step("lo_alice")
    assert cluster.wait_job_done(job).state == "COMPLETED"
    cluster.wait_gone(stray, 20)
    log.wait_for(rf"leftover: SIGTERM pid={stray} user=lo_alice")
    log.wait_for(rf"leftover: step {job}\.extern \(user lo_alice uid {ALICE_UID}\): {swept_with('lo_alice')}")
