# SPDX-License-Identifier: GPL-2.0-or-later
"""The cleanup on a real one-node cluster without PrologFlags=contain: a user who holds
another allocation here with no step running (salloc --no-shell) is seen by slurmctld
alone, and the job epilog of her other job must ask it before removing anything of
hers. The /dev/shm names carry a unique tag; every file a test makes is removed at its
end whatever happened."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from harness.e2e_accounts import USERS
from harness.e2e_processes import HarnessError, wait_until
from harness.plugin_support import (  # noqa: F401 (conf_dir, config, jobs_done_...: fixtures)
    LogWatch, conf_dir, config, jobs_done_after_each_test, plugin_config, summary_regex, write_leftover_conf)
from harness.slurm_config import BIN

# The fixed test accounts' uids, for the lines and outputs the tests expect.
ALICE_UID = USERS["lo_alice"].uid


@pytest.fixture(scope="module")
def cluster(make_cluster, conf_dir):
    write_leftover_conf(conf_dir, "{}\n")
    return make_cluster(plugin_config(conf_dir))  # no PrologFlags: no extern step


def test_a_users_shm_file_stays_while_she_holds_an_allocation_here_and_goes_after_it(cluster, config):
    config("cleanup: [posix_shm]\n")
    log = LogWatch(cluster)
    name = f"e2e-alloc-{uuid.uuid4().hex[:8]}"
    shm_file = Path(f"/dev/shm/lo-e2e-{uuid.uuid4().hex[:8]}")
    res = cluster.run_as("lo_alice", [str(BIN / "salloc"), "--no-shell", f"--job-name={name}"])
    assert res.returncode == 0, res.stderr
    allocation = cluster.job_id_by_name(name)
    try:
        cluster.wait_job_state(allocation, ["RUNNING"])
        job = cluster.sbatch("lo_alice", f"#!/bin/sh\necho data > {shm_file}\n")
        assert cluster.wait_job_done(job).state == "COMPLETED"
        summary = log.wait_for(summary_regex(job, "epilog") + ".*$").group(0)
        assert "lookup errors 0" in summary, summary
        assert shm_file.exists(), f"lo_alice holds job {allocation} here: her file must stay\n{log.text()}"
        log.assert_absent(rf"leftover: cleanup: \S+ posix_shm path='{shm_file}'")
        # slurmctld, asked in the evaluation, placed her allocation here: live work.
        log.wait_for(rf"leftover: cleanup: nothing of user lo_alice uid {ALICE_UID} removed: live work on this node$")

        # Once her allocation ends too, the file goes (at that job's epilog, or at the
        # end of her next job here).
        cluster.scancel(allocation)
        cluster.wait_job_done(allocation)
        if shm_file.exists():
            res, _ = cluster.srun("lo_alice", ["true"])
            assert res.returncode == 0, res.stderr
        wait_until(lambda: not shm_file.exists(), 20, f"{shm_file} to go after lo_alice's last allocation")
        log.wait_for(rf"leftover: cleanup: removed posix_shm path='{shm_file}' uid={ALICE_UID} bytes=5$")
    finally:
        try:
            cluster.scancel(allocation)
        except HarnessError:
            pass  # already ended
        shm_file.unlink(missing_ok=True)
