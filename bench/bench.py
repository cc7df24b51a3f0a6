#!/usr/bin/python3
"""The driver behind bench/run: measures, side by side in one run, leftover against its
floors and the usual tools (bench/README.md explains each figure), and writes
bench/results.md. Run it through bench/run (which builds first).

Every process it starts is killed before it returns, also on failure: the spawners
die with their standard input (and their children by parent-death signal), and the
Slurm clusters are stopped in `finally` blocks.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import pwd
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import psutil

TOP = Path(__file__).resolve().parents[1]
# The strays' account. Above the default uid_max (60000) on purpose: other engineers'
# test clusters on this machine run leftover.so with scope node and default uid_max,
# and reaped the strays of a uid in the 41901-41999 range within seconds. The bench
# raises uid_max in its own configs to match. --stray-uid 41901 gives the in-range run.
BENCH_USER, BENCH_UID = "lo_bench62901", 62901
# Jobs on the cluster without the plugin run as another user: the plugin of the other
# cluster on this machine would rightly reap an srun of its job user that runs outside
# its own Slurm.
PLAIN_USER, PLAIN_UID = "lo_bench62902", 62902
SIZES = (1000, 5000, 10000)
STRAYS_ON_BUSY = 10


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---------------------------------------------------------------- statistics

def pct(values, q):
    s = sorted(values)
    if len(s) == 1:
        return s[0]
    pos = (len(s) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def med(values):
    return statistics.median(values)


def fmt_ms(values) -> str:
    """median (p10–p90) in ms."""
    m = med(values)
    digits = 2 if m < 10 else 1 if m < 100 else 0
    return f"{m:.{digits}f} ({pct(values, 0.1):.{digits}f}–{pct(values, 0.9):.{digits}f})"


# ------------------------------------------------------------------- helpers

def ensure_bench_users() -> None:
    for name, uid in ((BENCH_USER, BENCH_UID), (PLAIN_USER, PLAIN_UID)):
        try:
            pw = pwd.getpwnam(name)
            if pw.pw_uid != uid:
                sys.exit(f"user {name} exists with uid {pw.pw_uid}, the benchmark needs {uid}")
            continue
        except KeyError:
            pass
        if subprocess.run(["getent", "group", str(uid)], capture_output=True).returncode != 0:
            subprocess.run(["groupadd", "-g", str(uid), name], check=True, capture_output=True)
        subprocess.run(["useradd", "-u", str(uid), "-g", str(uid), "-M", "-d", "/tmp", "-s", "/bin/sh", name],
                       check=True)


def user_processes(uid: int) -> list[int]:
    out = []
    for p in psutil.process_iter(["uids", "status"]):
        u = p.info["uids"]
        if u and u.real == uid and p.info["status"] != psutil.STATUS_ZOMBIE:
            out.append(p.pid)
    return out


class Spawner:
    """`leftover_bench spawn`: COUNT idle processes of UID until closed."""

    def __init__(self, binary: Path, uid: int, count: int):
        self.proc = subprocess.Popen([str(binary), "spawn", str(uid), str(count)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().split()
        if not line or line[0] != "ready" or len(line) != count + 1:
            self.close()
            raise RuntimeError(f"spawner for uid {uid} x{count} failed: {line[:3]}")
        self.pids = [int(x) for x in line[1:]]

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def wait_quiet_node(timeout: float = 30.0) -> None:
    """Waits until no process of the bench user is left (e.g. from a killed run)."""
    deadline = time.monotonic() + timeout
    while (left := user_processes(BENCH_UID)):
        if time.monotonic() > deadline:
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        time.sleep(0.1)


# ------------------------------------------------------------- psutil scan

def psutil_scan(uid_min: int = 1000, protected=frozenset()) -> list[int]:
    """The predecessor's kind of scan: every process, its uids and user name, and the
    pids of users that are neither system accounts nor protected."""
    psutil._pmap = {}  # no cache from the previous call: every scan starts cold, like a fresh run
    strays = []
    for proc in psutil.process_iter(["pid", "name", "username", "uids"]):
        info = proc.info
        uids = info["uids"]
        if uids is None or uids.real < uid_min or info["username"] in protected:
            continue
        strays.append(info["pid"])
    return strays


# ------------------------------------------------------------ measurements

class Disturbed(RuntimeError):
    """Processes the benchmark started vanished under it (see README: shared machine)."""


DISTURBANCES: list[str] = []


def retried(what: str, fn, tries: int = 3):
    """Runs fn again when something outside the benchmark killed its processes
    (e.g. a leftover plugin of someone's test cluster on this machine, scope node)."""
    for attempt in range(1, tries + 1):
        try:
            return fn()
        except Disturbed as e:
            DISTURBANCES.append(f"{what}: {e}")
            log(f"{what}: disturbed ({e}); attempt {attempt} of {tries}")
            if attempt == tries:
                raise


def check_alive(spawners) -> None:
    for s in spawners:
        gone = sum(1 for pid in s.pids if not os.path.exists(f"/proc/{pid}"))
        if gone:
            raise Disturbed(f"{gone} of {len(s.pids)} spawned processes vanished")


def measure_scans(binary: Path, reps: int) -> dict:
    results = {}
    for shape in ("busy", "dirty"):
        for n in SIZES:
            results[(shape, n)] = retried(f"scan {shape} N={n}",
                                          lambda: measure_scan(binary, reps, shape, n))
    return results


def measure_scan(binary: Path, reps: int, shape: str, n: int) -> dict:
    wait_quiet_node()
    spawners = []
    try:
        if shape == "busy":
            spawners.append(Spawner(binary, 0, n))
            spawners.append(Spawner(binary, BENCH_UID, STRAYS_ON_BUSY))
            strays = STRAYS_ON_BUSY
        else:
            spawners.append(Spawner(binary, BENCH_UID, n))
            strays = n
        log(f"scan + decide, {shape} node, N={n}: {reps} runs")
        res = subprocess.run([str(binary), "scan", str(BENCH_UID), BENCH_USER, str(reps)],
                             capture_output=True, text=True, check=True)
        data = json.loads(res.stdout)
        check_alive(spawners)
        if data["kills"] != strays:
            raise Disturbed(f"leftover decided {data['kills']} kills, expected {strays}")
        psutil_ms = []
        for _ in range(reps):
            t = time.perf_counter()
            found = psutil_scan()
            psutil_ms.append((time.perf_counter() - t) * 1000)
            if len(found) < strays:
                raise Disturbed(f"psutil scan found {len(found)} < {strays}")
        # Where the time goes: each /proc pass alone, over the pids of the
        # user whose processes get read in detail (see leftover_bench costs).
        res = subprocess.run([str(binary), "costs", str(BENCH_UID), str(reps)],
                             capture_output=True, text=True, check=True)
        data["costs"] = json.loads(res.stdout)
        check_alive(spawners)
        data["psutil"] = psutil_ms
        return data
    finally:
        for s in spawners:
            s.close()


def measure_sweeps(binary: Path, reps: int) -> dict:
    results = {}
    methods = ("leftover", "pkill", "killall")
    for n in SIZES:
        for rep in range(reps):
            for method in methods:  # interleaved: the same load for all
                data = retried(f"sweep {method} N={n}", lambda: sweep_once(binary, method, n))
                results.setdefault((method, n), []).append(data)
        log(f"full sweep N={n}: leftover {med([d['ms'] for d in results[('leftover', n)]]):.0f} ms, "
            f"pkill {med([d['ms'] for d in results[('pkill', n)]]):.0f} ms")
    return results


def sweep_once(binary: Path, method: str, n: int) -> dict:
    wait_quiet_node()
    spawner = Spawner(binary, BENCH_UID, n)
    try:
        res = subprocess.run([str(binary), "sweep", str(BENCH_UID), BENCH_USER, method, str(n)],
                             capture_output=True, text=True)
        if res.returncode != 0:
            raise Disturbed(f"{res.stdout.strip()} {res.stderr.strip()}")
        data = json.loads(res.stdout)
        if method == "leftover" and data["killed"] != n:
            raise Disturbed(f"leftover killed {data['killed']} of {n}")
        return data
    finally:
        spawner.close()


# ------------------------------------------------------------ the cluster

def srun_times(clusters, count: int) -> list[list[float]]:
    """Wall time of `runuser -u USER -- srun true`, alternating between (cluster, user)s.

    The loop runs as root, not as the bench user: a long-lived process of the job's
    user outside Slurm is exactly what the plugin reaps at the job's end. For the same
    reason the next srun on a plugin cluster starts only after the previous job's
    epilog sweep: its srun, waiting for the node, would be a stray of the job's user.
    """
    times = [[] for _ in clusters]
    for _ in range(count):
        for i, (cluster, user, settle) in enumerate(clusters):
            env_args = [f"{k}={v}" for k, v in cluster.user_env(user).items()]
            t = time.perf_counter()
            r = subprocess.run(["/usr/sbin/runuser", "-u", user, "--", "/usr/bin/env", "-i", *env_args,
                                "/usr/bin/srun", "-N1", "-n1", "true"], cwd=cluster.work_dir,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, timeout=60)
            times[i].append((time.perf_counter() - t) * 1000)
            if r.returncode:
                raise RuntimeError(f"srun failed: {r.stderr}")
            if settle:
                settle()  # untimed: let the job's end (and the plugin's sweeps) finish
    return times


RPC_TYPES = ("REQUEST_JOB_INFO", "REQUEST_JOB_USER_INFO", "REQUEST_NODE_INFO", "REQUEST_JOB_INFO_SINGLE")


def sdiag_counts(cluster) -> dict:
    return cluster.sdiag_rpc_counts()


def count_diff(before: dict, after: dict) -> dict:
    return {k: after.get(k, 0) - before.get(k, 0) for k in set(before) | set(after)
            if after.get(k, 0) - before.get(k, 0)}


def stepd_status(cluster_dir: Path, step: str) -> dict:
    """VmRSS/VmHWM (kB) of the cluster's slurmstepd serving '<job>.<step>'."""
    marker = f"LEFTOVER_E2E_CLUSTER={cluster_dir}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().rstrip(b"\0")
            if not (cmd.startswith(b"slurmstepd: [") and cmd.endswith(f".{step}]".encode())):
                continue
            if marker not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            status = (entry / "status").read_text()
        except OSError:
            continue
        return {k: int(v) for k, v in re.findall(r"^(VmRSS|VmHWM):\s+(\d+) kB", status, re.M)}
    return {}


def measure_cluster(plugin: Path, jobs: int) -> dict:
    os.environ["LEFTOVER_PLUGIN"] = str(plugin)
    # The e2e harness (tests/harness), on PYTHONPATH from bench/run.
    from harness.e2e_processes import wait_until
    from harness.plugin_support import LogWatch, write_config
    from harness.slurm_cluster import SlurmCluster, reap_stale_clusters
    from harness.slurm_config import ClusterConfig

    reap_stale_clusters()
    conf_dir = Path(tempfile.mkdtemp(prefix="leftover-bench-conf-"))
    conf_dir.chmod(0o755)
    # scope job_user and the bench accounts' uids only: the plugin may only ever touch
    # the bench user's processes, never those of anyone else on this machine.
    base_conf = (f"scope: job_user\nuid_min: {min(BENCH_UID, PLAIN_UID)}\n"
                 f"uid_max: {max(BENCH_UID, PLAIN_UID)}\n"
                 # The test cluster runs slurmctld on this host.
                 "sweep_on_controller_host: true\n")
    write_config(conf_dir, base_conf + "job_source: local\n")
    plain = SlurmCluster(ClusterConfig(prolog_flags="contain"))
    withp = SlurmCluster(ClusterConfig(
        prolog_flags="contain", plugstack=f"optional {plugin} config={conf_dir / 'leftover.conf'}\n"))
    out: dict = {}
    try:
        log("starting two Slurm clusters (PrologFlags=contain): without and with leftover.so")
        plain.start()
        withp.start()
        summary = re.compile(r"leftover: (step \d+\.(\S+)|job \d+ epilog) \(user .*; (\d+\.\d+) ms$", re.M)

        run_jobs = srun_times

        def wait_epilogs(watch, count):
            wait_until(lambda: len(re.findall(r"leftover: job \d+ epilog", watch.text())) >= count, 60,
                       f"{count} epilog summaries")

        def epilog_waiter():
            # Waits for one more epilog summary in withp's log than it had seen so far.
            state = {"watch": LogWatch(withp), "seen": 0}

            def settle():
                state["seen"] += 1
                wait_epilogs(state["watch"], state["seen"])
            return settle

        def wait_idle(cluster):
            # Without the plugin there is no summary line to wait for, and asking
            # slurmctld would count: give the last job's (empty) epilog time to end.
            time.sleep(2.0)

        # warm-up job on each (first job pays for cold caches and the first fork of slurmstepd)
        w = LogWatch(withp)
        run_jobs([(plain, PLAIN_USER, None), (withp, BENCH_USER, epilog_waiter())], 1)
        wait_epilogs(w, 1)

        log(f"srun true x{jobs} on both clusters, alternating; sdiag before/after")
        before = [sdiag_counts(plain), sdiag_counts(withp)]
        watch = LogWatch(withp)
        t_plain, t_with = run_jobs([(plain, PLAIN_USER, None), (withp, BENCH_USER, epilog_waiter())], jobs)
        wait_epilogs(watch, jobs)
        wait_idle(plain)
        after = [sdiag_counts(plain), sdiag_counts(withp)]
        out["srun_plain"], out["srun_with"] = t_plain, t_with
        out["rpc_none"] = count_diff(before[0], after[0])
        out["rpc_local"] = count_diff(before[1], after[1])
        evals = {}
        for m in summary.finditer(watch.text()):
            kind = "epilog" if m.group(1).startswith("job") else ("step " + m.group(2))
            evals.setdefault(kind, []).append(float(m.group(3)))
        out["plugin_ms"] = evals
        out["lines_with_kills"] = len(re.findall(r"killed [1-9]", watch.text()))

        log(f"job_source: controller, srun true x{jobs}; sdiag before/after")
        write_config(conf_dir, base_conf + "job_source: controller\n")
        before = sdiag_counts(withp)
        watch = LogWatch(withp)
        (t_ctl,) = run_jobs([(withp, BENCH_USER, epilog_waiter())], jobs)
        wait_epilogs(watch, jobs)
        after = sdiag_counts(withp)
        out["rpc_controller"] = count_diff(before, after)
        out["srun_controller"] = t_ctl
        out["plugin_ms_controller"] = [float(m.group(3)) for m in summary.finditer(watch.text())]
        write_config(conf_dir, base_conf + "job_source: local\n")

        log("slurmstepd RSS with and without the plugin (srun sleep 3)")
        for name, cluster, user in (("plain", plain, PLAIN_USER), ("with", withp, BENCH_USER)):
            proc = subprocess.Popen(
                ["/usr/sbin/runuser", "-u", user, "--", "/usr/bin/env", "-i",
                 *[f"{k}={v}" for k, v in cluster.user_env(user).items()],
                 "/usr/bin/srun", "-N1", "-n1", "sleep", "3"],
                env=cluster.root_env(), cwd=cluster.work_dir,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                wait_until(lambda: stepd_status(cluster.dir, "0"), 20, "step 0's slurmstepd")
                time.sleep(1.0)
                out[f"stepd_{name}"] = stepd_status(cluster.dir, "0")
                out[f"extern_{name}"] = stepd_status(cluster.dir, "extern")
            finally:
                proc.wait(30)
    finally:
        for c in (withp, plain):
            try:
                c.stop()
            finally:
                if not os.environ.get("BENCH_KEEP"):
                    c.remove_files()
        subprocess.run(["rm", "-rf", str(conf_dir)])
    return out


# ------------------------------------------------------------------ report

def machine_facts() -> dict:
    slurm = subprocess.run(["/usr/sbin/slurmd", "-V"], capture_output=True, text=True).stdout.strip()
    cpu = next((l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text().splitlines()
                if l.startswith("model name")), "?")
    return {"cores": os.cpu_count(), "cpu": cpu, "kernel": platform.release(), "slurm": slurm,
            "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
            "procps": subprocess.run(["/usr/bin/pgrep", "-V"], capture_output=True, text=True).stdout.strip(),
            "psutil": psutil.__version__}


def verdict(ok: bool) -> str:
    return "met" if ok else "**MISSED**"


def write_report(path: Path, facts, scans, sweeps, cluster, reps, sweep_reps, load_before, load_after,
                 elapsed) -> list[str]:
    L = []
    misses = []
    L.append("# leftover benchmarks\n")
    L.append(f"Written by `bench/run` on {facts['date']}. Machine: {facts['cores']} cores ({facts['cpu']}), "
             f"kernel {facts['kernel']}, {facts['slurm']}, {facts['procps']}, psutil {facts['psutil']}. "
             f"Load average (1/5/15 min) before the run: {load_before}; at the end: {load_after} (the end "
             f"figure includes the bench's own bursts of 10,000 forks, each briefly runnable). "
             f"Whole run: {elapsed:.0f} s.\n")
    L.append("Every figure: median (p10–p90) in milliseconds unless stated; ratios are of medians. "
             "See bench/README.md for what each figure measures.\n")

    L.append(f"## 1. Scan + decide ({reps} runs each)\n")
    L.append("Floor: busy node getdents + one fstatat per pid; dirty node getdents + one read of "
             "/proc/<pid>/status per pid. Ratios are of medians; pgrep and psutil ratios say how many times "
             "slower they are than leftover.\n")
    L.append("| node | N | leftover | floor | leftover / floor | pgrep -U | pgrep / leftover | psutil scan | "
             "psutil / leftover | target | |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for shape in ("busy", "dirty"):
        for n in SIZES:
            d = scans[(shape, n)]
            floor = d["floor_stat"] if shape == "busy" else d["floor_status"]
            lo, fl, pg, ps = med(d["leftover"]), med(floor), med(d["pgrep"]), med(d["psutil"])
            if shape == "busy":
                floor_max, pgrep_min, psutil_min = 1.5, 10.0, 10.0
                target = "≤ 1.5× floor, ≥ 10× faster than pgrep and psutil"
            else:
                floor_max, pgrep_min, psutil_min = 2.0, 1.0, 5.0  # pgrep: strictly faster
                target = "≤ 2× floor, faster than pgrep, ≥ 5× faster than psutil"

            def figure(value, limit):  # enough digits to show on which side of the limit it is
                return f"{value:.2f}" if f"{value:.2f}" != f"{limit:.2f}" else f"{value:.3f}"
            # Which part of the target failed, with its figure: the verdict names it.
            parts = ((lo / fl <= floor_max, f"{figure(lo / fl, floor_max)}× floor (max {floor_max:g}×)"),
                     (pg / lo >= pgrep_min if pgrep_min > 1 else pg / lo > 1,
                      f"pgrep only {figure(pg / lo, pgrep_min)}× slower (min {pgrep_min:g}×)"),
                     (ps / lo >= psutil_min, f"psutil only {figure(ps / lo, psutil_min)}× slower (min {psutil_min:g}×)"))
            failed = [text for ok_part, text in parts if not ok_part]
            if failed:
                misses.append(f"scan+decide {shape} N={n}: " + ", ".join(failed))
            L.append(f"| {shape} ({'N root + 10 strays' if shape == 'busy' else 'N strays'}) | {n:,} | "
                     f"{fmt_ms(d['leftover'])} | {fmt_ms(floor)} | {lo / fl:.2f} | {fmt_ms(d['pgrep'])} | "
                     f"{pg / lo:.1f} | {fmt_ms(d['psutil'])} | {ps / lo:.1f} | {target} | "
                     f"{verdict(not failed)}{': ' + ', '.join(failed) if failed else ''} |")
    L.append("")

    L.append("### Where scan + decide spends its time (median of the same number of runs, ms)\n")
    L.append("Each /proc pass alone over the processes that leftover reads in detail (the test user's: 10 on a "
             "busy node, N on a dirty one), then the pieces of leftover's evaluation. `dir+X` opens "
             "/proc/<pid> and reads X through that directory fd, as the scan does.\n")
    keys = list(scans[("dirty", SIZES[-1])]["costs"].keys())
    cols = [(sh, n) for sh in ("busy", "dirty") for n in SIZES]
    L.append("| figure | " + " | ".join(f"{sh} {n:,}" for sh, n in cols) + " |")
    L.append("|---|" + "---:|" * len(cols))
    for k in keys:
        cells = []
        for c in cols:
            v = scans[c]["costs"].get(k)
            cells.append("" if v is None else (f"{v:,}" if isinstance(v, int) else f"{v:.2f}"))
        L.append(f"| {k} | " + " | ".join(cells) + " |")
    L.append("")

    L.append(f"## 2. Full sweep: from start until all N strays have exited ({sweep_reps} runs each)\n")
    L.append("| N | leftover (grace 0) | pkill -KILL -U + wait | killall -9 -u + wait | leftover / pkill | "
             "leftover / killall | ≤ 1.1 × pkill |")
    L.append("|---:|---:|---:|---:|---:|---:|---|")
    for n in SIZES:
        lo = [d["ms"] for d in sweeps[("leftover", n)]]
        pk = [d["ms"] for d in sweeps[("pkill", n)]]
        ka = [d["ms"] for d in sweeps[("killall", n)]]
        ok = med(lo) / med(pk) <= 1.1
        if not ok:
            misses.append(f"full sweep N={n}")
        L.append(f"| {n:,} | {fmt_ms(lo)} | {fmt_ms(pk)} | {fmt_ms(ka)} | {med(lo) / med(pk):.2f} | "
                 f"{med(lo) / med(ka):.2f} | {verdict(ok)} |")
    rounds = sorted({d["rounds"] for n in SIZES for d in sweeps[("leftover", n)]})
    L.append(f"\nSIGKILL rounds per leftover sweep: {', '.join(map(str, rounds))} (a second round when a "
             "process had not finished exiting within the 500 ms settle time and was seen alive by the next scan).\n")

    if cluster:
        L.append("## 3. Cost at step end on the real test cluster, no strays\n")
        pm = cluster["plugin_ms"]
        allv = [v for vs in pm.values() for v in vs]
        sp, sw = cluster["srun_plain"], cluster["srun_with"]
        ok = med(allv) <= 5.0
        if not ok:
            misses.append("step-end cost")
        L.append("| figure | runs | median (p10–p90) | target | |")
        L.append("|---|---:|---:|---|---|")
        L.append(f"| plugin's own time per evaluation, all (summary line) | {len(allv)} | {fmt_ms(allv)} ms | "
                 f"≤ 5 ms median | {verdict(ok)} |")
        for kind in sorted(pm):
            L.append(f"| … at {kind} | {len(pm[kind])} | {fmt_ms(pm[kind])} ms | | |")
        L.append(f"| `srun true` wall, without plugin | {len(sp)} | {fmt_ms(sp)} ms | | |")
        L.append(f"| `srun true` wall, with plugin (job_source local) | {len(sw)} | {fmt_ms(sw)} ms | | |")
        L.append(f"| difference of medians | | {med(sw) - med(sp):+.1f} ms | | |")
        L.append(f"| `srun true` wall, with plugin (job_source controller) | {len(cluster['srun_controller'])} | "
                 f"{fmt_ms(cluster['srun_controller'])} ms | | |")
        L.append(f"| plugin's own time per evaluation, job_source controller | "
                 f"{len(cluster['plugin_ms_controller'])} | {fmt_ms(cluster['plugin_ms_controller'])} ms | | |")
        L.append("")

        L.append(f"## 4. Controller load: slurmctld RPCs (sdiag) over {len(sp)} jobs, PrologFlags=contain\n")
        L.append("| RPC type | no plugin | plugin, job_source local | plugin, job_source controller | "
                 "local − none | controller − none |")
        L.append("|---|---:|---:|---:|---:|---:|")
        rn, rl, rc = cluster["rpc_none"], cluster["rpc_local"], cluster["rpc_controller"]
        for t in RPC_TYPES:
            L.append(f"| {t} | {rn.get(t, 0)} | {rl.get(t, 0)} | {rc.get(t, 0)} | "
                     f"{rl.get(t, 0) - rn.get(t, 0):+d} | {rc.get(t, 0) - rn.get(t, 0):+d} |")
        tot = lambda d: sum(v for k, v in d.items() if k != "REQUEST_STATS_INFO")
        L.append(f"| all types (sdiag's own REQUEST_STATS_INFO left out) | {tot(rn)} | {tot(rl)} | {tot(rc)} | "
                 f"{tot(rl) - tot(rn):+d} | {tot(rc) - tot(rn):+d} |")
        extra_local = sum(rl.get(t, 0) - rn.get(t, 0) for t in RPC_TYPES)
        ok = extra_local == 0
        if not ok:
            misses.append("controller RPCs with job_source local")
        L.append(f"\nTarget: zero controller RPCs per job end with job_source local: {verdict(ok)} "
                 f"({extra_local:+d} job/node info RPCs over {len(sp)} jobs).")
        others = sorted(set(rn) | set(rl) | set(rc))
        L.append("\n<details><summary>every RPC type counted</summary>\n")
        L.append("| type | none | local | controller |")
        L.append("|---|---:|---:|---:|")
        for t in others:
            L.append(f"| {t} | {rn.get(t, 0)} | {rl.get(t, 0)} | {rc.get(t, 0)} |")
        L.append("\n</details>\n")

    L.append("## 5. Memory\n")
    rss10 = [d["maxrss_kb"] for d in sweeps[("leftover", 10000)]]
    base10 = [d["maxrss_before_kb"] for d in sweeps[("leftover", 10000)]]
    ok = max(rss10) < 16 * 1024
    if not ok:
        misses.append("peak RSS of a sweep at N=10,000")
    L.append("| figure | value | target | |")
    L.append("|---|---:|---|---|")
    L.append(f"| peak RSS (VmHWM) of a process running one sweep of 10,000 strays (run_sweep, as the plugin), "
             f"max of {len(rss10)} | {max(rss10) / 1024:.1f} MiB (before the sweep: {med(base10) / 1024:.1f} MiB) | "
             f"< 16 MiB | {verdict(ok)} |")
    for n in SIZES[:-1]:
        r = [d["maxrss_kb"] for d in sweeps[("leftover", n)]]
        L.append(f"| … the same at N = {n:,} | {max(r) / 1024:.1f} MiB | | |")
    scan_hwm = scans[("busy", 10000)]
    L.append(f"| peak RSS of the scan process after {reps + 1} scan + decide on a busy node of 10,000 | "
             f"{scan_hwm['hwm_after_kb'] / 1024:.1f} MiB (before: {scan_hwm['hwm_before_kb'] / 1024:.1f} MiB) | | |")
    if cluster:
        sp_, sw_ = cluster.get("stepd_plain", {}), cluster.get("stepd_with", {})
        ep_, ew_ = cluster.get("extern_plain", {}), cluster.get("extern_with", {})
        if sp_ and sw_:
            L.append(f"| slurmstepd of step 0, VmRSS without / with the plugin loaded | {sp_['VmRSS'] / 1024:.1f} / "
                     f"{sw_['VmRSS'] / 1024:.1f} MiB (added {(sw_['VmRSS'] - sp_['VmRSS']) / 1024:+.1f} MiB) | | |")
        if ep_ and ew_:
            L.append(f"| extern slurmstepd, VmRSS without / with | {ep_['VmRSS'] / 1024:.1f} / "
                     f"{ew_['VmRSS'] / 1024:.1f} MiB (added {(ew_['VmRSS'] - ep_['VmRSS']) / 1024:+.1f} MiB) | | |")
    L.append("")
    if DISTURBANCES:
        L.append("Repeated because processes of the benchmark vanished under it (something else on the "
                 "machine killed them): " + "; ".join(DISTURBANCES) + "\n")
    L.append("## Targets missed\n")
    L.append(("\n".join(f"- {m}" for m in misses) + "\n\nWhy, and what would fix each: the notes below."
              if misses else "None.") + "\n")
    notes = Path(__file__).with_name("notes.md")
    if notes.exists():
        L.append(notes.read_text())
    path.write_text("\n".join(L) + "\n")
    return misses


# Deep chains and a node full of a live job's processes, each in a pid
# namespace of its own (leftover_bench deep/live insist on being pid 1 there), so that
# nothing else on the machine is scanned or swept. 40,000 needs pid_max above 32768.
DEEP_SHAPES = ((10000, 500), (20000, 500), (40000, 500))
LIVE_SIZES = (1000, 10000)


@contextlib.contextmanager
def kernel_limits_for(processes: int, raise_them: bool):
    """With raise_them, kernel.pid_max and kernel.threads-max are raised to leave room
    for `processes` more (plus what the machine runs), and restored afterwards, also on
    an error or ^C. Without it they are left as they are."""
    knobs = {name: Path("/proc/sys/kernel") / name for name in ("pid_max", "threads-max")}
    saved = {name: int(path.read_text()) for name, path in knobs.items()}
    if not raise_them:
        yield saved["pid_max"]
        return
    running = len([p for p in os.listdir("/proc") if p.isdigit()])
    wanted = {"pid_max": max(saved["pid_max"], 2 * (processes + running) + 4096),
              "threads-max": max(saved["threads-max"], 2 * (processes + running) + 4096)}
    try:
        for name, value in wanted.items():
            if value != saved[name]:
                log(f"kernel.{name}: {saved[name]} -> {value} (restored afterwards)")
                knobs[name].write_text(f"{value}\n")
        yield wanted["pid_max"]
    finally:
        for name, value in saved.items():
            if int(knobs[name].read_text()) != value:
                knobs[name].write_text(f"{value}\n")
                log(f"kernel.{name} restored to {value}")


def measure_deep(binary: Path, reps: int, counts: Optional[list[int]] = None,
                 raise_pid_max: bool = False, live: bool = True) -> list[dict]:
    rows = []
    for count, depth in DEEP_SHAPES:
        if counts and count not in counts:
            continue
        with kernel_limits_for(count, raise_pid_max) as pid_max:
            rows.append(measure_one_deep(binary, reps, count, depth, pid_max))
    for count in LIVE_SIZES if live else ():
        log(f"live {count} + {STRAYS_ON_BUSY} strays")
        out = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", str(binary), "live",
                              str(BENCH_UID), str(count), str(reps)],
                             check=True, capture_output=True, text=True, timeout=1800)
        rows.append(json.loads(out.stdout))
    return rows


def measure_one_deep(binary: Path, reps: int, count: int, depth: int, pid_max: int) -> dict:
    if count + 100 > pid_max:
        log(f"deep {count}: skipped, pid_max is {pid_max} (--raise-pid-max raises it)")
        return {"processes": count, "depth": depth, "skipped": f"pid_max {pid_max}"}
    log(f"deep {count} (chain {depth} + fan {count - depth})")
    out = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", str(binary), "deep",
                          str(BENCH_UID), str(count), str(depth), str(reps)],
                         check=False, capture_output=True, text=True, timeout=1800)
    if out.returncode != 0 and not out.stdout.strip():
        sys.exit(f"bench: leftover_bench deep failed: {out.stderr}")
    return json.loads(out.stdout)


def print_deep(rows: list[dict]) -> None:
    """The figures of measure_deep as a markdown table (medians, ms)."""
    print("| case | evaluation | floor (getdents+fstatat) | floor (status) | sweep | kill(-1) as the user "
          "| pkill -KILL -U | target |")
    print("|---|---|---|---|---|---|---|---|")

    def kill_floor(r: dict, name: str) -> str:
        if f"{name}_ms" not in r:
            return ""
        return f"{r[name + '_ms']:.0f} ms" + ("" if r[name + "_gone"] else " (not all gone)")

    for r in rows:
        if "skipped" in r:
            print(f"| {r['processes']:,} deep | skipped: {r['skipped']} | | | | | | |")
            continue
        ev, fl = med(r["evaluation"]), med(r["floor_stat"])
        if "depth" in r:
            err = f" (error: {r['evaluation_error']})" if r["evaluation_error"] else ""
            sweep = f"{r['sweep_ms']:.0f} ms, {r['rounds']} round(s), all gone: {r['all_gone']}"
            if r["sweep_error"]:
                sweep += f" (error: {r['sweep_error']})"
            # The promise: done inside the deadline, or stopped at it (saying what was left)
            # no more than 100 ms past it.
            past = r.get("past_deadline_ms", r["sweep_returned_ms"] - 3000)
            sweep += f", returned at {r['sweep_returned_ms']:.0f} ms ({past:+.0f} ms against the deadline)"
            print(f"| {r['processes']:,}: chain {r['depth']} + fan | {ev:.1f} ms{err} | {fl:.1f} ms | "
                  f"{med(r['floor_status']):.1f} ms | {sweep} | {kill_floor(r, 'kill_all')} | "
                  f"{kill_floor(r, 'pkill')} | inside 3 s, or stopped at most 100 ms past it: "
                  f"{verdict(past <= 100)} |")
        else:
            limit = 1.5 * fl + 1.0
            print(f"| {r['processes']:,} of a live user + {r['strays']} strays | {ev:.1f} ms | {fl:.1f} ms | | | | | "
                  f"<= {limit:.1f} ms: {verdict(ev <= limit)} |")
    for r in rows:
        if "log" in r:
            print(f"\n{r['processes']:,} deep, the sweep's log (ms since it started; "
                  f"{r['evaluations']} evaluations, open files limit {r['nofile']}):")
            for word, kind in r["log"]["actions"].items():
                print(f"  {word}: {kind['count']} lines, {kind['first_ms']:.0f} .. {kind['last_ms']:.0f}")
            for at, text in r["log"]["lines"]:
                print(f"  {at:8.1f}  {text}")


def main() -> int:
    global BENCH_USER, BENCH_UID, PLAIN_USER, PLAIN_UID
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", type=Path, required=True)
    ap.add_argument("--plugin", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=TOP / "bench" / "results.md")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--sweep-reps", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=20)
    ap.add_argument("--skip-cluster", action="store_true")
    ap.add_argument("--render-only", action="store_true", help="rewrite --out from its .json, measure nothing")
    ap.add_argument("--deep-only", action="store_true",
                    help="measure only the deep-chain and live-job cases, print them, write nothing")
    ap.add_argument("--deep-count", type=int, action="append",
                    help="with --deep-only: only this many processes (10000, 20000, 40000; repeatable), "
                         "and no live-job case")
    ap.add_argument("--raise-pid-max", action="store_true",
                    help="with --deep-only: raise kernel.pid_max and kernel.threads-max for a case that "
                         "needs it (40,000 needs more than 32,768), restoring them afterwards")
    ap.add_argument("--cleanup-only", action="store_true",
                    help="measure only removing 10,000 files of one user, leftover's cleanup against "
                         "find -user U -delete, print it, write nothing")
    ap.add_argument("--burst", action="store_true",
                    help="measure only the busy-node cases (bench/burst.py): many job ends at once on one node, "
                         "quiet and under load, and on 16 nodes; print them and write bench/burst-results.md")
    ap.add_argument("--burst-one-node", action="store_true", help="with --burst: the one-node cases only")
    ap.add_argument("--stray-uid", type=int, default=BENCH_UID,
                    help="uid of the strays' account lo_bench<uid> (created if missing, and uid+1 for the "
                         "cluster without plugin); the default, above 60000, keeps them out of reach of other "
                         "leftover test clusters (default uid_max) on this machine")
    args = ap.parse_args()
    if args.stray_uid != BENCH_UID:
        BENCH_UID, BENCH_USER = args.stray_uid, f"lo_bench{args.stray_uid}"
        PLAIN_UID, PLAIN_USER = args.stray_uid + 1, f"lo_bench{args.stray_uid + 1}"
    if BENCH_UID < 1000 or BENCH_UID + 1 >= 64000:
        sys.exit("bench: --stray-uid must be from 1000 to 63998 (Debian's slurm account is 64030)")
    if os.geteuid() != 0:
        sys.exit("bench: run as root (it creates processes of a test user and starts Slurm daemons)")
    if args.render_only:
        # Re-writes results.md from results.json (e.g. after editing bench/notes.md).
        raw = json.loads(args.out.with_suffix(".json").read_text())
        key = lambda k: (k.split()[0], int(k.split()[1]))
        meta = raw["meta"]
        DISTURBANCES.extend(meta["disturbances"])
        write_report(args.out, raw["facts"], {key(k): v for k, v in raw["scans"].items()},
                     {key(k): v for k, v in raw["sweeps"].items()}, raw["cluster"], meta["reps"],
                     meta["sweep_reps"], meta["load_before"], meta["load_after"], meta["elapsed"])
        return 0
    if args.cleanup_only:
        binary = args.binary.with_name("leftover_cleanup_bench")
        print(subprocess.run([str(binary), str(BENCH_UID), "10000", str(args.reps)], check=True,
                             capture_output=True, text=True, timeout=1800).stdout, end="")
        return 0
    if args.burst:
        import burst  # bench/, beside this file
        ensure_bench_users()
        os.environ["LEFTOVER_PLUGIN"] = str(args.plugin)
        load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
        started = time.monotonic()
        results = burst.measure(args.plugin, ((BENCH_USER, BENCH_UID), (PLAIN_USER, PLAIN_UID)), log,
                                sixteen=not args.burst_one_node)
        text = (f"# leftover busy-node benchmark\n\nWritten by `bench/run --burst` on "
                f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC in "
                f"{time.monotonic() - started:.0f} s. Machine: {os.cpu_count()} cores, slurm-wlm "
                f"{machine_facts().get('slurm', '?')}. Load average before: {load}, after: "
                + " / ".join(f"{x:.2f}" for x in os.getloadavg()) + ".\n\n" + burst.report(results))
        print(text, end="")
        args.out.with_name("burst-results.md").write_text(text)
        return 0
    if args.deep_only:
        load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
        rows = measure_deep(args.binary, args.reps, args.deep_count, args.raise_pid_max,
                            live=not args.deep_count)
        print(f"load average before: {load}, after: " + " / ".join(f"{x:.2f}" for x in os.getloadavg()))
        print_deep(rows)
        print(json.dumps(rows))
        return 0
    started = time.monotonic()
    load_before = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    ensure_bench_users()
    facts = machine_facts()
    scans = measure_scans(args.binary, args.reps)
    sweeps = measure_sweeps(args.binary, args.sweep_reps)
    cluster = None if args.skip_cluster else measure_cluster(args.plugin, args.jobs)
    load_after = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    raw = args.out.with_suffix(".json")
    elapsed = time.monotonic() - started
    raw.write_text(json.dumps({"facts": facts, "scans": {f"{k[0]} {k[1]}": v for k, v in scans.items()},
                               "sweeps": {f"{k[0]} {k[1]}": v for k, v in sweeps.items()},
                               "cluster": cluster,
                               "meta": {"reps": args.reps, "sweep_reps": args.sweep_reps,
                                        "load_before": load_before, "load_after": load_after,
                                        "elapsed": elapsed, "disturbances": DISTURBANCES,
                                        "stray_uid": BENCH_UID}}, indent=1))
    misses = write_report(args.out, facts, scans, sweeps, cluster, args.reps, args.sweep_reps,
                          load_before, load_after, elapsed)
    log(f"wrote {args.out} ({time.monotonic() - started:.0f} s); targets missed: {misses or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
