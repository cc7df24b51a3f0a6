# SPDX-License-Identifier: GPL-2.0-or-later
"""A user's next job in its Prolog while her previous job ends, on a real one-node cluster
with PrologFlags=contain and a Prolog: slurmd runs the Prolog before the job's extern
slurmstepd exists, so for the whole Prolog (here 6 s) no step socket shows the job while
slurmctld has it running on the node. Its user is live all that time: her files (the
/dev/shm file the Prolog made for the job) and her processes stay through her previous
job's epilog."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from harness.e2e_accounts import USERS
from harness.e2e_processes import kill_quietly
from harness.plugin_support import (  # noqa: F401 (conf_dir, config, jobs_done_...: fixtures)
    LogWatch, conf_dir, config, daemon_fragment, jobs_done_after_each_test, plugin_config, read_pid,
    summary_regex, write_leftover_conf)

ALICE_UID = USERS["lo_alice"].uid
PROLOG_SECONDS = 6

# For a job whose user has a request file: makes the /dev/shm file the request names, the
# job's user's, says it began, and takes its time. Any other job's Prolog does nothing.
PROLOG = """#!/bin/sh
request={dir}/slow-prolog-$SLURM_JOB_USER
[ -s "$request" ] || exit 0
read name < "$request"
: > "/dev/shm/$name" && chown "$SLURM_JOB_UID" "/dev/shm/$name"
echo "$$" > {dir}/prolog-began-$SLURM_JOB_ID
sleep {seconds}
"""


@pytest.fixture(scope="module")
def cluster(make_cluster, conf_dir):
    write_leftover_conf(conf_dir, "{}\n")
    prolog = conf_dir / "prolog.sh"
    prolog.write_text(PROLOG.format(dir=conf_dir, seconds=PROLOG_SECONDS))
    prolog.chmod(0o755)
    return make_cluster(plugin_config(conf_dir, prolog_flags="contain", extra_conf=(f"Prolog={prolog}",)))


class NextJob:
    """lo_alice's next job, held in its Prolog (which makes /dev/shm/<name> hers) until
    PROLOG_SECONDS have passed; its batch script fails unless that file is still there."""

    def __init__(self, cluster, conf_dir: Path):
        self.cluster, self.conf_dir = cluster, conf_dir
        self.name = f"lo-e2e-prolog-{uuid.uuid4().hex[:8]}"
        self.shm_file = Path("/dev/shm") / self.name
        self.request = conf_dir / "slow-prolog-lo_alice"
        self.request.write_text(self.name + "\n")
        self.job = cluster.sbatch("lo_alice", f"#!/bin/sh\ntest -e {self.shm_file}\n")
        began = conf_dir / f"prolog-began-{self.job}"
        self.prolog = read_pid(began, 30)
        self.request.unlink()
        assert self.shm_file.stat().st_uid == ALICE_UID

    def remove(self) -> None:
        self.request.unlink(missing_ok=True)
        self.shm_file.unlink(missing_ok=True)


def test_fault_catalogue_the_file_a_prolog_made_for_the_users_next_job_survives_her_previous_jobs_epilog(
        cluster, config, conf_dir):
    config("cleanup: [posix_shm]\n")
    log = LogWatch(cluster)
    previous, release = cluster.sbatch_until_released("lo_alice")
    cluster.wait_job_state(previous, {"RUNNING"})
    following = None
    try:
        following = NextJob(cluster, conf_dir)
        release.touch()
        assert cluster.wait_job_done(previous).state == "COMPLETED"
        summary = log.wait_for(summary_regex(previous, "epilog") + ".*$").group(0)
        assert os.path.exists(following.shm_file), f"the Prolog's file went in the previous job's epilog: {summary}"
        # The Prolog is still running: seen as the job's, its user live.
        assert cluster.is_alive(following.prolog)
        log.wait_for(rf"leftover: job {following.job} is in its Prolog here \(slurmd's child pid {following.prolog}\): "
                     rf"uid {ALICE_UID} is live")
        log.assert_absent(rf"leftover: cleanup: removed posix_shm path='{following.shm_file}'")
        # The job that needed the file found it.
        assert cluster.wait_job_done(following.job).state == "COMPLETED"
    finally:
        release.touch()
        if following:
            following.remove()


def test_fault_catalogue_a_stray_of_a_user_whose_next_job_is_in_its_prolog_survives_until_that_job_ends(
        cluster, config, conf_dir):
    config("{}\n")
    log = LogWatch(cluster)
    tag = uuid.uuid4().hex[:8]
    daemon_file, release = cluster.work_dir / f"daemon-{tag}", cluster.work_dir / f"release-{tag}"
    previous = cluster.sbatch("lo_alice", "#!/bin/sh\n" + daemon_fragment(daemon_file) +
                              f"while [ ! -e {release} ]; do sleep 0.1; done\n")
    stray = read_pid(daemon_file)
    following = None
    try:
        following = NextJob(cluster, conf_dir)
        release.touch()
        assert cluster.wait_job_done(previous).state == "COMPLETED"
        log.wait_for(summary_regex(previous, "epilog"))
        assert cluster.is_alive(following.prolog), "the Prolog must still run at the previous job's epilog"
        assert cluster.is_alive(stray), "a user whose job is in its Prolog here has live work"
        log.assert_absent(rf"leftover: SIGTERM pid={stray}\b")
        # Once the next job has ended too, nothing of hers is live: its epilog reaps the stray.
        assert cluster.wait_job_done(following.job).state == "COMPLETED"
        cluster.wait_gone(stray, 20)
        log.wait_for(rf"leftover: SIGTERM pid={stray} user=lo_alice")
    finally:
        release.touch()
        if following:
            following.remove()
        kill_quietly(stray)
