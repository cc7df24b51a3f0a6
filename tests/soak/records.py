# SPDX-License-Identifier: GPL-2.0-or-later
"""What the daemons' logs say, as timed records: slurmctld's allocations (the truth of
who holds which node when), and leftover's lines in each node's slurmd log (every
signal, every removal, every evaluation's summary)."""

from __future__ import annotations

import dataclasses
import datetime
import os
import re
from typing import Iterable, Optional

def proc_status(pid: int) -> dict[str, str]:
    """/proc/<pid>/status as {key: value}; {} when the process is gone. A process may name
    itself with any bytes (status shows them raw but for \\n and \\\\): the unit tests'
    hostile names are not UTF-8, so bad bytes are replaced."""
    out = {}
    try:
        with open(f"/proc/{pid}/status", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                out[key] = value.strip()
    except OSError:
        pass
    return out


def processes_named(name: str, uids: set[int]) -> list[int]:
    """The pids, in order, of the live processes called `name` (their comm) that hold one
    of `uids` as a real, effective, saved or filesystem uid. From status, not from their
    /proc entries' owners: a setuid program's entry is root's (it is not dumpable). Only
    a process whose comm is `name` has its status read."""
    found = []
    for pid in sorted(map(int, filter(str.isdigit, os.listdir("/proc")))):
        try:
            with open(f"/proc/{pid}/comm") as comm:
                if comm.read().rstrip("\n") != name[:15]:
                    continue
        except OSError:
            continue
        status = proc_status(pid)
        if status.get("Name") == name and uids & {int(u) for u in status.get("Uid", "").split()}:
            found.append(pid)
    return found


STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)\] (.*)$")


def parse_stamp(text: str) -> float:
    fmt = "%Y-%m-%dT%H:%M:%S.%f" if "." in text else "%Y-%m-%dT%H:%M:%S"
    return datetime.datetime.strptime(text, fmt).timestamp()


def stamped(text: str) -> Iterable[tuple[float, str]]:
    for line in text.splitlines():
        found = STAMP.match(line)
        if found:
            yield parse_stamp(found.group(1)), found.group(2)


def expand_hostlist(text: str) -> list[str]:
    """lo-n[1-2,3],lo-x5 -> [lo-n1, lo-n2, lo-n3, lo-x5]."""
    names = []
    for prefix, ranges, plain in re.findall(r"([^,\[]+)\[([^\]]+)\]|([^,\[\]]+)", text):
        if plain:
            names.append(plain)
            continue
        for part in ranges.split(","):
            low, _, high = part.partition("-")
            for i in range(int(low), int(high or low) + 1):
                names.append(f"{prefix}{str(i).zfill(len(low))}")
    return names


# ---- slurmctld ------------------------------------------------------------------------

# 12, an array's task 12_3(15) or a heterogeneous job's component 12+1(13): the job the
# nodes see is the one in parentheses.
JOB_ID = r"(\d+)(?:(?:_\d+|\+\d+)\((\d+)\)|\+\d+)?"
# The backfill scheduler's start (every heterogeneous job's, and any job that waited for a
# pass, array tasks too) is an info line up to 25.11; from 26.05 a HetJob debug flag's line
# at verbose, which the soak's slurmctld is configured to log (soak_cluster.CTLD_LOG).
ALLOC = re.compile(rf"(?:sched: (?:Allocate|_slurm_rpc_allocate_resources) JobId={JOB_ID} NodeList=(\S+)"
                   rf"|_start_job: (?:HETJOB: )?Started JobId={JOB_ID}(?: SLUID=\S+)? in \S+ on (\S+))")
# A requeued job's allocation ends at its requeue ("Requeuing JobId=N", 22.05-26.05
# job_mgr.c _job_requeue_op); the soak holds it, so it never starts again in the run.
END = re.compile(rf"(?:_job_complete: JobId=|REQUEST_KILL_JOB JobId=|_slurm_rpc_complete_job_allocation: JobId="
                 rf"|Time limit exhausted for JobId=|Requeuing JobId=){JOB_ID}[ \n]")


@dataclasses.dataclass
class Allocation:
    job: int
    nodes: tuple[str, ...]
    start: float
    end: Optional[float] = None   # None: still held when the logs were read
    uid: Optional[int] = None
    het_leader: Optional[int] = None   # a heterogeneous job's component: the job it is part of


def allocations(ctld_log: str) -> dict[int, Allocation]:
    found: dict[int, Allocation] = {}
    for when, text in stamped(ctld_log):
        alloc = ALLOC.search(text)
        if alloc:
            # The main scheduler's line, or the backfill scheduler's (which starts every
            # heterogeneous job, and others that waited).
            first, real, nodes = alloc.group(1, 2, 3) if alloc.group(1) else alloc.group(4, 5, 6)
            if nodes != "(null)":
                job = int(real or first)
                if job not in found:
                    leader = int(first) if real and f"JobId={first}+" in text else None
                    found[job] = Allocation(job, tuple(expand_hostlist(nodes)), when, het_leader=leader)
                continue
        end = END.search(text + "\n")
        if end:
            job = int(end.group(2) or end.group(1))
            # Killing a heterogeneous job (by its leader's id alone) ends every component.
            parts = [a for a in found.values() if a.het_leader == job] if end.group(2) is None else []
            for alloc in ([found[job]] if job in found else []) + parts:
                if alloc.end is None:
                    alloc.end = when
    return found


def ended_jobs(ctld_log: str) -> set[int]:
    """Every job whose end slurmctld logged, with an allocation line or not."""
    ended = set()
    for _, text in stamped(ctld_log):
        if end := END.search(text + "\n"):
            ended.add(int(end.group(2) or end.group(1)))
    return ended


# ---- slurmd (leftover's lines) ----------------------------------------------------------

SIGNAL = re.compile(r"leftover: (?:debug: )?(SIGTERM|SIGKILL|SIGSTOP|SIGCONT) pid=(\d+) user=(\S+) uid=(\d+) "
                    r"comm='([^']*)' reason=(.*)$")
REMOVED = re.compile(r"leftover: (?:\w+: )?cleanup: removed (\S+) (?:path='([^']*)'|id=(\S+)) uid=(\d+)")
SUMMARY = re.compile(r"leftover: (step (\d+)\.\S+|job (\d+) epilog) \(user .*?\): (.*); lookup errors (\d+); "
                     r"([\d.]+) ms")
SOURCE = re.compile(r"(\[\d+\.(?:\d+|batch|extern)\]) leftover:")
CLAIM = "a job is starting on this node ("


def starting_claim(line: str) -> Optional[str]:
    """What a "a job is starting on this node (...)" in a leftover line says it saw (its
    own parentheses kept), None for another line."""
    at = line.find(CLAIM) if "leftover: " in line else -1
    if at < 0:
        return None
    depth, begin = 1, at + len(CLAIM)
    for i in range(begin, len(line)):
        depth += {"(": 1, ")": -1}.get(line[i], 0)
        if depth == 0:
            return line[begin:i]
    return line[begin:]
KNOWS = re.compile(r"^\[(\d+)\.(?:\d+|batch|extern)\]|(?:JobId|StepId)=(\d+)|jobid \[(\d+)\]")


@dataclasses.dataclass
class Signal:
    node: str
    when: float
    signal: str
    pid: int
    user: str
    uid: int
    comm: str
    reason: str
    source: str  # the evaluation: "[<job>.<step>]" for a step end, "epilog" for a job epilog


@dataclasses.dataclass
class Removal:
    node: str
    when: float
    kind: str
    name: str
    uid: int


@dataclasses.dataclass
class Summary:
    node: str
    when: float
    trigger: str
    job: int
    lookup_errors: int
    ms: float
    text: str


@dataclasses.dataclass
class NodeLog:
    signals: list[Signal] = dataclasses.field(default_factory=list)
    removals: list[Removal] = dataclasses.field(default_factory=list)
    summaries: list[Summary] = dataclasses.field(default_factory=list)
    errors: list[tuple[float, str]] = dataclasses.field(default_factory=list)
    # "not signalled: a job is starting on this node (...)": a round that waited to its
    # deadline for a job being set up, and signalled nothing
    job_starting: list[tuple[float, str]] = dataclasses.field(default_factory=list)
    # every "a job is starting on this node (<what it saw>)" (a round's, a cleanup's):
    # (when, what it saw), which the oracle checks against the node's own records
    starting_claims: list[tuple[float, str]] = dataclasses.field(default_factory=list)
    knows_job: dict[int, float] = dataclasses.field(default_factory=dict)
    # The last line a slurmstepd of the job wrote here ("[J.S] ...", leftover's own lines
    # left out), or its job epilog's start ("Running spank/epilog for jobid [J]"), if later:
    # the node is still tearing the job down until then, slurmctld's end or not, and the
    # epilog is leftover's last look, which a loaded slurmd begins seconds after the steps
    steps_until: dict[int, float] = dataclasses.field(default_factory=dict)
    # lines two writers interleaved mid-line (concurrent slurmstepds appending to one
    # slurmd log): no stamp at their start, or a second one inside
    garbled: list[str] = dataclasses.field(default_factory=list)


def node_log(node: str, text: str) -> NodeLog:
    out = NodeLog()
    out.garbled = [line for line in text.splitlines()
                   if line.strip() and (not STAMP.match(line) or len(re.findall(r"\[\d{4}-\d\d-\d\dT", line)) > 1)]
    for when, line in stamped(text):
        knows = KNOWS.search(line)
        if knows:
            job = int(next(g for g in knows.groups() if g))
            out.knows_job.setdefault(job, when)
            if (knows.group(1) or "Running spank/epilog for jobid" in line) and "leftover: " not in line:
                out.steps_until[job] = max(when, out.steps_until.get(job, when))
        if "leftover: " not in line:
            continue
        if found := SIGNAL.search(line):
            source = SOURCE.search(line)
            out.signals.append(Signal(node, when, found.group(1), int(found.group(2)), found.group(3),
                                      int(found.group(4)), found.group(5), found.group(6),
                                      source.group(1) if source else "epilog"))
        elif found := REMOVED.search(line):
            out.removals.append(Removal(node, when, found.group(1), found.group(2) or found.group(3),
                                        int(found.group(4))))
        elif found := SUMMARY.search(line):
            out.summaries.append(Summary(node, when, found.group(1), int(found.group(2) or found.group(3)),
                                         int(found.group(5)), float(found.group(6)), line))
        if "leftover: " in line and "not signalled: a job is starting on this node" in line:
            out.job_starting.append((when, line))
        if (claim := starting_claim(line)) is not None:
            out.starting_claims.append((when, claim))
        if re.search(r"lookup error|error: leftover|leftover: .*survived the sweep", line):
            out.errors.append((when, line))
    return out
