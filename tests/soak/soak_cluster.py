# SPDX-License-Identifier: GPL-2.0-or-later
"""The soak's cluster: the e2e harness's three namespaced nodes (tests/harness), in one of
four configurations, with leftover.so, the soak's users and a per-node /dev/shm and
scratch directory (so that what one node removes is that node's own, as on real nodes).
"""

from __future__ import annotations

import dataclasses
import fcntl
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

from harness.e2e_accounts import TEST_UID_MAX, TEST_UID_MIN, TEST_USERS, Account, ensure_test_users
from harness.e2e_processes import HarnessError
from harness.slurm_cluster import SlurmCluster, reap_stale_clusters
from harness.slurm_config import ClusterConfig

NODES = ("lo-n1", "lo-n2", "lo-n3")
TOP = Path(__file__).resolve().parents[2]
PLUGIN = Path(os.environ.get("LEFTOVER_PLUGIN", TOP / "build/release/spank/leftover.so"))

# Who the workload runs as, and why each is (not) protected: the e2e harness's shared test
# accounts (41001-41099, which every test cluster's plugin sweeps: a run holds
# /tmp/leftover-e2e.lock), or a block of the soak's own (uid_base), which no other test's
# sweep reaches and whose leftover.conf reaches nothing else.
@dataclasses.dataclass(frozen=True)
class SoakUsers:
    accounts: tuple[Account, ...]
    ordinary: tuple[str, ...]
    protected: dict[str, str]   # name: why leftover must never touch it
    listed: str                 # protected by its name in protected_users
    alias_of: str               # protected through a second name for its uid, listed
    alias: str
    low: str                    # below uid_min
    high: str                   # above uid_max; also owns the setuid program
    uid_min: int
    uid_max: int
    uid_base: Optional[int] = None   # None: the shared accounts

    @property
    def everyone(self) -> tuple[str, ...]:
        return self.ordinary + tuple(self.protected)

    def uid_of(self, user: str) -> int:
        return next(a.uid for a in self.accounts if a.name == user)

    def protected_uids(self) -> dict[int, str]:
        return {self.uid_of(user): why for user, why in self.protected.items()}

    @property
    def tag(self) -> str:
        """For file names that concurrent runs must not share."""
        return "" if self.uid_base is None else f"-u{self.uid_base}"


def _users(accounts, ordinary, listed, alias_of, alias, low, high, uid_min, uid_max, base=None) -> SoakUsers:
    protected = {
        listed: "listed in protected_users",
        alias_of: f"listed in protected_users through the alias {alias}",
        low: "uid below uid_min",
        high: "uid above uid_max",
    }
    return SoakUsers(tuple(accounts), tuple(ordinary), protected, listed, alias_of, alias, low, high,
                     uid_min, uid_max, base)


def shared_users() -> SoakUsers:
    return _users(TEST_USERS, ("lo_alice", "lo_bob", "je.kim", "jeXkim"), "alice", "bobby", "lo_soak_alias",
                  "lo_low", "lo_high", TEST_UID_MIN, TEST_UID_MAX)


# A block is uid_base..uid_base+99: uid_min..uid_max is uid_base+1..uid_base+98, its low
# and high users sit at either end, so blocks at multiples of 100 never meet each other,
# the shared test uids (41001-41099) or the shared accounts outside them (900, 61000).
# Above every uid the unit and e2e tests use (41001-45000), so a soak never meets them.
BLOCK_BASES = range(46000, 60000, 100)


def block_users(base: int) -> SoakUsers:
    if base not in BLOCK_BASES:
        raise HarnessError(f"uid base {base}: expected a multiple of 100 from {BLOCK_BASES.start} "
                           f"to {BLOCK_BASES.stop - 100}")
    p = f"lo{base // 100}"
    names = (f"{p}_low", f"{p}_ann", f"{p}_bob", f"{p}.kim", f"{p}Xkim", f"{p}_prot", f"{p}_bobby")
    accounts = [Account(name, base + i) for i, name in enumerate(names)] + [Account(f"{p}_high", base + 99)]
    # {p}.kim and {p}Xkim: a dot in a name, and the name it would match were it a regex.
    return _users(accounts, names[1:5], names[5], names[6], f"{p}_alias", names[0], f"{p}_high",
                  base + 1, base + 98, base)


def soak_users(base: Optional[int]) -> SoakUsers:
    return shared_users() if base is None else block_users(base)


def ensure_users(users: SoakUsers) -> None:
    """Creates the accounts and the alias if missing (under a lock: useradd refuses to run
    while another holds /etc/passwd, and concurrent soaks may create their blocks at once)."""
    with open("/tmp/leftover-soak-users.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for account in users.accounts:
            try:
                taken = pwd.getpwuid(account.uid).pw_name
            except KeyError:
                continue
            if taken != account.name and users.uid_base is not None:
                raise HarnessError(f"uid {account.uid} of the soak's block {users.uid_base} belongs to {taken}, "
                                   f"expected {account.name}: choose another --uid-base")
        ensure_test_users(users.accounts)
        uid = users.uid_of(users.alias_of)
        try:
            if pwd.getpwnam(users.alias).pw_uid != uid:
                raise HarnessError(f"{users.alias} exists with another uid than {users.alias_of}'s")
        except KeyError:
            # -o: a second name for an existing uid; getpwuid still answers the first name.
            subprocess.run(["useradd", "--badname", "-o", "-u", str(uid), "-g", str(uid), "-M",
                            "-d", "/tmp", "-s", "/bin/sh", users.alias], check=True, capture_output=True)


# CPUs each test node advertises: a burst's arrays (workload.py, 10 to 12 tasks in all) run
# at once beside the other actions' jobs.
BURST_CPUS = 32
GRACE = 2.0
SLURM_TIMEOUT = 2.0
# leftover's own deadline per evaluation (README: grace + slurm_timeout + 1 s).
DEADLINE = GRACE + SLURM_TIMEOUT + 1.0

CGROUP = ("ProctrackType=proctrack/cgroup", "TaskPlugin=task/cgroup")
# Heterogeneous jobs start only in the backfill scheduler's passes (every second here);
# other jobs still start at once, from the main scheduler.
SCHEDULER = ("SchedulerType=sched/backfill", "SchedulerParameters=batch_sched_delay=0,bf_interval=1")
# The oracle takes each allocation's start from slurmctld's log. From 26.05 the backfill
# scheduler logs the jobs it starts (every heterogeneous job, array tasks, jobs that waited)
# only under the HetJob debug flag, at verbose: without it those jobs hold nothing to the
# oracle (seed 31, 30 min: 386 of 1664 jobs).
CTLD_LOG = ("DebugFlags=HetJob",)
CTLD_DEBUG = "verbose"
CGROUP_CONF = "CgroupPlugin=cgroup/v1\nConstrainCores=no\nConstrainRAMSpace=no\n"


@dataclasses.dataclass(frozen=True)
class SoakConfig:
    name: str
    contain: bool
    cgroup: bool
    scope: str = "node"         # leftover.conf's scope: node, or job_user (the ending job's user only)
    job_source: str = "local"   # leftover.conf's job_source: local, or controller (slurmctld asked every time)


CONFIGS = {c.name: c for c in (
    SoakConfig("linuxproc", False, False),
    SoakConfig("linuxproc-contain", True, False),
    SoakConfig("cgroup", False, True),
    SoakConfig("cgroup-contain", True, True),
    SoakConfig("linuxproc-job_user", False, False, scope="job_user"),
    SoakConfig("linuxproc-controller", False, False, job_source="controller"),
)}

# Links to /bin/sleep: the kernel names a process after the file it executed, so the
# comm in leftover's log lines says what a process was to the workload.
PROGRAMS = ("soak-body", "soak-stray", "soak-stray-ti", "soak-login", "soak-login-ti", "soak-hop")
# A copy of /bin/sleep, setuid to the soak's high user (an unprivileged account outside the
# swept range): a process that executes it has mixed uids, which leftover must never kill.
SETUID_PROGRAM = "soak-setuid"
# The size of the SysV segments the workload makes (soak-job's ipcmk): how the soak finds
# what is left of them when it stops (the nodes share the host's IPC namespace).
SYSV_BYTES = 4099
BODY_COMMS = frozenset({"soak-body", "soak-job", "slurm_script"})
# Links to /bin/sleep under daemons' names (soakbin/fake/): strays that look like Slurm's
# or sshd's processes by their comm.
FAKE_NAMES = ("slurmstepd", "sshd")

# The cluster's Prolog (soak_cluster.py): makes a scratch directory and a /dev/shm file for
# its job, as the job's user, and takes PROLOG_SLOW seconds when its job's marker (the job id) is
# in prolog-slow/ (the prolog action); every run is a line of prolog.log.
PROLOG_SLOW = 5.0
SOAK_PROLOG = r'''#!/bin/sh
bin=$(dirname "$0")
start=$(date +%s.%N)
gid=$(id -g "$SLURM_JOB_USER")
as_user() { /usr/bin/setpriv --reuid="$SLURM_JOB_UID" --regid="$gid" --clear-groups "$@"; }
as_user mkdir -p "SCRATCH/job-$SLURM_JOB_ID"
as_user sh -c "echo $SLURM_JOB_ID > SCRATCH/job-$SLURM_JOB_ID/prolog"
as_user sh -c "echo $SLURM_JOB_ID > /dev/shm/soak-prolog-$SLURM_JOB_ID"
slow=0
if [ -e "$bin/prolog-slow/$SLURM_JOB_ID" ]; then slow=1; sleep SLOW; fi
echo "$SLURM_JOB_ID $SLURM_JOB_USER ${SLURMD_NODENAME:-?} $start $(date +%s.%N) $slow" >> "$bin/prolog.log"
exit 0
'''





# Positive controls: leftover configured against what the oracle believes, so that the
# named invariant must report violations (the oracle can fail).
CONTROLS = {
    "wrong-kill": 1,   # protected_users left out: the listed and the aliased user's strays get killed
    "stray-left": 2,   # dry_run: nothing is killed
    # the harness kills a job's process (no violation), then a fake leftover (named
    # slurmstepd, signalling through a pidfd) another, and logs nothing: the log lies
    "lie": 6,
}


def leftover_conf(users: SoakUsers, scratch: Path, config: SoakConfig, control: Optional[str] = None) -> str:
    listed = "" if control == "wrong-kill" else f"{users.listed}, {users.alias}"
    return (f"debuglevel: debug\ngrace: {GRACE:g}\nslurm_timeout: {SLURM_TIMEOUT:g}\n"
            f"scope: {config.scope}\njob_source: {config.job_source}\n"
            f"protected_users: [{listed}]\n" + ("dry_run: true\n" if control == "stray-left" else "") +
            f"cleanup: [ipc, posix_shm, files]\ncleanup_dirs: [{scratch}]\n"
            f"uid_min: {users.uid_min}\nuid_max: {users.uid_max}\n"
            # The cluster's slurmctld runs on this host: sweep it all the same.
            "sweep_on_controller_host: true\n")


def write_root_file(path: Path, text: str, mode: int = 0o644) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.chmod(mode)
    tmp.replace(path)


class SoakCluster:
    """A started cluster plus where the soak keeps its files."""

    def __init__(self, config: SoakConfig, users: SoakUsers, control: Optional[str] = None):
        if not PLUGIN.exists():
            raise HarnessError(f"{PLUGIN} not built (set LEFTOVER_PLUGIN)")
        if config.cgroup and not Path("/sys/fs/cgroup/freezer").is_dir():
            raise HarnessError("proctrack/cgroup needs the cgroup v1 freezer hierarchy")
        self.config, self.users, self.control = config, users, control
        self.conf_dir = Path(tempfile.mkdtemp(prefix="leftover-soak-conf-"))
        self.conf_dir.chmod(0o755)
        self.conf_path = self.conf_dir / "leftover.conf"
        cluster_config = ClusterConfig(
            nodes=NODES, node_namespaces=True, prolog_flags="contain" if config.contain else None,
            cpus=BURST_CPUS,
            plugstack=f"optional {PLUGIN} config={self.conf_path}\n",
            node_private_dirs=("/dev/shm", "scratch"),
            extra_conf=SCHEDULER + CTLD_LOG + (CGROUP if config.cgroup else ()), slurmctld_debug=CTLD_DEBUG,
            extra_files={"cgroup.conf": CGROUP_CONF} if config.cgroup else {})
        self.cluster = SlurmCluster(cluster_config)
        self.scratch = self.cluster.dir / "scratch"
        self.bin = self.cluster.dir / "soakbin"
        # The Prolog (SOAK_PROLOG), in the cluster's directory: slurm.conf is written at its start.
        self.cluster.config.extra_conf += (f"Prolog={self.bin / 'soak-prolog'}",)
        self.reg = self.cluster.work_dir

    def start(self) -> "SoakCluster":
        reap_stale_clusters()
        ensure_users(self.users)
        write_root_file(self.conf_path, leftover_conf(self.users, self.scratch, self.config, self.control))
        self.bin.mkdir()
        for name in PROGRAMS:
            (self.bin / name).symlink_to("/bin/sleep")
        (self.bin / "fake").mkdir()
        for name in FAKE_NAMES:
            (self.bin / "fake" / name).symlink_to("/bin/sleep")
        (self.bin / "fake").chmod(0o755)
        (self.bin / "prolog-slow").mkdir()
        (self.bin / "prolog-slow").chmod(0o755)
        (self.bin / "prolog.log").touch()
        (self.bin / "soak-prolog").write_text(SOAK_PROLOG.replace("SCRATCH", str(self.scratch))
                                              .replace("SLOW", f"{PROLOG_SLOW:g}"))
        (self.bin / "soak-prolog").chmod(0o755)
        self.bin.chmod(0o755)
        self.setuid_skipped = self._make_setuid_program()
        self.cluster.start()
        return self

    def _make_setuid_program(self) -> Optional[str]:
        """Installs soak-setuid; returns why setuid strays are skipped, or None."""
        owner = pwd.getpwnam(self.users.high)
        made = []
        for name, source in ((SETUID_PROGRAM, "/bin/sleep"), ("soak-setuid-id", "/usr/bin/id")):
            path = self.bin / name
            shutil.copyfile(source, path)
            os.chown(path, owner.pw_uid, owner.pw_gid)
            path.chmod(0o4755)   # after chown, which clears the bit
            made.append(path)
        probe = subprocess.run(["/usr/sbin/runuser", "-u", self.users.ordinary[0], "--", str(made[1]), "-u"],
                               capture_output=True, text=True)
        made[1].unlink()
        if probe.returncode == 0 and probe.stdout.strip() == str(owner.pw_uid):
            return None
        made[0].chmod(0o755)   # soak-job plants no setuid stray then
        return (f"the setuid bit has no effect in {self.bin} (id -u said {probe.stdout.strip() or probe.stderr.strip()!r}, "
                f"expected {owner.pw_uid})")

    def remove_sysv_segments(self) -> int:
        """Removes the SysV objects the workload made that are left (protected users' ones,
        those nobody swept): segments by their creator's uid and their size, semaphore sets
        and message queues by their creator's uid."""
        uids = {self.users.uid_of(user) for user in self.users.everyone}
        removed = 0
        for kind, flag, key in (("shm", "-m", "shmid"), ("sem", "-s", "semid"), ("msg", "-q", "msqid")):
            lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
            header = lines[0].split()
            for line in lines[1:]:
                row = dict(zip(header, line.split()))
                if int(row["cuid"]) not in uids:
                    continue
                if kind == "shm" and (int(row["size"]) != SYSV_BYTES or row["nattch"] != "0"):
                    continue
                if subprocess.run(["ipcrm", flag, row[key]], capture_output=True).returncode == 0:
                    removed += 1
        return removed

    def stop(self, keep_files: bool = False) -> None:
        self.cluster.stop()
        self.remove_sysv_segments()
        if not keep_files:
            self.cluster.remove_files()
        if self.conf_dir.exists():
            for path in self.conf_dir.iterdir():
                path.unlink()
            self.conf_dir.rmdir()
