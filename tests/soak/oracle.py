# SPDX-License-Identifier: GPL-2.0-or-later
"""Judges a soak run: every signal and removal leftover logged against slurmctld's
allocations, every planted stray against the time it should have gone by, every stop,
every evaluation's time and every lookup error.  Each finding names its invariant."""

from __future__ import annotations

import dataclasses
import math
from typing import Optional

from .records import Allocation, NodeLog
from .sampler import ProcRecord
from .soak_cluster import BODY_COMMS, DEADLINE, SETUID_PROGRAM

INVARIANTS = {
    1: "no wrong kill or delete",
    2: "no stray left",
    3: "nothing left stopped",
    4: "deadlines met",
    5: "no unexplained lookup error",
}


@dataclasses.dataclass
class Finding:
    # 0: not a violation, a race the node could not see; -1: excused by a lookup error, or by
    # a sweep that logged it signalled nothing while a job was starting on the node
    invariant: int
    when: float
    node: str
    uid: Optional[int]
    text: str


@dataclasses.dataclass
class Verdict:
    findings: list[Finding]
    counts: dict[str, int]

    def violations(self, invariant: int) -> list[Finding]:
        return [f for f in self.findings if f.invariant == invariant]


# How long before its SIGKILL the executor's fresh look may have read the node.
KILL_LOOK = 0.25


class Oracle:
    def __init__(self, allocs: dict[int, Allocation], logs: dict[str, NodeLog], procs: list[ProcRecord],
                 protected: dict[int, str], uid_range: tuple[int, int], fault_windows: list[tuple[float, float]],
                 slack: float = 1.0, start_slack: float = 2.0):
        self.allocs = [a for a in allocs.values()]
        self.logs, self.procs, self.protected = logs, procs, protected
        self.uid_min, self.uid_max = uid_range
        self.faults = fault_windows
        self.slack, self.start_slack = slack, start_slack
        self.window = DEADLINE + slack   # leftover's deadline, plus the sampler's and the epilog's delay
        self.findings: list[Finding] = []

    # ---- truth helpers --------------------------------------------------------------

    def _allocs_of(self, uid: int, node: str) -> list[Allocation]:
        return [a for a in self.allocs if a.uid == uid and node in a.nodes]

    def _known_from(self, alloc: Allocation, node: str, body: bool) -> float:
        """When the node could know of the allocation: slurmctld's start for a process
        of the job itself; else the node's first line about the job (its launch), at
        the latest start_slack after slurmctld's start."""
        if body:
            return alloc.start
        knows = self.logs[node].knows_job.get(alloc.job, math.inf)
        return min(knows, alloc.start + self.start_slack)

    def _held(self, uid: int, node: str, begin: float, end: float, body: bool) -> tuple[list, list]:
        """Allocations of uid on node overlapping [begin, end]: (known to the node, too new)."""
        held, new = [], []
        for alloc in self._allocs_of(uid, node):
            if alloc.start > end or (alloc.end is not None and alloc.end <= begin):
                continue
            (held if self._known_from(alloc, node, body) <= end else new).append(alloc)
        return held, new

    def _fault_near(self, begin: float, end: float) -> bool:
        return any(b - 1.0 <= end and begin <= e + self.window for b, e in self.faults)

    def _lookup_error_near(self, node: str, begin: float, end: float) -> bool:
        return any(s.lookup_errors and begin - 1.0 <= s.when <= end for s in self.logs[node].summaries)

    def _job_starting_near(self, node: str, begin: float, end: float) -> Optional[str]:
        return next((line for when, line in self.logs[node].job_starting if begin - 1.0 <= when <= end), None)

    def _find(self, invariant: int, when: float, node: str, uid: Optional[int], text: str) -> None:
        self.findings.append(Finding(invariant, when, node, uid, text))

    # ---- the invariants ---------------------------------------------------------------

    def check_actions(self) -> None:
        for node, log in self.logs.items():
            # An evaluation stops its targets just before it decides to signal them: the
            # decision's moment is that evaluation's own stop (another one's, earlier, is not).
            first_stop: dict[tuple[str, int], float] = {}
            for sig in log.signals:
                if sig.signal == "SIGSTOP":
                    first_stop.setdefault((sig.source, sig.pid), sig.when)
                body = sig.comm in BODY_COMMS
                if sig.signal == "SIGCONT" or (sig.signal == "SIGSTOP" and not body):
                    continue
                what = f"{sig.signal} pid={sig.pid} uid={sig.uid} comm={sig.comm}"
                if sig.comm == SETUID_PROGRAM:
                    record = self._record_of(node, sig.pid, sig.when)
                    if record is None or record.mixed_uids:
                        self._find(1, sig.when, node, sig.uid, f"{what}: a process with mixed uids (it executed a "
                                   f"setuid program{'' if record else '; the sampler never saw it'})")
                        continue
                if sig.uid in self.protected or not self.uid_min <= sig.uid <= self.uid_max:
                    self._find(1, sig.when, node, sig.uid,
                               f"{what}: a protected user ({self.protected.get(sig.uid, 'outside the uid range')})")
                    continue
                begin = first_stop.get((sig.source, sig.pid), sig.when)
                if sig.when - begin > DEADLINE:
                    begin = sig.when
                if sig.signal == "SIGKILL":
                    # After grace the executor takes a fresh look before it kills: that
                    # look, not the stop before SIGTERM, is the SIGKILL's decision.
                    begin = max(begin, sig.when - KILL_LOOK)
                held, new = self._held(sig.uid, node, begin, sig.when, body)
                if held:
                    self._find(1, sig.when, node, sig.uid, f"{what}: the user held {self._describe(held, node)}"
                               + (" (a process of the job itself)" if body else ""))
                elif new:
                    self._find(0, sig.when, node, sig.uid, f"{what}: race: {self._describe(new, node)} "
                               "started but the node did not know it yet")
                if sig.signal == "SIGKILL":
                    first_stop.pop((sig.source, sig.pid), None)
            for rem in log.removals:
                what = f"removed {rem.kind} {rem.name} uid={rem.uid}"
                if rem.uid in self.protected or not self.uid_min <= rem.uid <= self.uid_max:
                    self._find(1, rem.when, node, rem.uid, f"{what}: a protected user")
                    continue
                held, new = self._held(rem.uid, node, rem.when, rem.when, False)
                if held:
                    self._find(1, rem.when, node, rem.uid, f"{what}: the user held {self._describe(held, node)}")
                elif new:
                    self._find(0, rem.when, node, rem.uid, f"{what}: race: {self._describe(new, node)} "
                               "started but the node did not know it yet")

    def _record_of(self, node: str, ns_pid: int, when: float) -> Optional[ProcRecord]:
        """The sampler's record of the process that had ns_pid on node at `when`."""
        for proc in self.procs:
            if proc.node == node and proc.ns_pid == ns_pid and proc.first_seen - 1.0 <= when \
                    and (proc.gone_at is None or when <= proc.gone_at + 1.0):
                return proc
        return None

    def _describe(self, allocs: list[Allocation], node: str) -> str:
        def end(a):
            return "still held" if a.end is None else f"ended {stamp(a.end)}"
        return ", ".join(f"job {a.job} on {node} (slurmctld: allocated {stamp(a.start)}, {end(a)}; "
                         f"node knew it {stamp(self.logs[node].knows_job.get(a.job))})" for a in allocs)

    def hopper_families(self) -> list[ProcRecord]:
        """Each pid hopper as one record: every process with its mark, first seen when the
        first was, gone when the last was (None while any was there at the end)."""
        families: dict[str, list[ProcRecord]] = {}
        for proc in self.procs:
            if proc.stray and proc.stray.startswith("hop/"):
                families.setdefault(proc.stray, []).append(proc)
        merged = []
        for members in families.values():
            first = min(members, key=lambda p: p.first_seen)
            gone = None if any(p.gone_at is None for p in members) else max(p.gone_at for p in members)
            merged.append(dataclasses.replace(first, comm=f"soak-hopper ({len(members)} processes)", gone_at=gone,
                                              last_seen=max(p.last_seen for p in members)))
        return merged

    def check_strays(self, run_end: float) -> None:
        planted = [p for p in self.procs if p.stray and p.comm.startswith(("soak-stray", "soak-login"))]
        for proc in planted + self.hopper_families():
            if proc.uid in self.protected:
                continue
            due = self._due(proc)
            if due is None:
                continue
            trigger, deadline = due
            gone = proc.gone_at
            # The sampler sees a process go only at its next scan: alive at last_seen is
            # what it proves, so a stray last seen by the deadline is not late.
            if gone is not None and proc.last_seen <= deadline:
                continue
            if deadline > run_end:
                continue
            if self._lookup_error_near(proc.node, trigger, deadline):
                self._find(-1, deadline, proc.node, proc.uid, f"stray {proc.stray} pid={proc.ns_pid} outlived its "
                           "deadline, excused by a lookup error")
                continue
            if starting := self._job_starting_near(proc.node, trigger, deadline):
                why = starting[starting.index("not signalled"):]
                self._find(-1, deadline, proc.node, proc.uid, f"stray {proc.stray} pid={proc.ns_pid} outlived its "
                           f"deadline, excused: the sweep said \"{why}\"")
                continue
            late = "still there at the end" if gone is None else f"gone {gone - trigger:.1f}s after"
            self._find(2, deadline, proc.node, proc.uid,
                       f"stray {proc.stray} pid={proc.ns_pid} (host {proc.host_pid}) comm={proc.comm} uid={proc.uid}: "
                       f"{late} the end at {stamp(trigger)} that left its user no work on {proc.node} "
                       f"(allowed {self.window:.1f}s)")

    def _due(self, proc: ProcRecord) -> Optional[tuple[float, float]]:
        """(the first job end on the stray's node after which its user held nothing there
        for a whole deadline, that deadline's end), or None.

        Only an end at or after the stray's start counts: leftover looks at a node when a
        job there ends (its last look is the epilog, which follows slurmctld's end), so a
        stray started after an end, even by a few ms (a login planted just after another
        job's epilog looked), is due at the next end, not that one."""
        mine = self._allocs_of(proc.uid, proc.node)
        ends = sorted(a.end for a in self.allocs if proc.node in a.nodes and a.end is not None
                      and a.end >= proc.started)
        for end in ends:
            deadline = end + self.window
            if any(a.start <= deadline and (a.end is None or a.end > end) for a in mine):
                continue
            return end, deadline
        return None

    def check_stopped(self) -> None:
        for proc in self.procs:
            if proc.longest_stop > self.window or proc.stopped_at_end:
                self._find(3, proc.last_seen, proc.node, proc.uid,
                           f"pid={proc.ns_pid} (host {proc.host_pid}) comm={proc.comm} uid={proc.uid} stopped "
                           f"for {proc.longest_stop:.1f}s{' and still at the end' if proc.stopped_at_end else ''}")

    def check_deadlines(self) -> None:
        for node, log in self.logs.items():
            for s in log.summaries:
                if s.ms > DEADLINE * 1000 + 100:
                    self._find(4, s.when, node, None, f"{s.trigger} took {s.ms:.0f} ms (deadline "
                               f"{DEADLINE * 1000:.0f} ms): {s.text}")

    def check_lookup_errors(self) -> None:
        for node, log in self.logs.items():
            for s in log.summaries:
                if s.lookup_errors and not self._fault_near(s.when, s.when):
                    self._find(5, s.when, node, None, f"{s.trigger}: lookup error outside any injected fault: "
                               f"{s.text}")

    def judge(self, run_end: float) -> Verdict:
        self.check_actions()
        self.check_strays(run_end)
        self.check_stopped()
        self.check_deadlines()
        self.check_lookup_errors()
        signals = [s for log in self.logs.values() for s in log.signals]
        counts = {
            "job ends": sum(1 for a in self.allocs if a.end is not None),
            "evaluations": sum(len(log.summaries) for log in self.logs.values()),
            "strays planted": sum(1 for p in self.procs if p.stray and p.comm.startswith(("soak-stray", "soak-login")))
            + len(self.hopper_families()),
            "pid hoppers": len(self.hopper_families()),
            "setuid strays": sum(1 for p in self.procs if p.comm == SETUID_PROGRAM and p.mixed_uids),
            "kills": sum(1 for s in signals if s.signal in ("SIGTERM", "SIGKILL")),
            "stops": sum(1 for s in signals if s.signal == "SIGSTOP"),
            "removals": sum(len(log.removals) for log in self.logs.values()),
            "SysV removals": sum(1 for log in self.logs.values() for r in log.removals if r.kind in ("shm", "sem", "msg")),
            "lookup errors": sum(s.lookup_errors for log in self.logs.values() for s in log.summaries),
            "longest evaluation ms": round(max((s.ms for log in self.logs.values() for s in log.summaries),
                                               default=0)),
            "races seen": sum(1 for f in self.findings if f.invariant == 0),
            "strays excused (lookup errors, jobs starting)": sum(1 for f in self.findings if f.invariant == -1),
        }
        return Verdict(sorted(self.findings, key=lambda f: f.when), counts)


def stamp(when: Optional[float]) -> str:
    if when is None:
        return "never"
    import time
    return time.strftime("%H:%M:%S", time.localtime(when)) + f".{int((when % 1) * 1000):03d}"
