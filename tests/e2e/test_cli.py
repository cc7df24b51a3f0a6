# SPDX-License-Identifier: GPL-2.0-or-later
"""The leftover command on a real one-node cluster (no PrologFlags=contain) whose
plugin runs in dry-run mode: check's table and JSON, exit statuses, node discovery
from slurm.conf, a real sweep, the config command, and that the command decides
what the plugin decides for the same node state.

The command is LEFTOVER_CLI, by default build/release/cli/leftover next to the
plugin's build directory (LEFTOVER_PLUGIN)."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

import jsonschema
import pytest

from harness.e2e_accounts import TEST_UID_MAX, USERS, ensure_test_users, fresh_accounts
from harness.e2e_processes import kill_quietly, wait_until
from harness.plugin_support import (PLUGIN, LogWatch, plugin_config, stepd_pid, summary_regex, swept_with,
                            swept_without, write_config, write_leftover_conf)
from harness.slurm_config import slurm_major_minor
from harness.slurm_jobs import BATCH_STEP

# The fixed test accounts' uids, for the lines and outputs the tests expect.
ALICE_UID = USERS["lo_alice"].uid
BOB_UID = USERS["lo_bob"].uid
PROTECTED_ALICE_UID = USERS["alice"].uid

CLI = Path(os.environ.get("LEFTOVER_CLI", PLUGIN.parent.parent / "cli" / "leftover"))
TOP = Path(__file__).resolve().parents[2]
CHECK_SCHEMA = json.loads((TOP / "man/leftover-check.schema.json").read_text())

# The plugin decides but never kills here, so what a test plants stays for the command.
PLUGIN_CONF = "dry_run: true\nprotected_users: [alice]\n"

# A sweeping test kills only this account's processes (uid_min = uid_max = its uid):
# other engineers' clusters on the same machine plant processes of the shared test users.
# SWEEP_OPERATOR: protected by name in the one test that sweeps both (consecutive) uids.
SWEEP_USER, SWEEP_OPERATOR = fresh_accounts(2)
ONLY_SWEEP_USER = f"uid_min: {SWEEP_USER.uid}\nuid_max: {SWEEP_USER.uid}\ngrace: 1\n"


@pytest.fixture(scope="module")
def conf_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("leftover-cli-conf")


@pytest.fixture(scope="module")
def cluster(make_cluster, conf_dir):
    if not CLI.exists():
        raise AssertionError(f"{CLI} not built (set LEFTOVER_CLI)")
    write_leftover_conf(conf_dir, PLUGIN_CONF)
    return make_cluster(plugin_config(conf_dir))


def cli(cluster, *args: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    """Runs the command as root with the cluster's SLURM_CONF."""
    env = dict(cluster.root_env(), **(env_extra or {})) if cluster else {"PATH": "/usr/bin:/bin"}
    return subprocess.run([str(CLI), *args], env=env, capture_output=True, text=True, timeout=60)


def on_node(cluster, *args: str) -> list[str]:
    """The arguments that name the test node (its name is not the host name)."""
    return [*args, "--node", cluster.node]


def slurm_conf_with(cluster, tmp_path: Path, **settings: str) -> Path:
    """A copy of the cluster's slurm.conf with some of its settings replaced."""
    text = cluster.conf_path.read_text()
    for key, value in settings.items():
        text = re.sub(rf"^{key}=.*$", f"{key}={value}", text, flags=re.MULTILINE)
    path = tmp_path / "slurm.conf"
    path.write_text(text)
    return path


def table_rows(stdout: str) -> dict[int, list[str]]:
    """pid -> [user, uid, pid, comm, decision, reason, detail...] of check's first table."""
    rows = {}
    for line in stdout.split("\n\n")[0].splitlines()[1:]:
        cells = re.split(r"\s{2,}", line.strip())
        rows[int(cells[2])] = cells
    return rows


def wait_batch_step(cluster, job: int) -> None:
    """Until the job's batch step answers on this node: slurmctld says RUNNING a moment
    before its slurmstepd has made the step socket, and until then only slurmctld knows
    the job (an allocation, no job id in the live work)."""
    cluster.wait_job_state(job, ["RUNNING"])
    wait_until(cluster.step_socket(job, BATCH_STEP).exists, 30, f"job {job}'s batch step socket")


def planted_state(cluster):
    """A stray of a finished job (lo_alice), a protected user's process (alice), and a
    user with a running job (lo_bob) who also runs something outside it.
    Returns (stray, protected, busy, job that ended, running job, its release file)."""
    log = LogWatch(cluster)
    running, release = cluster.sbatch_until_released("lo_bob")
    wait_batch_step(cluster, running)
    busy = cluster.spawn_outside_slurm("lo_bob", ["sleep", "600"])
    protected = cluster.spawn_outside_slurm("alice", ["sleep", "600"])
    stray, ended = cluster.plant_stray_in_step("lo_alice")
    cluster.wait_job_done(ended)
    log.wait_for(summary_regex(ended, "epilog"))
    return stray, protected, busy, ended, running, release, log


def test_version_names_the_slurm_release():
    result = cli(None, "--version")
    assert result.returncode == 0
    release = re.escape(slurm_major_minor())
    assert re.fullmatch(rf"leftover 0\.1\.0 built for Slurm {release}\.\d+\n", result.stdout)


def test_outside_a_slurm_node_it_says_so_and_exits_2(cluster, tmp_path):
    missing = tmp_path / "slurm.conf"
    result = cli(cluster, "check", env_extra={"SLURM_CONF": str(missing)})
    assert result.returncode == 2
    assert result.stderr == f"leftover: not a Slurm node: SLURM_CONF names {missing}, which does not exist\n"

    # This host's name is no NodeHostname in the test cluster's slurm.conf.
    result = cli(cluster, "sweep", "--dry-run")
    assert result.returncode == 2
    assert "leftover: error: not a Slurm node: no NodeName in" in result.stderr
    assert "give --node NAME" in result.stderr

    result = cli(cluster, "check", "--json", *on_node(cluster, "--spool-dir", str(tmp_path / "spool")))
    assert result.returncode == 2
    doc = json.loads(result.stdout)
    assert doc["status"] == "error" and doc["exit_status"] == 2
    assert doc["error"]["kind"] == "lookup"
    assert doc["error"]["message"].startswith("not a Slurm node: slurmd's spool directory")


def test_check_table_for_a_stray_a_protected_user_and_a_user_with_a_running_job(cluster, conf_dir):
    stray, protected, busy, _, running, release, _ = planted_state(cluster)
    try:
        result = cli(cluster, *on_node(cluster, "check", "--config", str(conf_dir / "leftover.conf")))
        assert result.returncode == 1, result.stderr
        rows = table_rows(result.stdout)
        assert rows[stray][:6] == ["lo_alice", str(ALICE_UID), str(stray), "sleep", "kill", "stray"]
        assert rows[stray][6] == "no live work on this node"
        assert rows[protected][:6] == ["alice", str(PROTECTED_ALICE_UID), str(protected), "sleep", "keep", "protected"]
        assert rows[protected][6] == "protected: listed in protected_users"
        assert rows[busy][:6] == ["lo_bob", str(BOB_UID), str(busy), "sleep", "keep", "has_live_job"]
        assert re.search(r"^USER\s+UID\s+PROCESSES\s+KILL\s+KEEP\s+REASONS$", result.stdout, re.MULTILINE)
        assert re.search(rf"^live work on this node: users lo_bob \({BOB_UID}\); jobs .*\b{running}\b",
                         result.stdout, re.MULTILINE)
        assert re.search(r"^\d+ stray process(es)? of \d+ users? \(.*lo_alice.*\): a sweep now would kill",
                         result.stdout, re.MULTILINE)
        assert cluster.is_alive(stray), "check must signal nothing"
    finally:
        release.touch()


def test_check_json_for_the_same_node(cluster, conf_dir):
    stray, protected, busy, _, running, release, _ = planted_state(cluster)
    try:
        result = cli(cluster, *on_node(cluster, "check", "--json", "--config", str(conf_dir / "leftover.conf")))
        assert result.returncode == 1, result.stderr
        doc = json.loads(result.stdout)
        assert set(doc) == {"format", "schema_version", "command", "node", "spool_dir", "config", "status",
                            "exit_status", "error", "live_work", "processes", "users", "totals", "cleanup",
                            "controller_host"}
        assert doc["format"] == 1 and doc["schema_version"] == 3 and doc["command"] == "check"
        assert doc["cleanup"] is None  # cleanup is off in this config
        assert doc["controller_host"] is None  # sweep_on_controller_host: true (the harness's default)
        jsonschema.validate(doc, CHECK_SCHEMA)
        assert doc["node"] == cluster.node
        assert doc["spool_dir"] == str(cluster.spool_dir())
        assert doc["config"] == str(conf_dir / "leftover.conf")
        assert doc["status"] == "strays" and doc["exit_status"] == 1 and doc["error"] is None
        assert doc["live_work"]["uids"] == [BOB_UID] and running in doc["live_work"]["jobs"]
        by_pid = {p["pid"]: p for p in doc["processes"]}
        assert by_pid[stray] == {"pid": stray, "uid": ALICE_UID, "user": "lo_alice", "comm": "sleep",
                                 "decision": "kill", "reason": "stray", "detail": "no live work on this node"}
        assert by_pid[protected]["reason"] == "protected"
        assert by_pid[busy] == {"pid": busy, "uid": BOB_UID, "user": "lo_bob", "comm": "sleep",
                                "decision": "keep", "reason": "has_live_job", "detail": None}
        users = {u["user"]: u for u in doc["users"]}
        assert users["lo_alice"]["kill"] >= 1 and users["lo_alice"]["reasons"]["stray"] >= 1
        assert users["lo_bob"]["kill"] == 0 and users["lo_bob"]["reasons"]["has_live_job"] >= 1
        # The batch job's own processes descend from its slurmstepd (Debian's slurmstepd-wlm).
        assert users["lo_bob"]["reasons"]["inside_live_step"] >= 1
        totals = doc["totals"]
        assert totals["processes"] == totals["kill"] + totals["keep"]
        assert totals["not_listed"] == totals["processes"] - len(doc["processes"])
    finally:
        release.touch()


def test_fault_catalogue_a_job_under_a_slurmd_the_check_does_not_know_keeps_everything_below_its_slurmstepd(
        cluster, conf_dir, tmp_path):
    # The command is pointed at a spool dir where this job's slurmd keeps no socket (as for
    # another node's): it sees no live work at all, so only the process tree can tell that
    # the batch script and its child run inside a live step. Debian's slurmstepd is
    # /usr/sbin/slurmstepd-wlm, run by root.
    tag = uuid.uuid4().hex[:8]
    pids, release = cluster.work_dir / f"pids-{tag}", cluster.work_dir / f"release-{tag}"
    job = cluster.sbatch("lo_bob", f"#!/bin/sh\nsleep 600 &\necho $$ $! > {pids}.tmp && mv {pids}.tmp {pids}\n"
                                   f"while [ ! -e {release} ]; do sleep 0.1; done\nkill $!\n")
    outside = cluster.spawn_outside_slurm("lo_bob", ["sleep", "600"])
    other_spool = tmp_path / "spool-of-another-slurmd"
    other_spool.mkdir()
    # PrologFlags=contain: local state is the whole truth, slurmctld is not asked (it
    # would name lo_bob's allocation here and keep everything of lo_bob's).
    slurm_conf = slurm_conf_with(cluster, tmp_path)
    with slurm_conf.open("a") as conf:
        conf.write("PrologFlags=Contain\n")
    try:
        wait_until(pids.exists, 30, "the batch script's pids")
        script, child = (int(pid) for pid in pids.read_text().split())
        stepd = stepd_pid(job, "batch")
        assert int(Path(f"/proc/{script}/stat").read_text().rsplit(")", 1)[1].split()[1]) == stepd
        exe = os.readlink(f"/proc/{stepd}/exe")
        result = cli(cluster, "check", "--node", cluster.node, "--spool-dir", str(other_spool),
                     "--config", str(conf_dir / "leftover.conf"), env_extra={"SLURM_CONF": str(slurm_conf)})
        assert result.returncode == 1, result.stdout + result.stderr
        rows = table_rows(result.stdout)
        for pid, comm in ((script, "slurm_script"), (child, "sleep")):
            assert rows[pid][:6] == ["lo_bob", str(BOB_UID), str(pid), comm, "keep", "inside_live_step"], (exe, rows[pid])
            assert rows[pid][6] == f"slurmstepd {stepd}"
        # The evaluation really is blind to the job: lo_bob's process outside it is a stray.
        assert rows[outside][4:6] == ["kill", "stray"]
        assert "no user has live work on this node" in result.stdout
    finally:
        release.touch()
    assert cluster.wait_job_done(job).state == "COMPLETED"


def test_check_json_validates_against_its_schema_clean_with_strays_and_on_errors(cluster, conf_dir):
    jsonschema.Draft202012Validator.check_schema(CHECK_SCHEMA)
    ensure_test_users([SWEEP_USER])
    clean = write_leftover_conf(conf_dir, ONLY_SWEEP_USER, "schema-clean.conf")
    typo = write_leftover_conf(conf_dir, ONLY_SWEEP_USER + "protected_user: [x]\n", "schema-typo.conf")
    docs = [json.loads(cli(cluster, *on_node(cluster, "check", "--json", "--all", "--config", str(clean))).stdout)]
    stray = cluster.spawn_outside_slurm(SWEEP_USER.name, ["sleep", "600"])
    docs.append(json.loads(cli(cluster, *on_node(cluster, "check", "--json", "--config", str(clean))).stdout))
    docs.append(json.loads(cli(cluster, *on_node(cluster, "check", "--json", "--config", str(typo))).stdout))
    docs.append(json.loads(cli(cluster, "check", "--json", env_extra={"SLURM_CONF": str(conf_dir / "absent")}).stdout))
    assert [doc["status"] for doc in docs] == ["clean", "strays", "error", "error"]
    for doc in docs:
        jsonschema.validate(doc, CHECK_SCHEMA)
    assert cluster.is_alive(stray)
    # The schema holds: a document that breaks it is refused.
    broken = dict(docs[1], status="dirty")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, CHECK_SCHEMA)


def test_check_health_exits_0_clean_1_dirty_2_broken_config_with_one_line(cluster, conf_dir):
    ensure_test_users([SWEEP_USER])
    conf = write_leftover_conf(conf_dir, ONLY_SWEEP_USER, "health.conf")
    typo = write_leftover_conf(conf_dir, ONLY_SWEEP_USER + "protected_user: [x]\n", "health-typo.conf")
    health = lambda path: cli(cluster, *on_node(cluster, "check", "--health", "--config", str(path)))  # noqa: E731
    clean = health(conf)
    assert (clean.returncode, clean.stdout) == (0, "leftover: OK: no stray processes\n"), clean.stderr
    stray = cluster.spawn_outside_slurm(SWEEP_USER.name, ["sleep", "600"])
    dirty = health(conf)
    assert (dirty.returncode, dirty.stdout) == (1, "leftover: ERROR: 1 stray process of 1 user\n"), dirty.stderr
    broken = health(typo)
    assert broken.returncode == 2
    assert broken.stdout.startswith(f"leftover: ERROR: config error: {typo}:4: unknown key 'protected_user'")
    assert broken.stdout.count("\n") == 1
    assert cluster.is_alive(stray), "a health check signals nothing"


def test_check_and_sweep_count_in_the_metrics_file(cluster, conf_dir, tmp_path):
    ensure_test_users([SWEEP_USER])
    metrics = tmp_path / "leftover.prom"  # pytest's tmp_path: root's, 0700
    conf = write_leftover_conf(conf_dir, ONLY_SWEEP_USER + f"metrics_file: {metrics}\n", "metrics.conf")
    stray = cluster.spawn_outside_slurm(SWEEP_USER.name, ["sleep", "600"])
    assert cli(cluster, *on_node(cluster, "check", "--health", "--config", str(conf))).returncode == 1
    swept = cli(cluster, *on_node(cluster, "sweep", "--no-slew", "--config", str(conf)))
    assert swept.returncode == 0, swept.stderr
    cluster.wait_gone(stray, 10)
    text = metrics.read_text()
    assert 'leftover_evaluations_total{trigger="check"} 1\n' in text
    assert 'leftover_evaluations_total{trigger="sweep"} 1\n' in text
    assert 'leftover_processes_killed_total{signal="SIGTERM"} 1\n' in text


def test_check_exits_0_when_nothing_would_be_killed(cluster, conf_dir):
    # Only lo_bob's uid is in range, and lo_bob has a running job here.
    conf = write_leftover_conf(conf_dir, f"uid_min: {BOB_UID}\nuid_max: {BOB_UID}\n", "bob-only.conf")
    running, release = cluster.sbatch_until_released("lo_bob")
    try:
        cluster.wait_job_state(running, ["RUNNING"])
        busy = cluster.spawn_outside_slurm("lo_bob", ["sleep", "600"])
        result = cli(cluster, *on_node(cluster, "check", "--config", str(conf)))
        assert result.returncode == 0, result.stdout + result.stderr
        assert table_rows(result.stdout)[busy][4:6] == ["keep", "has_live_job"]
        assert "no strays: a sweep now would kill nothing" in result.stdout
    finally:
        release.touch()


def test_check_and_sweep_dry_run_decide_what_the_plugin_decided(cluster, conf_dir):
    stray, protected, busy, ended, _, release, log = planted_state(cluster)
    try:
        planted = {stray, protected, busy}
        plugin_kills = {int(pid) for pid in re.findall(r"leftover: would kill pid=(\d+) ", log.text())} & planted
        assert plugin_kills == {stray}

        conf = str(conf_dir / "leftover.conf")
        checked = json.loads(cli(cluster, *on_node(cluster, "check", "--json", "--config", conf)).stdout)
        check_kills = {p["pid"] for p in checked["processes"] if p["decision"] == "kill"} & planted

        swept = cli(cluster, *on_node(cluster, "sweep", "--dry-run", "--no-slew", "--config", conf))
        assert swept.returncode == 1, swept.stderr  # strays would be killed
        sweep_kills = {int(pid) for pid in re.findall(r"leftover: would kill pid=(\d+) ", swept.stderr)} & planted
        assert re.search(rf"^leftover: node sweep: dry run: {swept_with('lo_alice')}; would kill \d+;", swept.stderr,
                         re.MULTILINE)

        assert check_kills == sweep_kills == plugin_kills
        assert cluster.is_alive(stray), "a dry run signals nothing"
    finally:
        release.touch()


def test_sweep_kills_a_stray_and_exits_0(cluster, conf_dir):
    ensure_test_users([SWEEP_USER])
    conf = write_leftover_conf(conf_dir, ONLY_SWEEP_USER, "sweep.conf")
    stray = cluster.spawn_outside_slurm(SWEEP_USER.name, ["sleep", "600"])
    result = cli(cluster, *on_node(cluster, "sweep", "--no-slew", "--config", str(conf)))
    assert result.returncode == 0, result.stderr
    cluster.wait_gone(stray, 10)
    assert (f"leftover: SIGTERM pid={stray} user={SWEEP_USER.name} uid={SWEEP_USER.uid} comm='sleep' "
            "reason=stray (no live work on this node)") in result.stderr
    assert "leftover: waiting up to 1.0 s for 1 process(es) to end after SIGTERM" in result.stderr
    assert re.search(rf"^leftover: node sweep: {swept_with(SWEEP_USER.name)}; killed [1-9]", result.stderr, re.MULTILINE)

    # Nothing left: a second sweep has nothing to do.
    again = cli(cluster, *on_node(cluster, "sweep", "--no-slew", "--config", str(conf)))
    assert again.returncode == 0, again.stderr
    assert re.search(rf"^leftover: node sweep: {swept_without(SWEEP_USER.name)};", again.stderr, re.MULTILINE)


def test_fault_catalogue_two_sweeps_at_once_both_finish_and_kill_only_the_stray(cluster, conf_dir):
    # Two sweeps of one node at the same moment (the periodic sweep and an Epilog script,
    # say): both end, the strays go, and the protected user in the swept range stays.
    ensure_test_users([SWEEP_USER, SWEEP_OPERATOR])
    conf = write_leftover_conf(conf_dir, f"uid_min: {SWEEP_USER.uid}\nuid_max: {SWEEP_OPERATOR.uid}\ngrace: 1\n"
                                         f"protected_users: [{SWEEP_OPERATOR.name}]\n", "twice.conf")
    strays = {cluster.spawn_outside_slurm(SWEEP_USER.name, ["sleep", "600"]),
              cluster.spawn_outside_slurm(SWEEP_USER.name, ["sh", "-c", "trap '' TERM; sleep 600"])}
    operator = cluster.spawn_outside_slurm(SWEEP_OPERATOR.name, ["sleep", "600"])
    argv = [str(CLI), *on_node(cluster, "sweep", "--no-slew", "--config", str(conf))]
    sweeps = [subprocess.Popen(argv, env=cluster.root_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True) for _ in range(2)]
    results = [(sweep.wait(timeout=60), sweep.stderr.read()) for sweep in sweeps]
    for returncode, stderr in results:
        assert returncode == 0, stderr
        assert re.search(r"^leftover: node sweep: .*; lookup errors 0;", stderr, re.MULTILINE), stderr
        assert f"user={SWEEP_OPERATOR.name}" not in stderr
    for stray in strays:
        cluster.wait_gone(stray, 10)
    assert cluster.is_alive(operator)


def test_sweep_waits_out_slew_and_says_so(cluster, conf_dir):
    conf = write_leftover_conf(conf_dir, ONLY_SWEEP_USER + "slew: 0.2\nslew_max: 0.2\n", "slew.conf")
    result = cli(cluster, *on_node(cluster, "sweep", "--dry-run", "--config", str(conf)))
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith("leftover: waiting 0.2 s (slew) before the sweep; --no-slew starts at once\n")


def test_a_config_error_exits_2_and_kills_nothing(cluster, conf_dir):
    ensure_test_users([SWEEP_USER])
    conf = write_leftover_conf(conf_dir, ONLY_SWEEP_USER + "protected_user: [x]\n", "typo.conf")
    stray = cluster.spawn_outside_slurm(SWEEP_USER.name, ["sleep", "600"])
    for command in ("check", "sweep"):
        result = cli(cluster, *on_node(cluster, command, "--config", str(conf), *(["--no-slew"] if command == "sweep" else [])))
        assert result.returncode == 2
        assert f"config error: {conf}:4: unknown key 'protected_user'" in result.stderr
    assert cluster.is_alive(stray)


def test_node_name_and_spool_dir_come_from_slurm_conf_as_slurmd_finds_them(cluster, tmp_path, conf_dir):
    # A slurm.conf in which this host is a node, with %n in SlurmdSpoolDir: no flags needed.
    # The test node's slurmd stands in for lo-self's: the command needs a running slurmd.
    host = socket.gethostname().split(".")[0]
    slurm_conf = slurm_conf_with(cluster, tmp_path, SlurmdSpoolDir=f"{tmp_path}/spool-%n",
                                 SlurmdPidFile=str(cluster.dir / "run" / f"slurmd-{cluster.node}.pid"))
    with slurm_conf.open("a") as conf:
        conf.write(f"NodeName=lo-self NodeHostname={host} NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN\n")
    (tmp_path / "spool-lo-self").mkdir()
    # The test node's slurmd runs on this host too (-N): its %n spool dir must exist.
    (tmp_path / f"spool-{cluster.node}").symlink_to(cluster.spool_dir())
    nobody_in_range = write_leftover_conf(conf_dir, f"uid_min: {TEST_UID_MAX}\nuid_max: {TEST_UID_MAX}\n",
                                          "nobody.conf")
    result = cli(cluster, "check", "--json", "--config", str(nobody_in_range),
                 env_extra={"SLURM_CONF": str(slurm_conf)})
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["node"] == "lo-self"
    assert doc["spool_dir"] == f"{tmp_path}/spool-lo-self"


@pytest.mark.parametrize("node_args", [[], ["--node", "lo-wrong"]], ids=["default node", "wrong --node"])
def test_fault_catalogue_a_live_step_of_another_slurmd_on_this_host_keeps_its_user(cluster, conf_dir, node_args):
    # A slurm.conf in which this host is node lo-self (the command's own pick) and the
    # test node lo-n1 is on another host (NodeAddr not of this one). Yet its slurmd runs
    # here, started with -N lo-n1: the command must read lo-n1's step sockets too
    # (SlurmdSpoolDir with %n; lo-n1's expands to a link to the cluster's real spool).
    top = Path(tempfile.mkdtemp(prefix="lo4-", dir="/tmp"))  # short: socket paths are limited
    try:
        host = socket.gethostname().split(".")[0]
        text = re.sub(r"^NodeName=.*$", f"NodeName={cluster.node} NodeAddr=198.51.100.254 CPUs=4 State=UNKNOWN",
                      cluster.conf_path.read_text(), flags=re.MULTILINE)
        text = re.sub(r"^SlurmdSpoolDir=.*$", f"SlurmdSpoolDir={top}/%n", text, flags=re.MULTILINE)
        text = re.sub(r"^SlurmdPidFile=.*$", f"SlurmdPidFile={cluster.dir / 'run' / f'slurmd-{cluster.node}.pid'}",
                      text, flags=re.MULTILINE)
        text += f"NodeName=lo-self NodeHostname={host} NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN\n"
        (top / "slurm.conf").write_text(text)
        (top / "lo-self").mkdir()
        (top / "lo-wrong").mkdir()
        (top / cluster.node).symlink_to(cluster.spool_dir())

        conf = write_leftover_conf(conf_dir, f"uid_min: {BOB_UID}\nuid_max: {BOB_UID}\n", "bob-only.conf")
        running, release = cluster.sbatch_until_released("lo_bob")
        try:
            wait_batch_step(cluster, running)
            busy = cluster.spawn_outside_slurm("lo_bob", ["sleep", "600"])
            result = cli(cluster, "check", "--json", "--config", str(conf), *node_args,
                         env_extra={"SLURM_CONF": str(top / "slurm.conf")})
            doc = json.loads(result.stdout)
            assert doc["node"] == (node_args[1] if node_args else "lo-self")
            by_pid = {p["pid"]: p for p in doc["processes"]}
            assert (by_pid[busy]["decision"], by_pid[busy]["reason"]) == ("keep", "has_live_job"), result.stdout
            assert running in doc["live_work"]["jobs"]
            assert result.returncode == 0, result.stdout + result.stderr
        finally:
            release.touch()
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_fault_catalogue_a_step_socket_of_an_unknown_node_is_a_lookup_error(cluster, conf_dir):
    # A socket named as a step of node lo-ghost, which no slurmd here runs as and
    # slurm.conf does not put on this host: its steps' users would look like strays.
    conf = write_leftover_conf(conf_dir, f"uid_min: {BOB_UID}\nuid_max: {BOB_UID}\n", "bob-only.conf")
    ghost = cluster.spool_dir() / "lo-ghost_999.0"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(ghost))
    try:
        result = cli(cluster, *on_node(cluster, "check", "--json", "--config", str(conf)))
        assert result.returncode == 2, result.stdout + result.stderr
        error = json.loads(result.stdout)["error"]
        assert error["kind"] == "lookup"
        assert error["message"].startswith(f"slurmstepd socket {ghost} is of node lo-ghost, which is none of the "
                                           f"nodes known to run on this host ({cluster.node})")
    finally:
        ghost.unlink()


def test_check_on_a_host_where_slurmctld_runs_says_a_sweep_kills_nothing_there(cluster, conf_dir):
    # The test cluster's slurmctld runs on this host: without sweep_on_controller_host the
    # command's sweep kills nothing, and check says so (exit 0) while it lists the stray.
    ensure_test_users([SWEEP_USER])
    conf = write_leftover_conf(conf_dir, ONLY_SWEEP_USER + "sweep_on_controller_host: false\n", "ctld.conf")
    stray = cluster.spawn_outside_slurm(SWEEP_USER.name, ["sleep", "600"])
    try:
        why = (r"(slurm\.conf names this host as SlurmctldHost \(\S+\)|slurmctld runs on this host \(pid [\d, ]+\))")
        result = cli(cluster, *on_node(cluster, "check", "--json", "--config", str(conf)))
        assert result.returncode == 0, result.stderr
        doc = json.loads(result.stdout)
        jsonschema.validate(doc, CHECK_SCHEMA)
        assert doc["status"] == "clean" and re.fullmatch(why, doc["controller_host"]), doc["controller_host"]
        assert any(p["pid"] == stray and p["decision"] == "kill" for p in doc["processes"])
        health = cli(cluster, *on_node(cluster, "check", "--health", "--config", str(conf)))
        assert health.returncode == 0
        assert re.fullmatch(rf"leftover: OK: {why}: a sweep here kills nothing\n", health.stdout), health.stdout
        swept = cli(cluster, *on_node(cluster, "sweep", "--no-slew", "--config", str(conf)))
        assert swept.returncode == 0, swept.stderr
        assert re.search(rf"^leftover: {why}: a sweep on a host where slurmctld runs kills and removes nothing "
                         r"\(sweep_on_controller_host: true sweeps it\)$", swept.stderr, re.MULTILINE), swept.stderr
        assert cluster.is_alive(stray)
    finally:
        kill_quietly(stray)


def test_without_its_running_slurmd_it_decides_nothing_and_exits_2(cluster, tmp_path, conf_dir):
    # slurmd's pid (SlurmdPidFile) names the slurmd whose pid namespace the command must share.
    conf = str(write_leftover_conf(conf_dir, ONLY_SWEEP_USER, "sweep.conf"))
    missing = tmp_path / "slurmd.pid"
    env = {"SLURM_CONF": str(slurm_conf_with(cluster, tmp_path, SlurmdPidFile=str(missing)))}
    result = cli(cluster, *on_node(cluster, "check", "--json", "--config", conf), env_extra=env)
    assert result.returncode == 2
    error = json.loads(result.stdout)["error"]
    assert error["kind"] == "lookup"
    assert error["message"] == f"slurmd's pid file {missing} does not exist: slurmd does not run on this node"

    # A stale pid file: its pid now names another program (here: this test).
    stale = tmp_path / "stale.pid"
    stale.write_text(f"{os.getpid()}\n")
    env = {"SLURM_CONF": str(slurm_conf_with(cluster, tmp_path, SlurmdPidFile=str(stale)))}
    result = cli(cluster, *on_node(cluster, "sweep", "--dry-run", "--no-slew", "--config", conf), env_extra=env)
    assert result.returncode == 2
    assert re.search(rf"^leftover: error: lookup error: pid {os.getpid()} in /proc runs \S+, not slurmd or slurmstepd",
                     result.stderr, re.MULTILINE), result.stderr


def test_fault_catalogue_in_a_foreign_pid_namespace_the_command_refuses_and_kills_nothing(cluster, conf_dir):
    # Run in a pid namespace of its own, the command sees neither slurmd nor the stray as
    # they are: it must refuse to decide.
    ensure_test_users([SWEEP_USER])
    conf = write_leftover_conf(conf_dir, ONLY_SWEEP_USER, "foreign.conf")
    stray = cluster.spawn_outside_slurm(SWEEP_USER.name, ["sleep", "600"])
    try:
        result = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", str(CLI),
                                 *on_node(cluster, "sweep", "--no-slew", "--config", str(conf))],
                                env=cluster.root_env(), capture_output=True, text=True, timeout=60)
        assert result.returncode == 2, result.stderr
        assert re.search(r"^leftover: error: lookup error: ", result.stderr, re.MULTILINE), result.stderr
        assert "SIGTERM" not in result.stderr
        assert cluster.is_alive(stray)
    finally:
        kill_quietly(stray)


def test_config_command_on_valid_invalid_and_untrusted_files(conf_dir):
    users = write_config(conf_dir, "# operators\nje.kim\ns.shin\n", "localusers.backup")
    valid = write_leftover_conf(conf_dir, f'{{"protected_users": ["alice"], "protected_users_files": ["{users}"], '
                                   f'"slew": 10, "slew_max": 40}}\n', "valid.conf")
    result = cli(None, "config", "--config", str(valid))
    assert result.returncode == 0, result.stderr
    assert f"{valid}: read, trusted, valid" in result.stdout
    assert re.search(r"^slew_max\s+40\s+unset \(= slew\)$", result.stdout, re.MULTILINE)
    assert re.search(r"^grace\s+5\s+5$", result.stdout, re.MULTILINE)
    assert f"{users}: read, trusted, 2 names" in result.stdout

    invalid = write_leftover_conf(conf_dir, '{"grace": 31}\n', "invalid.conf")
    result = cli(None, "config", "--config", str(invalid))
    assert result.returncode == 2
    assert f"leftover: config error: {invalid}:1: key 'grace': expected a number of seconds from 0 to 30" in result.stderr

    untrusted = write_leftover_conf(conf_dir, "{}\n", "untrusted.conf")
    untrusted.chmod(0o666)
    result = cli(None, "config", "--config", str(untrusted))
    assert result.returncode == 2
    assert "must not be writable by group or others" in result.stderr

    writable_users = write_config(conf_dir, "alice\n", "writable.list")
    writable_users.chmod(0o664)
    with_bad_list = write_leftover_conf(conf_dir, f"protected_users_files: [{writable_users}]\n", "badlist.conf")
    result = cli(None, "config", "--config", str(with_bad_list))
    assert result.returncode == 2
    assert f"{writable_users}: not trusted: {writable_users}: has mode 0664" in result.stdout


@pytest.mark.parametrize("page", ["leftover.8", "leftover.conf.5"])
def test_man_pages_render_without_warnings(page):
    if shutil.which("man") is None:
        pytest.skip("man is not installed (apt-get install man-db)")
    result = subprocess.run(["man", "--warnings", "-l", str(TOP / "man" / page)], capture_output=True, text=True,
                            env={"PATH": "/usr/bin:/bin", "MANWIDTH": "80", "LC_ALL": "C.UTF-8", "MANPAGER": "cat"},
                            timeout=60)
    assert result.returncode == 0
    assert result.stderr == ""
    assert "NAME" in result.stdout and "SEE ALSO" in result.stdout
