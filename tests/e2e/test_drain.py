# SPDX-License-Identifier: GPL-2.0-or-later
"""Taking the node out of service when it cannot be cleaned, on a real one-node cluster
(PrologFlags=contain: local state tells who has work, slurmctld is asked only to drain).

A stray that SIGKILL cannot end is one in a frozen cgroup v1 freezer group: the signal
stays pending until the group is thawed (the process shows state D meanwhile). With
drain_on_survivors a job epilog that finds it still alive UnkillableStepTimeout after an
earlier sweep's SIGKILL drains the node with a reason that names the user and the count;
one released before that drains nothing; without the key, or in a dry run, nothing is
kept for a later drain; a slurmctld that does not answer costs the epilog its bounded
request and nothing more. `leftover check --health
--failures 3 --drain` drains at the third failure in a row. And a stray that was stopped
gets SIGTERM and, continued, the chance to act on it before SIGKILL.

Every sweep here is limited to one account of its own (uid_min = uid_max), so other
engineers' processes of the shared test users are never touched."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from harness.e2e_accounts import ensure_test_users, fresh_account
from harness.e2e_processes import kill_quietly, wait_until
from harness.plugin_support import (  # noqa: F401 (conf_dir, jobs_done_...: fixtures)
    PLUGIN, LogWatch, conf_dir, jobs_done_after_each_test, plugin_config, still_alive_after, summary_regex,
    write_config)

CLI = Path(os.environ.get("LEFTOVER_CLI", PLUGIN.parent.parent / "cli" / "leftover"))
FREEZER = Path("/sys/fs/cgroup/freezer")
DRAIN_USER = fresh_account()
# The test cluster's slurmctld runs on this host: sweep it all the same.
ONLY_DRAIN_USER = f"uid_min: {DRAIN_USER.uid}\nuid_max: {DRAIN_USER.uid}\nsweep_on_controller_host: true\n"
REASON = rf"leftover: 1 process of {DRAIN_USER.name} survived SIGKILL \(D\)"
# This cluster's UnkillableStepTimeout: a survivor drains the node only when a sweep finds it
# alive that long after an earlier sweep's SIGKILL. Below Slurm's default (60 s, which the
# unit tests hold) to keep the module short; it also shows the bound is slurm.conf's.
UNKILLABLE = 20


@pytest.fixture(scope="module")
def cluster(make_cluster, conf_dir):
    if not FREEZER.is_dir():
        pytest.skip("no cgroup v1 freezer hierarchy here")
    ensure_test_users([DRAIN_USER])
    write_config(conf_dir, ONLY_DRAIN_USER)
    return make_cluster(plugin_config(conf_dir, prolog_flags="contain",
                                      extra_conf=(f"UnkillableStepTimeout={UNKILLABLE}",)))


# A step end that meets the frozen stray lasts its whole evaluation deadline (grace +
# slurm_timeout + 1 s). These keep it at 2.5 s, well under the 3.67 s after which Slurm 24.11
# may leave the job COMPLETING for UnkillableStepTimeout (60 s) and drain the node "Kill task
# failed": there slurmd (slurmd/req.c, _rpc_terminate_job) and the extern step
# (slurmstepd/mgr.c, _spawn_job_container) both wait for the job's other steps in
# pause_for_job_completion (slurmd_common.c) with the same max_time MAX(KillWait, 5) and the
# same sleeps, so when a step is still ending at their last check (3.67 s), both give up at
# 4.67 s in lock-step: slurmd's REQUEST_STEP_TERMINATE to the extern step (slurmstepd/req.c,
# _handle_terminate) starts a new step_terminate_monitor thread just as the extern step's
# step_terminate_monitor_stop (step_terminate_monitor.c) has unlocked and joins the static
# tid, now the new monitor's, which waits its full timeout. 22.05's extern step does not wait
# for the other steps; 25.05.1 fixed the monitor (Slurm commit 9d4a9dbadd, "Correctly wait
# for step terminate monitor thread"; 24.11.7 still has the race).
STEP_END_BOUND = "grace: 0\nslurm_timeout: 1.5\n"


@pytest.fixture
def config(conf_dir):
    """config(text): the plugin reads it at the next step end; the sweep is DRAIN_USER's alone
    (grace 0 and slurm_timeout 1.5 s unless the text sets grace)."""
    return lambda text: write_config(conf_dir, ONLY_DRAIN_USER + ("" if "grace:" in text else STEP_END_BOUND) + text)


def node_state(cluster) -> tuple[str, str]:
    """(State, Reason) as scontrol shows them."""
    out = cluster.scontrol("-o", "show", "node", cluster.node).stdout
    state = re.search(r"\bState=(\S+)", out).group(1)
    reason = re.search(r"\bReason=(.*?)(?: \[[^\]]*\])?(?= \w+=|$)", out)
    return state, reason.group(1) if reason else ""


def sinfo_reasons(cluster) -> str:
    """`sinfo -R` with the whole reason: reason|state|nodes per line."""
    res = subprocess.run(["sinfo", "-R", "-h", "-o", "%200E|%T|%N"], env=cluster.root_env(), capture_output=True,
                         text=True, timeout=20, check=True)
    return res.stdout


def resume(cluster) -> None:
    """Resumes the node and waits until it can take a job (on a busy machine slurmd may
    answer slurmctld's ping late, and a node not responding takes no job either)."""
    if "DRAIN" in node_state(cluster)[0]:
        cluster.scontrol("update", f"nodename={cluster.node}", "state=resume")
    wait_until(lambda: not re.search(r"DRAIN|DOWN|NOT_RESPONDING|\*", node_state(cluster)[0]), 60,
               "the node to take jobs again")


@pytest.fixture(autouse=True)
def node_resumed_after_each_test(cluster):
    """A test that drained the node gives it back (after thaw) for the next one."""
    yield
    resume(cluster)


class Frozen:
    """DRAIN_USER's stray in a frozen freezer group: SIGKILL stays pending until thawed."""

    def __init__(self, cluster):
        self.group = FREEZER / f"leftover-e2e-{uuid.uuid4().hex[:8]}"
        self.group.mkdir()
        self.pid = cluster.spawn_outside_slurm(DRAIN_USER.name, ["sleep", "600"])
        (self.group / "cgroup.procs").write_text(f"{self.pid}\n")
        (self.group / "freezer.state").write_text("FROZEN\n")
        wait_until(lambda: (self.group / "freezer.state").read_text().strip() == "FROZEN", 10, "the group to freeze")

    def thaw(self) -> None:
        (self.group / "freezer.state").write_text("THAWED\n")

    def remove(self) -> None:
        self.thaw()
        kill_quietly(self.pid)
        wait_until(lambda: not (self.group / "cgroup.procs").read_text().strip(), 10, "the frozen group to empty")
        self.group.rmdir()


@pytest.fixture
def frozen(cluster):
    stray = Frozen(cluster)
    yield stray
    stray.remove()


def end_a_job(cluster) -> tuple[int, LogWatch]:
    """One job of lo_alice's ends; returns its id once its epilog's summary is logged."""
    log = LogWatch(cluster)
    _, job = cluster.srun("lo_alice", ["/bin/true"])
    assert cluster.wait_job_done(job).state == "COMPLETED"
    log.wait_for(summary_regex(job, "epilog"), 60)
    return job, log


def survivor_kept_for_later(cluster, frozen) -> float:
    """A job ends: its epilog's SIGKILL does not end the frozen stray, which is kept for a
    later sweep and drains nothing yet. Returns when (time.monotonic()) that was logged."""
    job, log = end_a_job(cluster)
    log.wait_for(rf"leftover: job {job} epilog: pid {frozen.pid} \({DRAIN_USER.name}, D, \d+ s after SIGKILL\) "
                 rf"outlived SIGKILL: node {cluster.node} is drained if one is still alive {UNKILLABLE} s after its "
                 r"SIGKILL \(UnkillableStepTimeout\) when a later sweep looks$")
    seen = time.monotonic()
    log.assert_absent(r"leftover: .*(?:drained:|drain of node)")
    assert "DRAIN" not in node_state(cluster)[0]
    assert (cluster.spool_dir(cluster.node) / f"leftover-survivors-{cluster.node}").exists()
    return seen


def wait_past_the_bound(since: float) -> None:
    """Until UnkillableStepTimeout has passed since `since`: the workload's own timing."""
    wait_until(lambda: time.monotonic() >= since + UNKILLABLE + 1, UNKILLABLE + 5, "UnkillableStepTimeout to pass",
               interval=0.5)


def test_fault_catalogue_a_stray_held_in_d_past_unkillable_step_timeout_drains_the_node_naming_user_and_count(
        cluster, config, frozen):
    config("drain_on_survivors: true\n")
    since = survivor_kept_for_later(cluster, frozen)
    wait_past_the_bound(since)
    job, log = end_a_job(cluster)
    log.wait_for(rf"leftover: warning: job {job} epilog: node {cluster.node} drained: {REASON}$")
    assert cluster.is_alive(frozen.pid), "a frozen process outlives SIGKILL"
    assert re.search(rf"^{REASON}\s*\|drained\|{cluster.node}$", sinfo_reasons(cluster), re.MULTILINE), \
        sinfo_reasons(cluster)
    # The step end before it swept and found the survivor too, and left the drain to the epilog.
    log.assert_absent(rf"leftover: step {job}\.\S+: node .* drained")


def test_fault_catalogue_a_stray_released_5_s_after_sigkill_drains_nothing_then_or_later(cluster, config, frozen):
    config("drain_on_survivors: true\n")
    since = survivor_kept_for_later(cluster, frozen)
    # Held 5 s in D (a large sync, the exit of a huge address space), then it dies of the pending SIGKILL.
    wait_until(lambda: time.monotonic() >= since + 5, 10, "5 s in D", interval=0.2)
    frozen.thaw()
    cluster.wait_gone(frozen.pid, 20)
    wait_past_the_bound(since)
    job, log = end_a_job(cluster)
    log.assert_absent(r"leftover: .*(?:drained:|drain of node|outlived SIGKILL)")
    assert "DRAIN" not in node_state(cluster)[0]
    assert not (cluster.spool_dir(cluster.node) / f"leftover-survivors-{cluster.node}").exists()


def sweep_command(cluster, config_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(CLI), "sweep", "--no-slew", "--config", str(config_path), "--node", cluster.node],
                          env=cluster.root_env(), capture_output=True, text=True, timeout=60)


def test_a_drained_node_keeps_its_reason_and_is_drained_again_only_after_a_resume(cluster, config, frozen):
    config_path = config("drain_on_survivors: true\n")
    wait_past_the_bound(survivor_kept_for_later(cluster, frozen))
    # The command's sweep finds it still alive: it drains the node (it reads UnkillableStepTimeout too).
    res = sweep_command(cluster, config_path)
    assert res.returncode == 1, res.stderr
    assert re.search(rf"node sweep: node {cluster.node} drained: {REASON}$", res.stderr, re.MULTILINE), res.stderr
    # The next sweep finds it again: the node is drained already, one drain per state change.
    res = sweep_command(cluster, config_path)
    assert res.returncode == 1, res.stderr
    assert re.search(rf"node sweep: node {cluster.node} is \S*DRAIN\S* already \(reason '{REASON}'\): "
                     r"its reason kept, no drain requested", res.stderr), res.stderr
    # An admin's reason stays too.
    cluster.scontrol("update", f"nodename={cluster.node}", "state=resume")
    cluster.scontrol("update", f"nodename={cluster.node}", "state=drain", "reason=admin: bad DIMM")
    res = sweep_command(cluster, config_path)
    assert "its reason kept" in res.stderr, res.stderr
    assert node_state(cluster)[1] == "admin: bad DIMM"
    # Thawed, the stray dies; resumed, the next job end leaves the node up.
    frozen.thaw()
    cluster.wait_gone(frozen.pid, 20)
    resume(cluster)
    job, log = end_a_job(cluster)
    log.assert_absent(r"drained:")
    assert "DRAIN" not in node_state(cluster)[0]


@pytest.mark.parametrize("setting", ["drain_on_survivors: false\n", "drain_on_survivors: true\ndry_run: true\n"])
def test_without_the_key_or_in_a_dry_run_the_node_stays_up(cluster, config, frozen, setting):
    config(setting)
    job, log = end_a_job(cluster)
    if "dry_run" not in setting:
        log.wait_for(rf"leftover: warning: survived the sweep: pid={frozen.pid} user={DRAIN_USER.name}")
    # Nothing kept for a later sweep either (with the key, survivor_kept_for_later sees both).
    log.assert_absent(r"leftover: .*(?:drained:|drain of node|outlived SIGKILL)")
    assert not (cluster.spool_dir(cluster.node) / f"leftover-survivors-{cluster.node}").exists()
    assert "DRAIN" not in node_state(cluster)[0]
    assert cluster.is_alive(frozen.pid)


def test_a_slurmctld_that_does_not_answer_costs_the_epilog_its_bounded_request_and_nothing_more(
        cluster, config, frozen):
    config("drain_on_survivors: true\n")
    wait_past_the_bound(survivor_kept_for_later(cluster, frozen))
    log = LogWatch(cluster)
    release = cluster.work_dir / f"release-{uuid.uuid4().hex[:8]}"
    job = cluster.sbatch("lo_alice", f"#!/bin/sh\nwhile [ ! -e {release} ]; do sleep 0.1; done\n")
    cluster.wait_job_state(job, ["RUNNING"])
    release.touch()
    # The epilog has sent SIGKILL (its lines carry no step, unlike the extern step's before it) and
    # waits for the frozen stray until its deadline: slurmctld now stops answering, before the
    # epilog asks it to drain.
    log.wait_for(rf"^\[[^\]]+\] leftover: SIGKILL pid={frozen.pid} ", 60)
    ctld = cluster._slurmctld.pid
    os.kill(ctld, signal.SIGSTOP)
    try:
        line = log.wait_for(rf"leftover: job {job} epilog: drain of node {cluster.node} failed: asking slurmctld: "
                            r".*did not finish before the deadline; killed; the node stays as it is$", 60)
        summary = log.wait_for(summary_regex(job, "epilog"), 30)
        assert line
        # grace 0 + slurm_timeout 1.5 + 1 for the sweep, slurm_timeout 1.5 for the drain: a hang detector only.
        assert int(re.search(r"(\d+) ms$", summary.group(0)).group(1)) < 30000, summary.group(0)
    finally:
        os.kill(ctld, signal.SIGCONT)
    assert cluster.wait_job_done(job).state == "COMPLETED"
    assert "DRAIN" not in node_state(cluster)[0]


def health(cluster, config_path: Path, state_dir: Path) -> subprocess.CompletedProcess:
    """`leftover-health` (HealthCheckProgram's name for `check --health --failures 3 --drain`)."""
    return subprocess.run([str(CLI.parent / "leftover-health"), "--state-dir", str(state_dir),
                           "--config", str(config_path), "--node", cluster.node],
                          env=cluster.root_env(), capture_output=True, text=True, timeout=60)


def test_health_check_drains_at_the_third_failure_in_a_row_and_a_pass_clears_the_streak(
        cluster, config, tmp_path):
    config_path = config("")
    state_dir = tmp_path / "state"
    stray = cluster.spawn_outside_slurm(DRAIN_USER.name, ["sleep", "600"])
    for n in (1, 2):
        res = health(cluster, config_path, state_dir)
        assert res.returncode == 0, res.stderr
        assert res.stdout == (f"leftover: ERROR: 1 stray process of 1 user ({n} of 3 failed checks in a row "
                              "before it fails)\n")
        assert "DRAIN" not in node_state(cluster)[0]
    res = health(cluster, config_path, state_dir)
    assert res.returncode == 1, res.stderr
    reason = "leftover: ERROR: 1 stray process of 1 user (3 failed checks in a row)"
    assert res.stdout == reason + "\n"
    assert f"health check: node {cluster.node} drained: {reason}" in res.stderr
    assert re.search(rf"^{re.escape(reason)}\s*\|drained\|{cluster.node}$", sinfo_reasons(cluster), re.MULTILINE)
    # The stray gone, the next check passes and clears the streak.
    kill_quietly(stray)
    cluster.wait_gone(stray, 20)
    res = health(cluster, config_path, state_dir)
    assert (res.returncode, res.stdout) == (0, "leftover: OK: no stray processes\n"), res.stderr
    assert not (state_dir / "health-failures").exists()
    resume(cluster)
    stray = cluster.spawn_outside_slurm(DRAIN_USER.name, ["sleep", "600"])
    res = health(cluster, config_path, state_dir)
    assert res.returncode == 0 and "(1 of 3 failed checks in a row" in res.stdout, res.stdout + res.stderr
    assert "DRAIN" not in node_state(cluster)[0]
    kill_quietly(stray)


def test_fault_catalogue_leftover_health_as_shipped_with_dry_run_fails_the_check_and_never_drains(
        cluster, config, tmp_path):
    config_path = config("dry_run: true\n")
    state_dir = tmp_path / "state"
    stray = cluster.spawn_outside_slurm(DRAIN_USER.name, ["sleep", "600"])
    try:
        for n in (1, 2):
            assert health(cluster, config_path, state_dir).returncode == 0
        for n in (3, 4):
            res = health(cluster, config_path, state_dir)
            assert res.returncode == 1, res.stderr
            assert res.stdout == f"leftover: ERROR: 1 stray process of 1 user ({n} failed checks in a row)\n"
            said = f"health check: node {cluster.node} not drained: dry_run is set"
            assert (said in res.stderr) == (n == 3), res.stderr  # once, when the streak reaches 3
            assert f"node {cluster.node} drained:" not in res.stderr and "DRAIN" not in node_state(cluster)[0]
        assert cluster.is_alive(stray)
    finally:
        kill_quietly(stray)


def test_a_stopped_stray_gets_sigterm_runs_its_term_handler_and_exits_before_grace_ends(cluster, config):
    config("grace: 10\n")
    tag = uuid.uuid4().hex[:8]
    pid_file, done_file = cluster.work_dir / f"stopped-{tag}.pid", cluster.work_dir / f"stopped-{tag}.done"
    shell = cluster.spawn_outside_slurm(DRAIN_USER.name, [
        "/bin/sh", "-c", f"trap 'echo term > {done_file}; exit 0' TERM; echo $$ > {pid_file}; "
                         "while :; do sleep 0.1; done"])
    wait_until(lambda: pid_file.exists() and pid_file.read_text().strip() == str(shell), 10, "the stray's pid file")
    os.kill(shell, signal.SIGSTOP)
    # Stopped, it stays: a SIGTERM alone would wait until something continues it.
    assert still_alive_after(cluster, shell, 0.5) and not done_file.exists()
    job, log = end_a_job(cluster)
    log.wait_for(rf"leftover: SIGTERM pid={shell} user={DRAIN_USER.name}")
    cluster.wait_gone(shell, 20)
    assert done_file.read_text() == "term\n", "its TERM handler ran"
    log.assert_absent(rf"SIGKILL pid={shell}\b")
