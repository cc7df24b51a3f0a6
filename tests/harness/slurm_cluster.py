"""A throw-away, real Slurm cluster on loopback for end-to-end tests.

`SlurmCluster` builds everything under one fresh directory in /tmp:

* its own munged (own key, socket, pid, log and seed files), which Slurm is
  pointed at with ``AuthInfo=socket=...`` (auth/munge and cred/munge both read
  that option in 22.05), so the machine's /run/munge and /etc/munge are unused;
* its own slurm.conf, plugstack.conf, state, spool, log and pid files, and its
  own free TCP ports on the address the host name resolves to (127.0.0.1 or
  127.0.1.1, see slurm_config.host_address); daemons get ``-f <conf>`` and clients get
  ``SLURM_CONF=<conf>``, so /etc/slurm is never read or written;
* one slurmctld and one slurmd per configured node (started with ``-N name``),
  all run as root in the foreground so the harness owns their pids.

Slurm is set up so that stray processes can really escape a job:
proctrack/linuxproc tracks processes by parentage only, so a double-forked
``setsid`` child survives the step (no cgroups are used at all).  This is
what lets the leftover plugin's tests fail when the plugin does nothing.

Every daemon and every process started for the cluster carries the
environment entry ``LEFTOVER_E2E_CLUSTER=<dir>``; slurmstepd inherits it from
slurmd and job tasks inherit it from srun/sbatch, so `stop()` can find and
kill all of them without touching anything else on the machine.

Each node gets a unique NodeHostname (its own name).  By default nodes share
that address as NodeAddr with a per-node Port and everything runs in the machine's
namespaces: fine for one node, but every slurmd and every job would then see
all nodes' processes in one /proc.  (Debian's Slurm is built with
--enable-multiple-slurmd, `scontrol show config` says MULTIPLE_SLURMD = Yes,
so a munge credential decoded by several slurmds through one munged is
accepted; in a test, three slurmds sharing one munged ran multi-node steps
without a replay error.)

`ClusterConfig(node_namespaces=True)` builds real separate nodes instead (see
node_namespace.py).  Each node has its own pid, mount and UTS namespaces
(`unshare --fork --pid --mount-proc --uts`) with a small reaping init
(node_init.py) as pid 1, so it has its own /proc and host name; its own
address 127.0.0.<2+i> (NodeAddr, also what the node's name resolves to in its
own /etc/hosts, bind-mounted in its mount namespace) and its own port; its own
SlurmdSpoolDir (%n); and, like a real node, its own munged (same key; not
needed for replays, see above), whose socket directory is bind-mounted over
the cluster's munge directory inside the node, so slurm.conf's one
AuthInfo=socket= path reaches the node's own munged there and the
controller's munged elsewhere.  slurmd and munged are started into the
node with nsenter.  Client commands (srun, sbatch, scontrol) run on the host,
like on a login node.

Namespaced nodes drop NoInAddrAny (slurmctld keeps NoCtldInAddrAny): with it,
slurmd and srun listen only on the address their host name resolves to, but a
connection to 127.0.0.<n> leaves from 127.0.0.1 (the loopback route's source),
and slurmd tells slurmstepd to reach srun at the address the launch request
came from, so an srun inside a job on a node would never get its I/O.  Each
slurmd listens on its own port on every address instead.

The harness is split by what it does: e2e_processes.py (waiting, /proc,
killing, running commands), e2e_accounts.py (the test accounts),
slurm_config.py (ClusterConfig; the cluster's directory, ports, paths and
config files), slurm_jobs.py (jobs and planted processes), node_namespace.py
and node_init.py (namespaced nodes); this module starts and stops the daemons
and puts it all together in `SlurmCluster`.
"""

from __future__ import annotations

import pwd
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Callable, Optional, Sequence

from .e2e_processes import (HarnessError, is_alive, kill_processes_with_env, pids_of_user,
                           process_env, run_command, wait_gone, wait_until)
from .node_namespace import NodeNamespace, NodePid
from .slurm_config import BIN, OWNER_FILE, SBIN, ClusterConfig, ClusterLayout, Node
from .slurm_jobs import JOB_TIMEOUT, ClusterJobs, parse_fields

MARKER_VAR = "LEFTOVER_E2E_CLUSTER"
CLEAN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _kill_cluster_processes(cluster_dir: Path, spare: Sequence[int] = ()) -> None:
    """SIGKILLs every process carrying the cluster's marker but spare.

    That is slurmstepds (which outlive slurmd), job tasks and anything else
    started for the cluster; processes of other clusters or of the machine
    do not carry this exact marker.
    """
    kill_processes_with_env(f"{MARKER_VAR}={cluster_dir}", spare,
                            f"processes of {cluster_dir}")


def reap_stale_clusters(parent_dir: str = "/tmp") -> list[Path]:
    """Kills and removes clusters whose test process died without stopping them.

    Clusters whose test process still runs (another session's) are left
    alone.  Returns the directories cleaned.
    """
    cleaned = []
    for owner in Path(parent_dir).glob(f"leftover-e2e-*/{OWNER_FILE}"):
        try:
            if is_alive(int(owner.read_text())):
                continue
        except (ValueError, OSError):
            continue
        _kill_cluster_processes(owner.parent)
        shutil.rmtree(owner.parent, ignore_errors=True)
        cleaned.append(owner.parent)
    return cleaned


class SlurmCluster(ClusterLayout, ClusterJobs):
    """A cluster laid out by ClusterLayout, with the job helpers of ClusterJobs;
    start() brings its daemons up, stop() ends everything it ran."""

    def __init__(self, config: Optional[ClusterConfig] = None,
                 parent_dir: str = "/tmp"):
        super().__init__(config, parent_dir)
        self._munged: Optional[subprocess.Popen] = None
        self._slurmctld: Optional[subprocess.Popen] = None
        self._planted: set[int] = set()
        self.scontrol_calls = 0  # each is slurmctld RPCs (sdiag counts them)
        self.startup_seconds: Optional[float] = None  # set by start()

    # ---- environments ----------------------------------------------------

    def _base_env(self) -> dict:
        return {"PATH": CLEAN_PATH, "LANG": "C.UTF-8",
                "SLURM_CONF": str(self.conf_path), MARKER_VAR: str(self.dir)}

    def root_env(self) -> dict:
        """Environment for daemons and for client commands run by root."""
        return dict(self._base_env(), HOME="/root")

    def user_env(self, user: str) -> dict:
        return dict(self._base_env(), HOME="/tmp", USER=user, LOGNAME=user)

    # ---- daemons -----------------------------------------------------------

    def _spawn_daemon(self, name: str, argv: list[str]) -> subprocess.Popen:
        # Foreground daemons: the Popen is the daemon, so its pid is known and
        # its crash output lands in <name>.out.
        out = open(self.log_dir / f"{name}.out", "ab")
        try:
            return subprocess.Popen(argv, env=self.root_env(), cwd=self.dir,
                                    stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT,
                                    start_new_session=True)
        finally:
            out.close()

    def _check_running(self, proc: subprocess.Popen, name: str) -> None:
        if proc.poll() is not None:
            out = (self.log_dir / f"{name}.out").read_text(errors="replace")
            raise HarnessError(f"{name} exited with {proc.returncode}:\n{out[-3000:]}")

    def _start_munged(self) -> None:
        m = self.dir / "munge"
        # In the foreground munged logs to stderr (munged.out), not to
        # --log-file; the option is still given so nothing defaults to /var.
        self._munged = self._spawn_daemon("munged", [
            str(SBIN / "munged"), "--foreground",
            f"--socket={self.munge_socket}", f"--key-file={m / 'munge.key'}",
            f"--pid-file={m / 'munged.pid'}", f"--seed-file={m / 'munged.seed'}",
            f"--log-file={self.log_dir / 'munged.log'}", "--num-threads=4"])

        def ready():
            self._check_running(self._munged, "munged")
            return self.munge_socket.exists()
        wait_until(ready, 10, "munged socket")

    def _spawn_slurmctld(self, clear_state: bool = False) -> None:
        assert self._slurmctld is None or self._slurmctld.poll() is not None
        # -c on the first start only: there is no state yet, and it keeps
        # slurmctld from logging errors about missing state files.
        self._slurmctld = self._spawn_daemon("slurmctld", [
            str(SBIN / "slurmctld"), "-D", "-f", str(self.conf_path),
            *(["-c"] if clear_state else [])])

    def _wait_slurmctld_up(self, timeout: float) -> None:
        def up():
            self._check_running(self._slurmctld, "slurmctld")
            ping = self.scontrol("ping", check=False)
            return ping.returncode == 0 and "is UP" in ping.stdout
        wait_until(up, timeout, "slurmctld to answer ping")

    def start_slurmctld(self, timeout: float = 30.0) -> None:
        """(Re)starts slurmctld; it recovers jobs from StateSaveLocation."""
        self._spawn_slurmctld()
        self._wait_slurmctld_up(timeout)
        # Nodes must register again before the controller starts jobs.
        for node in self.nodes:
            self._wait_node_ready(node, timeout)

    def stop_slurmctld(self, timeout: float = 15.0) -> None:
        self._stop_process(self._slurmctld, timeout)
        self._slurmctld = None

    def start_slurmd(self, node: Optional[str] = None, timeout: float = 20.0) -> None:
        n = self._node(node)
        assert n.process is None or n.process.poll() is not None
        before = self.node_fields(n.name).get("SlurmdStartTime")
        # SlurmdStartTime has one-second resolution: start in a later second
        # than the previous slurmd so its registration can be told apart.
        wait_until(lambda: time.strftime("%Y-%m-%dT%H:%M:%S") != before, 2,
                   "the next second")
        self._spawn_slurmd(n)
        self._wait_node_ready(n, timeout, not_start_time=before)

    def _spawn_slurmd(self, node: Node) -> None:
        argv = [str(SBIN / "slurmd"), "-D", "-f", str(self.conf_path), "-N", node.name]
        if node.namespace is None:
            node.process = self._spawn_daemon(f"slurmd-{node.name}", argv)
        else:
            node.process = node.namespace.spawn_daemon(
                argv, self.root_env(), self.dir, self.log_dir / f"slurmd-{node.name}.out")

    def stop_slurmd(self, node: Optional[str] = None, timeout: float = 15.0) -> None:
        n = self._node(node)
        self._stop_process(n.process, timeout)
        n.process = None

    def restart_slurmd(self, node: Optional[str] = None) -> None:
        """Restarts slurmd; running slurmstepds (and their jobs) live on."""
        self.stop_slurmd(node)
        self.start_slurmd(node)

    def _node(self, name: Optional[str]) -> Node:
        name = name or self.node
        return next(n for n in self.nodes if n.name == name)

    def node_fields(self, name: str) -> dict:
        """scontrol's fields of node `name` (State, Reason, ...); {} when it cannot say."""
        res = self.scontrol("-o", "show", "node", name, check=False)
        return parse_fields(res.stdout) if res.returncode == 0 else {}

    def _wait_node_ready(self, node: Node, timeout: float,
                         not_start_time: Optional[str] = None) -> None:
        """Waits until the node registered (again) and can take jobs."""
        def ready():
            if node.process is not None:
                self._check_running(node.process, f"slurmd-{node.name}")
            info = self.node_fields(node.name)
            state = info.get("State", "")
            start = info.get("SlurmdStartTime", "None")
            unusable = r"DOWN|NOT_RESPONDING|DRAIN|INVAL|UNKNOWN"
            return (start not in ("None", not_start_time)
                    and not re.search(unusable, state))
        wait_until(ready, timeout, f"node {node.name} to register")

    # ---- namespaced nodes --------------------------------------------------

    def _start_node_namespaces(self) -> None:
        """Starts every node's init, then its munged (all nodes at once)."""
        for node in self.nodes:
            d = self.node_dir(node.name)
            node.namespace = NodeNamespace(node.name, d, [
                (d / "hosts", Path("/etc/hosts")),
                (d / "munge", self.dir / "munge"),
                *self.node_private_binds(node.name),
            ])
            node.namespace.spawn(self.root_env(), self.log_dir / f"init-{node.name}.out")
        for node in self.nodes:
            wait_until(node.namespace.ready, 10, f"node {node.name}'s namespace")
        for node in self.nodes:
            # Inside the node, <dir>/munge is the node's own munge directory.
            m = self.dir / "munge"
            node.munged = node.namespace.spawn_daemon([
                str(SBIN / "munged"), "--foreground",
                f"--socket={self.munge_socket}", f"--key-file={m / 'munge.key'}",
                f"--pid-file={m / 'munged.pid'}", f"--seed-file={m / 'munged.seed'}",
                f"--log-file={self.log_dir / f'munged-{node.name}.log'}",
                "--num-threads=4"], self.root_env(), self.dir,
                self.log_dir / f"munged-{node.name}.out")
        for node in self.nodes:
            socket_path = self.node_dir(node.name) / "munge" / self.munge_socket.name

            def ready(node=node, socket_path=socket_path):
                self._check_running(node.munged, f"munged-{node.name}")
                return socket_path.exists()
            wait_until(ready, 10, f"munged of node {node.name}")

    def node_namespace(self, node: Optional[str] = None) -> NodeNamespace:
        ns = self._node(node).namespace
        if ns is None:
            raise HarnessError("the cluster was built without node_namespaces")
        return ns

    def node_pid(self, node: str, ns_pid: int) -> NodePid:
        """The process with ns_pid on a namespaced node, with its host pid."""
        host = wait_until(lambda: self.node_namespace(node).host_pid_of(ns_pid),
                          5, f"pid {ns_pid} on node {node} (gone already?)")
        return NodePid(node, ns_pid, host)

    def run_on_node(self, node: str, argv: Sequence[str], user: str = "root",
                    timeout: float = 20.0) -> subprocess.CompletedProcess:
        """Runs argv inside a namespaced node (as user), outside Slurm."""
        pw = pwd.getpwnam(user)
        env = self.root_env() if user == "root" else self.user_env(user)
        cmd = self.node_namespace(node).enter_argv([
            "/usr/bin/setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}",
            "--clear-groups", "--", *argv], self.work_dir)
        return run_command(cmd, env, timeout)

    # ---- the whole cluster -----------------------------------------------

    def start(self) -> "SlurmCluster":
        """Starts munged, slurmctld and every slurmd; returns self."""
        started = time.monotonic()
        try:
            self._write_files()
            self._start_munged()
            if self.config.node_namespaces:
                self._start_node_namespaces()
            self._spawn_slurmctld(clear_state=True)
            # slurmd retries registering until slurmctld listens, so both
            # start in parallel.
            for node in self.nodes:
                self._spawn_slurmd(node)
            self._wait_slurmctld_up(30)
            for node in self.nodes:
                self._wait_node_ready(node, 30)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started
        return self

    def _stop_process(self, proc: Optional[subprocess.Popen], timeout: float) -> None:
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)

    def stop(self) -> None:
        """Kills every process of this cluster; safe to call repeatedly."""
        try:
            for node in self.nodes:
                self._stop_process(node.process, 10)
                node.process = None
            self._stop_process(self._slurmctld, 10)
            self._slurmctld = None
            # Ending a node's pid 1 ends everything in its namespace: its
            # munged, slurmstepds, job tasks and strays.
            for node in self.nodes:
                if node.namespace is not None:
                    node.namespace.kill()
                node.munged = None
            # munged goes last so the daemons above could shut down cleanly.
            munged = [self._munged.pid] if self._munged else []
            _kill_cluster_processes(self.dir, spare=munged)
        finally:
            self.kill_planted()
            self._stop_process(self._munged, 10)
            self._munged = None

    def remove_files(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    # ---- logs ------------------------------------------------------------

    def slurmd_log_text(self, node: Optional[str] = None) -> str:
        """slurmd's log, which also holds slurmstepd's (and SPANK) messages."""
        path = self.slurmd_log_path(node)
        return path.read_text(errors="replace") if path.exists() else ""

    def slurmctld_log_text(self) -> str:
        path = self.slurmctld_log_path()
        return path.read_text(errors="replace") if path.exists() else ""

    def wait_for_log(self, regex: str, timeout: float = 10.0,
                     node: Optional[str] = None) -> re.Match:
        """Waits for a line matching regex in the node's slurmd log."""
        pattern = re.compile(regex, re.MULTILINE)
        return wait_until(lambda: pattern.search(self.slurmd_log_text(node)),
                          timeout, f"slurmd log line /{regex}/")

    # ---- client commands -------------------------------------------------

    def run_as(self, user: str, argv: Sequence[str],
               timeout: float = JOB_TIMEOUT,
               input_text: Optional[str] = None,
               while_running: Optional[Callable[[], object]] = None
               ) -> subprocess.CompletedProcess:
        """Runs argv as user (via runuser) with this cluster's SLURM_CONF."""
        env_args = [f"{k}={v}" for k, v in self.user_env(user).items()]
        cmd = [str(SBIN / "runuser"), "-u", user, "--",
               str(BIN / "env"), "-i", *env_args, *argv]
        return run_command(cmd, self.root_env(), timeout, cwd=self.work_dir,
                           input_text=input_text, while_running=while_running)

    def scontrol(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        self.scontrol_calls += 1
        res = run_command([str(BIN / "scontrol"), *args], self.root_env(), 20)
        if check and res.returncode != 0:
            raise HarnessError(f"scontrol {' '.join(args)} failed: {res.stderr}")
        return res

    def sdiag_reset(self) -> None:
        res = run_command([str(BIN / "sdiag"), "--reset"], self.root_env(), 20)
        if res.returncode != 0:
            raise HarnessError(f"sdiag --reset failed: {res.stderr}")

    def sdiag_rpc_counts(self) -> dict[str, int]:
        """slurmctld's RPC counts by message type since the last reset."""
        return {kind: count for kind, (count, _) in self.sdiag_rpc_stats().items()}

    def sdiag_rpc_stats(self) -> dict[str, tuple[int, int]]:
        """slurmctld's RPCs by message type since the last reset: (count, total time in us)."""
        res = run_command([str(BIN / "sdiag")], self.root_env(), 20)
        if res.returncode != 0:
            raise HarnessError(f"sdiag failed: {res.stderr}")
        section = res.stdout.split("Remote Procedure Call statistics by message type", 1)[1]
        section = section.split("Remote Procedure Call statistics by user", 1)[0]
        return {m[1]: (int(m[2]), int(m[3])) for m in
                re.finditer(r"^\s*(\w+)\s*\(\s*\d+\)\s*count:(\d+)\s+ave_time:\d+\s+total_time:(\d+)",
                            section, re.MULTILINE)}

    # Module-level helpers, also reachable through the cluster for brevity.
    is_alive = staticmethod(is_alive)
    process_env = staticmethod(process_env)
    wait_gone = staticmethod(wait_gone)
    pids_of_user = staticmethod(pids_of_user)
