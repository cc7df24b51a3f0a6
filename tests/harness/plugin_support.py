# SPDX-License-Identifier: GPL-2.0-or-later
"""What the plugin tests share: the plugin's path, its config file (always limited
to the test accounts' uids), and reading the slurmd log from a mark onwards so
each test sees only its own lines."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Optional

from .e2e_accounts import TEST_UID_MAX, TEST_UID_MIN
from .e2e_processes import HarnessError, wait_until
from .slurm_cluster import SlurmCluster
from .slurm_config import ClusterConfig
from .slurm_jobs import FINAL_STATES, parse_fields

TOP = Path(__file__).resolve().parents[2]
PLUGIN = Path(os.environ.get("LEFTOVER_PLUGIN", TOP / "build/release/spank/leftover.so"))

# The predecessor's /etc/leftover.conf, verbatim (shared/seeds/000).
SEED_JSON = """{
  "protected_users": [
    "alice",
    "bob"
  ],
  "debuglevel": "info",
  "slew": 10,
  "slew_max": 40
}
"""


def plugin_config(conf_dir: Path, **overrides) -> ClusterConfig:
    """A cluster whose plugstack loads leftover.so with conf_dir/leftover.conf."""
    if not PLUGIN.exists():
        raise AssertionError(f"{PLUGIN} not built (scripts/build.sh build/release)")
    line = f"optional {PLUGIN} config={conf_dir / 'leftover.conf'}\n"
    return ClusterConfig(plugstack=line, **overrides)


def write_config(conf_dir: Path, text: str, name: str = "leftover.conf") -> Path:
    """Writes a root-owned 0644 file (what the plugin trusts) as it is: a users
    file; a leftover config goes through write_leftover_conf."""
    path = conf_dir / name
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.chmod(0o644)
    tmp.replace(path)
    return path


def leftover_conf(text: str) -> str:
    """A leftover config (YAML, or a JSON object) that sweeps only the test accounts.

    The tests' clusters run on a real machine: a node-wide sweep with the default
    uid range would kill the processes of any of its users without a job on the test
    cluster.  So uid_min/uid_max are set to TEST_UID_MIN..TEST_UID_MAX, first in a
    JSON object, last in YAML, so the text's own keys keep their line numbers (and a
    malformed text stays malformed).  A text that sets them itself must set both,
    within that range.

    The test clusters run slurmctld on the nodes' host (SlurmctldHost=localhost), where
    leftover sweeps only with sweep_on_controller_host: true; it is set the same way
    unless the text sets it itself.
    """
    extra: dict[str, object] = {}
    own = dict(re.findall(r'\buid_(min|max)"?\s*:\s*(\d+)', text))
    if own:
        assert set(own) == {"min", "max"} and all(
            TEST_UID_MIN <= int(uid) <= TEST_UID_MAX for uid in own.values()), \
            f"a test config's uid range must lie in {TEST_UID_MIN}..{TEST_UID_MAX}: {text!r}"
    else:
        extra.update({"uid_min": TEST_UID_MIN, "uid_max": TEST_UID_MAX})
    if not re.search(r'\bsweep_on_controller_host"?\s*:', text):
        extra["sweep_on_controller_host"] = True
    if not extra:
        return text

    def value(v: object) -> str:
        return "true" if v is True else str(v)

    if text.lstrip().startswith("{"):
        head, rest = text.split("{", 1)
        keys = ", ".join(f'"{key}": {value(v)}' for key, v in extra.items())
        sep = "" if rest.lstrip().startswith("}") else "," if rest[:1].isspace() else ", "
        return f"{head}{{{keys}{sep}{rest}"
    lines = "".join(f"{key}: {value(v)}\n" for key, v in extra.items())
    return text + ("\n" if text and not text.endswith("\n") else "") + lines


def write_leftover_conf(conf_dir: Path, text: str, name: str = "leftover.conf") -> Path:
    """Writes a leftover config limited to the test accounts (see leftover_conf)."""
    return write_config(conf_dir, leftover_conf(text), name)


# How many of leftover's lines a missed wait_for shows.
LINES_SHOWN = 60


class LogWatch:
    """The slurmd log from the moment of creation on."""

    def __init__(self, cluster: SlurmCluster, node: Optional[str] = None):
        self.cluster, self.node = cluster, node
        self.start = len(cluster.slurmd_log_text(node))

    def text(self) -> str:
        return self.cluster.slurmd_log_text(self.node)[self.start:]

    def leftover_lines(self) -> list[str]:
        return [line for line in self.text().splitlines() if "leftover: " in line]

    def wait_for(self, regex: str, timeout: float = 20.0) -> re.Match:
        pattern = re.compile(regex, re.MULTILINE)
        try:
            return wait_until(lambda: pattern.search(self.text()), timeout,
                              f"slurmd log line /{regex}/")
        except HarnessError as missed:
            # The log tail printed on failure is slurmd's last lines; what leftover said
            # since the watch began is what tells why the line never came.
            said = self.leftover_lines()
            raise HarnessError(f"{missed}\nleftover's {min(len(said), LINES_SHOWN)} last lines of "
                               f"{len(said)} since the watch began:\n" +
                               "\n".join(said[-LINES_SHOWN:])) from None

    def assert_absent(self, regex: str) -> None:
        found = re.search(regex, self.text(), re.MULTILINE)
        assert found is None, f"unexpected log line: {found.group(0)}"


def swept_with(user: str) -> str:
    """Regex of a summary line's swept list that names user, whoever else it names:
    only the test's own users are asserted on, never the whole list."""
    return rf"swept \[(?:[^\]]*, )?{re.escape(user)}(?:, [^\]]*)?\]"


def swept_without(user: str) -> str:
    """Regex of a summary line's swept list that does not name user."""
    return rf"swept \[(?!(?:[^\]]*, )?{re.escape(user)}(?:, |\]))[^\]]*\]"


def summary_regex(job: int, step: str = r"\S+") -> str:
    """The summary line of one evaluation of a job's step (or 'epilog')."""
    if step == "epilog":
        return rf"leftover: job {job} epilog \(user .*\): .*ms"
    return rf"leftover: step {job}\.{step} \(user .*\): .*ms"


def still_alive_after(cluster: SlurmCluster, pid: int, seconds: float) -> bool:
    """Polls for `seconds`: False as soon as pid is gone."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not cluster.is_alive(pid):
            return False
        time.sleep(0.05)
    return True


def stepd_pid(job: int, step: str) -> int:
    """The pid of the slurmstepd serving <job>.<step> ('0', 'batch', 'extern')."""
    wanted = f"slurmstepd: [{job}.{step}]".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "cmdline").read_bytes().rstrip(b"\0") == wanted:
                return int(entry.name)
        except OSError:
            continue
    raise AssertionError(f"no slurmstepd for {job}.{step}")


def start_background(cluster: SlurmCluster, user: str, argv: list[str]):
    """Starts argv as user (like run_as) without waiting; returns the Popen."""
    import subprocess
    env_args = [f"{k}={v}" for k, v in cluster.user_env(user).items()]
    cmd = ["/usr/sbin/runuser", "-u", user, "--", "/usr/bin/env", "-i", *env_args, *argv]
    return subprocess.Popen(cmd, env=cluster.root_env(), cwd=cluster.work_dir,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


# A batch or step script fragment that double-forks a session leader which writes
# its pid to $PIDFILE and runs BODY; the fragment returns once the pid file exists.
def daemon_fragment(pidfile: Path, body: str = "exec sleep 600") -> str:
    return (f"( setsid /bin/sh -c 'echo $$ > {pidfile}.tmp && mv {pidfile}.tmp {pidfile}; {body}' "
            f"</dev/null >/dev/null 2>&1 & )\n"
            f"i=0; while [ ! -s {pidfile} ]; do i=$((i+1)); [ $i -gt 400 ] && exit 3; sleep 0.05; done\n")


def read_pid(path: Path, timeout: float = 20.0) -> int:
    wait_until(lambda: path.exists() and path.read_text().strip(), timeout, f"pid file {path}")
    return int(path.read_text())


def wait_all_jobs_done(cluster: SlurmCluster, timeout: float = 60.0) -> None:
    """Waits until every job is in a final state. A job's sweeps happen before it gets
    there, so after this no sweep of an earlier test can hit the next test's clients
    (which run on the node itself, as the users under test)."""
    def all_final():
        jobs = cluster.scontrol("-o", "show", "job", check=False).stdout.splitlines()
        return all(parse_fields(line).get("JobState") in FINAL_STATES for line in jobs if "JobId=" in line)
    wait_until(all_final, timeout, "every job to finish")


def batch_daemon_survives_steps_and_is_reaped_at_job_end(cluster: SlurmCluster, log: LogWatch) -> None:
    """A batch script starts a daemon, runs two srun steps, then waits to be released:
    the daemon must live through both steps' sweeps and be reaped when the job ends."""
    import uuid
    tag = uuid.uuid4().hex[:8]
    daemon_file, steps_done, release = (cluster.work_dir / f"{name}-{tag}" for name in ("daemon", "steps", "release"))
    job = cluster.sbatch("lo_alice", "#!/bin/sh\n" + daemon_fragment(daemon_file) +
                         f"srun /bin/true\nsrun /bin/true\ntouch {steps_done}\n"
                         f"while [ ! -e {release} ]; do sleep 0.1; done\n")
    daemon = read_pid(daemon_file)
    wait_until(steps_done.exists, 30, "both srun steps")
    log.wait_for(summary_regex(job, "1"))
    assert still_alive_after(cluster, daemon, 0.5), "the daemon must survive the job's own steps"
    release.touch()
    assert cluster.wait_job_done(job).state == "COMPLETED"
    cluster.wait_gone(daemon, 20)
    log.wait_for(rf"leftover: SIGTERM pid={daemon} user=lo_alice")


# Fixtures the plugin test modules share; a module imports them by name.
import pytest  # noqa: E402


@pytest.fixture(scope="module")
def conf_dir(tmp_path_factory):
    """Where the module's leftover.conf (and users files) live."""
    return tmp_path_factory.mktemp("leftover-conf")


@pytest.fixture
def config(conf_dir):
    """config(text): the plugin reads it at the next step end."""
    return lambda text: write_leftover_conf(conf_dir, text)


@pytest.fixture(autouse=True)
def jobs_done_after_each_test(request):
    """Each test's jobs end (and sweep) before the next test starts its own."""
    yield
    if "cluster" in request.fixturenames:
        wait_all_jobs_done(request.getfixturevalue("cluster"))
