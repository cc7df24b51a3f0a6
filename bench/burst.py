# SPDX-License-Identifier: GPL-2.0-or-later
"""The busy-node cases, `bench/run --burst`: many job ends at once (bench/README.md).

One node: 1, 8, 32 and 64 tasks of one user's job array, each leaving two strays, told
to end at the same moment; on a quiet machine and with 4 busy loops per CPU beside the
cluster. Sixteen nodes (each in namespaces of its own): a 16-node job and a 512-task
array spread over the nodes, ending together, with and without PrologFlags=contain.
Each burst runs on a cluster with the plugin and on its twin without it, one cluster at
a time, and is measured from the moment its tasks are told to end:
- until every task's epilog is done (slurmd's "sent epilog complete msg" lines) and until
  no stray is left;
- the CPU time the nodes' Slurm daemons and their jobs used meanwhile (a cpuacct cgroup
  that holds each slurmd, so its slurmstepds and the plugin in them too);
- slurmctld's RPCs (sdiag): count and mean time by type;
- the plugin's own time per job epilog, per node, from its summary lines.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Optional

# A task: two strays, then it waits for the end of file on the FIFO GO and ends. Every
# task waits in its open of GO, forking nothing meanwhile; the bench opens GO and closes
# it again, and all of them end at once.
TASK = """#!/bin/sh
setsid sleep 1000 </dev/null >/dev/null 2>&1 &
setsid sleep 1001 </dev/null >/dev/null 2>&1 &
read x < GO
"""
STRAY_ARGV = (b"sleep\x001000\x00", b"sleep\x001001\x00")
CPUACCT = Path("/sys/fs/cgroup/cpuacct")
# The types of slurmctld's RPCs the plugin may cause: its questions about live work.
QUESTIONS = ("REQUEST_JOB_INFO", "REQUEST_JOB_USER_INFO", "REQUEST_NODE_INFO", "REQUEST_JOB_INFO_SINGLE")
SUMMARY = re.compile(r"leftover: job \d+ epilog \(user .*; (\d+\.\d+) ms(; deadline reached)?", re.M)


def strays_of(uid: int) -> list[int]:
    """The bench's strays of uid, on every node (the nodes' pid namespaces are the host's children)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid != uid:
                continue
            with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                if f.read() in STRAY_ARGV:
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def kill_strays(uid: int) -> None:
    for pid in strays_of(uid):
        with contextlib.suppress(OSError):
            os.kill(pid, 9)
    deadline = time.monotonic() + 30
    while strays_of(uid) and time.monotonic() < deadline:
        time.sleep(0.05)


class LogTails:
    """The nodes' slurmd logs from a mark on, read as they grow."""

    def __init__(self, cluster):
        self.paths = [cluster.slurmd_log_path(node.name) for node in cluster.nodes]
        self.offsets = [p.stat().st_size if p.exists() else 0 for p in self.paths]
        self.texts = ["" for _ in self.paths]

    def read(self) -> list[str]:
        for i, path in enumerate(self.paths):
            with contextlib.suppress(OSError), open(path, "rb") as f:
                f.seek(self.offsets[i])
                new = f.read()
                cut = new.rfind(b"\n") + 1  # whole lines only
                self.offsets[i] += cut
                self.texts[i] += new[:cut].decode(errors="replace")
        return self.texts


class CpuGroup:
    """A cpuacct cgroup holding a cluster's slurmds (and so all they start)."""

    def __init__(self, cluster, marker: str):
        self.path = CPUACCT / f"leftover-bench-{uuid.uuid4().hex[:8]}"
        self.path.mkdir()
        moved = 0
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                if Path(f"/proc/{entry.name}/comm").read_text().strip() != "slurmd":
                    continue
                if marker.encode() not in Path(f"/proc/{entry.name}/environ").read_bytes().split(b"\0"):
                    continue
                (self.path / "cgroup.procs").write_text(entry.name)
                moved += 1
            except OSError:
                continue
        if moved != len(cluster.nodes):
            raise RuntimeError(f"{moved} slurmds of {len(cluster.nodes)} found for the CPU account")

    def seconds(self) -> float:
        return int((self.path / "cpuacct.usage").read_text()) / 1e9

    def remove(self) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.2)


@contextlib.contextmanager
def busy_loops(count: int):
    loops = [subprocess.Popen(["/bin/sh", "-c", "while :; do :; done"]) for _ in range(count)]
    try:
        yield
    finally:
        for p in loops:
            p.kill()
            p.wait()


def one_burst(cluster, cpu: CpuGroup, user: str, uid: int, shape: str, tasks: int, nodes: int,
              with_plugin: bool, contain: bool, timeout: float = 180.0) -> dict:
    """Submits the burst, waits for its strays, then tells its tasks to end and measures.
    shape: "array" (tasks one-task jobs, on the first node when nodes is 1) or "job" (one
    job, a task on each of `nodes` nodes)."""
    go = cluster.work_dir / f"go-{uuid.uuid4().hex[:8]}"
    os.mkfifo(go)
    go.chmod(0o666)
    task = cluster.work_dir / f"task-{uuid.uuid4().hex[:8]}.sh"
    task.write_text(TASK.replace("GO", str(go)))
    task.chmod(0o755)
    if shape == "array":
        where = [f"--nodelist={cluster.nodes[0].name}"] if nodes == 1 else []
        cluster.sbatch(user, f"#!/bin/sh\nexec {task}\n", [f"--array=0-{tasks - 1}", "--nodes=1", "--ntasks=1", *where])
        epilogs = tasks
    else:
        cluster.sbatch(user, f"#!/bin/sh\nsrun {task}\n", [f"--nodes={nodes}", "--ntasks-per-node=1"])
        epilogs = nodes
    deadline = time.monotonic() + timeout
    while len(strays_of(uid)) < 2 * tasks:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(strays_of(uid))} strays of {2 * tasks} after {timeout:.0f} s")
        time.sleep(0.2)
    time.sleep(1.0)  # the tasks' own starts settle
    logs = LogTails(cluster)
    # A job's end on a node: slurmd's "sent epilog complete msg". With no Epilog, no SPANK
    # plugin and no step left (no plugin, no contain), slurmd has nothing to wait for and
    # answers the terminate request at once (22.05 req.c, ESLURMD_KILL_JOB_ALREADY_COMPLETE,
    # logged at debug4 only): its "_rpc_terminate_job" line is that end.
    ended = re.compile(r"sent epilog complete msg" if with_plugin or contain else
                       r"sent epilog complete msg|_rpc_terminate_job: uid")
    rpcs_before = cluster.sdiag_rpc_stats()
    cpu_before = cpu.seconds()
    started = time.monotonic()
    os.close(os.open(go, os.O_RDWR))  # a writer came and went: every task reads its end of file
    done = clean = None
    while time.monotonic() - started < 60 and (done is None or (with_plugin and clean is None)):
        now = time.monotonic() - started
        if done is None and sum(len(ended.findall(t)) for t in logs.read()) >= epilogs:
            done = now
        if clean is None and not strays_of(uid):
            clean = now
        time.sleep(0.02)
    cpu_used = cpu.seconds() - cpu_before
    time.sleep(1.0)  # the last epilogs' messages reach slurmctld
    rpcs_after = cluster.sdiag_rpc_stats()
    left = len(strays_of(uid))
    kill_strays(uid)
    rpcs = {k: (v[0] - rpcs_before.get(k, (0, 0))[0], v[1] - rpcs_before.get(k, (0, 0))[1])
            for k, v in rpcs_after.items() if k != "REQUEST_STATS_INFO"}
    rpcs = {k: v for k, v in rpcs.items() if v[0] > 0}
    per_node = [[float(m[1]) for m in SUMMARY.finditer(text)] for text in logs.read()]
    late = sum(len([m for m in SUMMARY.finditer(text) if m[2]]) for text in logs.read())
    return {"done_s": done, "clean_s": clean, "left": left, "cpu_s": cpu_used, "rpcs": rpcs,
            "epilog_ms": per_node, "deadline_reached": late}


def run_cluster(plugin: Optional[Path], nodes: int, contain: bool, cpus: int, user: str, uid: int,
                cases: list[tuple[str, int, int]], loads: tuple[int, ...], log) -> dict:
    """Starts one cluster, runs each case at each load, stops it. Returns {(case, load): figures}."""
    from harness.plugin_support import write_config
    from harness.slurm_cluster import MARKER_VAR, SlurmCluster, reap_stale_clusters
    from harness.slurm_config import ClusterConfig

    reap_stale_clusters()
    conf_dir = Path(tempfile.mkdtemp(prefix="leftover-bench-burst-"))
    conf_dir.chmod(0o755)
    # scope job_user and the bench account's uid only: nothing else on this machine is touched.
    write_config(conf_dir, f"scope: job_user\nuid_min: {uid}\nuid_max: {uid}\nsweep_on_controller_host: true\n")
    names = tuple(f"lo-n{i + 1}" for i in range(nodes))
    cluster = SlurmCluster(ClusterConfig(
        nodes=names, node_namespaces=nodes > 1, cpus=cpus, prolog_flags="contain" if contain else None,
        plugstack=f"optional {plugin} config={conf_dir / 'leftover.conf'}\n" if plugin else ""))
    out = {}
    cpu = None
    try:
        log(f"starting a {nodes}-node cluster {'with' if plugin else 'without'} leftover.so"
            f"{', PrologFlags=contain' if contain else ''}")
        cluster.start()
        cpu = CpuGroup(cluster, f"{MARKER_VAR}={cluster.dir}")
        one_burst(cluster, cpu, user, uid, "array", 1, 1, plugin is not None, contain)  # warm-up
        for load in loads:
            with busy_loops(load):
                for case in cases:
                    log(f"  {case[0]} of {case[1]} on {case[2]} node(s), {load} busy loops")
                    out[(case, load)] = one_burst(cluster, cpu, user, uid, *case, plugin is not None, contain)
    finally:
        kill_strays(uid)
        cluster.stop()
        if cpu:
            cpu.remove()
        if not os.environ.get("BENCH_KEEP"):
            cluster.remove_files()
        subprocess.run(["rm", "-rf", str(conf_dir)])
    return out


def measure(plugin: Path, users: tuple[tuple[str, int], tuple[str, int]], log, sixteen: bool = True) -> dict:
    """Every case, with the plugin and without: {"one": {...}, "sixteen": {...}}."""
    (user, uid), (plain_user, plain_uid) = users
    loads = (0, 4 * (os.cpu_count() or 1))
    one_cases = [("array", n, 1) for n in (1, 8, 32, 64)]
    results = {"loads": loads, "one": {}, "sixteen": {}}
    for name, p, u, i in (("with", plugin, user, uid), ("without", None, plain_user, plain_uid)):
        results["one"][name] = run_cluster(p, 1, False, 64, u, i, one_cases, loads, log)
    if sixteen:
        big_cases = [("job", 16, 16), ("array", 512, 16)]
        for contain in (True, False):
            for name, p, u, i in (("with", plugin, user, uid), ("without", None, plain_user, plain_uid)):
                results["sixteen"][(contain, name)] = run_cluster(p, 16, contain, 32, u, i, big_cases, (0,), log)
    return results


def secs(value: Optional[float]) -> str:
    return "never (60 s)" if value is None else f"{value:.2f}"


def questions(rpcs: dict) -> int:
    return sum(rpcs.get(k, (0, 0))[0] for k in QUESTIONS)


def mean_rpc_ms(rpcs: dict) -> str:
    count = sum(c for c, _ in rpcs.values())
    return f"{sum(t for _, t in rpcs.values()) / count / 1000:.2f}" if count else "-"


def epilog_ms(per_node: list[list[float]]) -> str:
    values = sorted(v for node in per_node for v in node)
    if not values:
        return "-"
    return f"{values[len(values) // 2]:.1f} / {values[-1]:.1f}"


def report(results: dict) -> str:
    """The tables, markdown."""
    lines = ["## Busy node: job ends at once on one node (one user's array, 2 strays a task; no contain)", "",
             "Seconds from the tasks' end: until every epilog is done and until no stray is left; CPU seconds "
             "of the node's Slurm daemons and jobs meanwhile; slurmctld's questions about live work "
             "(REQUEST_JOB_INFO and kin) and all its RPCs; the plugin's time per epilog, median / max.", "",
             "| ends | busy loops | epilogs done, with / without | clean, with | strays left | CPU s, with / without "
             "| questions, with / without | RPCs, with / without | epilog ms, median / max | deadline reached |",
             "|---:|---:|---|---:|---:|---|---|---|---|---:|"]
    one = results["one"]
    for (case, load), w in sorted(one["with"].items(), key=lambda kv: (kv[0][1], kv[0][0][1])):
        wo = one["without"][(case, load)]
        lines.append(f"| {case[1]} | {load} | {secs(w['done_s'])} / {secs(wo['done_s'])} | {secs(w['clean_s'])} "
                     f"| {w['left']} | {w['cpu_s']:.2f} / {wo['cpu_s']:.2f} | {questions(w['rpcs'])} / "
                     f"{questions(wo['rpcs'])} | {sum(c for c, _ in w['rpcs'].values())} / "
                     f"{sum(c for c, _ in wo['rpcs'].values())} | {epilog_ms(w['epilog_ms'])} "
                     f"| {w['deadline_reached']} |")
    if results["sixteen"]:
        lines += ["", "## Sixteen nodes: a 16-node job and a 512-task array, ending together", "",
                  "Each node in namespaces of its own. slurmctld's RPCs over the burst (sdiag): questions about "
                  "live work, all RPCs and their mean time; the plugin's time per epilog over all nodes, "
                  "median / max; the slowest node's median.", "",
                  "| contain | burst | epilogs done, with / without | clean, with | questions, with / without "
                  "| RPCs, with / without | mean RPC ms, with / without | epilog ms, median / max "
                  "| slowest node's median ms |",
                  "|---|---|---|---:|---|---|---|---|---:|"]
        for contain in (True, False):
            w_all, wo_all = results["sixteen"][(contain, "with")], results["sixteen"][(contain, "without")]
            for (case, load), w in w_all.items():
                wo = wo_all[(case, load)]
                medians = [sorted(n)[len(n) // 2] for n in w["epilog_ms"] if n]
                lines.append(
                    f"| {'yes' if contain else 'no'} | {case[0]} of {case[1]} | {secs(w['done_s'])} / "
                    f"{secs(wo['done_s'])} | {secs(w['clean_s'])} | {questions(w['rpcs'])} / "
                    f"{questions(wo['rpcs'])} | {sum(c for c, _ in w['rpcs'].values())} / "
                    f"{sum(c for c, _ in wo['rpcs'].values())} | {mean_rpc_ms(w['rpcs'])} / "
                    f"{mean_rpc_ms(wo['rpcs'])} | {epilog_ms(w['epilog_ms'])} | "
                    f"{max(medians) if medians else '-'} |")
    return "\n".join(lines) + "\n"
