#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The leftover demo: a throwaway one-node Slurm cluster on this machine with
leftover.so loaded. An ordinary user's batch job and a protected user's batch job
each leave a daemon behind; when the jobs end, the ordinary user's stray is reaped
and the protected user's is spared. Run it through demo/run (as root), which puts tests/
(the harness package) on PYTHONPATH."""

import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from harness.e2e_accounts import ensure_test_users
from harness.e2e_processes import is_alive, wait_until
from harness.plugin_support import daemon_fragment, plugin_config, read_pid, write_leftover_conf
from harness.slurm_cluster import SlurmCluster

ORDINARY, PROTECTED = "lo_alice", "je.kim"


def banner(text: str) -> None:
    print(f"\n=== {text}")


def process_table(pids: list[int]) -> None:
    listed = [str(p) for p in pids if is_alive(p)]  # a reaped stray may linger as a zombie
    if not listed:
        print("(none of the daemons is running)")
        return
    out = subprocess.run(["ps", "-o", "user:10,pid,ppid,stat,etime,args", "-p", ",".join(listed)],
                         capture_output=True, text=True)
    print(out.stdout.rstrip())
    print(f"({len(listed)} of {len(pids)} daemons running)")


def main() -> int:
    ensure_test_users()
    conf_dir = Path(tempfile.mkdtemp(prefix="leftover-demo-conf-"))
    # Only the test accounts' uids: the demo never touches anyone else on this machine.
    conf = write_leftover_conf(conf_dir, f"# demo config\nprotected_users: [{PROTECTED}]\ngrace: 2\n"
                               "# slurmctld runs on this same host: sweep it all the same\n"
                               "sweep_on_controller_host: true\n")
    cluster = SlurmCluster(plugin_config(conf_dir)).start()
    try:
        banner(f"leftover config {conf}")
        print(conf.read_text().rstrip())
        log_start = len(cluster.slurmd_log_text())

        banner("two batch jobs, each starting a daemon (setsid, double fork) that outlives it")
        jobs, daemons, releases = [], [], []
        for user in (ORDINARY, PROTECTED):
            tag = uuid.uuid4().hex[:8]
            pidfile, release = cluster.work_dir / f"daemon-{tag}", cluster.work_dir / f"release-{tag}"
            script = "#!/bin/sh\n" + daemon_fragment(pidfile) + f"while [ ! -e {release} ]; do sleep 0.1; done\n"
            jobs.append(cluster.sbatch(user, script))
            daemons.append(read_pid(pidfile))
            releases.append(release)
            print(f"job {jobs[-1]} of {user}: daemon pid {daemons[-1]}")

        banner("process table while the jobs run")
        process_table(daemons)

        banner("the jobs end")
        for release in releases:
            release.touch()
        for job in jobs:
            print(f"job {job}: {cluster.wait_job_done(job).state}")
        wait_until(lambda: not cluster.is_alive(daemons[0]), 20, "the stray to be reaped")

        banner("process table after the jobs ended")
        process_table(daemons)

        banner("leftover's lines in slurmd's log")
        for line in cluster.slurmd_log_text()[log_start:].splitlines():
            if "leftover: " in line and "debug:" not in line:
                print(line)

        ok = not cluster.is_alive(daemons[0]) and cluster.is_alive(daemons[1])
        banner(f"{ORDINARY}'s stray reaped, {PROTECTED}'s spared: " + ("yes" if ok else "NO"))
        return 0 if ok else 1
    finally:
        for pid in daemons if "daemons" in locals() else []:
            subprocess.run(["kill", "-9", str(pid)], capture_output=True)
        cluster.stop()
        cluster.remove_files()


if __name__ == "__main__":
    sys.exit(main())
