# SPDX-License-Identifier: GPL-2.0-or-later
"""Judges a soak run: every signal and removal leftover logged against slurmctld's
allocations, every planted stray against the time it should have gone by, every stop,
every evaluation's time and every lookup error.  Each finding names its invariant."""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Optional

from .records import Allocation, NodeLog, Removal, Signal
from .sampler import ProcRecord, StepdRecord
from .soak_cluster import BODY_COMMS, DEADLINE, SETUID_PROGRAM
from .witness import FATAL, SIGNAMES

INVARIANTS = {
    1: "no wrong kill or delete",
    2: "no stray left",
    3: "nothing left stopped",
    4: "deadlines met",
    5: "no unexplained lookup error",
    6: "the log tells the truth",
}

# Excuses: findings that are not violations (a race the node could not see, a stray
# excused by a lookup error or a starting job, a witnessed signal whose target nobody could
# name). Each kind has a bound per run: (at least, per 100 job ends); more is a violation
# of the invariant it excuses.
EXCUSE_BOUNDS = {
    "race": (3, 3.0, 1),
    "lookup error": (2, 2.0, 2),
    "job starting": (3, 3.0, 2),
    # leftover said a job was starting, and nothing the node recorded says otherwise, or
    # confirms it: a slurmstepd the sampler never saw (it lives 0.2 s), a fork of slurmd's
    "unseen start": (3, 3.0, 2),
    "unresolved target": (2, 2.0, 6),
    "garbled log line": (4, 4.0, 6),
    # A job's process that died of a signal no call was witnessed sending (seen at a step's
    # end under proctrack/cgroup, and under linuxproc at load 8, a protected user's too, as
    # its own job's step ended: seed 3131, 30 min, twice): not leftover's, whose every
    # signal goes through a witnessed pidfd_send_signal, but not explained either.
    "unwitnessed death": (4, 4.0, 1),
}

# The signals that stop a process (check_stopped).
STOP_SIGNALS = frozenset({"SIGSTOP", "SIGTSTP", "SIGTTIN", "SIGTTOU"})

# How far apart leftover's log line and the kernel's record of the same action may be.
LOG_SLACK = 1.0
# The cleanup logs its removals once it is done (sweep/run_cleanup.cpp), within its
# evaluation's deadline: a removal's line may come that much after the removal. A 30-min
# run at load 8 (seed 3131) logged an epilog's 301 removals 1.6 s after the kernel saw
# them, and the oracle said the log lied 602 times.
REMOVAL_LOG_LAG = DEADLINE + LOG_SLACK


def removal_logged_in_time(removed: float, logged: float) -> bool:
    """Whether a log line at `logged` may tell of a removal the kernel saw at `removed`."""
    return -LOG_SLACK <= logged - removed <= REMOVAL_LOG_LAG


@dataclasses.dataclass
class Finding:
    # 0: not a violation, a race the node could not see; -1: excused by a lookup error, or by
    # a sweep that logged it signalled nothing while a job was starting on the node
    invariant: int
    when: float
    node: str
    uid: Optional[int]
    text: str
    excuse: Optional[str] = None   # the kind of a race's or an excuse's (EXCUSE_BOUNDS)


@dataclasses.dataclass
class Verdict:
    findings: list[Finding]
    counts: dict[str, int]
    witness: str = ""   # the witness's totals and the excuses against their bounds

    def violations(self, invariant: int) -> list[Finding]:
        return [f for f in self.findings if f.invariant == invariant]


# How long before its SIGKILL the executor's fresh look may have read the node.
KILL_LOOK = 0.25


class Oracle:
    def __init__(self, allocs: dict[int, Allocation], logs: dict[str, NodeLog], procs: list[ProcRecord],
                 protected: dict[int, str], uid_range: tuple[int, int], fault_windows: list[tuple],
                 slack: float = 1.0, start_slack: float = 2.0, witness: Optional[dict] = None,
                 stepds: Optional[list[StepdRecord]] = None, planned_kills: Optional[list[tuple]] = None,
                 scope: str = "node"):
        """fault_windows: (begin, end[, node]): a window without a node (slurmctld's, the
        config's) is every node's; witness: the witness's records (witness.py), None for a
        run kept before it (judged from leftover's log alone); scope: leftover.conf's (with
        job_user a stray is due only at an end of its own user's job)."""
        self.allocs = [a for a in allocs.values()]
        self.logs, self.procs, self.protected = logs, procs, protected
        self.uid_min, self.uid_max = uid_range
        self.faults = [(w[0], w[1], w[2] if len(w) > 2 else None) for w in fault_windows]
        self.witness = witness
        self.stepds = stepds
        # (when, host pid[, "drain"]): the harness's own kills; the drain's (its setuid strays)
        # are the run's end, not a control: their victims need not be placed on a node.
        self.planned_kills = planned_kills or []
        self.scope = scope
        self.slack, self.start_slack = slack, start_slack
        self.window = DEADLINE + slack   # leftover's deadline, plus the sampler's and the epilog's delay
        self.stopped_by_others = 0       # processes stopped long only by other senders' stops (check_stopped)
        self.stopped_in_short_stops = 0  # seen stopped long, in stops that each ended in time (check_stopped)
        self.findings: list[Finding] = []
        self.run_end = math.inf

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

    def _fault_near(self, node: str, begin: float, end: float) -> bool:
        """A fault injected near [begin, end] that node could feel: slurmctld's and the
        config's are every node's, a slurmstepd's only its own node's."""
        return any(b - 1.0 <= end and begin <= e + self.window and (where is None or where == node)
                   for b, e, where in self.faults)

    def _lookup_error_near(self, node: str, begin: float, end: float) -> bool:
        return any(s.lookup_errors and begin - 1.0 <= s.when <= end for s in self.logs[node].summaries)

    def _job_starting_near(self, node: str, begin: float, end: float) -> Optional[str]:
        return next((line for when, line in self.logs[node].job_starting if begin - 1.0 <= when <= end), None)

    def _find(self, invariant: int, when: float, node: str, uid: Optional[int], text: str,
              excuse: Optional[str] = None) -> None:
        self.findings.append(Finding(invariant, when, node, uid, text, excuse))

    # ---- the invariants ---------------------------------------------------------------

    def leftover_actions(self) -> dict[str, tuple[list[Signal], list[Removal]]]:
        """What leftover did on each node: what the witness saw leftover's processes do
        (whatever the log says), or, for a run kept before the witness, what the log says."""
        if self.witness is None:
            return {node: (log.signals, log.removals) for node, log in self.logs.items()}
        out: dict[str, tuple[list[Signal], list[Removal]]] = {node: ([], []) for node in self.logs}
        for w in self.witness["signals"]:
            node = w["node"] or w["sender_node"]
            if w["sender"] != "leftover" or node not in out:
                continue
            out[node][0].append(Signal(node, w["when"], w["signal"], w["ns_pid"] if w["ns_pid"] is not None else -1,
                                       "?", w["uid"] if w["uid"] is not None else -1, w["comm"], "witnessed",
                                       f"tgid {w['sender_tgid']}"))
        for w in self.witness["removals"]:
            if w["sender"] != "leftover" or w.get("ret", 0) != 0 or w["node"] not in out:
                continue
            out[w["node"]][1].append(Removal(w["node"], w["when"], w["kind"], w["name"],
                                             w["uid"] if w["uid"] is not None else -1))
        for signals, removals in out.values():
            signals.sort(key=lambda s: s.when)
            removals.sort(key=lambda r: r.when)
        return out

    def check_actions(self) -> None:
        for node, (signals, removals) in self.leftover_actions().items():
            # An evaluation stops its targets just before it decides to signal them: the
            # decision's moment is that evaluation's own stop (another one's, earlier, is not).
            first_stop: dict[tuple[str, int], float] = {}
            for sig in signals:
                if sig.signal == "SIGSTOP":
                    first_stop.setdefault((sig.source, sig.pid), sig.when)
                body = sig.comm in BODY_COMMS
                if sig.signal == "SIGCONT":
                    continue
                what = f"{sig.signal} pid={sig.pid} uid={sig.uid} comm={sig.comm}"
                if sig.uid < 0:
                    self._find(0, sig.when, node, None, f"{what}: witnessed, but neither the witness nor the "
                               "sampler could name its target", "unresolved target")
                    continue
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
                # Every stop is judged on its own moment: stopping a process leftover must
                # not kill is wrong even if it is continued at once.
                begin = sig.when if sig.signal == "SIGSTOP" else first_stop.get((sig.source, sig.pid), sig.when)
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
                               "started but the node did not know it yet", "race")
                if sig.signal == "SIGKILL":
                    first_stop.pop((sig.source, sig.pid), None)
            for rem in removals:
                what = f"removed {rem.kind} {rem.name} uid={rem.uid}"
                if rem.uid < 0:
                    self._find(0, rem.when, node, None, f"{what}: witnessed, but the witness never saw the "
                               "object's owner (made and removed between two looks at /proc/sysvipc)",
                               "unresolved target")
                    continue
                if rem.uid in self.protected or not self.uid_min <= rem.uid <= self.uid_max:
                    self._find(1, rem.when, node, rem.uid, f"{what}: a protected user")
                    continue
                held, new = self._held(rem.uid, node, rem.when, rem.when, False)
                if held:
                    self._find(1, rem.when, node, rem.uid, f"{what}: the user held {self._describe(held, node)}")
                elif new:
                    self._find(0, rem.when, node, rem.uid, f"{what}: race: {self._describe(new, node)} "
                               "started but the node did not know it yet", "race")

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
        planted = [p for p in self.procs if p.stray and (p.comm.startswith(("soak-stray", "soak-login"))
                                                         or p.stray.split("/")[0] in PROCESS_SHAPES)
                   and p.comm not in ("soak-hop", "soak-job")]
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
                           "deadline, excused by a lookup error", "lookup error")
                continue
            if starting := self._job_starting_near(proc.node, trigger, deadline):
                why = starting[starting.index("not signalled"):]
                self._find(-1, deadline, proc.node, proc.uid, f"stray {proc.stray} pid={proc.ns_pid} outlived its "
                           f"deadline, excused: the sweep said \"{why}\"", "job starting")
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
        ends = sorted(e for a in self.allocs if proc.node in a.nodes and a.end is not None
                      and (self.scope == "node" or a.uid == proc.uid)
                      and (e := self._node_end(a, proc.node)) >= proc.started)
        for end in ends:
            deadline = end + self.window
            if any(a.start <= deadline and (a.end is None or self._node_end(a, proc.node) > end) for a in mine):
                continue
            return end, deadline
        return None

    def _node_end(self, alloc: Allocation, node: str) -> float:
        """When the node was done with the allocation: slurmctld's end, or the last line a
        slurmstepd of the job wrote there or its job epilog's start if later (a loaded node
        tears a job's steps down seconds after slurmctld has it complete, and the user's work
        there is live till then; its slurmd begins the epilog, leftover's last look, seconds
        after that: a 30-minute run under load had a stray 'gone 11.5 s after the end' whose
        epilog began 2.6 s after the job's last step was done)."""
        return max(alloc.end, self.logs[node].steps_until.get(alloc.job, alloc.end))

    def _witnessed_stops(self, proc: ProcRecord) -> Optional[list[tuple[float, float, set[str]]]]:
        """The stops the witness saw `proc` through, each (from its first stop signal, to the
        SIGCONT or SIGKILL that ended it or the process's end, who sent its stop signals);
        None without a witness. The sampler sees only state T: stops of several sweeps one
        after another look like one long stop to it."""
        if self.witness is None:
            return None
        end = proc.gone_at if proc.gone_at is not None else self.run_end if proc.stopped_at_end else proc.last_seen
        signals = sorted((w for w in self.witness["signals"]
                          if w["node"] == proc.node and w["ns_pid"] == proc.ns_pid
                          and proc.first_seen - 1.0 <= w["when"] <= end + 1.0), key=lambda w: w["when"])
        stops, began, senders = [], None, set()
        for w in signals:
            if w["signal"] in STOP_SIGNALS:
                began = w["when"] if began is None else began
                senders.add(w["sender"])
            elif w["signal"] in ("SIGCONT", "SIGKILL") and began is not None:
                stops.append((began, w["when"], senders))
                began, senders = None, set()
        if began is not None:
            stops.append((began, max(end, began), senders))
        return stops

    def check_stopped(self) -> None:
        for proc in self.procs:
            # A process its user stopped (Ctrl-Z) may sit stopped: (2) judges it as a stray.
            if proc.stray and proc.stray.startswith("ustop/") and proc.comm == "soak-stray":
                continue
            if not (proc.longest_stop > self.window or proc.stopped_at_end):
                continue
            stops = self._witnessed_stops(proc)
            longest, senders = proc.longest_stop, set()
            if stops is not None:
                long = [s for s in stops if s[1] - s[0] > self.window or (proc.stopped_at_end and s[1] >= self.run_end)]
                if stops and not long:
                    # Each stop the witness saw was ended in time: the sampler's long one was
                    # several sweeps' stops back to back (a node whose job starts keep each
                    # sweep from killing a stray: it stops it, doubts, and continues it).
                    self.stopped_in_short_stops += 1
                    continue
                # (3) is about leftover's stops: one whose every witnessed stop came from
                # another (a suspended job's, which scontrol resume may reach seconds later
                # under load or while slurmctld restarts; a user's) is theirs to end.
                if long and not any("leftover" in s[2] for s in long):
                    self.stopped_by_others += 1
                    continue
                if long:
                    first = max((s for s in long if "leftover" in s[2]), key=lambda s: s[1] - s[0])
                    longest, senders = first[1] - first[0], first[2]
            by = f", stopped by {', '.join(sorted(senders))}" if senders else ""
            self._find(3, proc.last_seen, proc.node, proc.uid,
                       f"pid={proc.ns_pid} (host {proc.host_pid}) comm={proc.comm} uid={proc.uid} stopped "
                       f"for {longest:.1f}s{' and still at the end' if proc.stopped_at_end else ''}{by}")

    def check_deadlines(self) -> None:
        for node, log in self.logs.items():
            for s in log.summaries:
                if s.ms > DEADLINE * 1000 + 100:
                    self._find(4, s.when, node, None, f"{s.trigger} took {s.ms:.0f} ms (deadline "
                               f"{DEADLINE * 1000:.0f} ms): {s.text}")

    def check_starting_claims(self) -> None:
        """(2): every "a job is starting on this node (...)" (which keeps what would have
        been signalled or removed) is checked against the node's own records: a slurmstepd
        it names was one of a step (its title "slurmstepd: [J.S]"), not another job's
        Prolog or epilog ("spank prolog|epilog"); the job whose Prolog it names was
        allocated the node then; a fork of slurmd's came while some job was allocated it."""
        if self.stepds is None:
            return
        for node, log in self.logs.items():
            for when, saw in log.starting_claims:
                begin = when - self.window
                live = [a for a in self.allocs if node in a.nodes and a.start <= when + self.slack
                        and (a.end is None or a.end >= begin - self.slack)]
                claim = f"leftover said \"a job is starting on this node ({saw})\""
                if stepd := re.match(r"slurmstepd pid (\d+) has no step socket yet", saw):
                    pid = int(stepd.group(1))
                    seen = [r for r in self.stepds if r.node == node and r.ns_pid == pid
                            and r.first_seen <= when + self.slack and r.last_seen >= begin - self.slack]
                    if not seen:
                        self._find(-1, when, node, None, f"{claim}: a slurmstepd the sampler never saw",
                                   "unseen start")
                    elif all(re.search(r"\bspank (prolog|epilog)\b", " ".join(r.titles)) for r in seen):
                        self._find(2, when, node, None, f"{claim}: a job starting that was not: pid {pid} was a "
                                   f"slurmstepd running {' / '.join(seen[-1].titles)}")
                    continue
                if prolog := re.match(r"slurmd's child pid \d+ runs the Prolog of job (\d+)", saw):
                    if not any(a.job == int(prolog.group(1)) for a in live):
                        self._find(2, when, node, None, f"{claim}: a job starting that was not: slurmctld had "
                                   f"job {prolog.group(1)} on {node} neither then nor just before")
                    continue
                if not live:
                    self._find(-1, when, node, None, f"{claim}: no job was allocated {node} then", "unseen start")

    def check_lookup_errors(self) -> None:
        for node, log in self.logs.items():
            for s in log.summaries:
                if s.lookup_errors and not self._fault_near(node, s.when, s.when):
                    self._find(5, s.when, node, None, f"{s.trigger}: lookup error outside any injected fault: "
                               f"{s.text}")

    # ---- the witness's own checks ---------------------------------------------------------

    def check_truth(self) -> None:
        """(6): every action the witness saw leftover take has its log line (same node, pid,
        signal and uid; same object), and every action leftover logged was witnessed.

        leftover logs a signal as sent only when pidfd_send_signal returned 0, and the
        kernel records a signal_generate for every such call (one to a zombie too, as
        ignored); to a process already reaped the call fails with ESRCH, generates nothing,
        and leftover logs "... not needed: ... already exited" at debug level, which is no
        action: no such line is expected to be witnessed."""
        if self.witness is None:
            return
        other_senders = {}
        for w in self.witness["signals"]:
            if w["sender"] != "leftover":
                other_senders.setdefault((w["node"], w["ns_pid"], w["signal"]), []).append(w)
        for node, (signals, removals) in self.leftover_actions().items():
            logged = list(self.logs[node].signals)
            used: set[int] = set()
            # The most certain first: a signal whose target the witness placed takes the line
            # of that pid before one known only by its uid or comm may take it (a pid hopper's
            # hops, some gone before they were placed, are signalled within a millisecond).
            for sig in sorted(signals, key=lambda s: 0 if s.pid >= 0 else 1 if s.uid is not None and s.uid >= 0 else 2):
                best = None
                for i, line in enumerate(logged):
                    if i in used or line.signal != sig.signal or abs(line.when - sig.when) > LOG_SLACK:
                        continue
                    # A target gone before the witness could place it has no pid: its uid where
                    # the trace told it (a child that exec'd between the scan and the signal is
                    # logged with the scan's comm and signalled with its new one: soak-forker's;
                    # two users' pid hoppers, signalled in one ms, share a comm), else its comm.
                    if sig.pid >= 0:
                        if line.pid != sig.pid:
                            continue
                    elif sig.uid is not None and sig.uid >= 0:
                        if line.uid != sig.uid:
                            continue
                    elif line.comm != sig.comm:
                        continue
                    if best is None or abs(line.when - sig.when) < abs(logged[best].when - sig.when):
                        best = i
                what = f"{sig.signal} pid={sig.pid} uid={sig.uid} comm={sig.comm} (sender {sig.source})"
                if best is None:
                    garbled = self._garbled(node, f"{sig.signal} pid={sig.pid} ")
                    if garbled:
                        self._find(0, sig.when, node, sig.uid, f"witnessed {what}: its log line is garbled (another "
                                   f"writer's interleaved with it): {garbled[:160]!r}", "garbled log line")
                        continue
                    self._find(6, sig.when, node, sig.uid, f"witnessed {what}: leftover logged no such signal")
                    continue
                used.add(best)
                if sig.uid >= 0 and logged[best].uid != sig.uid:
                    self._find(6, sig.when, node, sig.uid, f"witnessed {what}: the log says uid={logged[best].uid}")
            for i, line in enumerate(logged):
                if i in used:
                    continue
                seen = [w for w in other_senders.get((node, line.pid, line.signal), [])
                        if abs(w["when"] - line.when) <= LOG_SLACK]
                self._find(6, line.when, node, line.uid, f"logged {line.signal} pid={line.pid} uid={line.uid} "
                           f"comm={line.comm} ({line.source}): the kernel saw no such signal from leftover"
                           + (f" (it saw one from {seen[0]['sender']} {seen[0]['sender_comm']})" if seen else ""))
            logged_removals = list(self.logs[node].removals)
            used = set()

            def kind(k: str) -> str:
                return {"posix_shm": "file", "mqueue": "file"}.get(k, k)

            for rem in removals:
                # The closest line in time, not the first: SysV ids are used again, and one
                # object's line must not be taken for another's of the same id seconds apart.
                match = min((i for i, line in enumerate(logged_removals) if i not in used
                             and kind(line.kind) == kind(rem.kind) and line.name == rem.name
                             and removal_logged_in_time(rem.when, line.when)),
                            key=lambda i: abs(logged_removals[i].when - rem.when), default=None)
                if match is None:
                    garbled = self._garbled(node, f"{rem.name}")
                    if garbled:
                        self._find(0, rem.when, node, rem.uid, f"witnessed leftover remove {rem.kind} {rem.name}: its "
                                   f"log line is garbled: {garbled[:160]!r}", "garbled log line")
                        continue
                    self._find(6, rem.when, node, rem.uid, f"witnessed leftover remove {rem.kind} {rem.name} "
                               f"uid={rem.uid}: leftover logged no such removal")
                    continue
                used.add(match)
                if rem.uid >= 0 and logged_removals[match].uid != rem.uid:
                    self._find(6, rem.when, node, rem.uid, f"witnessed removal of {rem.kind} {rem.name}: the log "
                               f"says uid={logged_removals[match].uid}, the owner was {rem.uid}")
            for i, line in enumerate(logged_removals):
                if i not in used:
                    self._find(6, line.when, node, line.uid, f"logged removed {line.kind} {line.name} "
                               f"uid={line.uid}: the kernel saw leftover remove no such thing")

    def _garbled(self, node: str, text: str) -> Optional[str]:
        """A garbled line of node's log that names text, if any."""
        return next((line for line in self.logs[node].garbled if text in line and "leftover" in line), None)

    def check_victims(self) -> None:
        """From the victims' side: every soak user's process that died of a signal, and
        every soak user's file or SysV object removed, whoever did it. A protected user's
        must survive the run whatever killed or removed it (but its own user); a process of
        a user holding work on its node may be killed by Slurm (its teardown), its user or
        the harness (the controls), not by anything unexplained (the kernel's own signals,
        another program, or a death with no signal witnessed). leftover's own actions are
        judged from the sender's side (check_actions)."""
        if self.witness is None:
            return
        causes: dict[int, list[dict]] = {}
        for w in self.witness["signals"]:
            causes.setdefault(w["pid"], []).append(w)
        for d in self.witness["delivers"]:
            if not (d["sig"] == 9 or (d["default"] and d["sig"] in FATAL)):
                continue
            # A fatal signal may reach its victim as SIGKILL (the kernel's shortcut for a
            # signal that ends the whole thread group).
            cause = next((w for w in reversed(causes.get(d["pid"], []) + causes.get(d.get("tgid"), []))
                          if d["when"] - 10 <= w["when"] <= d["when"] + 0.01
                          and (w["sig"] == d["sig"] or (d["sig"] == 9 and w["sig"] in FATAL))), None)
            if cause is None and any(pid == d["pid"] and when - 1.0 <= d["when"] <= when + 30
                                     for when, pid, *_ in self.planned_kills):
                # The harness's own kill, which it knows it sent: a witness that saw no
                # sender is blind, not an excuse (wherever it placed the victim).
                self._find(6, d["when"], d["node"] or "?", d["uid"], f"the witness saw no sender of the harness's "
                           f"own SIGKILL of host pid {d['pid']} (its victim died of {SIGNAMES.get(d['sig'], d['sig'])})")
                continue
            if d["uid"] is None or d["node"] not in self.logs:
                continue
            sender = cause["sender"] if cause else "unwitnessed"
            if sender in ("leftover", "slurm", "user", "harness"):
                continue
            if cause is None and d.get("threaded"):
                continue   # a thread of a group that exited (exit_group, exec): its own doing
            record = self._record_of(d["node"], d["ns_pid"], d["when"]) if d["ns_pid"] is not None else None
            comm = record.comm if record else "?"
            what = (f"pid={d['ns_pid']} (host {d['pid']}) comm={comm} uid={d['uid']} died of "
                    f"{SIGNAMES.get(d['sig'], d['sig'])} sent by {sender}"
                    + (f" ({cause['sender_comm']}, tid {cause['sender_tid']}, {cause['syscall'] or 'no call'})"
                       if cause else ""))
            held, _ = self._held(d["uid"], d["node"], d["when"], d["when"], comm in BODY_COMMS)
            if d["uid"] in self.protected and not (held and cause is None):
                self._find(1, d["when"], d["node"], d["uid"], f"{what}: a protected user's process")
                continue
            if held and cause is None:
                self._find(0, d["when"], d["node"], d["uid"], f"{what}: the user held "
                           f"{self._describe(held, d['node'])}; no sender witnessed", "unwitnessed death")
            elif held:
                self._find(1, d["when"], d["node"], d["uid"], f"{what}: the user held {self._describe(held, d['node'])}")
        for when, pid, *how in self.planned_kills:
            # The witness must place the harness's own kill on its victim's node too: a
            # signal on no node is judged by nothing. Not the drain's: a setuid stray's
            # /proc entry is root's, so the sampler keeps no record of it, and one killed
            # before the witness read its namespace is on no node (a replay of seed 481811
            # judged one so, as a lie of the log's).
            if how == ["drain"]:
                continue
            seen = [w for w in causes.get(pid, []) if when - 1.0 <= w["when"] <= when + 30]
            if seen and not any(w["node"] in self.logs for w in seen):
                self._find(6, seen[0]["when"], "?", seen[0]["uid"], f"the witness saw the harness's own "
                           f"{seen[0]['signal']} of host pid {pid} (sender {seen[0]['sender']}) on no node")
        for w in self.witness["removals"]:
            if w["sender"] in ("user", "leftover") or w.get("ret", 0) != 0 or w["uid"] is None:
                continue
            if w["uid"] in self.protected or not self.uid_min <= w["uid"] <= self.uid_max:
                self._find(1, w["when"], w["node"] or "?", w["uid"], f"{w['kind']} {w['name']} of a protected user "
                           f"removed by {w['sender']} ({w['sender_comm']}, tid {w['sender_tid']})")

    def check_left(self) -> None:
        """(2), cleanup's completeness: after the last job on every node, nothing of an
        ordinary user's is left in the nodes' /dev/shm and scratch directories, and no SysV
        object (the nodes share the host's IPC namespace)."""
        if self.witness is None:
            return
        left = self.witness.get("left", {})
        # leftover cleans up only after a user no process holds (as any of its uids) on the
        # node: one that a setuid stray, never killed, holds keeps what it has there (and,
        # the nodes sharing one IPC namespace, its SysV objects).
        held = {node: set(uids) for node, uids in left.get("held", {}).items()}
        held_anywhere = set().union(*held.values()) if held else set()
        for f in left.get("files", []):
            if f["uid"] not in self.protected and self.uid_min <= f["uid"] <= self.uid_max:
                if f["uid"] in held.get(f["node"], ()):
                    self._find(0, self.run_end, f["node"], f["uid"], f"left at the end: {f['path']} uid={f['uid']}, "
                               "whom a process still holds there", "held")
                    continue
                self._find(2, self.run_end, f["node"], f["uid"], f"left at the end: {f['path']} uid={f['uid']}")
        for o in left.get("sysv", []):
            if o["uid"] not in self.protected and self.uid_min <= o["uid"] <= self.uid_max:
                what = f"left at the end: SysV {o['kind']} id={o['id']} uid={o['uid']}"
                if o["uid"] in held_anywhere:
                    self._find(0, self.run_end, "host", o["uid"], f"{what}, whom a process still holds on a node",
                               "held")
                    continue
                self._find(2, self.run_end, "host", o["uid"], what)

    def check_excuses(self, job_ends: int) -> dict[str, tuple[int, int]]:
        """Each kind of excuse against its bound (EXCUSE_BOUNDS): more is a violation."""
        out = {}
        for kind, (floor, per_100, invariant) in EXCUSE_BOUNDS.items():
            used = sum(1 for f in self.findings if f.excuse == kind)
            bound = max(floor, math.ceil(per_100 * job_ends / 100))
            out[kind] = (used, bound)
            if used > bound:
                self._find(invariant, self.run_end, "all", None, f"{used} excuses of the kind \"{kind}\", more than "
                           f"the bound {bound} ({floor} at least, {per_100:g} per 100 job ends)")
        return out

    def witness_line(self, excuses: dict[str, tuple[int, int]]) -> str:
        def by_sender(records, detail):
            senders: dict[str, dict[str, int]] = {}
            for r in records:
                senders.setdefault(r["sender"], {}).setdefault(r[detail], 0)
                senders[r["sender"]][r[detail]] += 1
            return ", ".join(f"{s} {sum(k.values())} ({', '.join(f'{n} {c}' for n, c in sorted(k.items()))})"
                             for s, k in sorted(senders.items())) or "none"
        text = "; excuses: " + ", ".join(f"{k} {u} of {b}" for k, (u, b) in excuses.items())
        if self.witness is None:
            return "no witness (a run kept before it): judged from leftover's log" + text
        stats = self.witness["stats"]
        return (f"events {stats.get('events', 0)}, lost {stats.get('lost', 0)}, unreadable {stats.get('unreadable', 0)}, "
                f"SysV removals of other IPC namespaces {stats.get('IPC removals of other namespaces', 0)}; "
                f"signals to soak users by sender: "
                f"{by_sender(self.witness['signals'], 'signal')}; removals by sender: "
                f"{by_sender(self.witness['removals'], 'kind')}; targets named by nobody (any sender's) "
                f"{stats.get('unresolved targets', 0)}; stopped long by others only {self.stopped_by_others}; "
                f"stopped long in short stops {self.stopped_in_short_stops}" + text)

    def judge(self, run_end: float) -> Verdict:
        self.run_end = run_end
        self.check_actions()
        self.check_strays(run_end)
        self.check_stopped()
        self.check_deadlines()
        self.check_lookup_errors()
        self.check_starting_claims()
        self.check_truth()
        self.check_victims()
        self.check_left()
        actions = self.leftover_actions()
        signals = [s for sigs, _ in actions.values() for s in sigs]
        removals = [r for _, rems in actions.values() for r in rems]
        job_ends = sum(1 for a in self.allocs if a.end is not None)
        counts = {
            "job ends": job_ends,
            "evaluations": sum(len(log.summaries) for log in self.logs.values()),
            "strays planted": sum(1 for p in self.procs if p.stray and p.comm.startswith(("soak-stray", "soak-login")))
            + len(self.hopper_families()),
            "pid hoppers": len(self.hopper_families()),
            "setuid strays": sum(1 for p in self.procs if p.comm == SETUID_PROGRAM and p.mixed_uids),
            "kills": sum(1 for s in signals if s.signal in ("SIGTERM", "SIGKILL")),
            "stops": sum(1 for s in signals if s.signal == "SIGSTOP"),
            "removals": len(removals),
            "SysV removals": sum(1 for r in removals if r.kind in ("shm", "sem", "msg")),
            "lookup errors": sum(s.lookup_errors for log in self.logs.values() for s in log.summaries),
            "longest evaluation ms": round(max((s.ms for log in self.logs.values() for s in log.summaries),
                                               default=0)),
            "races seen": sum(1 for f in self.findings if f.invariant == 0 and f.excuse == "race"),
            "strays excused (lookup errors, jobs starting)": sum(1 for f in self.findings if f.invariant == -1),
            # interleaved mid-line with another slurmstepd's: lost to the log's reader
            "garbled leftover log lines": sum(1 for log in self.logs.values() for line in log.garbled
                                              if "leftover" in line),
        }
        excuses = self.check_excuses(job_ends)
        return Verdict(sorted(self.findings, key=lambda f: f.when), counts, self.witness_line(excuses))

# The workload's hostile strays judged by (2) whatever their comm (a tracer, a stray named
# slurmstepd or sshd, a fast forker, a process attached to a SysV segment, one in
# uninterruptible sleep, one with a large address space).
PROCESS_SHAPES = frozenset({"ustop", "traced", "asstepd", "assshd", "forker", "shmat", "dstate", "bigmem"})


def stamp(when: Optional[float]) -> str:
    if when is None:
        return "never"
    import time
    return time.strftime("%H:%M:%S", time.localtime(when)) + f".{int((when % 1) * 1000):03d}"
