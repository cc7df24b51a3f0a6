"""A throw-away, real Slurm cluster on loopback for end-to-end tests.

`SlurmCluster` builds everything under one fresh directory in /tmp:

* its own munged (own key, socket, pid, log and seed files), which Slurm is
  pointed at with ``AuthInfo=socket=...`` (auth/munge and cred/munge both read
  that option in 22.05), so the machine's /run/munge and /etc/munge are unused;
* its own slurm.conf, plugstack.conf, state, spool, log and pid files, and its
  own free TCP ports on 127.0.0.1; daemons get ``-f <conf>`` and clients get
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
NodeAddr 127.0.0.1 with a per-node Port and everything runs in the machine's
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
"""

from __future__ import annotations

import dataclasses
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Callable, Iterable, NamedTuple, Optional, Sequence, Union

from node_namespace import NodeNamespace, NodePid, NsProcess

SBIN = Path("/usr/sbin")
BIN = Path("/usr/bin")
MARKER_VAR = "LEFTOVER_E2E_CLUSTER"
CLEAN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# Slurm's special step ids, as they appear in step socket names.
EXTERN_STEP = 4294967292  # SLURM_EXTERN_CONT
BATCH_STEP = 4294967291   # SLURM_BATCH_SCRIPT

# Base states after which a job will not change any more.  While a job is
# still cleaning up, scontrol reports COMPLETING instead, so waiting for one
# of these also waits for the epilogue/step cleanup on the node.
FINAL_STATES = frozenset({
    "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
    "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY",
})

OWNER_FILE = "owner.pid"  # pid of the test process that made the cluster
JOB_TIMEOUT = 30.0  # a job that needs longer than this is a failure


class Account(NamedTuple):
    name: str
    uid: int


# The accounts tests may use; uid == primary gid for each.
TEST_USERS = (
    Account("lo_alice", 41001),
    Account("lo_bob", 41002),
    Account("je.kim", 41003),   # a dot in the name
    Account("jeXkim", 41004),   # matches "je.kim" if a dot were a regex
    Account("lo_low", 900),     # below UID_MIN (system range)
    Account("lo_high", 61000),  # above UID_MAX
    Account("alice", 41005),    # protected by the predecessor's config verbatim
    Account("bobby", 41006),    # "bob" is protected; "bobby" must not be
)
USERS = {u.name: u for u in TEST_USERS}


class JobResult(NamedTuple):
    state: str       # e.g. "COMPLETED"
    exit_code: int   # the job's exit status
    signal: int      # signal that ended it, 0 if none


class HarnessError(AssertionError):
    """A cluster operation failed or a deadline passed (fails the test)."""


# --------------------------------------------------------------------------
# Small process helpers (module level: they do not need a cluster)
# --------------------------------------------------------------------------

def wait_until(predicate: Callable[[], object], timeout: float, what: str,
               interval: float = 0.05):
    """Polls predicate until it returns something truthy; fails at deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise HarnessError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def is_alive(pid: int) -> bool:
    """True if pid exists and is not a zombie.

    Killed strays are orphans; pid 1 of this container reaps them only every
    second or two, so they linger in /proc as zombies meanwhile.
    """
    stat = _proc_stat(pid)
    return stat is not None and stat[1] not in ("Z", "X")


def wait_gone(pid: int, timeout: float = 10.0) -> None:
    wait_until(lambda: not is_alive(pid), timeout, f"pid {pid} to be gone")


def _proc_stat(pid: int) -> Optional[tuple[str, str, int]]:
    """(comm, state, ppid) from /proc/<pid>/stat, None if the pid is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # comm may hold spaces and parens; the fields after the last ')' do not.
    close = stat.rindex(")")
    state, ppid = stat[close + 2:].split()[:2]
    return stat[stat.index("(") + 1:close], state, int(ppid)


def _proc_uid(pid: int) -> Optional[int]:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Uid:"):
                return int(line.split()[1])  # real uid
    except (FileNotFoundError, ProcessLookupError):
        pass
    return None


def _all_pids() -> Iterable[int]:
    return (int(p) for p in os.listdir("/proc") if p.isdigit())


def pids_of_user(user: str) -> list[int]:
    """Live (non-zombie) pids whose real uid is the user's."""
    uid = pwd.getpwnam(user).pw_uid
    return sorted(p for p in _all_pids() if _proc_uid(p) == uid and is_alive(p))


def _has_env_entry(pid: int, entry: bytes) -> bool:
    try:
        return entry in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False


def process_env(pid: int) -> dict:
    """The environment a process started with ({} if it is gone or unreadable)."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return {}
    return dict(e.decode(errors="replace").split("=", 1)
                for e in raw.split(b"\0") if b"=" in e)


def _kill(pid: int, sig: int = signal.SIGKILL) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _free_ports(count: int, addr: str = "127.0.0.1") -> list[int]:
    """Distinct free TCP ports on addr.

    All sockets stay bound until every port is picked so no port repeats;
    another program could still grab one before Slurm binds it, which is
    unlikely enough on a test machine.
    """
    socks = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind((addr, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _run(argv: Sequence[str], env: dict, timeout: float, cwd=None,
         input_text: Optional[str] = None,
         while_running: Optional[Callable[[], object]] = None
         ) -> subprocess.CompletedProcess:
    """subprocess.run that kills the whole process group on timeout.

    srun/sbatch run under runuser, so killing only the direct child would
    leave them behind.  while_running (if given) is called once after the
    start; if it raises, the process group is killed too.
    """
    proc = subprocess.Popen(
        list(argv), env=env, cwd=cwd, text=True, start_new_session=True,
        stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        if while_running is not None:
            while_running()
        out, err = proc.communicate(input_text, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise HarnessError(
            f"{' '.join(argv)} did not finish in {timeout:.0f}s\n"
            f"stdout: {out}\nstderr: {err}") from None
    except BaseException as failure:  # from while_running
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        if isinstance(failure, Exception):
            raise HarnessError(f"{' '.join(argv)}: {failure}\nstderr: {err}") from failure
        raise
    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)


def _kill_cluster_processes(cluster_dir: Path, spare: Sequence[int] = ()) -> None:
    """SIGKILLs every process carrying the cluster's marker but spare.

    That is slurmstepds (which outlive slurmd), job tasks and anything else
    started for the cluster; processes of other clusters or of the machine
    do not carry this exact marker.
    """
    entry = f"{MARKER_VAR}={cluster_dir}".encode()
    skip = {os.getpid(), *spare}

    def none_left():
        pids = [p for p in _all_pids() if p not in skip and is_alive(p)
                and _has_env_entry(p, entry)]
        for pid in pids:
            _kill(pid)
        return not pids
    wait_until(none_left, 15, f"processes of {cluster_dir} to die", interval=0.1)


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


# --------------------------------------------------------------------------
# Test accounts
# --------------------------------------------------------------------------

def ensure_test_users(users: Iterable[Account] = TEST_USERS) -> None:
    """Creates the test accounts if missing; refuses a name with another uid."""
    for user in users:
        try:
            existing = pwd.getpwnam(user.name)
        except KeyError:
            _create_user(user)
            continue
        if existing.pw_uid != user.uid:
            raise HarnessError(
                f"user {user.name} exists with uid {existing.pw_uid}, "
                f"tests need {user.uid}")


def _create_user(user: Account) -> None:
    # The group first, with gid == uid, so useradd never picks another gid.
    if subprocess.run(["getent", "group", str(user.uid)],
                      capture_output=True).returncode != 0:
        subprocess.run(["groupadd", "-g", str(user.uid), user.name],
                       check=True, capture_output=True)
    # --badname: "je.kim" and uids outside UID_MIN..UID_MAX are on purpose.
    subprocess.run(
        ["useradd", "--badname", "-u", str(user.uid), "-g", str(user.uid),
         "-M", "-d", "/tmp", "-s", "/bin/sh", user.name],
        check=True, capture_output=True)


# --------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------

@dataclasses.dataclass
class ClusterConfig:
    """What varies between test clusters."""
    # NodeName of each slurmd; deliberately not the machine's hostname.
    nodes: tuple[str, ...] = ("lo-n1",)
    # PrologFlags value, e.g. "contain"; None leaves it unset.
    prolog_flags: Optional[str] = None
    # Put %n in SlurmdSpoolDir (one spool directory per node name).
    spool_per_node: bool = False
    # Full text of plugstack.conf; empty means no SPANK plugin at all.
    plugstack: str = ""
    # Extra files written next to slurm.conf: {file name: content}.
    extra_files: dict = dataclasses.field(default_factory=dict)
    # Lines appended to slurm.conf (later lines override earlier ones).
    extra_conf: tuple[str, ...] = ()
    # CPUs advertised per node; SlurmdParameters=config_overrides lets this
    # exceed the hardware so several one-CPU jobs fit on one node.
    cpus: int = 4
    slurmd_debug: str = "debug"
    slurmctld_debug: str = "info"
    # Each node in its own pid+mount+UTS namespaces with its own address,
    # munged and spool dir (implies spool_per_node); see the module doc.
    node_namespaces: bool = False


@dataclasses.dataclass
class _Node:
    name: str
    port: int
    addr: str = "127.0.0.1"
    process: Optional[Union[subprocess.Popen, NsProcess]] = None
    namespace: Optional[NodeNamespace] = None
    munged: Optional[NsProcess] = None


# --------------------------------------------------------------------------
# The cluster
# --------------------------------------------------------------------------

class SlurmCluster:
    def __init__(self, config: Optional[ClusterConfig] = None,
                 parent_dir: str = "/tmp"):
        self.config = config or ClusterConfig()
        if self.config.node_namespaces:
            self.config = dataclasses.replace(self.config, spool_per_node=True)
        self.dir = Path(tempfile.mkdtemp(prefix="leftover-e2e-", dir=parent_dir))
        # Job users must reach slurm.conf and the munge socket.
        self.dir.chmod(0o755)
        self.conf_path = self.dir / "etc" / "slurm.conf"
        self.munge_socket = self.dir / "munge" / "munge.socket"
        self.work_dir = self.dir / "work"   # job cwd and output, like /tmp
        self.log_dir = self.dir / "log"
        # Namespaced nodes' slurmds listen on every address (see above).
        ctld_port, *node_ports = _free_ports(
            1 + len(self.config.nodes),
            "0.0.0.0" if self.config.node_namespaces else "127.0.0.1")
        self.slurmctld_port = ctld_port
        self.nodes = [_Node(n, p) for n, p in zip(self.config.nodes, node_ports)]
        if self.config.node_namespaces:
            for i, node in enumerate(self.nodes):
                node.addr = f"127.0.0.{2 + i}"
        self._munged: Optional[subprocess.Popen] = None
        self._slurmctld: Optional[subprocess.Popen] = None
        self._planted: set[int] = set()
        self.scontrol_calls = 0  # each is slurmctld RPCs (sdiag counts them)
        self.startup_seconds: Optional[float] = None  # set by start()

    # ---- paths -----------------------------------------------------------

    @property
    def node(self) -> str:
        """Name of the first (usually only) node."""
        return self.nodes[0].name

    def spool_dir(self, node: Optional[str] = None) -> Path:
        node = node or self.node
        if self.config.spool_per_node:
            return self.dir / "spool" / node
        return self.dir / "spool" / "slurmd"

    def slurmd_log_path(self, node: Optional[str] = None) -> Path:
        return self.log_dir / f"slurmd-{node or self.node}.log"

    def slurmctld_log_path(self) -> Path:
        return self.log_dir / "slurmctld.log"

    def node_dir(self, node: str) -> Path:
        """A namespaced node's own files: hosts, munge dir, init's ready file."""
        return self.dir / "nodes" / node

    def step_socket(self, jobid: int, step: int, node: Optional[str] = None) -> Path:
        """Where slurmstepd of <jobid>.<step> listens (exists while it runs)."""
        node = node or self.node
        return self.spool_dir(node) / f"{node}_{jobid}.{step}"

    # ---- environments ----------------------------------------------------

    def _base_env(self) -> dict:
        return {"PATH": CLEAN_PATH, "LANG": "C.UTF-8",
                "SLURM_CONF": str(self.conf_path), MARKER_VAR: str(self.dir)}

    def root_env(self) -> dict:
        """Environment for daemons and for client commands run by root."""
        return dict(self._base_env(), HOME="/root")

    # ---- writing the configuration --------------------------------------

    def _write_files(self) -> None:
        for sub in ("etc", "munge", "state", "run", "log", "spool"):
            (self.dir / sub).mkdir(exist_ok=True)
        # slurmd looks for surviving steps before it would create its spool.
        for node in self.nodes:
            self.spool_dir(node.name).mkdir(parents=True, exist_ok=True)
        self.work_dir.mkdir(exist_ok=True)
        self.work_dir.chmod(0o1777)
        (self.dir / "munge").chmod(0o755)  # users connect to the socket
        self._write_munge_key()
        if self.config.node_namespaces:
            self._write_node_files()
        # Lets a later run clean up after a test process that was killed.
        (self.dir / OWNER_FILE).write_text(str(os.getpid()))
        etc = self.conf_path.parent
        (etc / "plugstack.conf").write_text(self.config.plugstack)
        for name, content in self.config.extra_files.items():
            (etc / name).write_text(content)
        self.conf_path.write_text(self.slurm_conf_text())
        for path in etc.iterdir():
            path.chmod(0o644)

    def _write_munge_key(self) -> None:
        key = self.dir / "munge" / "munge.key"
        if key.exists():
            return
        subprocess.run(["dd", "if=/dev/urandom", f"of={key}", "bs=1024",
                        "count=1", "status=none"], check=True)
        key.chmod(0o400)  # munged refuses a key others can read

    def _write_node_files(self) -> None:
        hosts = "".join(f"{n.addr}\t{n.name}\n" for n in self.nodes)
        machine_hosts = Path("/etc/hosts").read_text()
        for node in self.nodes:
            d = self.node_dir(node.name)
            (d / "munge").mkdir(parents=True, exist_ok=True)
            d.chmod(0o755)
            (d / "munge").chmod(0o755)
            key = d / "munge" / "munge.key"
            if not key.exists():
                shutil.copyfile(self.dir / "munge" / "munge.key", key)
                key.chmod(0o400)
            # The node's own name first: it resolves to the node's address.
            (d / "hosts").write_text(f"{node.addr}\t{node.name}\n" + machine_hosts + hosts)
            (d / "hosts").chmod(0o644)

    def slurm_conf_text(self) -> str:
        d, cfg = self.dir, self.config
        spool = d / "spool" / ("%n" if cfg.spool_per_node else "slurmd")
        lines = [
            "ClusterName=leftover",
            "SlurmctldHost=localhost(127.0.0.1)",
            f"SlurmctldPort={self.slurmctld_port}",
            f"SlurmdPort={self.nodes[0].port}",
            f"AuthInfo=socket={self.munge_socket}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            # Bind to 127.0.0.1 only rather than every interface.
            # Namespaced nodes: see the module doc.
            "CommunicationParameters=" + ("NoCtldInAddrAny" if cfg.node_namespaces
                                          else "NoInAddrAny,NoCtldInAddrAny"),
            "SlurmUser=root",
            "SlurmdUser=root",
            f"StateSaveLocation={d / 'state'}",
            f"SlurmdSpoolDir={spool}",
            f"SlurmctldPidFile={d / 'run' / 'slurmctld.pid'}",
            f"SlurmdPidFile={d / 'run' / 'slurmd-%n.pid'}",
            f"SlurmctldLogFile={self.slurmctld_log_path()}",
            f"SlurmdLogFile={self.log_dir / 'slurmd-%n.log'}",
            f"SlurmctldDebug={cfg.slurmctld_debug}",
            f"SlurmdDebug={cfg.slurmd_debug}",
            f"PlugStackConfig={self.conf_path.parent / 'plugstack.conf'}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "SwitchType=switch/none",
            "MpiDefault=none",
            "SchedulerType=sched/builtin",
            # Batch jobs otherwise wait up to 3 s for the next scheduling pass.
            "SchedulerParameters=batch_sched_delay=0",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "SlurmdParameters=config_overrides",
            "ReturnToService=2",
            # Keep finished jobs visible to `scontrol show job` (no slurmdbd).
            "MinJobAge=86400",
            # Cancelled or timed-out steps get SIGKILL quickly.
            "KillWait=2",
            "InactiveLimit=0",
            "MailProg=/bin/true",
            f"TmpFS={d / 'work'}",
        ]
        if cfg.prolog_flags:
            lines.append(f"PrologFlags={cfg.prolog_flags}")
        for node in self.nodes:
            lines.append(
                f"NodeName={node.name} NodeHostname={node.name} "
                f"NodeAddr={node.addr} Port={node.port} CPUs={cfg.cpus} "
                "State=UNKNOWN")
        names = ",".join(n.name for n in self.nodes)
        lines.append(f"PartitionName=test Nodes={names} Default=YES "
                     "MaxTime=INFINITE State=UP OverSubscribe=NO")
        lines.extend(cfg.extra_conf)
        return "\n".join(lines) + "\n"

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
        before = self._node_info(n.name).get("SlurmdStartTime")
        # SlurmdStartTime has one-second resolution: start in a later second
        # than the previous slurmd so its registration can be told apart.
        wait_until(lambda: time.strftime("%Y-%m-%dT%H:%M:%S") != before, 2,
                   "the next second")
        self._spawn_slurmd(n)
        self._wait_node_ready(n, timeout, not_start_time=before)

    def _spawn_slurmd(self, node: _Node) -> None:
        argv = [str(SBIN / "slurmd"), "-D", "-f", str(self.conf_path), "-N", node.name]
        if node.namespace is None:
            node.process = self._spawn_daemon(f"slurmd-{node.name}", argv)
        else:
            node.process = node.namespace.spawn_daemon(
                argv, self.root_env(), self.dir, self.log_dir / f"slurmd-{node.name}.out")

    # ---- namespaced nodes --------------------------------------------------

    def _start_node_namespaces(self) -> None:
        """Starts every node's init, then its munged (all nodes at once)."""
        for node in self.nodes:
            d = self.node_dir(node.name)
            node.namespace = NodeNamespace(node.name, d, [
                (d / "hosts", Path("/etc/hosts")),
                (d / "munge", self.dir / "munge"),
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
            "--clear-groups", "--", *argv])
        return _run(cmd, env, timeout, cwd=self.work_dir)

    def spawn_on_node(self, node: str, user: str, argv: Sequence[str]) -> NodePid:
        """Like spawn_outside_slurm, but inside a namespaced node."""
        res = self.run_on_node(node, [
            str(BIN / "setsid"), "/bin/sh", "-c",
            '"$@" </dev/null >/dev/null 2>&1 & echo $!', "sh", *argv], user=user)
        if res.returncode != 0:
            raise HarnessError(f"spawning {argv} on {node} failed: {res.stderr}")
        proc = self.node_pid(node, int(res.stdout.strip()))
        self._planted.add(proc.host_pid)
        return proc

    def stop_slurmd(self, node: Optional[str] = None, timeout: float = 15.0) -> None:
        n = self._node(node)
        self._stop_process(n.process, timeout)
        n.process = None

    def restart_slurmd(self, node: Optional[str] = None) -> None:
        """Restarts slurmd; running slurmstepds (and their jobs) live on."""
        self.stop_slurmd(node)
        self.start_slurmd(node)

    def _node(self, name: Optional[str]) -> _Node:
        name = name or self.node
        return next(n for n in self.nodes if n.name == name)

    def _node_info(self, name: str) -> dict:
        res = self.scontrol("-o", "show", "node", name, check=False)
        return _parse_fields(res.stdout) if res.returncode == 0 else {}

    def _wait_node_ready(self, node: _Node, timeout: float,
                         not_start_time: Optional[str] = None) -> None:
        """Waits until the node registered (again) and can take jobs."""
        def ready():
            if node.process is not None:
                self._check_running(node.process, f"slurmd-{node.name}")
            info = self._node_info(node.name)
            state = info.get("State", "")
            start = info.get("SlurmdStartTime", "None")
            unusable = r"DOWN|NOT_RESPONDING|DRAIN|INVAL|UNKNOWN"
            return (start not in ("None", not_start_time)
                    and not re.search(unusable, state))
        wait_until(ready, timeout, f"node {node.name} to register")

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

    # ---- running things --------------------------------------------------

    def user_env(self, user: str) -> dict:
        return dict(self._base_env(), HOME="/tmp", USER=user, LOGNAME=user)

    def run_as(self, user: str, argv: Sequence[str],
               timeout: float = JOB_TIMEOUT,
               input_text: Optional[str] = None,
               while_running: Optional[Callable[[], object]] = None
               ) -> subprocess.CompletedProcess:
        """Runs argv as user (via runuser) with this cluster's SLURM_CONF."""
        env_args = [f"{k}={v}" for k, v in self.user_env(user).items()]
        cmd = [str(SBIN / "runuser"), "-u", user, "--",
               str(BIN / "env"), "-i", *env_args, *argv]
        return _run(cmd, self.root_env(), timeout, cwd=self.work_dir,
                    input_text=input_text, while_running=while_running)

    def scontrol(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        self.scontrol_calls += 1
        res = _run([str(BIN / "scontrol"), *args], self.root_env(), 20)
        if check and res.returncode != 0:
            raise HarnessError(f"scontrol {' '.join(args)} failed: {res.stderr}")
        return res

    def sbatch(self, user: str, script: str, args: Sequence[str] = ()) -> int:
        """Submits script (full text, with #! line) as user; returns the job id."""
        path = self.work_dir / f"job-{uuid.uuid4().hex[:8]}.sh"
        path.write_text(script)
        path.chmod(0o755)
        res = self.run_as(user, [
            str(BIN / "sbatch"), "--parsable",
            f"--output={self.work_dir}/slurm-%j.out", *args, str(path)])
        if res.returncode != 0:
            raise HarnessError(f"sbatch as {user} failed: {res.stderr}")
        return int(res.stdout.strip().split(";")[0])

    def sbatch_until_released(self, user: str, in_step: bool = False,
                              args: Sequence[str] = ()) -> tuple[int, Path]:
        """Submits a job that runs until the returned path is created.

        With in_step the waiting happens in an srun step (step 0) rather
        than in the batch script itself.  The job gives up after 60 s so a
        forgotten release cannot keep the node busy forever.
        """
        release = self.work_dir / f"release-{uuid.uuid4().hex[:8]}"
        wait = (f"i=0; while [ ! -e {release} ]; do i=$((i+1)); "
                f"[ $i -gt 600 ] && exit 9; sleep 0.1; done")
        body = f"srun /bin/sh -c '{wait}'" if in_step else wait
        return self.sbatch(user, f"#!/bin/sh\n{body}\n", args), release

    def srun(self, user: str, argv: Sequence[str], args: Sequence[str] = (),
             timeout: float = JOB_TIMEOUT) -> tuple[subprocess.CompletedProcess, int]:
        """Runs argv in a new allocation via srun; returns (result, job id)."""
        # A unique job name lets us find the job id without racing other jobs.
        name = f"e2e-{uuid.uuid4().hex[:10]}"
        res = self.run_as(user, [str(BIN / "srun"), f"--job-name={name}",
                                 *args, *argv], timeout=timeout)
        return res, self.job_id_by_name(name)

    def scancel(self, jobid: int) -> None:
        res = _run([str(BIN / "scancel"), str(jobid)], self.root_env(), 20)
        if res.returncode != 0:
            raise HarnessError(f"scancel {jobid} failed: {res.stderr}")

    def job_id_by_name(self, name: str) -> int:
        res = self.scontrol("-o", "show", "job")
        for line in res.stdout.splitlines():
            fields = _parse_fields(line)
            if fields.get("JobName") == name:
                return int(fields["JobId"])
        raise HarnessError(f"no job named {name}")

    def job_info(self, jobid: int) -> dict:
        return _parse_fields(self.scontrol("-o", "show", "job", str(jobid)).stdout)

    def job_state(self, jobid: int) -> str:
        return self.job_info(jobid)["JobState"]

    def wait_job_state(self, jobid: int, states: Iterable[str],
                       timeout: float = JOB_TIMEOUT) -> str:
        wanted = set(states)
        return wait_until(lambda: (s := self.job_state(jobid)) in wanted and s,
                          timeout, f"job {jobid} to reach {sorted(wanted)}",
                          interval=0.1)

    def wait_job_done(self, jobid: int, timeout: float = JOB_TIMEOUT) -> JobResult:
        """Waits until the job finished (including cleanup on the node)."""
        deadline = time.monotonic() + timeout
        info: dict = {}
        while time.monotonic() < deadline:
            info = self.job_info(jobid)
            if info.get("JobState") in FINAL_STATES:
                code, sig = info.get("ExitCode", "0:0").split(":")
                return JobResult(info["JobState"], int(code), int(sig))
            time.sleep(0.1)
        raise HarnessError(f"job {jobid} not done after {timeout:.0f}s: {info}")

    # ---- planting processes ----------------------------------------------

    def spawn_outside_slurm(self, user: str, argv: Sequence[str]) -> int:
        """Starts argv as user outside Slurm, detached; returns its pid.

        A shell forks argv into the background and exits, so argv is
        re-parented away from the test process and leads no Slurm job;
        setsid gives it its own session like a daemonised leftover would.
        """
        pw = pwd.getpwnam(user)
        res = subprocess.run(
            [str(BIN / "setsid"), "/bin/sh", "-c",
             '"$@" </dev/null >/dev/null 2>&1 & echo $!', "sh", *argv],
            env=self.user_env(user), cwd=self.work_dir, user=pw.pw_uid,
            group=pw.pw_gid, extra_groups=[], capture_output=True, text=True,
            check=True, timeout=10)
        pid = int(res.stdout.strip())
        self._planted.add(pid)
        return pid

    # The step starts a session leader that records its own pid and then
    # becomes `sleep`; the subshell around it exits at once (double fork),
    # so the sleeper is re-parented out of the step's process tree.  The
    # step only ends once the pid file exists, so the caller never races it.
    _STRAY_SCRIPT = r'''
pidfile="$1"
( setsid /bin/sh -c 'echo $$ > "$0.tmp" && mv "$0.tmp" "$0"; exec sleep 600' \
    "$pidfile" </dev/null >/dev/null 2>&1 & )
i=0
while [ ! -s "$pidfile" ]; do
  i=$((i+1)); [ $i -gt 200 ] && exit 3
  sleep 0.05
done
'''

    def plant_stray_in_step(self, user: str, srun_args: Sequence[str] = ()
                            ) -> tuple[int, int]:
        """Runs an srun job that leaves a stray behind; returns (pid, jobid).

        The pid is a host pid; on namespaced nodes see plant_strays_on_nodes.
        """
        if self.config.node_namespaces:
            raise HarnessError("plant_stray_in_step would return a namespace pid: "
                               "use plant_strays_on_nodes on namespaced nodes")
        pidfile = self.work_dir / f"stray-{uuid.uuid4().hex[:8]}.pid"
        res, jobid = self.srun(user, ["/bin/sh", "-c", self._STRAY_SCRIPT,
                                      "sh", str(pidfile)], args=srun_args)
        if pidfile.exists():
            self._planted.add(int(pidfile.read_text()))
        if res.returncode != 0:
            raise HarnessError(f"stray-planting srun failed ({res.returncode}): "
                               f"{res.stderr}")
        return int(pidfile.read_text()), jobid

    def plant_strays_on_nodes(self, user: str, nodes: Sequence[str],
                              srun_args: Sequence[str] = ()
                              ) -> tuple[dict[str, NodePid], int]:
        """An srun job over `nodes` (namespaced) that leaves a stray on each.

        Returns ({node: stray}, jobid).  Each task writes its node's stray
        pid (a pid in that node's namespace) to its own file and waits for the
        harness to find the stray's host pid: the step's end may reap it.
        """
        pidfile = self.work_dir / f"stray-{uuid.uuid4().hex[:8]}.pid"
        ack = Path(f"{pidfile}.ack")
        # The task names its job itself: no `scontrol show job` (an RPC of the
        # type the plugin's controller query uses) while sdiag counts.
        script = ('echo "$SLURM_JOB_ID" > "$1.job.$SLURMD_NODENAME"\n' +
                  self._STRAY_SCRIPT.replace('pidfile="$1"', 'pidfile="$1.$SLURMD_NODENAME"') +
                  'i=0; while [ ! -e "$1.ack" ]; do\n'
                  '  i=$((i+1)); [ $i -gt 400 ] && exit 4; sleep 0.05\n'
                  'done\n')
        strays = {}

        def find_strays():
            for node in nodes:
                path = Path(f"{pidfile}.{node}")
                wait_until(lambda: path.exists() and path.read_text().strip(), 20,
                           f"the stray's pid file on {node}")
                strays[node] = self.node_pid(node, int(path.read_text()))
                self._planted.add(strays[node].host_pid)
            ack.touch()

        res = self.run_as(user, [
            str(BIN / "srun"), f"--nodelist={','.join(nodes)}", f"--nodes={len(nodes)}",
            "--ntasks-per-node=1", *srun_args, "/bin/sh", "-c", script, "sh", str(pidfile)],
            while_running=find_strays)
        job_file = Path(f"{pidfile}.job.{nodes[0]}")
        jobid = int(job_file.read_text()) if job_file.exists() else None
        if res.returncode != 0 or len(strays) != len(nodes) or jobid is None:
            raise HarnessError(f"stray-planting srun failed ({res.returncode}, strays on "
                               f"{sorted(strays)}): {res.stderr}")
        return strays, jobid

    def sdiag_reset(self) -> None:
        res = _run([str(BIN / "sdiag"), "--reset"], self.root_env(), 20)
        if res.returncode != 0:
            raise HarnessError(f"sdiag --reset failed: {res.stderr}")

    def sdiag_rpc_counts(self) -> dict[str, int]:
        """slurmctld's RPC counts by message type since the last reset."""
        res = _run([str(BIN / "sdiag")], self.root_env(), 20)
        if res.returncode != 0:
            raise HarnessError(f"sdiag failed: {res.stderr}")
        section = res.stdout.split("Remote Procedure Call statistics by message type", 1)[1]
        section = section.split("Remote Procedure Call statistics by user", 1)[0]
        return {m[1]: int(m[2]) for m in
                re.finditer(r"^\s*(\w+)\s*\(\s*\d+\)\s*count:(\d+)", section, re.MULTILINE)}

    def plant_stray_via_srun(self, user: str, srun_args: Sequence[str] = ()) -> int:
        """Pid of a double-forked `setsid sleep` an srun step left behind."""
        return self.plant_stray_in_step(user, srun_args)[0]

    def kill_planted(self) -> None:
        """Kills every process planted by spawn_outside_slurm/plant_stray_*."""
        for pid in self._planted:
            _kill(pid)
        for pid in self._planted:
            wait_gone(pid, 10)
        self._planted.clear()

    # Module-level helpers, also reachable through the cluster for brevity.
    is_alive = staticmethod(is_alive)
    process_env = staticmethod(process_env)
    wait_gone = staticmethod(wait_gone)
    pids_of_user = staticmethod(pids_of_user)


def _parse_fields(line: str) -> dict:
    """key=value pairs of one `scontrol -o` line (values without spaces)."""
    return dict(re.findall(r"(\w+)=(\S*)", line))
