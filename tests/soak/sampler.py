# SPDX-License-Identifier: GPL-2.0-or-later
"""Watches the nodes' processes through the host's /proc, a few times a second.

Every process of a soak user in a node's pid namespace gets a record, keyed by host pid
and start time (pids are reused): its node and namespace pid, uid, comm, the SOAK_STRAY
mark the workload put into its environment, when it started, was first and last seen, how
long it was seen stopped (state T) in one stretch, and for the setuid program whether
its uids differ.  Every slurmstepd of a node gets one too: its pids, when it was seen,
its command lines.  The oracle reads the records.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from typing import Optional

from .records import proc_status


@dataclasses.dataclass
class ProcRecord:
    node: str
    host_pid: int
    ns_pid: int
    uid: int
    comm: str
    stray: Optional[str]      # SOAK_STRAY of its environment: a planted stray
    first_seen: float
    last_seen: float
    gone_at: Optional[float] = None   # first scan that did not find it
    stopped_since: Optional[float] = None
    longest_stop: float = 0.0
    stopped_at_end: bool = False
    mixed_uids: bool = False          # seen with real, effective, saved and fs uids not all one
    started: float = 0.0              # wall time of its start (/proc/<pid>/stat), to 10 ms
    uninterruptible: bool = False     # seen in state D


@dataclasses.dataclass
class StepdRecord:
    """A slurmstepd of a node (any uid: root's), for the oracle to check what leftover said
    of it ("slurmstepd pid P has no step socket yet": a step being set up, not another
    job's epilog)."""
    node: str
    host_pid: int
    ns_pid: int
    first_seen: float
    last_seen: float
    titles: list[str] = dataclasses.field(default_factory=list)   # each command line it showed


def _cmdline(pid: int) -> Optional[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None


def _stat(pid: int) -> Optional[tuple[str, str, int]]:
    """(comm, state, start time in ticks)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode(errors="replace")
    except OSError:
        return None
    close = text.rindex(")")
    fields = text[close + 2:].split()
    return text[text.index("(") + 1:close], fields[0], int(fields[19])


def _uptime() -> float:
    with open("/proc/uptime") as f:
        return float(f.read().split()[0])


_TICKS = os.sysconf("SC_CLK_TCK")


def _ns_pid(pid: int) -> Optional[int]:
    nspid = proc_status(pid).get("NSpid")
    return int(nspid.split()[-1]) if nspid else None


def _mixed_uids(pid: int) -> bool:
    return len(set(proc_status(pid).get("Uid", "").split())) > 1


def _stray_mark(pid: int) -> Optional[str]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for entry in f.read().split(b"\0"):
                if entry.startswith(b"SOAK_STRAY="):
                    return entry[len(b"SOAK_STRAY="):].decode(errors="replace")
    except OSError:
        pass
    return None


class Sampler:
    def __init__(self, node_namespaces: dict[str, str], uids: set[int], interval: float = 0.2,
                 mixed_comm: str = "soak-setuid"):
        """node_namespaces: node name -> its pid namespace (readlink of /proc/<pid>/ns/pid);
        mixed_comm: the program whose processes' uids are read (whether they differ)."""
        self.by_ns = {ns: node for node, ns in node_namespaces.items()}
        self.mixed_comm = mixed_comm
        self.uids = uids
        self.interval = interval
        self.records: dict[tuple[int, int], ProcRecord] = {}
        self.stepds: dict[tuple[int, int], StepdRecord] = {}
        self.scans = 0
        self.longest_gap = 0.0
        self._live: set[tuple[int, int]] = set()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.scan(final=True)

    def _run(self) -> None:
        last = time.time()
        while not self._stop.is_set():
            self.scan()
            now = time.time()
            self.longest_gap = max(self.longest_gap, now - last)
            last = now
            self._stop.wait(self.interval)

    def scan(self, final: bool = False) -> None:
        now = time.time()
        seen = set()
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            pid = int(entry)
            try:
                uid = os.stat(f"/proc/{pid}").st_uid
            except OSError:
                continue
            if uid == 0:
                self._stepd(pid, now)
                continue
            if uid not in self.uids:
                continue
            stat = _stat(pid)
            if stat is None:
                continue
            comm, state, start = stat
            key = (pid, start)
            with self._lock:
                record = self.records.get(key)
                if record is None:
                    if (placed := self._placed(pid)) is None:
                        continue
                    record = ProcRecord(placed[0], pid, placed[1], uid, comm, _stray_mark(pid), now, now)
                    # The start is in ticks since boot, as /proc/uptime counts: its age now,
                    # taken from this scan's wall time, is exact where first_seen lags a scan.
                    record.started = now - max(0.0, _uptime() - start / _TICKS)
                    self.records[key] = record
                if state == "Z":
                    continue  # gone as far as anyone is concerned
                seen.add(key)
                record.last_seen = now
                record.comm = comm
                if comm == self.mixed_comm and not record.mixed_uids:
                    record.mixed_uids = _mixed_uids(pid)
                if state == "D":
                    record.uninterruptible = True
                if state in ("T", "t"):
                    if record.stopped_since is None:
                        record.stopped_since = now
                    record.longest_stop = max(record.longest_stop, now - record.stopped_since)
                    record.stopped_at_end = final
                else:
                    record.stopped_since = None
        with self._lock:
            for key in self._live - seen:
                record = self.records[key]
                if record.gone_at is None:
                    record.gone_at = now
            self._live = seen
            self.scans += 1

    def _placed(self, pid: int) -> Optional[tuple[str, int]]:
        """(node, namespace pid) of a process in one of the nodes' pid namespaces; None
        for any other, or one gone."""
        try:
            node = self.by_ns.get(os.readlink(f"/proc/{pid}/ns/pid"))
        except OSError:
            return None
        ns_pid = _ns_pid(pid)
        return None if node is None or ns_pid is None else (node, ns_pid)

    def _stepd(self, pid: int, now: float) -> None:
        stat = _stat(pid)
        if stat is None or stat[0] != "slurmstepd":
            return
        key = (pid, stat[2])
        with self._lock:
            record = self.stepds.get(key)
            if record is None:
                if (placed := self._placed(pid)) is None:
                    return
                record = self.stepds[key] = StepdRecord(placed[0], pid, placed[1], now, now)
            record.last_seen = now
        title = _cmdline(pid)
        if title and title not in record.titles:
            record.titles.append(title)

    def stepd_snapshot(self) -> list[StepdRecord]:
        with self._lock:
            return [dataclasses.replace(r, titles=list(r.titles)) for r in self.stepds.values()]

    def snapshot(self) -> list[ProcRecord]:
        with self._lock:
            return [dataclasses.replace(r) for r in self.records.values()]
