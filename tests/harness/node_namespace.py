"""One test node in its own pid, mount and UTS namespaces.

`NodeNamespace.start()` runs

    unshare --fork --pid --mount-proc --uts --kill-child -- python3 node_init.py ...

so node_init.py is pid 1 of a fresh pid namespace with its own /proc (only the
node's processes are visible there, as on a real node) and its own host name,
and bind-mounts the node's /etc/hosts and munge directory in the node's private
mount namespace.  Daemons (munged, slurmd) are started into it with
`nsenter -t <init> -p -m -u --root --wdns=<dir>`; slurmd starts slurmstepd there, slurmstepd starts
job tasks there, so everything Slurm runs on the node lives in the namespace.

Pids: a process has one pid per namespace level.  The harness runs in the root
pid namespace, sees every process and tracks them by host pid (`NodePid`
carries both); the plugin and every job see namespace pids, which are what the
plugin logs and what job scripts write into pid files.  `host_pid_of()`
translates by matching the pid namespace (/proc/<pid>/ns/pid) and the last
field of NSpid in /proc/<pid>/status.

Ending pid 1 ends the namespace: the kernel SIGKILLs every process left in it,
so `kill()` leaves nothing of the node behind, and --kill-child does the same
if unshare itself is killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple, Optional, Sequence

INIT_SCRIPT = Path(__file__).resolve().parent / "node_init.py"
UNSHARE = "/usr/bin/unshare"
NSENTER = "/usr/bin/nsenter"


class NodePid(NamedTuple):
    """A process on a namespaced node: its pid there and on the host."""
    node: str
    ns_pid: int    # what the plugin logs and job scripts see ($$)
    host_pid: int  # what the harness checks and kills


def _read_children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (FileNotFoundError, ProcessLookupError):
        return []


def _pid_ns(pid: int) -> Optional[str]:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


def _innermost_pid(pid: int) -> Optional[int]:
    """The pid in the process's own (innermost) pid namespace."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text(errors="replace").splitlines():
            if line.startswith("NSpid:"):
                return int(line.split()[-1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return None


class NsProcess:
    """A daemon started with nsenter, looking like the Popen the harness expects.

    nsenter must fork to enter a pid namespace and does not pass signals on,
    so terminate()/kill() go to its child (the daemon, by host pid) while
    poll()/wait() watch nsenter, which exits with the daemon's status.
    """

    def __init__(self, popen: subprocess.Popen):
        self._popen = popen
        self.pid = self._child_pid()

    def _child_pid(self) -> int:
        # The child exists as soon as nsenter forked; give it a moment.
        for _ in range(200):
            children = _read_children(self._popen.pid)
            if children:
                return children[0]
            if self._popen.poll() is not None:
                raise RuntimeError(f"nsenter exited with {self._popen.returncode}")
            time.sleep(0.01)
        raise RuntimeError("nsenter started no child in 2 s")

    @property
    def returncode(self):
        return self._popen.returncode

    def poll(self):
        return self._popen.poll()

    def wait(self, timeout: Optional[float] = None):
        return self._popen.wait(timeout)

    def send_signal(self, sig: int) -> None:
        if self._popen.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class NodeNamespace:
    def __init__(self, name: str, state_dir: Path, binds: Sequence[tuple[Path, Path]]):
        """state_dir holds the ready file; binds are (source, target) mounts."""
        self.name = name
        self.ready_file = state_dir / "init.ready"
        self.binds = list(binds)
        self._unshare: Optional[subprocess.Popen] = None
        self.init_pid: Optional[int] = None   # host pid of the namespace's pid 1
        self._ns: Optional[str] = None

    # ---- life cycle --------------------------------------------------------

    def spawn(self, env: dict, log_path: Path) -> None:
        """Starts unshare + init without waiting (see wait_ready)."""
        argv = [UNSHARE, "--fork", "--pid", "--mount-proc", "--uts", "--kill-child",
                "--", sys.executable, "-I", str(INIT_SCRIPT), self.name, str(self.ready_file)]
        for source, target in self.binds:
            argv += [str(source), str(target)]
        with open(log_path, "ab") as out:
            self._unshare = subprocess.Popen(
                argv, env=env, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True)

    def check_running(self) -> None:
        if self._unshare is None or self._unshare.poll() is not None:
            code = None if self._unshare is None else self._unshare.returncode
            raise RuntimeError(f"namespace of node {self.name} ended (unshare exit {code})")

    def ready(self) -> bool:
        """True once init runs as pid 1 and has set the node up."""
        self.check_running()
        if self.init_pid is None:
            children = _read_children(self._unshare.pid)
            if not children:
                return False
            self.init_pid = children[0]
        if not self.ready_file.exists():
            return False
        self._ns = _pid_ns(self.init_pid)
        return self._ns is not None

    def kill(self, timeout: float = 15.0) -> None:
        """Ends the node: pid 1 goes, and the kernel kills all the rest.

        unshare waits for pid 1, and pid 1 is only fully gone once every other
        process of the namespace is, so unshare's exit means the node is empty.
        """
        if self._unshare is None:
            return
        if self.init_pid is not None:
            try:
                os.kill(self.init_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self._unshare.poll() is None:
            self._unshare.kill()   # --kill-child: its child gets SIGKILL too
        self._unshare.wait(timeout)
        self._unshare = None

    # ---- running things in the node ------------------------------------------

    def enter_argv(self, argv: Sequence[str], cwd: Path) -> list[str]:
        """nsenter's command line to run argv in the node, in directory cwd."""
        assert self.init_pid is not None, f"node {self.name} not started"
        # Entering a mount namespace resets the root and working directories to the
        # namespace's root, which escapes a chroot (scripts/in-release.sh runs the
        # tests chrooted into another release's root): --root keeps init's root,
        # and --wdns names the working directory as seen in there (a directory
        # kept from before would be unreachable: slurmstepd could not getcwd).
        return [NSENTER, "-t", str(self.init_pid), "-p", "-m", "-u", "--root",
                f"--wdns={cwd}", "--", *argv]

    def spawn_daemon(self, argv: Sequence[str], env: dict, cwd: Path,
                     log_path: Path) -> NsProcess:
        with open(log_path, "ab") as out:
            popen = subprocess.Popen(
                self.enter_argv(argv, cwd), env=env, stdin=subprocess.DEVNULL,
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        return NsProcess(popen)

    # ---- pids --------------------------------------------------------------

    def host_pid_of(self, ns_pid: int) -> Optional[int]:
        """The host pid of the process with ns_pid in this node (None if none)."""
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                pid = int(entry)
                if _innermost_pid(pid) == ns_pid and _pid_ns(pid) == self._ns:
                    return pid
        return None

    def ns_pid_of(self, host_pid: int) -> Optional[int]:
        """host_pid's pid inside this node (None if it is not in this node)."""
        if _pid_ns(host_pid) != self._ns:
            return None
        return _innermost_pid(host_pid)

    def contains(self, host_pid: int) -> bool:
        return self._ns is not None and _pid_ns(host_pid) == self._ns
