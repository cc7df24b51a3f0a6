# SPDX-License-Identifier: GPL-2.0-or-later
"""The step-socket facts leftover relies on, pinned on the real slurmd of this
release (22.05 on the host, 24.11 and 26.05 in their Debian roots): the version a
stepd answers the handshake with, the owner each kind of step reports, the state
numbering (23.11 inserted CANCELLED = 3 before ENDING), the stepd's own pid, the socket
names, and the spool directory with %n. The plugin describes every step it reads at
debug level ("step 12.0 (<socket>): uid 41001, ending (state 4 from a Slurm 24.11
stepd), slurmstepd pid 4242"); the tests read those lines. dry_run: they observe,
nothing is killed."""

import re
import subprocess
import uuid

import pytest

from harness.e2e_accounts import USERS
from harness.e2e_processes import kill_quietly, wait_until
from harness.slurm_config import BIN
from harness.slurm_release import RELEASE, RELEASE_TEXT
from harness.plugin_support import (  # noqa: F401 (conf_dir, config, jobs_done_...: fixtures)
    LogWatch, conf_dir, config, jobs_done_after_each_test, plugin_config, stepd_pid, summary_regex,
    write_leftover_conf)

# The fixed test accounts' uids, for the lines and outputs the tests expect.
ALICE_UID = USERS["lo_alice"].uid
BOB_UID = USERS["lo_bob"].uid

CONF = "debuglevel: debug\ndry_run: true\n"


# slurmstepd_state_t: ENDING is 3 before 23.11 and 4 from 23.11 on, after CANCELLED = 3.
ENDING = 3 if RELEASE < (23, 11) else 4


@pytest.fixture(scope="module")
def cluster(make_cluster, conf_dir):
    write_leftover_conf(conf_dir, CONF)
    # Two nodes: a het step's components need one each. Every other job is pinned to
    # the first node, whose log the tests read.
    return make_cluster(plugin_config(conf_dir, nodes=("lo-n1", "lo-n2"), prolog_flags="contain",
                                      spool_per_node=True, extra_conf=("LaunchParameters=use_interactive_step",)))


def on_first_node(cluster) -> list[str]:
    return ["-w", cluster.node]


def step_line(job: int, step: str, cluster) -> str:
    """The plugin's debug line for one step socket in the %n spool directory."""
    spool = re.escape(str(cluster.spool_dir()))
    return (rf"leftover: (debug: )?step {job}\.{step} \({spool}/{re.escape(cluster.node)}_{job}\.\d+(\.\d+)?\): "
            rf"uid (?P<uid>\d+), (?P<state>\w+) \(state (?P<raw>\d+) from a Slurm {RELEASE_TEXT} stepd\)")


def test_spool_dir_has_the_node_name_expanded(cluster):
    assert cluster.spool_dir().name == cluster.node
    assert "%n" not in str(cluster.spool_dir())


def test_the_ending_steps_own_stepd_answers_this_releases_version_and_ending(cluster):
    # Step 0 ends inside a job that goes on. A job that ends with its step (`srun /bin/true`)
    # is terminated by slurmctld at once, and a stepd told so answers CANCELLED: a fresh-clone
    # run on 24.11 saw the terminate arrive 6 ms before the plugin asked.
    log = LogWatch(cluster)
    release = cluster.work_dir / f"release-{uuid.uuid4().hex[:8]}"
    job = cluster.sbatch("lo_alice", f"#!/bin/sh\nsrun /bin/true\nwhile [ ! -e {release} ]; do sleep 0.1; done\n",
                         args=on_first_node(cluster))
    try:
        found = log.wait_for(step_line(job, "0", cluster), 60)
    finally:
        release.touch()
    assert found["uid"] == str(ALICE_UID)
    assert (found["state"], int(found["raw"])) == ("ending", ENDING)
    assert cluster.wait_job_done(job).state == "COMPLETED"


def test_batch_extern_and_normal_steps_report_the_job_owner(cluster):
    name = f"e2e-proto-{uuid.uuid4().hex[:8]}"
    release = cluster.work_dir / f"release-{name}"
    wait = f"while [ ! -e {release} ]; do sleep 0.1; done"
    job = cluster.sbatch("lo_bob", f"#!/bin/sh\nsrun /bin/sh -c '{wait}'\n", args=on_first_node(cluster))
    try:
        wait_until(lambda: cluster.step_socket(job, 0).exists(), 30, "the batch job's step 0 socket")
        log = LogWatch(cluster)
        _, trigger = cluster.srun("lo_alice", ["/bin/true"], args=on_first_node(cluster))
        for step in ("batch", "extern", "0"):
            found = log.wait_for(step_line(job, step, cluster))
            assert found["uid"] == str(BOB_UID), step
            assert found["state"] == "running", step
        log.wait_for(summary_regex(trigger, "0"))
    finally:
        release.touch()
    assert cluster.wait_job_done(job).state == "COMPLETED"


def test_fault_catalogue_every_step_socket_names_its_slurmstepds_pid(cluster):
    # REQUEST_DAEMON_PID answers the stepd's own pid, which is the process listening on the
    # socket: the plugin keeps what descends from it whatever the stepd's binary is called.
    release = cluster.work_dir / f"release-{uuid.uuid4().hex[:8]}"
    job = cluster.sbatch("lo_bob", f"#!/bin/sh\nwhile [ ! -e {release} ]; do sleep 0.1; done\n",
                         args=on_first_node(cluster))
    try:
        wait_until(lambda: cluster.step_socket(job, 0xfffffffb).exists(), 30, "the batch step's socket")
        log = LogWatch(cluster)
        _, trigger = cluster.srun("lo_alice", ["/bin/true"], args=on_first_node(cluster))
        for step in ("batch", "extern"):
            found = log.wait_for(step_line(job, step, cluster) + r", slurmstepd pid (?P<pid>\d+)")
            assert int(found["pid"]) == stepd_pid(job, step), step
        log.wait_for(summary_regex(trigger, "0"))
    finally:
        release.touch()
    assert cluster.wait_job_done(job).state == "COMPLETED"


def test_an_interactive_step_reports_the_job_owner(cluster):
    # LaunchParameters=use_interactive_step: salloc's shell runs in step "interactive".
    log = LogWatch(cluster)
    # The interactive step runs $SHELL (srun drops --pty without a terminal).
    env_args = [f"{k}={v}" for k, v in cluster.user_env("lo_bob").items()] + ["SHELL=/bin/sh"]
    proc = subprocess.Popen(["/usr/sbin/runuser", "-u", "lo_bob", "--", "/usr/bin/env", "-i", *env_args,
                             str(BIN / "salloc"), "-N1", *on_first_node(cluster), "--job-name=e2e-interactive"],
                            env=cluster.root_env(), cwd=cluster.work_dir, stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        job = wait_until(lambda: interactive_job(cluster), 30, "the interactive job")
        wait_until(lambda: cluster.step_socket(job, 0xfffffffa).exists(), 30, "the interactive step socket")
        _, trigger = cluster.srun("lo_alice", ["/bin/true"], args=on_first_node(cluster))
        found = log.wait_for(step_line(job, "interactive", cluster))
        assert found["uid"] == str(BOB_UID)
        log.wait_for(summary_regex(trigger, "0"))
    finally:
        proc.stdin.close()  # the shell reads EOF and the allocation ends
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            kill_quietly(proc.pid)


def test_a_heterogeneous_step_has_one_socket_per_component(cluster):
    # A het step inside one allocation ("srun ... : ...") names its sockets
    # <node>_<job>.<step>.<component>, one component per node here; a het job's
    # components would have job ids of their own.
    release = cluster.work_dir / f"release-{uuid.uuid4().hex[:8]}"
    wait = f"while [ ! -e {release} ]; do sleep 0.1; done"
    job = cluster.sbatch("lo_bob", f"#!/bin/sh\nsrun -n1 /bin/sh -c '{wait}' : -n1 /bin/sh -c '{wait}'\n",
                         args=["-N2", "-n2"])
    nodes = cluster.config.nodes
    try:
        for component, node in enumerate(nodes):
            socket = cluster.spool_dir(node) / f"{node}_{job}.0.{component}"
            wait_until(socket.exists, 30, f"het step component {component}'s socket on {node}")
        logs = [LogWatch(cluster, node) for node in nodes]
        _, trigger = cluster.srun("lo_alice", ["/bin/true"], args=["-N2", "-w", ",".join(nodes)])
        for component, (node, log) in enumerate(zip(nodes, logs)):
            line = (rf"leftover: (debug: )?step {job}\.0 \(.*/{re.escape(node)}_{job}\.0\.{component}\): "
                    rf"uid {BOB_UID}, running")
            log.wait_for(line)
            log.wait_for(summary_regex(trigger, "0"))
    finally:
        release.touch()
    assert cluster.wait_job_done(job).state == "COMPLETED"


def test_a_step_that_traps_scancels_term_reads_cancelled_and_counts_as_live(cluster, config):
    # 23.11 and later mark a signalled step CANCELLED (3); older stepds stay RUNNING (2).
    config("debuglevel: debug\n")  # a real sweep: lo_bob's process outside the job must stay
    tag = uuid.uuid4().hex[:8]
    ready, release = cluster.work_dir / f"trapped-{tag}", cluster.work_dir / f"release-{tag}"
    trapped = f"trap '' TERM; touch {ready}; while [ ! -e {release} ]; do sleep 0.1; done"
    job = cluster.sbatch("lo_bob", f"#!/bin/sh\ntrap '' TERM\nsrun /bin/sh -c \"{trapped}\"\n",
                         args=on_first_node(cluster))
    outside = cluster.spawn_outside_slurm("lo_bob", ["sleep", "600"])
    try:
        wait_until(ready.exists, 30, "the trapping step")
        # The step alone: the job's extern step and batch script are not asked to end.
        subprocess.run([str(BIN / "scancel"), "--signal=TERM", f"{job}.0"], env=cluster.root_env(),
                       check=True, timeout=20)
        log = LogWatch(cluster)
        _, trigger = cluster.srun("lo_alice", ["/bin/true"], args=on_first_node(cluster))
        found = log.wait_for(step_line(job, "0", cluster))
        assert (found["state"], int(found["raw"])) == (("cancelled", 3) if RELEASE >= (23, 11) else ("running", 2))
        log.wait_for(summary_regex(trigger, "0"))
        assert cluster.is_alive(outside), "a user whose step was only signalled still has live work"
    finally:
        release.touch()
        config(CONF)
        kill_quietly(outside)
    cluster.wait_job_done(job)


def interactive_job(cluster):
    res = cluster.scontrol("-o", "show", "job", check=False)
    match = re.search(r"JobId=(\d+) JobName=e2e-interactive .*JobState=RUNNING", res.stdout)
    return int(match.group(1)) if match else None
