# SPDX-License-Identifier: GPL-2.0-or-later
"""A randomized soak of leftover.so on the e2e harness's three-node cluster, judged by an
oracle (see tests/README.md).

    python3 -m soak.soak [--seed N] [--minutes M] [--config NAME] [--uid-base B] [--no-faults] [--keep]
    python3 -m soak.soak --judge DIR [--verbose]      # judge a kept run again

with tests/ on PYTHONPATH (for the packages soak and harness), as scripts/soak.sh runs it.

Runs as root, with LEFTOVER_PLUGIN naming the plugin.  With the e2e harness's shared test
accounts the caller holds /tmp/leftover-e2e.lock (scripts/soak.sh does); with --uid-base
(or LEFTOVER_SOAK_UID_BASE) it runs as accounts of its own, uids B..B+99, that no other
test sweeps, and needs no lock but that no other run uses the same block.  Prints one summary; exits 1 on any
violation (printing the seed, the configuration and the events around each one), 2 when
the harness itself failed.
"""

from __future__ import annotations

import argparse
import atexit
import dataclasses
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

from harness.e2e_processes import HarnessError
from harness.slurm_jobs import FINAL_STATES

from .oracle import INVARIANTS, PROCESS_SHAPES, Oracle, Verdict, stamp
from .records import allocations, ended_jobs, node_log, processes_named, stamped
from .sampler import ProcRecord, Sampler, StepdRecord
from .soak_cluster import BLOCK_BASES, CONFIGS, CONTROLS, DEADLINE, NODES, SETUID_PROGRAM, SoakCluster, soak_users
from .witness import Witness, WitnessUnavailable
from .workload import ACTION_KINDS, BURST_ENDS, Action, EventLog, JobWatcher, Workload, make_schedule


def action_kinds(text: str) -> tuple[str, ...]:
    kinds = tuple(text.split(","))
    unknown = [k for k in kinds if k not in ACTION_KINDS]
    if unknown:
        raise argparse.ArgumentTypeError(f"no kind of action {', '.join(unknown)} (the kinds: {', '.join(ACTION_KINDS)})")
    return kinds


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=None, help="the schedule's seed (default: a random one)")
    parser.add_argument("--minutes", type=float, default=1.0, help="how long the workload runs")
    parser.add_argument("--config", choices=sorted(CONFIGS), default="linuxproc-contain")
    parser.add_argument("--uid-base", type=int, default=os.environ.get("LEFTOVER_SOAK_UID_BASE") or None,
                        help="run as the soak's own accounts, uids B..B+99 (B a multiple of 100 from "
                             f"{BLOCK_BASES.start} to {BLOCK_BASES.stop - 100}), created if missing; "
                             "default: the e2e harness's shared test accounts")
    parser.add_argument("--no-faults", action="store_true", help="do not stop and start slurmctld")
    parser.add_argument("--parallel", type=int, default=6, help="actions running at once")
    parser.add_argument("--slack", type=float, default=1.0,
                        help="seconds beyond leftover's deadline a stray may take to be seen gone")
    parser.add_argument("--control", choices=sorted(CONTROLS),
                        help="a positive control: leftover configured against the oracle's belief; "
                             "passes only if the oracle reports the violations it must")
    parser.add_argument("--kinds", type=action_kinds, default=None,
                        help="only these kinds of action (comma-separated, of " + ", ".join(ACTION_KINDS) + ")")
    parser.add_argument("--load", type=int, default=0,
                        help="busy-looping processes beside the cluster (races show more under load)")
    parser.add_argument("--keep", action="store_true", help="keep the cluster's directory (logs)")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--judge", metavar="DIR", type=Path,
                        help="judge a kept run again (its log/ and judge.json) with this oracle; runs nothing")
    args = parser.parse_args(argv)
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 1_000_000)
    return args


def node_namespaces(soak: SoakCluster) -> dict[str, str]:
    return {node.name: os.readlink(f"/proc/{node.namespace.init_pid}/ns/pid") for node in soak.cluster.nodes}


def end_setuid_strays(uids: set[int], planned_kills: list[tuple], events: EventLog) -> None:
    """SIGKILLs the setuid strays (soak-setuid, run by an ordinary user as the protected
    high user): leftover never kills them, and each holds its real user on its node, whose
    files no cleanup removes while it lives. Ended by the harness before the last jobs, so
    that those jobs' cleanups see the users free: a 20-minute run's setuid stray ended by
    itself one second after its user's last job epilog there had kept her files, and the
    run then found 103 of them 'left at the end' with nobody holding her."""
    killed = []
    for pid in processes_named(SETUID_PROGRAM, uids):
        try:
            when = time.time()
            os.kill(pid, signal.SIGKILL)
        except OSError:
            continue   # gone meanwhile
        planned_kills.append((when, pid, "drain"))
        killed.append(pid)
    deadline = time.time() + 10
    while time.time() < deadline and any(Path(f"/proc/{pid}").exists() for pid in killed):
        time.sleep(0.1)
    if killed:
        events.add(f"drain: the harness ended {len(killed)} setuid stray(s), host pids {killed}")


def drain(soak: SoakCluster, watcher: JobWatcher, events: EventLog,
          planned_kills: list[tuple], harness_errors: list[str]) -> None:
    """Waits for every job to end, ends the setuid strays (end_setuid_strays), then ends one
    job on every node for each ordinary user, one after the other, so that every node
    sweeps once more after the workload and every user's leftovers meet a job end of theirs
    there (the cleanup removes what a swept user left: files kept by an excused sweep, a
    lookup error's, are judged again there), and waits out a deadline."""
    for patience in (60, 60):
        deadline = time.time() + patience
        while time.time() < deadline:
            watcher.refresh()
            if watcher.all_done():
                break
            time.sleep(1)
        # An action that failed half-way (a client command during a fault) may leave a
        # job behind: it is cancelled, and said so.
        for job, fields in watcher.jobs.items():
            if fields.get("JobState") not in FINAL_STATES:
                events.add(f"drain: cancelling job {job} ({fields.get('JobName')}), still {fields.get('JobState')}")
                soak.cluster.scancel(job)
    end_setuid_strays({soak.users.uid_of(user) for user in soak.users.everyone}, planned_kills, events)
    events.add("drain: every job ended; a last job on every node for each ordinary user")
    for user in soak.users.ordinary:
        try:
            soak.cluster.run_as(user, ["/usr/bin/srun", "--job-name=soak-last", f"--nodes={len(NODES)}",
                                       "--ntasks-per-node=1", "/bin/true"], timeout=120)
        except HarnessError as failure:
            # A node that cannot take the last job (down or drained: a fresh-clone run's
            # srun waited 120 s on 'Required node not available') is the run's finding,
            # with the nodes' states, not the end of the run and its evidence.
            states = "; ".join(f"{node} {info.get('State')} (reason {info.get('Reason')})"
                               for node in NODES if (info := soak.cluster.node_fields(node)))
            text = f"drain: the last job of {user} did not run: {str(failure).splitlines()[-1]}; nodes: {states}"
            events.add(text)
            harness_errors.append(text)
    time.sleep(2)
    watcher.refresh()
    for job, fields in watcher.jobs.items():
        if fields.get("JobName") == "soak-last":
            watcher.wait(job, frozenset({"COMPLETED", "FAILED", "CANCELLED"}), 60)
    time.sleep(DEADLINE + 2)


# What a sweep logs when it takes another sweep's slurmctld answer (sweep/job_state_source.cpp).
SHARED_ANSWER = "slurmctld's answer that another sweep of this node asked for"


# The process shapes whose program the witness can name by its comm (workload.py).
WITNESSED_PROGRAMS = {"dstate": "soak-dstate", "shmat": "soak-shmat", "bigmem": "soak-bigmem",
                      "forker": "soak-forker"}


def shapes_line(schedule: list[Action], workload: Workload, sampler: Sampler, ctld_text: str,
                job_uids: dict[int, int], witnessed: Optional[dict] = None) -> tuple[str, list[str]]:
    """Whether each hostile shape the schedule meant to run ran: a line for the summary and
    the shapes that did not. witnessed: the witness's records, when it ran."""
    # An action that failed (its srun met slurmctld's restart, say) ran no shape: what
    # only it meant to run is not missing.
    failed = {m.group(0) for text in workload.unexpected_ends + workload.harness_errors
              if (m := re.match(r"a\d+", text))}
    planned: dict[str, int] = {}
    for action in schedule:
        if action.tag in failed:
            continue
        # A login process plants no strays: its kinds only say whether it ignores TERM
        # (a fresh-clone run failed on 'asstepd 0/1', planned only by a login).
        for kind in action.kinds if action.kind != "login" else ():
            planned[kind] = planned.get(kind, 0) + 1
        planned[action.kind] = planned.get(action.kind, 0) + 1
    seen: dict[str, int] = {}
    for proc in sampler.snapshot():
        if proc.stray:
            kind = proc.stray.split("/")[0]
            if kind == "dstate" and not proc.uninterruptible:
                continue  # the shape is a process seen in uninterruptible sleep
            seen[kind] = seen.get(kind, 0) + 1
    # A user's own SIGSTOP of a soak-stray is the ustop shape (workload.py's only one), seen
    # by the kernel even when the stray died before a sampler scan: under proctrack/cgroup
    # Slurm kills it with its job at once (a fresh-clone run: "ustop 0/1", the SIGSTOP witnessed).
    if not seen.get("ustop") and witnessed:
        stops = sum(1 for w in witnessed.get("signals", [])
                    if w.get("sender") == "user" and w.get("signal") == "SIGSTOP" and w.get("comm") == "soak-stray")
        if stops:
            seen["ustop"] = stops
    # So with a shape whose program has a name of its own: a signal the kernel saw sent to
    # it (by leftover, or by Slurm with its job) shows it ran; soak-dstate is in its vfork
    # wait from its first milliseconds (a control's "dstate 0/1": killed with its job
    # between two sampler scans).
    for kind, comm in WITNESSED_PROGRAMS.items():
        if not seen.get(kind) and witnessed:
            signalled = {(w.get("node"), w.get("ns_pid")) for w in witnessed.get("signals", []) if w.get("comm") == comm}
            if signalled:
                seen[kind] = len(signalled)
    allocs = allocations(ctld_text)
    runs = workload.prolog_runs()
    slow = [r for r in runs if r[5]]
    # A slow Prolog with an end of another job of its user's on its node inside it.
    overlapped = sum(1 for job, user, node, begin, end, _ in slow
                     if any(a.job != job and node in a.nodes and a.end is not None and begin <= a.end <= end
                            and job_uids.get(a.job) == job_uids.get(job) for a in allocs.values()))
    parts, missing = [f"prologs {len(runs)} (slow {len(slow)}, with an end of the user's other job inside "
                      f"{overlapped})"], []
    # The schedule makes slow Prologs; whether an end of the user's other job falls inside
    # one is timing (under --load it often does not), so that count is reported, and only
    # a planned slow Prolog that never ran is missing.
    if planned.get("prolog") and not slow:
        missing.append("prolog (no slow Prolog ran)")
    if planned.get("burst"):
        # The most job ends one node saw within a second.
        ends: dict[str, list[float]] = {}
        for a in allocs.values():
            for node in a.nodes if a.end is not None else ():
                ends.setdefault(node, []).append(a.end)
        largest = max((sum(1 for t in times if e <= t <= e + 1.0) for times in ends.values() for e in times),
                      default=0)
        parts.append(f"burst {planned['burst']} (at most {largest} job ends on one node within 1 s)")
        if largest < BURST_ENDS:
            missing.append(f"burst (at most {largest} job ends on one node within 1 s)")
    if planned.get("requeue"):
        parts.append(f"requeue {workload.requeued}/{planned['requeue']}")
        if not workload.requeued:
            missing.append("requeue (no job was requeued)")
    if planned.get("suspend"):
        parts.append(f"suspend {workload.suspended}/{planned['suspend']}")
        if not workload.suspended:
            missing.append("suspend (no job was suspended)")
    for kind in sorted(PROCESS_SHAPES):
        if planned.get(kind):
            parts.append(f"{kind} {seen.get(kind, 0)}/{planned[kind]}")
            if not seen.get(kind):
                missing.append(kind)
    return "soak shapes: " + ", ".join(parts), missing


def print_context(verdict: Verdict, timeline: list[tuple[float, str, str]], per_invariant: int = 3) -> None:
    for invariant, title in INVARIANTS.items():
        for finding in verdict.violations(invariant)[:per_invariant]:
            print(f"\n-- violation of ({invariant}) {title} on {finding.node} at {stamp(finding.when)}:")
            print(f"   {finding.text}")
            print("   events around it:")
            for when, where, text in timeline:
                if finding.when - 10 <= when <= finding.when + 2 and where in (finding.node, "harness", "slurmctld"):
                    if where == "slurmctld" or where == "harness" or finding.uid is None or \
                            f"uid={finding.uid}" in text or "epilog" in text or "step " in text:
                        print(f"   {stamp(when)} {where:9} {text[:220]}")


def make_timeline(events: EventLog, ctld_text: str, node_texts: dict[str, str], start: float):
    timeline = [(w, "harness", t) for w, t in events.events]
    for when, text in stamped(ctld_text):
        if when >= start and ("Allocate" in text or "allocate_resources" in text or "_start_job: " in text
                              or "_job_complete" in text or "KILL_JOB" in text or "complete_job_allocation" in text):
            timeline.append((when, "slurmctld", text))
    for node, text in node_texts.items():
        for when, line in stamped(text):
            if when >= start and "leftover: " in line and "debug: step " not in line:
                timeline.append((when, node, line))
    return sorted(timeline)


def judge_logs(ctld_text: str, node_texts: dict[str, str], facts: dict) -> tuple[Verdict, list[int]]:
    """The oracle's verdict on a run's logs and the facts the harness saw (its samples, each
    job's uid, ...: judge.json), and the jobs the nodes ran that slurmctld's log shows no
    allocation for: they hold nothing to the oracle, so their users' strays would look late
    and kills of their users' processes right."""
    allocs = allocations(ctld_text)
    for job, alloc in allocs.items():
        alloc.uid = facts["job_uids"].get(job)
    # A requeued job ends on its nodes before slurmctld logs "Requeuing" (it sends the
    # terminations first): its allocation ends when the harness asked for the requeue.
    for job, asked in facts.get("requeued", {}).items():
        alloc = allocs.get(int(job))
        if alloc is not None and alloc.start <= asked and (alloc.end is None or asked < alloc.end):
            alloc.end = asked
    logs = {node: node_log(node, text) for node, text in node_texts.items()}
    unplaced = sorted(j for j in ended_jobs(ctld_text) - allocs.keys()
                      if any(j in log.knows_job for log in logs.values()))
    procs = [ProcRecord(**p) for p in facts["procs"]]
    # A run kept before the sampler recorded slurmstepds has none: its claims go unchecked.
    stepds = [StepdRecord(**p) for p in facts["stepds"]] if "stepds" in facts else None
    oracle = Oracle(allocs, logs, procs, facts["protected"], tuple(facts["uid_range"]),
                    [tuple(w) for w in facts["faults"]], facts["slack"], witness=facts.get("witness"),
                    stepds=stepds, planned_kills=[tuple(k) for k in facts.get("planned_kills", [])],
                    scope=facts.get("scope", "node"))
    return oracle.judge(facts["run_end"]), unplaced


def print_verdict(verdict: Verdict, unplaced: list[int], head: str, tail: str = "") -> int:
    """Prints the summary and violations lines; returns the number of violations."""
    violations = {i: len(verdict.violations(i)) for i in INVARIANTS}
    total = sum(violations.values())
    print(f"soak summary: {head}: " + ", ".join(f"{k} {v}" for k, v in verdict.counts.items()) + tail)
    print(f"soak witness: {verdict.witness}")
    print("soak violations: " + ", ".join(f"({i}) {INVARIANTS[i]} {n}" for i, n in violations.items())
          + f"; total {total}")
    if unplaced:
        print(f"soak: the oracle cannot judge this run: slurmctld's log shows no allocation for {len(unplaced)} "
              f"jobs the nodes ran (jobs {', '.join(map(str, unplaced[:10]))}{' ...' if len(unplaced) > 10 else ''})")
    return total


def judge_kept(directory: Path, verbose: bool) -> int:
    """Judges a kept run again: 1 on violations, 2 when the oracle cannot judge it."""
    facts_path = directory / "judge.json"
    if not facts_path.exists():
        print(f"soak.py: {facts_path} is missing (a run kept before the soak wrote it cannot be judged again)",
              file=sys.stderr)
        return 2
    facts = json.loads(facts_path.read_text())
    facts["job_uids"] = {int(k): v for k, v in facts["job_uids"].items()}
    facts["protected"] = {int(k): v for k, v in facts["protected"].items()}
    log = directory / "log"
    verdict, unplaced = judge_logs((log / "slurmctld.log").read_text(errors="replace"),
                                   {node: (log / f"slurmd-{node}.log").read_text(errors="replace")
                                    for node in NODES}, facts)
    total = print_verdict(verdict, unplaced, f"re-judged {directory}")
    for finding in verdict.findings if verbose else ():
        print(f"({finding.invariant}) {stamp(finding.when)} {finding.node} {finding.text}")
    lost = (facts.get("witness") or {}).get("stats", {})
    lost = lost.get("lost", 0) + lost.get("fanotify overflows", 0)
    if lost:
        print(f"soak: the witness lost {lost} events: the run cannot be judged")
    return 2 if unplaced or lost else 1 if total else 0


def keep_evidence(soak: SoakCluster, timeline, verdict: Verdict, args, name: str, facts: dict) -> Path:
    """Copies the daemons' logs and writes the timeline and every finding where the next
    run's reaping of stale clusters does not reach: $LEFTOVER_SOAK_OUT (default /tmp; a run
    in a release's root names a directory of the tree) /leftover-soak-<config>-<seed>[-u<uid base>]."""
    dest = Path(os.environ.get("LEFTOVER_SOAK_OUT") or "/tmp") / f"leftover-soak-{name}-{args.seed}{soak.users.tag}"
    shutil.copytree(soak.cluster.log_dir, dest / "log", dirs_exist_ok=True)
    (dest / "timeline.txt").write_text("".join(f"{stamp(w)} {where:9} {text}\n" for w, where, text in timeline))
    (dest / "findings.txt").write_text("".join(f"({f.invariant}) {stamp(f.when)} {f.node} {f.text}\n"
                                               for f in verdict.findings))
    (dest / "judge.json").write_text(json.dumps(facts))
    return dest


def main(argv) -> int:
    args = parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)
    if args.judge:
        return judge_kept(args.judge, args.verbose)
    if os.geteuid() != 0:
        print("soak.py: run as root (it starts Slurm daemons)", file=sys.stderr)
        return 2
    config = CONFIGS[args.config]
    users = soak_users(args.uid_base)
    schedule = make_schedule(args.seed, args.minutes * 60, not args.no_faults, users, args.kinds)
    if args.control == "wrong-kill":
        # Sure targets: the users protected by name only, logged in on every node.
        schedule[:0] = [Action(1000 + i, 0.1, "login", user, 1, (node,), 0, ())
                        for i, (user, node) in enumerate((u, n) for u in (users.listed, users.alias_of) for n in NODES)]
    if args.control == "lie":
        schedule += [Action(2000, 0.3 * args.minutes * 60, "harness_kill", "root", 0, (), 0, ()),
                     Action(2001, 0.6 * args.minutes * 60, "fake_kill", "root", 0, (), 0, ())]
        schedule.sort(key=lambda a: a.at)
    control = f" --control {args.control}" if args.control else ""
    load = f" --load {args.load}" if args.load else ""
    load += f" --kinds {','.join(args.kinds)}" if args.kinds else ""
    load += f" --uid-base {args.uid_base}" if args.uid_base is not None else ""
    print(f"soak: seed {args.seed}, config {config.name}{control}{load}, {args.minutes:g} min, {len(schedule)} actions "
          f"(replay: PYTHONPATH=tests python3 -m soak.soak --seed {args.seed} --minutes {args.minutes:g} --config {config.name}{control}{load})",
          flush=True)
    soak = SoakCluster(config, users, args.control)
    atexit.register(soak.cluster.stop)
    # A signal ends the run through the finally clauses below (and atexit): the cluster
    # stops, the witness's tracing instance goes.
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, lambda signum, frame: sys.exit(128 + signum))
    witness = None
    try:
        soak.start()
        if soak.setuid_skipped:
            print(f"soak: setuid strays skipped: {soak.setuid_skipped}")
        events = EventLog()
        uids = {users.uid_of(user) for user in users.everyone}
        sampler = Sampler(node_namespaces(soak), uids)
        watch = [(source, node, str(target)) for node in NODES
                 for source, target in soak.cluster.node_private_binds(node)]
        try:
            witness = Witness(node_namespaces(soak), watch, uids).start()
        except WitnessUnavailable as why:
            print(f"soak: NO WITNESS ({why}): leftover's actions are taken from its own log")
        watcher = JobWatcher(soak)
        workload = Workload(soak, events, watcher)
        # Marked as the cluster's: stopping the cluster ends them too.
        hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"], env=soak.cluster.root_env())
                for _ in range(args.load)]
        start = time.time()
        sampler.start()
        watcher.start()
        workload.run(schedule, args.parallel)
        for hog in hogs:
            hog.kill()
            hog.wait()
        drain(soak, watcher, events, workload.planned_kills, workload.harness_errors)
        run_end = time.time()
        left = witness.left() if witness else None
        if witness:
            witness.stop()
        sampler.stop()
        watcher.stop()
        watcher.refresh()

        ctld_text = soak.cluster.slurmctld_log_text()
        node_texts = {node: soak.cluster.slurmd_log_text(node) for node in NODES}
        job_uids = {job: int(fields["UserId"].split("(")[1].rstrip(")"))
                    for job, fields in watcher.jobs.items() if "(" in fields.get("UserId", "")}
        facts = {"run_end": run_end, "slack": args.slack, "protected": users.protected_uids(), "scope": config.scope,
                 "uid_range": [users.uid_min, users.uid_max], "faults": workload.fault_windows,
                 "planned_kills": workload.planned_kills, "requeued": workload.requeue_asked,
                 "job_uids": job_uids, "procs": [dataclasses.asdict(p) for p in sampler.snapshot()],
                 "stepds": [dataclasses.asdict(p) for p in sampler.stepd_snapshot()],
                 "witness": witness.records(sampler.snapshot(), left) if witness else None}
        verdict, unplaced = judge_logs(ctld_text, node_texts, facts)
        timeline = make_timeline(events, ctld_text, node_texts, start)

        total = print_verdict(
            verdict, unplaced, f"seed {args.seed}, config {config.name}",
            f"; faults {len(workload.fault_windows)}; jobs that ended unexpectedly {len(workload.unexpected_ends)}"
            f"; harness errors {len(workload.harness_errors)}; sampler scans {sampler.scans}"
            f" (longest gap {sampler.longest_gap:.2f}s)")
        shapes, missing = shapes_line(schedule, workload, sampler, ctld_text, job_uids, facts["witness"])
        # slurmctld's answers that sweeps took from another sweep of their node (a burst's).
        shared = sum(text.count(SHARED_ANSWER) for text in node_texts.values())
        print(f"{shapes}, slurmctld answers shared {shared}")
        for what in missing:
            print(f"soak: an intended shape did not run: {what}")
        violations = {i: len(verdict.violations(i)) for i in INVARIANTS}
        stats = facts["witness"]["stats"] if witness else {}
        lost = stats.get("lost", 0) + stats.get("fanotify overflows", 0)
        unreadable = stats.get("unreadable", 0)
        if unplaced or lost or unreadable:
            if lost:
                print(f"soak: the witness lost {lost} events: the run cannot be judged")
            if unreadable:
                print(f"soak: the witness could not read {unreadable} events: the run cannot be judged; "
                      f"{'; '.join(stats.get('failures', []))}")
            kept = keep_evidence(soak, timeline, verdict, args, config.name, facts)
            print(f"soak: logs and the whole timeline: {kept}")
            return 2
        if args.verbose:
            for finding in verdict.findings:
                if finding.invariant <= 0:
                    print(f"   {finding.excuse or ('race' if finding.invariant == 0 else 'excused')}: {stamp(finding.when)} "
                          f"{finding.node} {finding.text}")
        for text in workload.unexpected_ends[:10]:
            print(f"   ended unexpectedly: {text}")
        for text in workload.harness_errors[:10]:
            print(f"   harness error: {text}")
        if args.keep and (args.control or not total):
            name = config.name + (f"-{args.control}" if args.control else "")
            print(f"soak: logs, the timeline and judge.json: {keep_evidence(soak, timeline, verdict, args, name, facts)}")
        if args.control:
            expected = CONTROLS[args.control]
            caught = violations[expected] > 0
            print(f"soak control {args.control}: the oracle {'reported' if caught else 'MISSED'} "
                  f"violations of ({expected}) {INVARIANTS[expected]}")
            if args.verbose:
                print_context(verdict, timeline, 1)
            return 0 if caught else 1
        if total:
            kept = keep_evidence(soak, timeline, verdict, args, config.name, facts)
            print(f"\nsoak FAILED: seed {args.seed}, config {config.name} (logs and the whole timeline: {kept})")
            print_context(verdict, timeline)
            return 1
        if missing and not args.control:
            print("soak: FAILED: the workload did not run every shape it meant to")
            return 1
        if len(workload.harness_errors) > max(3, len(schedule) // 10):
            kept = keep_evidence(soak, timeline, verdict, args, config.name, facts)
            print(f"soak: too many harness errors to trust the run (logs and the whole timeline: {kept})")
            return 2
        return 0
    finally:
        if witness is not None:
            witness.close()
        soak.stop(keep_files=args.keep)
        if args.keep:
            print(f"soak: kept {soak.cluster.dir}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
