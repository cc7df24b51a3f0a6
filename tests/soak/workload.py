# SPDX-License-Identifier: GPL-2.0-or-later
"""The seeded workload: a schedule of actions made up front from the seed alone (the
same seed gives the same schedule), then run against the cluster, several at a time.

Jobs run `soak-job` (a script in the cluster's soakbin), which leaves the strays and
files its arguments name on its node and then becomes `soak-body` for the job's time.
Every stray carries SOAK_STRAY=<what>/<tag>/<node> in its environment, which is how the
sampler knows it for a planted one; comm names (soak-body, soak-stray, ...) say what a
process was in leftover's log lines.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import signal
import re
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Callable, Optional

from harness.slurm_jobs import FINAL_STATES, parse_fields

from .records import processes_named
from .soak_cluster import NODES, PROLOG_SLOW, SoakCluster, SoakUsers, write_root_file

# How long a client command may take beyond its job's own time: on 24.11 and 26.05 an
# srun whose step was being created while slurmctld restarted (fault_ctld) never returns.
# And on 26.05 a node whose jobs completed while slurmctld was down stays COMPLETING for
# a minute after it is back (seen: slurmctld recovered jobs 10, 11 and 15 "in completing
# state" on lo-n2 and allocated the next job there 60 s later), so a new job for that
# node waits as long before it starts.
CLIENT_PATIENCE = 100.0
# How much longer a step of an existing allocation (a batch job's srun, an srun --jobid)
# may take to start when slurmctld restarted under it (fault_ctld). Until the nodes
# register again, the restarted slurmctld counts none of the job's nodes as up and
# refuses the step as "Requested nodes are busy" (22.05 step_mgr.c, _pick_step_nodes);
# srun then waits for word that another step of the job ended, or else for
# SlurmctldTimeout (clamped to 60..300 s; 120 by default, as here) plus its pid modulo 10
# seconds (srun's launch.c and step_ctx.c) before it asks again. A batch job's srun is its
# only step: nothing ends meanwhile, so the job takes up to 130 s longer.
STEP_RETRY_WAIT = 120.0 + 10.0

STRAY_KINDS = ("dfork", "setsid", "nohup", "termign", "chain", "hop", "setuid", "shm", "sysv", "file",
               # the hostile ones (issue 32): stopped by its user, traced by a sibling, named like
               # Slurm's or sshd's daemons, a fast forker, SysV semaphores and queues, an attached
               # segment
               "ustop", "traced", "asstepd", "assshd", "forker", "sysvsem", "sysvmsg", "shmat",
               # slow to die: in uninterruptible sleep (D) until SIGKILL; a large address space
               "dstate", "bigmem")
# What leaves no process behind.
FILE_KINDS = ("shm", "sysv", "file", "sysvsem", "sysvmsg")

SOAK_JOB = r'''#!/bin/sh
# soak-job TAG SECONDS SCRATCH KIND...: what one task of a soak job does on its node:
# leaves the strays and files KIND names, then sleeps SECONDS as soak-body; SECONDS
# "@<epoch>": until that moment (half a second at least), so that tasks started apart
# end together.
# hop: a pid hopper (soak-hopper); setuid: a stray that execs a setuid program, whose
# effective uid is another (the soak's high user's: its real, effective and saved uids
# differ), skipped where the setuid bit has no effect; sysv: a SysV shared memory segment.
tag=$1; secs=$2; scratch=$3; shift 3
bin=$(dirname "$0")
node=${SLURMD_NODENAME:-none}
for kind in "$@"; do
  export SOAK_STRAY="$kind/$tag/$node"
  case $kind in
    dfork) ( setsid "$bin/soak-stray" 300 </dev/null >/dev/null 2>&1 & ) ;;
    setsid) setsid "$bin/soak-stray" 300 </dev/null >/dev/null 2>&1 & ;;
    nohup) nohup "$bin/soak-stray" 300 </dev/null >/dev/null 2>&1 & ;;
    termign) ( trap '' TERM; setsid "$bin/soak-stray-ti" 300 </dev/null >/dev/null 2>&1 & ) ;;
    chain) ( setsid /bin/sh -c "\"$bin/soak-stray\" 300 & exec \"$bin/soak-stray\" 300" \
             </dev/null >/dev/null 2>&1 & ) ;;
    hop) ( setsid "$bin/soak-hopper" 200 </dev/null >/dev/null 2>&1 & ) ;;
    setuid) [ -u "$bin/soak-setuid" ] && ( setsid "$bin/soak-setuid" 300 </dev/null >/dev/null 2>&1 & ) ;;
    shm) echo "$tag" > "/dev/shm/soak-$tag-$node-$(id -u)" ;;
    sysv) ipcmk -M 4099 >/dev/null ;;  # soak_cluster.SYSV_BYTES
    file) mkdir -p "$scratch/soak-$tag-$node" && echo "$tag" > "$scratch/soak-$tag-$node/f" ;;
    # Ctrl-Z style, by the stray's own user, once it runs in its own session: stopping $!
    # before it is soak-stray may stop the forked shell before setsid, in the job's process
    # group, which the kernel then SIGHUPs, the job's own processes with it, when the group
    # is orphaned; and it would leave a stopped process that is no ustop stray (a fixed
    # 0.2 s wait was too short on a loaded CI machine). Not stopped if it never gets there.
    ustop) ( setsid "$bin/soak-stray" 300 </dev/null >/dev/null 2>&1 & p=$!; i=0
             while [ "$(cat /proc/$p/comm 2>/dev/null)" != soak-stray ] && [ $i -lt 200 ]; do
               sleep 0.05; i=$((i + 1)); done
             [ "$(cat /proc/$p/comm 2>/dev/null)" = soak-stray ] && kill -STOP $p ) ;;
    traced) ( setsid "$bin/soak-tracer" "$bin/soak-stray" 300 </dev/null >/dev/null 2>&1 & ) ;;
    asstepd) ( setsid "$bin/fake/slurmstepd" 300 </dev/null >/dev/null 2>&1 & ) ;;
    assshd) ( setsid "$bin/fake/sshd" 300 </dev/null >/dev/null 2>&1 & ) ;;
    forker) ( setsid "$bin/soak-forker" </dev/null >/dev/null 2>&1 & ) ;;
    sysvsem) ipcmk -S 3 >/dev/null ;;
    sysvmsg) ipcmk -Q >/dev/null ;;
    shmat) ( setsid "$bin/soak-shmat" 300 </dev/null >/dev/null 2>&1 & ) ;;
    dstate) ( setsid "$bin/soak-dstate" 300 </dev/null >/dev/null 2>&1 & ) ;;
    bigmem) ( setsid "$bin/soak-bigmem" 300 </dev/null >/dev/null 2>&1 & ) ;;
  esac
done
unset SOAK_STRAY
case $secs in
  @*) secs=$(awk -v until="${secs#@}" -v now="$(date +%s.%N)" \
             'BEGIN { left = until - now; printf "%.3f", left < 0.5 ? 0.5 : left }') ;;
esac
exec "$bin/soak-body" "$secs"
'''

# The control `lie`'s fake leftover: slurmstepd's name, a pidfd's signal, no log line.
# Exit 3: the process was gone before it could be signalled (another is chosen).
FAKE_LEFTOVER = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None).prctl(15, b'slurmstepd', 0, 0, 0)  # PR_SET_NAME\n"
    "try:\n"
    "    signal.pidfd_send_signal(os.pidfd_open(int(sys.argv[1])), signal.SIGKILL)\n"
    "except ProcessLookupError:\n"
    "    sys.exit(3)\n")
FAKE_LEFTOVER_GONE = 3

SOAK_HOPPER = r'''#!/bin/sh
# soak-hopper N: a pid hopper: lives a moment (its child soak-hop), starts its successor
# and exits, so its successor is orphaned at once; N more hops at most.
n=${1:-0}
"$(dirname "$0")/soak-hop" 0.3
[ "$n" -gt 0 ] && "$0" $((n - 1)) &
exit 0
'''


# srun's error for a step that would need memory an ended step of the job still holds
# (slurmctld frees it once it has the step's end), and how often a step is asked for.
STEP_MEMORY_BUSY = "Memory required by task is not available"
# A burst: arrays of up to three users, BURST_JOBS tasks in all, on one node at once (the
# test nodes advertise the CPUs for them: BURST_CPUS in soak_cluster.py), at least
# BURST_ENDS of them ending within a second. Each job end is two step ends and an epilog,
# each a sweep: 10 jobs load this 2-core machine's node far past the 4x its CPUs that
# leftover's deadline is promised at. 8 to 24 (8 tasks a user) made every 0.5-minute run
# whose burst was its first action (seed 481811) judge 5 to 17 lookup errors, the
# answers of the ending jobs' step sockets and of slurmctld not coming by the deadline.
BURST_JOBS = 10
# Their starts spread over seconds on a busy node, and a start after the common end ends
# later: CI's burst of 16 once had at most 6 ends within a second, a replay's of 10 had 7.
BURST_ENDS = 6
# How long a burst's tasks have to start before their common end begins to count.
BURST_START_ROOM = 5.0
STEP_MEMORY_TRIES = 5

# soak-tracer PROGRAM ARGS...: a stray that runs PROGRAM as its child and traces it
# (by its parent, as a debugger would), passing on every signal the child is sent.
# PTRACE_SEIZE with PTRACE_O_TRACEEXEC: no attach stop and no SIGTRAP at the child's
# exec (with PTRACE_ATTACH an attach before the exec made the kernel send it SIGTRAP,
# which passed on killed it: a death of the harness's own making).
SOAK_TRACER = r'''#!/usr/bin/python3
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = (ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p)
child = os.fork()
if child == 0:
    os.execv(sys.argv[1], sys.argv[1:])
libc.ptrace(0x4206, child, None, ctypes.c_void_p(0x10))  # PTRACE_SEIZE, PTRACE_O_TRACEEXEC
while True:
    try:
        _, status = os.waitpid(child, 0)
    except ChildProcessError:
        break
    if not os.WIFSTOPPED(status):
        break
    # An event stop (the exec's, a group stop) passes no signal on.
    sig = 0 if status >> 16 else os.WSTOPSIG(status)
    libc.ptrace(7, child, None, ctypes.c_void_p(sig))  # PTRACE_CONT, the signal passed on
'''

# soak-forker: forks all the time (about 20 short children a second), never more than two at once.
SOAK_FORKER = r'''#!/bin/sh
bin=$(dirname "$0")
n=0
while [ $n -lt 3000 ]; do "$bin/soak-hop" 0.1 & "$bin/soak-hop" 0.05; wait; n=$((n + 1)); done
'''

# soak-shmat SECONDS: a stray attached to a SysV segment of its own (soak_cluster.SYSV_BYTES).
SOAK_SHMAT = r'''#!/usr/bin/python3
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
shmid = libc.shmget(0, 4099, 0o1600)   # IPC_PRIVATE, IPC_CREAT | 0600
libc.shmat(shmid, None, 0)
time.sleep(float(sys.argv[1]))
'''

# soak-dstate SECONDS: a stray in uninterruptible sleep (state D) for SECONDS, as a vfork
# parent waits for its child: it clones a child with CLONE_VFORK (not CLONE_VM: the child
# has memory of its own), which sleeps and exits. Only SIGKILL ends that wait (the kernel's
# TASK_KILLABLE): a SIGSTOP or SIGTERM sent meanwhile pends until the child is gone.
SOAK_DSTATE = r'''#!/usr/bin/python3
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SYS_CLONE = {"x86_64": 56, "aarch64": 220}[os.uname().machine]
pid = libc.syscall(ctypes.c_long(SYS_CLONE), ctypes.c_ulong(0x4000 | 17), None, None, None, None)  # CLONE_VFORK | SIGCHLD
if pid == 0:
    time.sleep(float(sys.argv[1]))
    os._exit(0)
if pid > 0:
    os.waitpid(pid, 0)
'''

# soak-bigmem SECONDS: a stray with a large address space: 64 GiB reserved (read-only,
# never touched) and 256 MiB written, which the kernel frees as it exits.
SOAK_BIGMEM = r'''#!/usr/bin/python3
import mmap, sys, time
reserved = mmap.mmap(-1, 64 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=mmap.PROT_READ)
touched = mmap.mmap(-1, 256 << 20)
chunk = b"\1" * (1 << 20)
for offset in range(0, len(touched), len(chunk)):
    touched[offset:offset + len(chunk)] = chunk
time.sleep(float(sys.argv[1]))
'''

@dataclasses.dataclass
class Action:
    index: int
    at: float            # seconds after the start
    kind: str
    user: str
    nnodes: int
    nodelist: tuple[str, ...]   # empty: slurmctld picks
    secs: float
    kinds: tuple[str, ...]
    steps: int = 0
    pause: float = 0.0
    inner: bool = False    # salloc: another job of the holder's ends on a held node meanwhile

    @property
    def tag(self) -> str:
        return f"a{self.index}"


ACTION_KINDS = ("batch", "srun", "salloc", "cancel", "login", "race", "array", "het", "prolog", "burst", "suspend",
                "requeue")


def make_schedule(seed: int, seconds: float, faults: bool, users: SoakUsers,
                  only: Optional[tuple[str, ...]] = None) -> list[Action]:
    """only: these kinds of action, each as often, by ordinary users (a mutant's run aims
    at the shape that shows it)."""
    rng = random.Random(seed)
    actions: list[Action] = []
    kinds = (["batch"] * 25 + ["srun"] * 20 + ["salloc"] * 15 + ["cancel"] * 10 + ["login"] * 15 + ["race"] * 10
             + ["array"] * 8 + ["het"] * 6 + ["prolog"] * 8 + ["burst"] * 4 + ["suspend"] * 5 + ["requeue"] * 4)
    if only:
        kinds = list(only)
    t = 0.5
    while t < seconds:
        kind = rng.choice(kinds)
        user = rng.choice(users.ordinary) if only or rng.random() < 0.75 else rng.choice(tuple(users.protected))
        nnodes = rng.choices((1, 2, 3), (60, 25, 15))[0]
        if kind in ("login", "race"):
            nnodes = 1
        elif kind == "het":
            nnodes = 2   # a component on each of two nodes
        nodelist = tuple(sorted(rng.sample(NODES, nnodes))) if rng.random() < 0.7 or kind in ("login", "race") else ()
        strays = tuple(rng.sample(STRAY_KINDS, rng.choice((0, 1, 1, 2, 3))))
        if rng.random() < 0.3:
            strays = tuple(rng.sample(FILE_KINDS, rng.choice((1, 2))))  # files, no process
        if kind == "race":
            strays = ("termign", "dfork")
        if kind == "prolog":
            nnodes, user = 1, rng.choice(users.ordinary)
            nodelist = (rng.choice(NODES),)
        if kind == "burst":
            nnodes, user = 1, rng.choice(users.ordinary)
            nodelist = (rng.choice(NODES),)
        actions.append(Action(len(actions), round(t, 2), kind, user, nnodes, nodelist,
                              round(rng.uniform(0.5, 6.0), 1), strays, rng.randint(1, 3),
                              round(rng.uniform(0.0, 2.0), 2), rng.random() < 0.5))
        t += rng.expovariate(1 / 1.3)
    if faults:
        actions.append(Action(len(actions), round(rng.uniform(0.3, 0.6) * seconds, 2), "fault_ctld", "root",
                              0, (), round(rng.uniform(2.0, 5.0), 1), ()))
        for _ in range(max(1, round(seconds / 60))):
            actions.append(Action(len(actions), round(rng.uniform(0.1, 0.9) * seconds, 2), "fault_stepd", "root",
                                  1, (rng.choice(NODES),), round(rng.uniform(1.0, 4.0), 1), (),
                                  rng.randint(0, 9)))
            actions.append(Action(len(actions), round(rng.uniform(0.1, 0.9) * seconds, 2), "fault_conf", "root",
                                  0, (), round(rng.uniform(1.0, 5.0), 1), ()))
            actions.append(Action(len(actions), round(rng.uniform(0.1, 0.9) * seconds, 2), "fault_slurmd", "root",
                                  1, (rng.choice(NODES),), 0.0, ()))
        actions.sort(key=lambda a: a.at)
    return actions


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().rstrip(b"\0")
    except OSError:
        return b""


def _output_tail(path: Optional[str]) -> str:
    """The last line a job wrote to its output (e.g. srun's "step creation temporarily
    disabled"), to say in a harness error why it has not ended."""
    try:
        lines = [line for line in Path(path).read_text(errors="replace").splitlines() if line.strip()]
    except (OSError, TypeError):
        return ""
    return f"; its output ends: {lines[-1][:160]}" if lines else ""


def yaml_to_dict(text: str) -> dict:
    """The soak's own leftover.conf (flat `key: value` and `key: [a, b]` lines) as a dict."""
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(": ")
        value = value.strip()
        if value.startswith("["):
            out[key] = [v.strip() for v in value.strip("[]").split(",") if v.strip()]
        elif value in ("true", "false"):
            out[key] = value == "true"
        else:
            try:
                out[key] = int(value)
            except ValueError:
                try:
                    out[key] = float(value)
                except ValueError:
                    out[key] = value
    return out


class EventLog:
    """The harness's own timeline: what it did, when (wall clock, like the daemons' logs)."""

    def __init__(self):
        self.events: list[tuple[float, str]] = []
        self._lock = threading.Lock()

    def add(self, text: str, when: Optional[float] = None) -> None:
        with self._lock:
            self.events.append((time.time() if when is None else when, text))


class JobWatcher:
    """One `scontrol show job` a second for every action to wait on."""

    def __init__(self, soak: SoakCluster):
        self.cluster = soak.cluster
        self.jobs: dict[int, dict] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="jobs", daemon=True)

    def start(self):
        self._thread.start()

    def stop(self):
        self._stop.set()
        self._thread.join()

    def refresh(self) -> None:
        res = self.cluster.scontrol("-o", "show", "job", check=False)
        if res.returncode == 0:
            jobs = {}
            for line in res.stdout.splitlines():
                fields = parse_fields(line)
                if "JobId" in fields:
                    jobs[int(fields["JobId"])] = fields
            self.jobs = jobs

    def _run(self):
        while not self._stop.wait(1.0):
            self.refresh()

    def by_name(self, name: str, timeout: float = 30) -> Optional[int]:
        deadline = time.time() + timeout
        while time.time() < deadline:
            for job, fields in list(self.jobs.items()):
                if fields.get("JobName") == name:
                    return job
            time.sleep(0.3)
        return None

    def wait(self, job: int, states: frozenset, timeout: float) -> Optional[str]:
        deadline = time.time() + timeout
        while time.time() < deadline:
            state = self.jobs.get(job, {}).get("JobState")
            if state in states:
                return state
            time.sleep(0.3)
        return None

    def all_done(self) -> bool:
        return all(f.get("JobState") in FINAL_STATES for f in self.jobs.values())


class Workload:
    def __init__(self, soak: SoakCluster, events: EventLog, watcher: JobWatcher):
        self.soak, self.cluster, self.events, self.watcher = soak, soak.cluster, events, watcher
        # (begin, end) for slurmctld's and the config's faults, every node's; (begin, end,
        # node) for a slurmstepd's, that node's alone.
        self.fault_windows: list[tuple] = []
        # The harness's own kills (the lie control's): (when, host pid), which the witness
        # must see sent
        self.planned_kills: list[tuple] = []   # (when, host pid[, "drain"]): the oracle's
        # One config rewrite at a time: a second one would read the first's JSON as the
        # text to restore, and could leave the file in neither form.
        self._conf_fault = threading.Lock()
        # slurmctld's restart and a slurmd's, one at a time: slurmctld's start waits for every
        # node's slurmd, and a slurmd restarted meanwhile was an exited process to it (a
        # fresh-clone run's soak then found that node down at its last job, and stopped).
        self._daemon_fault = threading.Lock()
        self.harness_errors: list[str] = []
        self.unexpected_ends: list[str] = []
        self.cancelled: set[int] = set()
        self.job_actions: dict[int, Action] = {}
        self.suspended = 0   # jobs suspended (and resumed) by a suspend action
        self.requeued = 0    # jobs requeued (and held) by a requeue action
        self.requeue_asked: dict[int, float] = {}   # job -> when its requeue was asked for
        # A salloc whose holder waits for an inner job on its own nodes holds a CPU on each
        # meanwhile (CR_CPU). With as many such holders on a node as it has CPUs, each inner
        # job waits for a CPU there that only a holder can free, and each holder for its
        # inner job: nothing moves until the inner sruns time out, and every other job that
        # needs that node waits as long (seed 31 at minute 8: four holders on lo-n2, their
        # inner jobs pending on Resources). Fewer such holders than a node's CPUs leave each
        # node a CPU whose job ends by itself.
        self._inner_holders = threading.BoundedSemaphore(max(1, self.cluster.config.cpus - 1))
        for name, text in (("soak-job", SOAK_JOB), ("soak-hopper", SOAK_HOPPER), ("soak-tracer", SOAK_TRACER),
                           ("soak-forker", SOAK_FORKER), ("soak-shmat", SOAK_SHMAT),
                             ("soak-dstate", SOAK_DSTATE), ("soak-bigmem", SOAK_BIGMEM)):
            (soak.bin / name).write_text(text)
            (soak.bin / name).chmod(0o755)

    # ---- running the schedule ----------------------------------------------------------

    def run(self, schedule: list[Action], parallel: int = 6) -> None:
        start = time.time()
        slots = threading.BoundedSemaphore(parallel)
        threads = []
        for action in schedule:
            delay = start + action.at - time.time()
            if delay > 0:
                time.sleep(delay)
            if not action.kind.startswith("fault"):
                slots.acquire()
            thread = threading.Thread(target=self._run_one, args=(action, slots), name=action.tag, daemon=True)
            thread.start()
            threads.append(thread)
        for thread in threads:
            thread.join(300)

    def _run_one(self, action: Action, slots: threading.BoundedSemaphore) -> None:
        try:
            getattr(self, f"_do_{action.kind}")(action)
        except Exception as failure:  # the soak goes on; the summary lists it
            first = str(failure).splitlines()[0] if str(failure) else type(failure).__name__
            if len(first) > 240:  # a command line: its start and how it ended ("did not finish in 90s")
                first = first[:80] + " ... " + first[-150:]
            text = f"{action.tag} {action.kind} as {action.user}: {first}"
            self.harness_errors.append(text)
            self.events.add(f"harness error: {text}")
            if "--verbose" in __import__("sys").argv:
                traceback.print_exc()
        finally:
            if not action.kind.startswith("fault"):
                slots.release()

    # ---- pieces ------------------------------------------------------------------------

    def _job_argv(self, tag: str, secs, kinds) -> list[str]:
        """secs: seconds, or "@<epoch>", the moment to end at."""
        return [str(self.soak.bin / "soak-job"), tag, secs if isinstance(secs, str) else f"{secs:g}",
                str(self.soak.scratch), *kinds]

    def _node_args(self, action: Action) -> list[str]:
        args = [f"--nodes={action.nnodes}", "--ntasks-per-node=1"]
        if action.nodelist:
            args.append(f"--nodelist={','.join(action.nodelist)}")
        return args

    def _expect_done(self, action: Action, job: int, timeout: float, cancelled: bool = False) -> None:
        state = self.watcher.wait(job, FINAL_STATES, timeout)
        info = self.watcher.jobs.get(job, {})
        self.events.add(f"{action.tag}: job {job} of {action.user} ended {state} exit {info.get('ExitCode')}")
        if state is None:
            self.harness_errors.append(f"{action.tag}: job {job} not done after {timeout:.0f}s: "
                                       f"{info.get('JobState')} (reason {info.get('Reason')})"
                                       f"{_output_tail(info.get('StdOut'))}")
        elif not cancelled and (state != "COMPLETED" or info.get("ExitCode") != "0:0"):
            self.unexpected_ends.append(f"{action.tag} {action.kind} job {job} of {action.user} on "
                                        f"{info.get('NodeList')}: {state} exit {info.get('ExitCode')}")

    def _cancel(self, action: Action, job: int, what: str) -> None:
        """Cancels a job the action holds (an allocation, a held job) and waits for its end."""
        self.cancelled.add(job)
        self.cluster.scancel(job)
        self.events.add(f"{action.tag}: scancel {job} ({what})")
        self._expect_done(action, job, 90, cancelled=True)

    def _srun(self, action: Action, tag: str, secs: float, kinds, extra=(), step: bool = False
              ) -> tuple[int, Optional[int]]:
        argv = ["/usr/bin/srun", f"--job-name={tag}", *self._node_args(action), *extra,
                *self._job_argv(tag, secs, kinds)]
        self.events.add(f"{tag}: srun as {action.user} {' '.join(argv[2:])}")
        for attempt in range(STEP_MEMORY_TRIES if step else 1):
            res = self.cluster.run_as(action.user, argv,
                                      timeout=secs + CLIENT_PATIENCE + (STEP_RETRY_WAIT if step else 0))
            # A step of an allocation whose step before has ended for srun, not yet for
            # slurmctld, which still counts that step's memory: the step is not made (srun
            # does not wait for memory as it does for busy nodes), so it is asked again.
            if not (step and res.returncode != 0 and STEP_MEMORY_BUSY in res.stderr):
                break
            self.events.add(f"{tag}: srun as {action.user}: the step's memory is still held, asking again")
            time.sleep(1.0)
        job = None if step else self.watcher.by_name(tag, 10)
        self.events.add(f"{tag}: srun as {action.user} returned {res.returncode} (job {job})")
        if res.returncode != 0:
            self.unexpected_ends.append(f"{tag} srun as {action.user} (job {job}) returned {res.returncode}: "
                                        f"{res.stderr.strip()[-200:]}")
        return res.returncode, job

    # ---- actions ------------------------------------------------------------------------

    def _do_batch(self, action: Action) -> None:
        script = "#!/bin/sh\n" + " ".join(self._job_argv(action.tag, action.secs, action.kinds)) + "\n"
        if action.nnodes > 1:
            script += ("srun --ntasks-per-node=1 " +
                       " ".join(self._job_argv(action.tag + "s", action.secs / 2, action.kinds)) + "\n")
        job = self.cluster.sbatch(action.user, script, [f"--nodes={action.nnodes}", f"--job-name={action.tag}",
                                                        *self._node_args(action)[2:]])
        self.job_actions[job] = action
        self.events.add(f"{action.tag}: sbatch as {action.user} job {job} nodes {action.nodelist or action.nnodes} "
                        f"{action.kinds} {action.secs}s")
        # With more than one node the script's srun is a step of the job (STEP_RETRY_WAIT).
        self._expect_done(action, job, 2 * action.secs + 90 + (STEP_RETRY_WAIT if action.nnodes > 1 else 0))

    def _do_array(self, action: Action) -> None:
        """A job array: its tasks (one node each) run at once or one after another, each
        a job of its own to slurmctld and to the nodes."""
        tasks = action.steps + 1
        argv = self._job_argv(action.tag + "_$SLURM_ARRAY_TASK_ID", action.secs, action.kinds)
        script = "#!/bin/sh\n" + " ".join(argv) + "\n"
        args = [f"--array=0-{tasks - 1}", "--nodes=1", f"--job-name={action.tag}"]
        if action.nodelist:
            args.append(f"--nodelist={action.nodelist[0]}")
        job = self.cluster.sbatch(action.user, script, args)
        self.job_actions[job] = action
        self.events.add(f"{action.tag}: sbatch --array=0-{tasks - 1} as {action.user} job {job} "
                        f"node {action.nodelist[:1] or 'any'} {action.kinds} {action.secs}s")
        self._array_done(action, action.user, job, tasks, tasks * (2 * action.secs + 30) + 60)

    def _array_done(self, action: Action, user: str, job: int, tasks: int, timeout: float) -> None:
        """Waits for an array's tasks to end, each recorded as a job of the action's."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            records = [(j, f) for j, f in list(self.watcher.jobs.items()) if f.get("ArrayJobId") == str(job)]
            split = [f for _, f in records if f.get("ArrayTaskId", "").isdigit()]
            if len(split) == tasks and all(f.get("JobState") in FINAL_STATES for f in split):
                break
            time.sleep(0.5)
        else:
            self.harness_errors.append(f"{action.tag}: array job {job} not done in time")
            return
        for task_job, fields in records:
            self.job_actions[task_job] = action
            self.events.add(f"{action.tag}: array task {fields.get('ArrayTaskId')} job {task_job} ended "
                            f"{fields.get('JobState')} exit {fields.get('ExitCode')}")
            if fields.get("JobState") != "COMPLETED" or fields.get("ExitCode") != "0:0":
                self.unexpected_ends.append(f"{action.tag} array task {fields.get('ArrayTaskId')} job {task_job} of "
                                            f"{user} on {fields.get('NodeList')}: {fields.get('JobState')} "
                                            f"exit {fields.get('ExitCode')}")

    def _do_burst(self, action: Action) -> None:
        """Many jobs ending on one node within a second: arrays of BURST_JOBS tasks in all
        together, of the action's user and of one or two other ordinary users, all pinned
        to the node, submitted at once, and each running until one moment (the action's
        seconds after BURST_START_ROOM): their starts spread over seconds on a busy node
        (a 1.5-minute run's burst once ended at most 7 on one node within a second)."""
        node = action.nodelist[0]
        others = [u for u in self.soak.users.ordinary if u != action.user]
        users = [action.user] + others[:action.steps % 3]
        end_at = time.time() + BURST_START_ROOM + action.secs
        argv = self._job_argv(action.tag + "_$SLURM_ARRAY_TASK_ID", f"@{end_at:.3f}", action.kinds)
        script = "#!/bin/sh\n" + " ".join(argv) + "\n"
        tasks = -(-BURST_JOBS // len(users))
        jobs = []
        for user in users:
            job = self.cluster.sbatch(user, script, [f"--array=0-{tasks - 1}", "--nodes=1",
                                                     f"--job-name={action.tag}", f"--nodelist={node}"])
            self.job_actions[job] = action
            jobs.append((user, job))
            self.events.add(f"{action.tag}: burst: sbatch --array=0-{tasks - 1} as {user} job {job} node "
                            f"{node} {action.kinds} {action.secs}s")
        for user, job in jobs:
            self._array_done(action, user, job, tasks, 2 * action.secs + 90)

    def _do_het(self, action: Action) -> None:
        """A heterogeneous job of two components, one node each (two jobs to the nodes,
        one to its user), by srun."""
        argv = ["/usr/bin/srun", f"--job-name={action.tag}"]
        for part in range(2):
            argv += [":"] if part else []
            argv += ["--nodes=1", "--ntasks-per-node=1"]
            argv += [f"--nodelist={action.nodelist[part]}"] if action.nodelist else []
            argv += self._job_argv(f"{action.tag}h{part}", action.secs, action.kinds)
        self.events.add(f"{action.tag}: srun as {action.user} (heterogeneous) {' '.join(argv[2:])}")
        res = self.cluster.run_as(action.user, argv, timeout=action.secs + CLIENT_PATIENCE)
        self.events.add(f"{action.tag}: srun as {action.user} returned {res.returncode}")
        if res.returncode != 0:
            self.unexpected_ends.append(f"{action.tag} heterogeneous srun as {action.user} returned "
                                        f"{res.returncode}: {res.stderr.strip()[-200:]}")

    def _do_srun(self, action: Action) -> None:
        self._srun(action, action.tag, action.secs, action.kinds)

    def _do_cancel(self, action: Action) -> None:
        script = ("#!/bin/sh\nsrun --ntasks-per-node=1 " +
                  " ".join(self._job_argv(action.tag, 120, action.kinds)) + "\n")
        job = self.cluster.sbatch(action.user, script, [f"--nodes={action.nnodes}", f"--job-name={action.tag}",
                                                        *self._node_args(action)[2:]])
        self.job_actions[job] = action
        self.events.add(f"{action.tag}: sbatch as {action.user} job {job} to cancel after {action.secs}s")
        if self.watcher.wait(job, frozenset({"RUNNING"}), 60):
            time.sleep(action.secs)
        self.cancelled.add(job)
        self.cluster.scancel(job)
        self.events.add(f"{action.tag}: scancel {job}")
        self._expect_done(action, job, 90, cancelled=True)

    def _do_salloc(self, action: Action) -> None:
        if not action.inner:
            self._salloc(action)
            return
        with self._inner_holders:
            self._salloc(action)

    def _salloc(self, action: Action) -> None:
        res = self.cluster.run_as(action.user, ["/usr/bin/salloc", "--no-shell", f"--job-name={action.tag}",
                                                *self._node_args(action)[:1], *self._node_args(action)[2:]],
                                  timeout=90)
        granted = re.search(r"Granted job allocation (\d+)", res.stderr)
        if not granted:
            job = self.watcher.by_name(action.tag, 5)
            if job is not None:  # granted after all, but salloc did not say so
                self.cluster.scancel(job)
            raise RuntimeError(f"salloc failed ({res.returncode}): {res.stderr.strip()[-200:]}")
        job = int(granted.group(1))
        self.job_actions[job] = action
        self.events.add(f"{action.tag}: salloc --no-shell as {action.user} job {job}")
        try:
            held = None
            wait_until = time.time() + 10   # the watcher learns the allocation's nodes a moment late
            while action.inner and not held and time.time() < wait_until:
                held = self.watcher.jobs.get(job, {}).get("NodeList")
                if not held:
                    time.sleep(0.3)
            if action.inner and held:
                # Before the allocation's first step: without contain no Prolog of it has run
                # on its nodes (so no job prolog's setup record says it is there), and only
                # slurmctld knows the holder's allocation when the inner job ends. Leaves files
                # only: the holder has no process here when it ends.
                self._srun(action, f"{action.tag}i", 0.5, ("shm", "file"), extra=[f"--nodelist={held}"])
            for step in range(action.steps):
                time.sleep(action.pause)
                self._srun(action, f"{action.tag}.{step}", min(action.secs, 3.0), action.kinds,
                           extra=[f"--jobid={job}", "--overlap"], step=True)
            time.sleep(action.pause)
        finally:
            self._cancel(action, job, "the salloc allocation")

    def _do_login(self, action: Action) -> None:
        node = action.nodelist[0]
        ignore = "termign" in action.kinds
        program = self.soak.bin / ("soak-login-ti" if ignore else "soak-login")
        mark = f"login/{action.tag}/{node}"
        trap = "trap '' TERM; " if ignore else ""
        argv = ["/bin/sh", "-c", f"{trap}SOAK_STRAY={mark} exec {program} 300"]
        # Like an ssh login: outside Slurm, in its own session. The sampler finds it by its
        # mark; ending the node's namespace at the end ends it if nothing else did.
        res = self.cluster.run_on_node(node, ["/usr/bin/setsid", "/bin/sh", "-c",
                                              '"$@" </dev/null >/dev/null 2>&1 & echo $!', "sh", *argv],
                                       user=action.user)
        if res.returncode in (-signal.SIGTERM, -signal.SIGKILL, 128 + signal.SIGTERM, 128 + signal.SIGKILL):
            # The starting shell runs as the user, outside Slurm: a sweep of the user's on the
            # node may end it before it says the pid (a CI run met this). The oracle judges
            # that signal as any other; the action ran no login process.
            self.events.add(f"{action.tag}: the login process's starter on {node} was ended by a signal "
                            f"(exit {res.returncode}): no login process")
            return
        if res.returncode != 0:
            raise RuntimeError(f"login process on {node}: exit {res.returncode} {res.stderr.strip()[-200:]}")
        self.events.add(f"{action.tag}: login process of {action.user} on {node}: pid {res.stdout.strip()}"
                        f"{' ignoring TERM' if ignore else ''}")

    def _do_fault_stepd(self, action: Action) -> None:
        """A slurmstepd that does not answer: stopped for a while (its step socket hangs)."""
        node = action.nodelist[0]
        namespace = self.cluster.node_namespace(node)
        stepds = sorted(pid for pid in map(int, filter(str.isdigit, os.listdir("/proc")))
                        if _cmdline(pid).startswith(b"slurmstepd: [") and namespace.contains(pid))
        if not stepds:
            self.events.add(f"fault: no slurmstepd on {node} to stop")
            return
        pid = stepds[action.steps % len(stepds)]
        begin = time.time()
        self.events.add(f"fault: SIGSTOP {_cmdline(pid).decode(errors='replace')} on {node} (host pid {pid})")
        try:
            os.kill(pid, signal.SIGSTOP)
            time.sleep(action.secs)
        finally:
            os.kill(pid, signal.SIGCONT)
            # Node-local: a slurmstepd stopped on one node excuses no other node's errors.
            self.fault_windows.append((begin, time.time(), node))
            self.events.add(f"fault: SIGCONT slurmstepd host pid {pid} on {node}")

    def _do_fault_slurmd(self, action: Action) -> None:
        """slurmd restarted mid-run: its jobs' slurmstepds live on; a sweep meanwhile may
        find no slurmd for its node (a lookup error, node-local)."""
        node = action.nodelist[0]
        with self._daemon_fault:
            begin = time.time()
            self.events.add(f"fault: restarting slurmd on {node}")
            try:
                self.cluster.restart_slurmd(node)
            finally:
                self.fault_windows.append((begin, time.time(), node))
                self.events.add(f"fault: slurmd on {node} is back")

    def _do_suspend(self, action: Action) -> None:
        """A batch job suspended while it runs (its slurmstepds stop its tasks), then
        resumed: its processes are live work all along, whoever ends meanwhile."""
        script = "#!/bin/sh\n" + " ".join(self._job_argv(action.tag, action.secs + 2, action.kinds)) + "\n"
        job = self.cluster.sbatch(action.user, script, [f"--nodes={action.nnodes}", f"--job-name={action.tag}",
                                                        *self._node_args(action)[2:]])
        self.job_actions[job] = action
        self.events.add(f"{action.tag}: sbatch as {action.user} job {job} nodes {action.nodelist or action.nnodes} "
                        f"{action.kinds} {action.secs + 2}s, to be suspended")
        if self.watcher.wait(job, frozenset({"RUNNING"}) | FINAL_STATES, CLIENT_PATIENCE) == "RUNNING":
            time.sleep(1.0)
            res = self.cluster.scontrol("suspend", str(job), check=False)
            self.events.add(f"{action.tag}: scontrol suspend {job}: {res.returncode} {res.stderr.strip()[:120]}")
            if res.returncode == 0:
                self.suspended += 1
                time.sleep(action.pause + 0.5)
                res = self.cluster.scontrol("resume", str(job), check=False)
                self.events.add(f"{action.tag}: scontrol resume {job}: {res.returncode} {res.stderr.strip()[:120]}")
                if res.returncode != 0:
                    self.harness_errors.append(f"{action.tag}: job {job} not resumed: {res.stderr.strip()[:200]}")
        self._expect_done(action, job, 2 * action.secs + 90)

    def _do_requeue(self, action: Action) -> None:
        """A batch job requeued while it runs (scontrol requeuehold): Slurm ends it on its
        nodes and their job epilogs run, as at any end, and the job waits, held, to run
        again (not within the run: a requeued job may start only after the credential's
        lifetime, 22.05 job_mgr.c _job_requeue_op), until the action cancels it."""
        script = "#!/bin/sh\n" + " ".join(self._job_argv(action.tag, action.secs + 2, action.kinds)) + "\n"
        job = self.cluster.sbatch(action.user, script, [f"--nodes={action.nnodes}", f"--job-name={action.tag}",
                                                        "--requeue", *self._node_args(action)[2:]])
        self.job_actions[job] = action
        self.events.add(f"{action.tag}: sbatch as {action.user} job {job} nodes {action.nodelist or action.nnodes} "
                        f"{action.kinds} {action.secs + 2}s, to be requeued")
        try:
            if self.watcher.wait(job, frozenset({"RUNNING"}) | FINAL_STATES, CLIENT_PATIENCE) == "RUNNING":
                time.sleep(min(1.0, action.secs))
                self.requeue_asked[job] = time.time()
                res = self.cluster.scontrol("requeuehold", str(job), check=False)
                self.events.add(f"{action.tag}: scontrol requeuehold {job}: {res.returncode} "
                                f"{res.stderr.strip()[:120]}")
                if res.returncode != 0:
                    self.requeue_asked.pop(job, None)
                else:
                    self.requeued += 1
                    # Its nodes' epilogs: then it is pending, held.
                    self.watcher.wait(job, frozenset({"PENDING"}) | FINAL_STATES, 60)
                    time.sleep(action.pause)
        finally:
            self._cancel(action, job, "requeued and held")

    def _do_fault_conf(self, action: Action) -> None:
        """The config rewritten (atomically, as JSON, then back): no sweep may notice."""
        with self._conf_fault:
            text = self.soak.conf_path.read_text()
            as_json = json.dumps(yaml_to_dict(text))
            self.events.add("config rewritten as JSON")
            write_root_file(self.soak.conf_path, as_json + "\n")
            time.sleep(action.secs)
            write_root_file(self.soak.conf_path, text)
            self.events.add("config rewritten as YAML again")

    def _do_prolog(self, action: Action) -> None:
        """Issue 30's first harm: a job of the user's ends on the node while the user's next
        job there is in its Prolog (slow for it, PROLOG_SLOW s), whose scratch directory and
        /dev/shm file the Prolog has just made; the next job needs them to its end (it fails
        if they are gone), and the oracle judges their removal while it runs as (1)."""
        node = action.nodelist[0]
        first = self.cluster.sbatch(action.user, "#!/bin/sh\n" + " ".join(
            self._job_argv(action.tag, 1.5, action.kinds or ("dfork", "shm"))) + "\n",
            [f"--job-name={action.tag}", f"--nodelist={node}"])
        self.job_actions[first] = action
        self.events.add(f"{action.tag}: sbatch as {action.user} job {first} on {node} (ends while the next is in "
                        "its Prolog)")
        self.watcher.wait(first, frozenset({"RUNNING"}) | FINAL_STATES, 60)
        check = ('test -e "/dev/shm/soak-prolog-$SLURM_JOB_ID" -a -e "{0}/job-$SLURM_JOB_ID/prolog" || '
                 '{{ echo "the Prolog\'s files of job $SLURM_JOB_ID are gone"; exit 3; }}').format(self.soak.scratch)
        # Held until its marker is there: the Prolog is slow for this job alone (a marker
        # per user made the user's other jobs' Prologs slow too, and a job of a cancel action
        # cancelled in such a Prolog never ran the shapes it was meant to).
        second = self.cluster.sbatch(action.user, "#!/bin/sh\n" + check + "\n" + " ".join(
            self._job_argv(action.tag + "p", 2.0, ())) + "\n" + check + "\n",
            [f"--job-name={action.tag}p", f"--nodelist={node}", "--hold"])
        self.job_actions[second] = action
        marker = self.soak.bin / "prolog-slow" / str(second)
        marker.touch()
        try:
            self.cluster.scontrol("release", str(second))
            self.events.add(f"{action.tag}: sbatch as {action.user} job {second} on {node} (a slow Prolog)")
            self.watcher.wait(second, frozenset({"RUNNING"}) | FINAL_STATES, 60)
            time.sleep(PROLOG_SLOW + 1)
        finally:
            marker.unlink()
        self._expect_done(action, first, 90)
        self._expect_done(action, second, 90)

    def prolog_runs(self) -> list[tuple[int, str, str, float, float, bool]]:
        """(job, user, node, start, end, slow) for each run of the Prolog."""
        out = []
        for line in (self.soak.bin / "prolog.log").read_text().splitlines():
            f = line.split()
            if len(f) == 6:
                out.append((int(f[0]), f[1], f[2], float(f[3]), float(f[4]), f[5] == "1"))
        return out

    def _do_race(self, action: Action) -> None:
        """A job leaves TERM-ignoring strays; the same user's next job on the node starts
        while the first job's epilog waits out grace for them."""
        self._srun(action, action.tag, 0.5, action.kinds)
        time.sleep(action.pause / 2)
        self._srun(action, action.tag + "r", 3.0, ("dfork",))

    # ---- the witness's control (--control lie) ---------------------------------------------

    def _a_body(self, action: Action) -> Optional[int]:
        """The host pid of a running job's soak-body of an ordinary user's, waiting for one."""
        uids = {self.soak.users.uid_of(user) for user in self.soak.users.ordinary}
        deadline = time.time() + 30
        while time.time() < deadline:
            if bodies := processes_named("soak-body", uids):
                return bodies[0]
            time.sleep(0.5)
        self.events.add(f"{action.tag}: no soak-body to kill")
        return None

    def _kill_a_body(self, action: Action, how: str, kill: Callable[[int], bool]) -> None:
        """Kills a running job's soak-body with `kill` (false: it was gone first, and
        another is chosen: a control that killed nothing proves nothing)."""
        deadline = time.time() + 30
        while time.time() < deadline and (pid := self._a_body(action)) is not None:
            when = time.time()
            if kill(pid):
                self.events.add(f"{action.tag}: {how} soak-body host pid {pid}")
                self.planned_kills.append((when, pid))
                return
            self.events.add(f"{action.tag}: soak-body host pid {pid} was gone before {how} it; another is chosen")
        raise RuntimeError(f"{how} no soak-body: none was running long enough")

    def _do_harness_kill(self, action: Action) -> None:
        """The harness kills a job's process with kill(): the witness must name the harness,
        and the oracle take it for no violation."""
        def kill(pid: int) -> bool:
            try:
                os.kill(pid, signal.SIGKILL)
                return True
            except ProcessLookupError:
                return False
        self._kill_a_body(action, "the harness kills (SIGKILL, kill())", kill)

    def _do_fake_kill(self, action: Action) -> None:
        """A process made to look like leftover (named slurmstepd, signalling through a
        pidfd) kills a job's process and logs nothing: the oracle must report that the log
        does not tell the truth (6) (and the wrong kill (1))."""
        def kill(pid: int) -> bool:
            res = subprocess.run([sys.executable, "-c", FAKE_LEFTOVER, str(pid)], timeout=30)
            if res.returncode not in (0, FAKE_LEFTOVER_GONE):
                raise RuntimeError(f"the fake leftover failed (exit {res.returncode})")
            return res.returncode == 0
        self._kill_a_body(action, "a fake leftover kills (SIGKILL, pidfd)", kill)

    def _do_fault_ctld(self, action: Action) -> None:
        with self._daemon_fault:
            begin = time.time()
            self.events.add("fault: stopping slurmctld")
            self.cluster.stop_slurmctld()
            time.sleep(action.secs)
            self.events.add("fault: starting slurmctld")
            try:
                self.cluster.start_slurmctld(timeout=60)
            finally:
                self.fault_windows.append((begin, time.time()))
                self.events.add("fault: slurmctld is back")
