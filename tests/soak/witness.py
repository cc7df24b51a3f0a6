# SPDX-License-Identifier: GPL-2.0-or-later
"""The witness: what was done to the soak users' processes, files and SysV objects on the
nodes, seen by the kernel and not told by leftover.

    tracefs (an instance of the soak's own, /sys/kernel/tracing/instances/leftover-soak-<pid>):
      signal/signal_generate       every signal sent (sender: the current task; target pid, sig)
      signal/signal_deliver        every signal a task takes (the victim's side)
      syscalls/sys_{enter,exit}_{kill,tkill,tgkill,pidfd_send_signal,rt_(tg)sigqueueinfo}
                                   which call sent it: leftover signals through pidfds,
                                   Slurm through kill(); none in flight: the kernel's own
      syscalls/sys_enter_{unlink,unlinkat,rmdir,mq_unlink}    when and by which call a name went
      syscalls/sys_{enter,exit}_{shm,msg,sem}ctl (IPC_RMID)   SysV removals: id, caller, result
      task/task_newtask, task/task_rename                     who each task is (comm, parent)
    fanotify (FAN_REPORT_DFID_NAME | FAN_REPORT_TID) on each node's /dev/shm and scratch
      directory and every directory made in them: each entry made (its owner, stat'd at once)
      and deleted, with the deleting thread's id
    /proc/sysvipc/{shm,msg,sem} read ten times a second: each SysV id's owner

Each signal and removal is attributed to its sender: leftover (a pidfd signal from
slurmstepd or the `leftover` command, or a removal by one of them), Slurm (its daemons'
kill()s, or anything they run as root), the harness (this process or what it runs), the
user (a sender whose uid is a soak user's), the kernel (a signal with no signalling call in
flight: an orphaned process group's SIGHUP and SIGCONT, SIGPIPE, a namespace's end), or
another (anything else on the machine).  Events lost in the ring buffer are counted: a run
that lost any cannot be judged.
"""

from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import dataclasses
import os
import re
import select
import stat
import struct
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Optional

from .records import proc_status

TRACEFS = Path("/sys/kernel/tracing")
KILL_CALLS = ("kill", "tkill", "tgkill", "pidfd_send_signal", "rt_sigqueueinfo", "rt_tgsigqueueinfo")
UNLINK_CALLS = ("unlink", "unlinkat", "rmdir", "mq_unlink")
IPC_CALLS = {"shmctl": "shm", "msgctl": "msg", "semctl": "sem"}
IPC_ID_FIELD = {"shmctl": "shmid", "msgctl": "msqid", "semctl": "semid"}
# Who each task is: its real uid, inherited at its birth and changed by these (a sender's
# uid read from /proc afterwards is too late for one that exited at once, as rm does).
UID_CALLS = {"setuid": "uid", "setreuid": "ruid", "setresuid": "ruid"}
# How long after an unlink-family call its fanotify event may be read, at most.
UNLINK_LAG = 10.0
SLURM_DAEMONS = frozenset({"slurmstepd", "slurmd", "slurmctld"})
# What leftover runs in: the plugin in slurmstepd (its step's or the job epilog's), and
# the command.
LEFTOVER_COMMS = frozenset({"slurmstepd", "leftover"})
SIGNAMES = {1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 6: "SIGABRT", 9: "SIGKILL", 10: "SIGUSR1", 12: "SIGUSR2",
            13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM", 18: "SIGCONT", 19: "SIGSTOP", 20: "SIGTSTP",
            21: "SIGTTIN", 22: "SIGTTOU", 24: "SIGXCPU"}
# Signals whose default action ends the process (SIGKILL always).
FATAL = frozenset({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 24, 25, 26, 27, 29, 30, 31})
CLONE_THREAD = 0x10000
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

LINE = re.compile(r"^\s*(.*?)-(\d+)\s+\(\s*([\d-]+)\)\s+\[\d+\]\s+\S+\s+(\d+\.\d+):\s+(.*)$")
ENTER = re.compile(r"^sys_(\w+)\((.*)\)$")
EXIT = re.compile(r"^sys_(\w+) -> (0x[0-9a-f]+)$")
GENERATE = re.compile(r"sig=(-?\d+) errno=-?\d+ code=(-?\d+) comm=(.*) pid=(\d+) grp=(\d+) res=(\d+)$")
DELIVER = re.compile(r"sig=(-?\d+) errno=-?\d+ code=(-?\d+) sa_handler=([0-9a-f]+)")
NEWTASK = re.compile(r"pid=(\d+) comm=(.*) clone_flags=([0-9a-f]+) oom_score_adj")
RENAME = re.compile(r"pid=(\d+) oldcomm=.* newcomm=(.*) oom_score_adj")

# fanotify (linux/fanotify.h)
FAN_CLOEXEC, FAN_NONBLOCK = 0x1, 0x2
FAN_REPORT_TID, FAN_REPORT_DIR_FID, FAN_REPORT_NAME = 0x100, 0x400, 0x800
FAN_MARK_ADD = 0x1
FAN_CREATE, FAN_DELETE, FAN_MOVED_FROM, FAN_MOVED_TO, FAN_ONDIR = 0x100, 0x200, 0x40, 0x80, 0x40000000
FAN_Q_OVERFLOW = 0x4000
FAN_EVENT_INFO_TYPE_DFID_NAME = 2
AT_FDCWD = -100


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _args(text: str) -> dict[str, int]:
    out = {}
    for part in text.split(", "):
        key, _, value = part.partition(": ")
        try:
            out[key] = int(value, 16) if value.startswith("0x") else int(value)
        except ValueError:
            pass
    return out


def _ipc_namespace(pid: int) -> Optional[str]:
    try:
        return os.readlink(f"/proc/{pid}/ns/ipc")
    except OSError:
        return None


class WitnessUnavailable(Exception):
    """The witness cannot see this machine's events as they are (no tracefs or fanotify,
    or the soak runs in a pid namespace of its own, where tracefs names other pids)."""


@dataclasses.dataclass
class Task:
    comm: str
    tgid: int
    parent: int
    uid: Optional[int] = None   # real uid: from /proc at the start, else its parent's and the set*uid calls'
    # The node whose pid namespace it was seen in while alive: a slurmstepd outlives the
    # slurmd that started it (a restarted slurmd), and the walk up from a gone one would
    # reach the harness that started the old slurmd, on the host.
    node: Optional[str] = None



def sender_class(syscall: Optional[str], uid: Optional[int], comm: str, chain: list[str], tgid: int,
                 harness_pid: int, test_uids: set[int]) -> str:
    """leftover, slurm, harness, user, kernel or other (see the module's doc).

    chain: the comms of the sender's ancestors, nearest first, "harness" for the harness's
    own process (the walk stops there)."""
    if syscall is None:
        return "kernel"
    if uid in test_uids:
        return "user"
    if comm in LEFTOVER_COMMS and syscall in ("pidfd_send_signal",) + UNLINK_CALLS + tuple(IPC_CALLS):
        return "leftover"
    if tgid == harness_pid:
        return "harness"
    for ancestor in [comm] + chain:
        if ancestor in SLURM_DAEMONS:
            return "slurm"
        if ancestor == "harness":
            return "harness"
    return "other"


class Witness:
    def __init__(self, node_namespaces: dict[str, str], watch: list[tuple[Path, str, str]], test_uids: set[int],
                 buffer_kb: int = 16384):
        """node_namespaces: node -> its pid namespace (readlink of /proc/<pid>/ns/pid);
        watch: (host directory, node, where the node sees it)."""
        self.by_ns = {ns: node for node, ns in node_namespaces.items()}
        self.watch = watch
        self.test_uids = set(test_uids)
        self.buffer_kb = buffer_kb
        self.harness_pid = os.getpid()
        self.instance = TRACEFS / "instances" / f"leftover-soak-{self.harness_pid}"
        self.mounted = False
        self.tasks: dict[int, Task] = {}
        self.threaded: set[int] = set()   # thread groups that had more than one thread
        self.targets: dict[int, Optional[tuple]] = {}   # pid -> (uid, node, ns_pid, comm) or None: not a soak user's
        self.inflight: dict[int, tuple[str, dict, float]] = {}
        self.pending_ipc: dict[int, dict] = {}
        # Every unlink-family call by tid, kept for the whole run: the removals are matched
        # to them at the end, and a tid is reused many times over in a long run (a deque of
        # the last 32 lost a sweep's calls to later processes of its tid: 2,767 removals
        # of a 30-minute run under load were then nobody's, and leftover's log "lied").
        self.unlinks: dict[int, list] = {}
        self.signals: list[dict] = []
        self.delivers: list[dict] = []
        self.ipc_removals: list[dict] = []
        self.file_events: list[dict] = []
        self.owners: dict[tuple[str, str], tuple[int, bool]] = {}   # (host dir, name) -> (uid, is a directory)
        self.sysv: dict[tuple[str, int], list[dict]] = {}
        self._sysv_present: dict[str, set[tuple[str, int]]] = {}   # kind -> what the last look saw
        self.mq_unlinks = 0
        # The SysV ids of /proc/sysvipc are this IPC namespace's (a release's soak has one of
        # its own); tracefs sees every namespace's IPC_RMID, and another's id 0 is another object.
        self.ipc_namespace = _ipc_namespace(os.getpid())
        self.other_namespace_ipc = 0
        self.lines = 0
        self.unparsed = 0
        # Events whose reading raised: each may have been one of leftover's, so a run with
        # any cannot be judged (the first few are kept to say why).
        self.unreadable_events = 0
        self.failures: list[str] = []
        self.fanotify_overflows = 0
        self.stats: dict = {}
        self.offset = time.time() - time.clock_gettime(time.CLOCK_MONOTONIC)
        # /proc/<pid>/stat's start time counts from boot: this turns it into the trace's clock.
        self.boot_offset = time.clock_gettime(time.CLOCK_BOOTTIME) - time.clock_gettime(time.CLOCK_MONOTONIC)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._pipe: Optional[int] = None
        self._fan: Optional[int] = None
        self._handles: dict[bytes, Path] = {}
        self._lock = threading.Lock()
        self._closed = False

    # ---- setting up and taking down -----------------------------------------------------

    def start(self) -> "Witness":
        """Raises WitnessUnavailable when it cannot witness (everything it set up undone)."""
        try:
            return self._start()
        except WitnessUnavailable:
            raise
        except (OSError, subprocess.CalledProcessError) as failure:
            self.close()
            raise WitnessUnavailable(str(failure)) from failure

    def _start(self) -> "Witness":
        atexit.register(self.close)
        if not (TRACEFS / "events").is_dir():
            subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], check=True, capture_output=True)
            self.mounted = True
        self.instance.mkdir()
        self._write("trace_clock", "mono")
        self._write("buffer_size_kb", str(self.buffer_kb))
        self._write("options/record-tgid", "1")
        filters = {"signal/signal_generate": "sig != 17 && sig < 32",
                   "signal/signal_deliver": "sig != 17 && sig < 32",
                   "task/task_newtask": None, "task/task_rename": None}
        for call in KILL_CALLS:
            filters[f"syscalls/sys_enter_{call}"] = "sig != 0"
            filters[f"syscalls/sys_exit_{call}"] = None
        for call in UNLINK_CALLS:
            filters[f"syscalls/sys_enter_{call}"] = None
        for call in UID_CALLS:
            filters[f"syscalls/sys_enter_{call}"] = None
        for call in IPC_CALLS:
            filters[f"syscalls/sys_enter_{call}"] = "cmd == 0 || cmd == 256"   # IPC_RMID, with IPC_64 or not
            filters[f"syscalls/sys_exit_{call}"] = None
        for event, text in filters.items():
            if text:
                self._write(f"events/{event}/filter", text)
            self._write(f"events/{event}/enable", "1")
        self._pipe = os.open(self.instance / "trace_pipe", os.O_RDONLY | os.O_NONBLOCK)
        self._check_pids()
        self._snapshot_tasks()
        self._start_fanotify()
        for target, name in ((self._read_trace, "witness-trace"), (self._read_fanotify, "witness-files"),
                             (self._poll_sysv, "witness-sysv")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def _check_pids(self) -> None:
        """tracefs names tasks by their pids in the first pid namespace: in another (a
        release's root, scripts/in-release.sh) /proc names others, and nothing could be
        attributed."""
        probe = f"leftover-soak-witness-{self.harness_pid}"
        self._write("trace_marker", probe)
        for line in (self.instance / "trace").read_text(errors="replace").splitlines():
            if probe in line:
                found = LINE.match(line)
                if found and int(found.group(2)) != threading.get_native_id():
                    self.close()
                    raise WitnessUnavailable("the soak runs in a pid namespace of its own: tracefs names the "
                                             "host's pids")
                return
        self.close()
        raise WitnessUnavailable("tracefs did not record the witness's own marker")

    def _write(self, name: str, text: str) -> None:
        (self.instance / name).write_text(text + "\n")

    def stop(self) -> None:
        """Stops recording (the ring buffer read to its end) and takes the instance down."""
        if self._closed:
            return
        self._write("tracing_on", "0")
        self._stop.set()
        for thread in self._threads:
            thread.join(30)
        lost = 0
        for cpu in sorted((self.instance / "per_cpu").iterdir()):
            text = (cpu / "stats").read_text()
            for key in ("overrun", "dropped events"):
                found = re.search(rf"^{key}: (\d+)", text, re.M)
                lost += int(found.group(1)) if found else 0
        self.stats = {"events": self.lines, "lost": lost, "unparsed": self.unparsed,
                      "fanotify overflows": self.fanotify_overflows, "unreadable": self.unreadable_events,
                      "failures": self.failures, "IPC removals of other namespaces": self.other_namespace_ipc}
        self.close()

    def close(self) -> None:
        """Takes the instance down and undoes the mount (idempotent; also at exit)."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        for fd in (self._pipe, self._fan):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._pipe = self._fan = None
        if self.instance.exists():
            try:
                self._write("tracing_on", "0")
            except OSError:
                pass
            for attempt in range(50):
                try:
                    self.instance.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)   # a reader thread may still hold trace_pipe
        if self.mounted:
            subprocess.run(["umount", str(TRACEFS)], check=False)
            self.mounted = False

    # ---- who each task is ---------------------------------------------------------------

    def _snapshot_tasks(self) -> None:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                tids = os.listdir(f"/proc/{entry}/task")
            except OSError:
                continue
            for tid in map(int, tids):
                status = proc_status(tid)
                if not status:
                    continue
                parent = int(entry) if tid != int(entry) else int(status.get("PPid", "0"))
                uid = int(status["Uid"].split()[0]) if status.get("Uid") else None
                self.tasks[tid] = Task(status.get("Name", "?"), int(status.get("Tgid", entry)), parent, uid,
                                       self._node_of(tid))
                if tid != int(entry):
                    self.threaded.add(int(entry))

    def _task(self, tid: int, comm: str = "?", tgid: Optional[int] = None) -> Task:
        task = self.tasks.get(tid)
        if task is None:
            status = proc_status(tid)
            task = Task(status.get("Name", comm), int(status.get("Tgid", tgid or tid)), int(status.get("PPid", 0)),
                        int(status["Uid"].split()[0]) if status.get("Uid") else None, self._node_of(tid))
            self.tasks[tid] = task
        return task

    def _uid(self, tid: int, task: Task) -> Optional[int]:
        if task.uid is None:
            uid = proc_status(tid).get("Uid")
            task.uid = int(uid.split()[0]) if uid else None
        return task.uid

    def _chain(self, tid: int) -> list[str]:
        chain = []
        seen = {tid}
        task = self.tasks.get(tid)
        while task and len(chain) < 24:
            parent = task.parent
            if parent == self.harness_pid or (parent in self.tasks and self.tasks[parent].tgid == self.harness_pid):
                chain.append("harness")
                break
            if parent in seen or parent <= 1:
                break
            seen.add(parent)
            task = self.tasks.get(parent)
            if task:
                chain.append(task.comm)
        return chain

    def _node_of(self, pid: int) -> Optional[str]:
        try:
            return self.by_ns.get(os.readlink(f"/proc/{pid}/ns/pid"), "host")
        except OSError:
            return None

    def _task_node(self, tid: int) -> Optional[str]:
        """The node a task ran on: its own pid namespace's, or, gone already (a job
        epilog's slurmstepd ends at once, a killed target is reaped), its nearest living
        ancestor's (slurmd's, slurmstepd's)."""
        seen = set()
        while tid > 1 and tid not in seen:
            seen.add(tid)
            task = self.tasks.get(tid)
            node = task.node if task is not None and task.node is not None else self._node_of(tid)
            if node is not None:
                if task is not None:
                    task.node = node
                return node
            if task is None:
                return None
            tid = task.parent
        return None

    def _sender(self, tid: int, tgid: int, comm: str, syscall: Optional[str]) -> dict:
        task = self._task(tid, comm, tgid)
        leader = self.tasks.get(task.tgid, task)
        uid = self._uid(tid, task)
        chain = self._chain(tid)
        # A thread named by its program (slurmstepd names some of its threads) is its
        # process: the thread group leader's comm says which program it runs.
        name = leader.comm if leader.comm in LEFTOVER_COMMS | SLURM_DAEMONS else task.comm
        return {"sender": sender_class(syscall, uid, name, chain, task.tgid, self.harness_pid, self.test_uids),
                "sender_tid": tid, "sender_tgid": task.tgid, "sender_comm": name, "sender_uid": uid,
                "sender_node": self._task_node(tid), "sender_chain": chain[:6], "syscall": syscall}

    def _born_after(self, pid: int, when: float) -> bool:
        """Whether the process that holds `pid` now began after `when`, an event's time: the
        trace is read late, and on a busy node a pid hopper's pids are reused within that
        delay (a 30-minute run placed leftover's SIGSTOP of a stray on lo-n1 on a protected
        user's hopper on lo-n2 that had the same host pid by the time it was read)."""
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            return False
        began = int(fields[19]) / CLOCK_TICKS - self.boot_offset + self.offset
        return began > when + 0.02   # the start time's resolution is one clock tick

    def _target(self, pid: int, comm: str, when: float, place_gone: bool = False) -> Optional[tuple]:
        """(uid, node, ns pid, comm) of a soak user's process, the one that held `pid` at
        `when`; None for anyone else's; the uid None when it could not be read (gone already)."""
        if pid in self.targets:
            return self.targets[pid]
        status = proc_status(pid)
        if status and self._born_after(pid, when):
            status = {}   # a later holder of the pid: the one signalled is gone
        if not status:
            # Gone already (the trace is read a moment late; a process killed at once is
            # reaped by then): its uid from the tasks' record, its namespace pid (and node)
            # from the sampler's records later (not cached). A signal's target that the
            # sampler never saw is placed on its nearest living ancestor's node (a job's
            # slurmstepd; never the host, where a login's ancestry leads through nsenter):
            # with no node its signal was judged on none, and the lie control's fake kill
            # of a soak-body 140 ms old went unjudged that way.
            task = self.tasks.get(pid)
            uid = task.uid if task else None
            if uid is not None and uid not in self.test_uids:
                return None
            node = self._task_node(pid) if task and place_gone else None
            return (uid, node if node != "host" else None, None, comm)
        uid = int(status["Uid"].split()[0])
        found = None
        if uid in self.test_uids:
            found = (uid, self._node_of(pid), int(status.get("NSpid", str(pid)).split()[-1]), status.get("Name", comm))
        self.targets[pid] = found
        return found

    # ---- the trace ----------------------------------------------------------------------

    @staticmethod
    def _read_ready(fd: int, stopping: bool) -> Optional[bytes]:
        """What `fd` has within 0.2 s (everything left once stopping); None once it is closed."""
        try:
            ready, _, _ = select.select([fd], [], [], 0.2)
            return os.read(fd, 1 << 16) if ready or stopping else b""
        except BlockingIOError:
            return b""
        except (OSError, TypeError, ValueError):
            return None

    def _read_trace(self) -> None:
        rest = b""
        while True:
            stopping = self._stop.is_set()
            chunk = self._read_ready(self._pipe, stopping)
            if chunk is None:
                return
            if chunk:
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()
                for line in lines:
                    self._guarded(self._line, line.decode(errors="replace"))
            elif stopping:
                return

    def _guarded(self, read: Callable, *what) -> None:
        """An event that cannot be read is counted, not the end of the witness's thread (an
        exception there once ended it mid-run, and every later action of leftover's was
        then "unwitnessed")."""
        try:
            read(*what)
        except Exception as error:   # noqa: BLE001 - any failure: counted and said
            self.unreadable_events += 1
            if len(self.failures) < 3:
                self.failures.append(f"{type(error).__name__}: {error} (reading {str(what)[:200]})")

    def _line(self, line: str) -> None:
        found = LINE.match(line)
        if not found:
            if line.strip():
                self.unparsed += 1
            return
        self.lines += 1
        comm, tid, tgid, ts, body = found.group(1), int(found.group(2)), found.group(3), float(found.group(4)), \
            found.group(5)
        tgid = int(tgid) if tgid.isdigit() else tid
        when = ts + self.offset
        if body.startswith("sys_"):
            if enter := ENTER.match(body):
                self._enter(tid, tgid, comm, when, enter.group(1), _args(enter.group(2)))
            elif leave := EXIT.match(body):
                self._exit(tid, leave.group(1), _signed(int(leave.group(2), 16)))
            return
        event, _, rest = body.partition(": ")
        if event == "task_newtask" and (m := NEWTASK.match(rest)):
            child, flags = int(m.group(1)), int(m.group(3), 16)
            parent = self.tasks.get(tid)
            # Read late, the child's pid may be another process's by now: then its node is
            # its parent's (a namespace's first process is found by its own later events).
            node = self._node_of(child) if not self._born_after(child, when) else (parent.node if parent else None)
            self.tasks[child] = Task(m.group(2), tgid if flags & CLONE_THREAD else child, tid,
                                     parent.uid if parent else None, node)
            if flags & CLONE_THREAD:
                self.threaded.add(tgid)
            self.targets.pop(child, None)
        elif event == "task_rename" and (m := RENAME.match(rest)):
            task = self.tasks.get(int(m.group(1)))
            if task:
                task.comm = m.group(2)
            self.targets.pop(int(m.group(1)), None)   # an exec: who it is is read again
        elif event == "signal_generate" and (m := GENERATE.match(rest)):
            self._generate(tid, tgid, comm, when, int(m.group(1)), m.group(3), int(m.group(4)),
                           int(m.group(5)), int(m.group(6)))
        elif event == "signal_deliver" and (m := DELIVER.match(rest)):
            target = self.targets.get(tid)
            if target is not None or tid not in self.targets:
                target = target or self._target(tid, comm, when)
                if target is not None:
                    # A thread group's exit (exit_group, an exec, a fatal signal) SIGKILLs its
                    # other threads with no signal_generate: "threaded" says it may be one.
                    self.delivers.append({"when": when, "pid": tid, "tgid": tgid, "sig": int(m.group(1)),
                                          "default": int(m.group(3), 16) == 0, "uid": target[0],
                                          "node": target[1], "ns_pid": target[2],
                                          "threaded": tgid in self.threaded})

    def _enter(self, tid: int, tgid: int, comm: str, when: float, call: str, args: dict) -> None:
        if call in UID_CALLS:
            uid = args.get(UID_CALLS[call], 0xFFFFFFFF)
            if uid != 0xFFFFFFFF:
                self._task(tid, comm, tgid).uid = uid
                # A target judged before it took a soak user's uid (slurmstepd's child, as
                # root) is judged again: a cached "not a soak user's" would hide the signals
                # sent to it from then on.
                self.targets.pop(tid, None)
        elif call in KILL_CALLS:
            self.inflight[tid] = (call, args, when)
        elif call in UNLINK_CALLS:
            if call == "mq_unlink":
                self.mq_unlinks += 1
            task = self._task(tid, comm, tgid)
            leader = self.tasks.get(task.tgid, task)
            self.unlinks.setdefault(tid, []).append(
                (when, call, leader.comm if leader.comm in LEFTOVER_COMMS | SLURM_DAEMONS else task.comm,
                 task.tgid, self._chain(tid)[:6], task.uid))
        elif call in IPC_CALLS:
            namespace = _ipc_namespace(tgid)
            if namespace is not None and namespace != self.ipc_namespace:
                self.other_namespace_ipc += 1
                return
            record = {"when": when, "kind": IPC_CALLS[call], "id": args.get(IPC_ID_FIELD[call]), "call": call}
            record.update(self._sender(tid, tgid, comm, call))
            self.pending_ipc[tid] = record

    def _exit(self, tid: int, call: str, ret: int) -> None:
        if call in KILL_CALLS:
            self.inflight.pop(tid, None)
        elif call in IPC_CALLS and tid in self.pending_ipc:
            record = self.pending_ipc.pop(tid)
            record["ret"] = ret
            self.ipc_removals.append(record)

    def _generate(self, tid: int, tgid: int, comm: str, when: float, sig: int, target_comm: str, pid: int,
                  group: int, result: int) -> None:
        target = self._target(pid, target_comm, when, place_gone=True)
        if target is None:
            return
        call = self.inflight.get(tid)
        record = {"when": when, "sig": sig, "signal": SIGNAMES.get(sig, f"signal {sig}"), "pid": pid,
                  "uid": target[0], "node": target[1], "ns_pid": target[2], "comm": target[3] or target_comm,
                  "group": group, "result": result}
        record.update(self._sender(tid, tgid, comm, call[0] if call else None))
        self.signals.append(record)

    # ---- the files --------------------------------------------------------------------

    def _start_fanotify(self) -> None:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        libc.fanotify_init.argtypes = [ctypes.c_uint, ctypes.c_uint]
        libc.fanotify_mark.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint64, ctypes.c_int, ctypes.c_char_p]
        libc.name_to_handle_at.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p,
                                           ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        self._libc = libc
        fd = libc.fanotify_init(FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_TID | FAN_REPORT_DIR_FID | FAN_REPORT_NAME,
                                os.O_RDONLY)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "fanotify_init")
        self._fan = fd
        self._roots = {}
        for host, node, view in self.watch:
            self._roots[host] = (node, view)
            self._mark(host)

    def _handle(self, path: Path) -> bytes:
        buf = ctypes.create_string_buffer(8 + 128)
        struct.pack_into("=I", buf, 0, 128)
        mount_id = ctypes.c_int()
        if self._libc.name_to_handle_at(AT_FDCWD, str(path).encode(), buf, ctypes.byref(mount_id), 0) < 0:
            raise OSError(ctypes.get_errno(), f"name_to_handle_at {path}")
        size, kind = struct.unpack_from("=Ii", buf, 0)
        return struct.pack("=i", kind) + buf.raw[8:8 + size]

    def _mark(self, path: Path) -> None:
        """Watches a directory (and, walking it, what is in it already)."""
        mask = FAN_CREATE | FAN_DELETE | FAN_MOVED_FROM | FAN_MOVED_TO | FAN_ONDIR
        if self._libc.fanotify_mark(self._fan, FAN_MARK_ADD, mask, AT_FDCWD, str(path).encode()) < 0:
            raise OSError(ctypes.get_errno(), f"fanotify_mark {path}")
        self._handles[self._handle(path)] = path
        try:
            names = os.listdir(path)
        except OSError:
            return
        for name in names:
            self._created(path, name)

    def _created(self, directory: Path, name: str) -> None:
        try:
            st = os.lstat(directory / name)
        except OSError:
            return
        is_dir = stat.S_ISDIR(st.st_mode)
        self.owners[(str(directory), name)] = (st.st_uid, is_dir)
        if is_dir:
            try:
                self._mark(directory / name)
            except OSError:
                pass

    def _where(self, directory: Path) -> tuple[Optional[str], str]:
        for root, (node, view) in self._roots.items():
            if directory == root or root in directory.parents:
                return node, str(Path(view) / directory.relative_to(root))
        return None, str(directory)

    def _read_fanotify(self) -> None:
        while True:
            stopping = self._stop.is_set()
            data = self._read_ready(self._fan, stopping)
            if data is None:
                return
            if not data:
                if stopping:
                    return
                continue
            now = time.time()
            offset = 0
            while offset + 24 <= len(data):
                event_len, _, _, meta_len, mask, fd, pid = struct.unpack_from("=IBBHQii", data, offset)
                if mask & FAN_Q_OVERFLOW:
                    self.fanotify_overflows += 1
                info = offset + meta_len
                while info + 4 <= offset + event_len:
                    info_type, _, info_len = struct.unpack_from("=BBH", data, info)
                    if info_type == FAN_EVENT_INFO_TYPE_DFID_NAME:
                        size, kind = struct.unpack_from("=Ii", data, info + 12)
                        handle = struct.pack("=i", kind) + data[info + 20:info + 20 + size]
                        name = data[info + 20 + size:info + info_len].split(b"\0")[0].decode(errors="replace")
                        directory = self._handles.get(handle)
                        if directory is not None:
                            self._guarded(self._file_event, now, mask, pid, directory, name)
                    info += max(info_len, 4)
                if fd >= 0:
                    os.close(fd)
                offset += event_len

    def _file_event(self, now: float, mask: int, tid: int, directory: Path, name: str) -> None:
        if mask & (FAN_CREATE | FAN_MOVED_TO):
            self._created(directory, name)
            return
        uid, is_dir = self.owners.pop((str(directory), name), (None, bool(mask & FAN_ONDIR)))
        if uid is not None and uid not in self.test_uids:
            return
        node, path = self._where(directory / name)
        task = self.tasks.get(tid)
        status = proc_status(tid)
        sender_uid = int(status["Uid"].split()[0]) if status.get("Uid") else (task.uid if task else None)
        self.file_events.append({"seen": now, "tid": tid, "node": node, "path": path, "uid": uid, "dir": is_dir,
                                 "moved": bool(mask & FAN_MOVED_FROM), "sender_uid": sender_uid,
                                 "sender_node": self._task_node(tid)})

    def _poll_sysv(self) -> None:
        while not self._stop.is_set():
            now = time.time()
            for kind, id_key, uid_key in (("shm", "shmid", "uid"), ("msg", "msqid", "uid"), ("sem", "semid", "uid")):
                try:
                    lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
                except OSError:
                    continue
                header = lines[0].split()
                present = set()
                # Everyone's objects, not only the soak users': an id is reused, and a removal
                # of another program's object (a unit test's, beside a release's soak) must
                # not be matched to a soak user's that had the id before.
                for line in lines[1:]:
                    row = dict(zip(header, line.split()))
                    uid = int(row[uid_key])
                    present.add((kind, int(row[id_key])))
                    history = self.sysv.setdefault((kind, int(row[id_key])), [])
                    # One object while its key, owner, creator and change time (whole seconds)
                    # stay: an id reused between two looks by another program's IPC_PRIVATE
                    # object in the same second differs by its owner.
                    last = history[-1] if history else None
                    if (last and last["gone"] is None and last["key"] == row["key"] and last["uid"] == uid
                            and last["cuid"] == int(row.get("cuid", uid)) and last["ctime"] == row.get("ctime")):
                        last["last"] = now
                    else:
                        history.append({"key": row["key"], "uid": uid, "cuid": int(row.get("cuid", uid)),
                                        "ctime": row.get("ctime"), "first": now, "last": now, "gone": None})
                for key in self._sysv_present.get(kind, set()) - present:
                    self.sysv[key][-1]["gone"] = now
                self._sysv_present[kind] = present
            self._stop.wait(0.1)

    # ---- the records ------------------------------------------------------------------

    def left(self) -> dict:
        """What of the soak users is on the nodes now: files in the watched directories,
        SysV objects."""
        files = []
        for host, node, view in self.watch:
            for directory, dirs, names in os.walk(host):
                for name in dirs + names:
                    path = Path(directory) / name
                    try:
                        uid = os.lstat(path).st_uid
                    except OSError:
                        continue
                    if uid in self.test_uids:
                        files.append({"node": node, "path": str(Path(view) / path.relative_to(host)), "uid": uid})
        sysv = []
        for kind, id_key in (("shm", "shmid"), ("msg", "msqid"), ("sem", "semid")):
            try:
                lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
            except OSError:
                continue
            header = lines[0].split()
            for line in lines[1:]:
                row = dict(zip(header, line.split()))
                if int(row["uid"]) in self.test_uids:
                    sysv.append({"kind": kind, "id": int(row[id_key]), "uid": int(row["uid"])})
        # Who still holds each uid on each node (a process with it as any of its uids: a
        # setuid stray holds its real user, whom leftover then never cleans up after).
        held: dict[str, set[int]] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            node = self._node_of(int(entry))
            uids = proc_status(int(entry)).get("Uid", "").split()
            if node is not None and node != "host":
                held.setdefault(node, set()).update(int(u) for u in uids if int(u) in self.test_uids)
        return {"files": files, "sysv": sysv, "held": {node: sorted(uids) for node, uids in held.items()}}

    def records(self, procs: list, left: Optional[dict] = None) -> dict:
        """Everything witnessed, for judge.json; procs: the sampler's records, to name the
        targets that were gone before the witness could read them."""
        by_host = {}
        for proc in procs:
            by_host.setdefault(proc.host_pid, []).append(proc)
        unresolved = 0
        for record in self.signals + self.delivers:
            if record["ns_pid"] is not None:
                continue
            # Its last sight when it was never seen gone: a 20-minute run named leftover's
            # SIGSTOP of a swept user's pid hopper after a protected user's hopper that had
            # held the host pid (pid_max 32768) 16 minutes before, seen once, never gone.
            found = [p for p in by_host.get(record["pid"], [])
                     if p.first_seen - 1.0 <= record["when"] <= (p.last_seen if p.gone_at is None else p.gone_at) + 1.0]
            if found:
                proc = found[-1]
                record.update(uid=proc.uid, node=proc.node, ns_pid=proc.ns_pid)
            elif "sender" in record:
                unresolved += 1
        self.delivers = [d for d in self.delivers if d["uid"] is not None]
        removals = []
        for event in self.file_events:
            # The call right before the event was read (not one of an earlier owner of the tid).
            calls = [c for c in self.unlinks.get(event["tid"], ())
                     if event["seen"] - UNLINK_LAG <= c[0] <= event["seen"] + 0.05]
            when, call, comm, tgid, chain, uid = calls[-1] if calls else (event["seen"], None, "?", event["tid"], [],
                                                                           None)
            if event["moved"]:
                call = call or "rename"
            uid = uid if uid is not None else event["sender_uid"]
            sender = sender_class(call or "unlink", uid, comm, chain, tgid, self.harness_pid, self.test_uids)
            removals.append({"when": when, "kind": "dir" if event["dir"] else "file", "node": event["node"],
                             "name": event["path"], "uid": event["uid"], "sender": sender, "sender_tid": event["tid"],
                             "sender_tgid": tgid, "sender_comm": comm, "sender_uid": uid,
                             "sender_node": event["sender_node"], "sender_chain": chain, "syscall": call,
                             "moved": event["moved"]})
        removed = set()   # the objects an earlier successful IPC_RMID removed: none is removed twice
        for record in sorted(self.ipc_removals, key=lambda r: r["when"]):
            # The object that had the id then: seen before the call, not seen gone before it,
            # and not seen after it (+50 ms: a look begun before the call may read after it).
            # A call that left the object in place removed another IPC namespace's object of
            # that id: a release's unit test, whose namespace could no longer be read when
            # the witness came to its call, removed its own sem 1 and 2 beside a soak whose
            # protected user held sem 1 and 2, and the run judged them removed (CI, 976d9e9).
            history = [h for h in self.sysv.get((record["kind"], record["id"]), [])
                       if h["first"] <= record["when"] and h["last"] <= record["when"] + 0.05
                       and (h["gone"] is None or h["gone"] >= record["when"])]
            owner = history[-1] if history and id(history[-1]) not in removed else None
            if owner is not None and record.get("ret", -1) == 0:
                removed.add(id(owner))
            # No owner: one made and removed between two looks at /proc/sysvipc (a busy
            # machine's): kept with no uid for the log's truth when leftover removed it,
            # judged by nothing else. Another program's object is judged only when leftover
            # removed it (it never may).
            if owner is None and record.get("sender") != "leftover":
                continue
            if (owner is not None and record.get("sender") != "leftover"
                    and owner["uid"] not in self.test_uids and owner["cuid"] not in self.test_uids):
                continue
            removals.append({"when": record["when"], "kind": record["kind"], "node": record["sender_node"],
                             "name": str(record["id"]), "uid": owner["uid"] if owner else None, "ret": record["ret"],
                             **{k: v for k, v in record.items() if k.startswith("sender") or k == "syscall"}})
        stats = dict(self.stats, **{"unresolved targets": unresolved, "mq_unlink calls": self.mq_unlinks})
        return {"signals": self.signals, "delivers": self.delivers, "removals": sorted(removals, key=lambda r: r["when"]),
                "stats": stats, "left": left or {"files": [], "sysv": []}}
