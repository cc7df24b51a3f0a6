"""What a test cluster is made of on disk: `ClusterConfig` (what varies between
clusters) and `ClusterLayout` (one cluster's directory, ports and nodes, the
paths of everything in it, and writing slurm.conf, plugstack.conf, the munge
key and the namespaced nodes' files).  Starting daemons is slurm_cluster.py's.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Optional, Union

from .node_namespace import NodeNamespace, NsProcess

SBIN = Path("/usr/sbin")
BIN = Path("/usr/bin")
OWNER_FILE = "owner.pid"  # pid of the test process that made the cluster


@functools.lru_cache(maxsize=None)
def slurm_version() -> str:
    """The installed Slurm's version as it names itself: "22.05.8", "24.11.5"
    (Debian's `slurmd -V` prints "slurm-wlm 24.11.5"; slurmd logs "slurmd version 24.11.5 started")."""
    out = subprocess.run([str(SBIN / "slurmd"), "-V"], capture_output=True, text=True,
                         check=True).stdout
    found = re.search(r"\b(\d+\.\d+\.\d+)\b", out)
    if not found:
        raise RuntimeError(f"slurmd -V: no version in {out!r}")
    return found.group(1)


def slurm_release() -> tuple[int, int, int]:
    """(major, minor, micro) of slurm_version(), to compare: (24, 11, 5)."""
    return tuple(int(part) for part in slurm_version().split("."))


def slurm_major_minor() -> str:
    """"22.05", "24.11": the release a plugin must be built for, as packages name it."""
    return slurm_version().rsplit(".", 1)[0]


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
    # munged and spool dir (implies spool_per_node); see slurm_cluster.py.
    node_namespaces: bool = False
    # NodeHostname of every node, e.g. the machine's own short name: several slurmd on
    # one host as a multiple-slurmd site configures them. None: each node's own name.
    node_hostname: Optional[str] = None
    # NodeAddr slurm.conf gives a node instead of its address: a name that reaches this
    # machine but is none of its names, e.g. {"lo-b": "localhost"}, makes a node that
    # slurm.conf does not place on this host although its slurmd runs here.
    node_addrs: dict = dataclasses.field(default_factory=dict)
    # Paths each namespaced node gets an empty directory of its own at (root's, mode
    # 1777, like /tmp), bind-mounted in the node's mount namespace: e.g. "/dev/shm",
    # or a path relative to the cluster's directory (created there for the mount).
    node_private_dirs: tuple[str, ...] = ()


@dataclasses.dataclass
class Node:
    """One slurmd: where it listens and, once started, its processes."""
    name: str
    port: int
    addr: str  # namespaced nodes: their own; else the host name's (host_address)
    process: Optional[Union[subprocess.Popen, NsProcess]] = None
    namespace: Optional[NodeNamespace] = None
    munged: Optional[NsProcess] = None


def host_address() -> str:
    """The IPv4 address this machine's host name resolves to.

    With NoInAddrAny/NoCtldInAddrAny, slurmd, slurmctld and srun bind to the
    address of gethostname() (slurm_setup_addr), whatever SlurmctldHost's or
    NodeAddr's address says, so the cluster's addresses must be that one:
    127.0.0.1 where /etc/hosts maps the host name there, 127.0.1.1 under
    Debian's default /etc/hosts and inside scripts/in-release.sh.
    """
    try:
        return socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET,
                                  socket.SOCK_STREAM)[0][4][0]
    except (socket.gaierror, IndexError):
        return "127.0.0.1"


def free_ports(count: int, addr: str = "127.0.0.1") -> list[int]:
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


class ClusterLayout:
    """One cluster's directory under parent_dir (a fresh /tmp/leftover-e2e-*),
    its free ports, its nodes and the files that configure it."""

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
        # Where slurmctld (and slurmd, on the host) really listen.
        self.addr = host_address()
        # Namespaced nodes' slurmds listen on every address (see slurm_cluster.py).
        ctld_port, *node_ports = free_ports(
            1 + len(self.config.nodes),
            "0.0.0.0" if self.config.node_namespaces else self.addr)
        self.slurmctld_port = ctld_port
        self.nodes = [Node(n, p, self.addr) for n, p in zip(self.config.nodes, node_ports)]
        if self.config.node_namespaces:
            for i, node in enumerate(self.nodes):
                node.addr = f"127.0.0.{2 + i}"

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

    # ---- writing the configuration --------------------------------------

    def _write_files(self) -> None:
        for sub in ("etc", "munge", "state", "run", "log", "spool"):
            (self.dir / sub).mkdir(exist_ok=True)
        # slurmd looks for surviving steps before it would create its spool.
        for node in self.nodes:
            self.spool_dir(node.name).mkdir(parents=True, exist_ok=True)
            # As slurmd makes it, whatever the umask: leftover refuses a spool dir that
            # group or others can write.
            self.spool_dir(node.name).chmod(0o755)
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
        if slurm_release() >= (24, 11):
            # 24.11 and 26.05 otherwise load a cgroup plugin even with proctrack/linuxproc
            # and task/none (cgroup/v1 on a hybrid /sys, deprecated in 26.05) and fail to
            # start where /sys offers no hierarchy they support; nothing here uses
            # cgroups. 22.05 knows no "disabled": it looks for a plugin of that name and
            # slurmd fails to start.
            (etc / "cgroup.conf").write_text("CgroupPlugin=disabled\n")
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
            for source, target in self.node_private_binds(node.name):
                for path in (source, target):
                    path.mkdir(parents=True, exist_ok=True)
                source.chmod(0o1777)

    def node_private_binds(self, node: str) -> list[tuple[Path, Path]]:
        """(the node's own directory, where the node sees it) for node_private_dirs."""
        return [(self.node_dir(node) / "private" / str(i), self.dir / path)
                for i, path in enumerate(self.config.node_private_dirs)]

    def slurm_conf_text(self) -> str:
        d, cfg = self.dir, self.config
        spool = d / "spool" / ("%n" if cfg.spool_per_node else "slurmd")
        lines = [
            "ClusterName=leftover",
            # "localhost" is the one name slurmctld takes as its own on any host.
            f"SlurmctldHost=localhost({self.addr})",
            f"SlurmctldPort={self.slurmctld_port}",
            f"SlurmdPort={self.nodes[0].port}",
            f"AuthInfo=socket={self.munge_socket}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            # Bind to the host name's address only rather than every interface.
            # slurmd tells slurmstepd to reach srun at the address srun's request
            # came from, which is 127.0.0.1 (the loopback route's source) for any
            # 127.x destination: so slurmd and srun bind to one address only where
            # that is 127.0.0.1, and else listen on every address. Namespaced
            # nodes: see slurm_cluster.py.
            "CommunicationParameters=" + ("NoInAddrAny,NoCtldInAddrAny"
                                          if self.addr == "127.0.0.1" and not cfg.node_namespaces
                                          else "NoCtldInAddrAny"),
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
                f"NodeName={node.name} NodeHostname={cfg.node_hostname or node.name} "
                f"NodeAddr={cfg.node_addrs.get(node.name, node.addr)} Port={node.port} CPUs={cfg.cpus} "
                "State=UNKNOWN")
        names = ",".join(n.name for n in self.nodes)
        lines.append(f"PartitionName=test Nodes={names} Default=YES "
                     "MaxTime=INFINITE State=UP OverSubscribe=NO")
        lines.extend(cfg.extra_conf)
        return "\n".join(lines) + "\n"

