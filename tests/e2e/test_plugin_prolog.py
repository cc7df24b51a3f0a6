# SPDX-License-Identifier: GPL-2.0-or-later
"""A user's next job in its Prolog while her previous job ends, on a real one-node cluster
with PrologFlags=contain and a Prolog: slurmd runs the Prolog before the job's extern
slurmstepd exists, so for the whole Prolog (here 6 s) no step socket shows the job while
slurmctld has it running on the node. Its user is live all that time: her files (the
/dev/shm file the Prolog made for the job) and her processes stay through her previous
job's epilog."""

from __future__ import annotations

import os
import re
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from harness.e2e_accounts import USERS
from harness.e2e_processes import kill_quietly
from harness.plugin_support import (  # noqa: F401 (conf_dir, config, jobs_done_...: fixtures)
    PLUGIN, LogWatch, conf_dir, config, daemon_fragment, jobs_done_after_each_test, plugin_config, read_pid,
    summary_regex, write_leftover_conf)

ALICE_UID = USERS["lo_alice"].uid
CLI = Path(os.environ.get("LEFTOVER_CLI", PLUGIN.parent.parent / "cli" / "leftover"))
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


def test_the_job_prolog_records_the_job_being_set_up_and_its_epilog_removes_the_record(cluster, config, conf_dir):
    """Between the Prolog's end and the extern slurmstepd's fork nothing in /proc shows the
    job (the 26.05 soak's finding): the record the plugin's job prolog writes, before the
    Prolog, does. Here the Prolog is slow, so a sweep meanwhile sees both."""
    config("{}\n")
    log = LogWatch(cluster)
    following = NextJob(cluster, conf_dir)
    record = cluster.spool_dir() / f"leftover-setup-{cluster.node}.{following.job}"
    try:
        text = record.read_text()
        assert f"\njob {following.job}\nuid {ALICE_UID}\nnode {cluster.node}\n" in text, text
        assert record.stat().st_uid == 0 and record.stat().st_mode & 0o777 == 0o600
        sweep = subprocess.run([str(CLI), "sweep", "--dry-run", "--node", cluster.node, "--config",
                                str(conf_dir / "leftover.conf")], env=cluster.root_env(), capture_output=True,
                               text=True, timeout=60)
        said = sweep.stdout + sweep.stderr
        assert f"job {following.job} is being set up here (its job prolog began " in said, said
        assert cluster.wait_job_done(following.job).state == "COMPLETED"
        log.wait_for(summary_regex(following.job, "epilog"))
        assert not record.exists(), "the job's epilog removes its setup record"
    finally:
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


def test_a_setup_record_slurmctld_does_not_back_keeps_her_stray_at_a_step_end_and_goes_at_her_job_epilog(
        cluster, config, conf_dir):
    """A record outlives its job where no epilog of the job ran here after it was written
    (slurmd restarted in the job's Prolog, and the job ran elsewhere: a 26.05 soak found her
    strays kept 70 s by such a record). A step end cannot ask slurmctld and believes it; the
    job epilog asks, and then neither the record nor her stray stays."""
    config("{}\n")
    log = LogWatch(cluster)
    stale_job = 4000000  # none of this cluster's
    record = cluster.spool_dir() / f"leftover-setup-{cluster.node}.{stale_job}"
    boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    began = int(time.clock_gettime(time.CLOCK_BOOTTIME) * 1000)
    fd = os.open(record, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(f"leftover-setup 1 {boot_id}\njob {stale_job}\nuid {ALICE_UID}\nnode {cluster.node}\n"
                  f"began {began}\n")
    daemon_file = cluster.work_dir / f"daemon-{uuid.uuid4().hex[:8]}"
    stray = None
    try:
        job = cluster.sbatch("lo_alice", "#!/bin/sh\n" + daemon_fragment(daemon_file))
        stray = read_pid(daemon_file)
        assert cluster.wait_job_done(job).state == "COMPLETED"
        # Her last step's end kept her for the record's job: her stray outlived that end.
        log.wait_for(rf"\[{job}\.extern\] leftover: job {stale_job} is being set up here \(its job prolog began "
                     rf"\d+ ms ago; no step of it yet\): uid {ALICE_UID} is live")
        log.wait_for(rf"leftover: job {stale_job}'s setup record {re.escape(str(record))} is not believed: "
                     rf"slurmctld, asked after its job prolog began, does not place job {stale_job} on "
                     rf"{cluster.node}; removed")
        log.wait_for(summary_regex(job, "epilog"))
        cluster.wait_gone(stray, 20)
        log.wait_for(rf"leftover: SIGTERM pid={stray} user=lo_alice")
        assert not record.exists(), "the job epilog removes the record slurmctld does not back"
    finally:
        record.unlink(missing_ok=True)
        if stray:
            kill_quietly(stray)
