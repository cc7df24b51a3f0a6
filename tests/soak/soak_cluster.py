# SPDX-License-Identifier: GPL-2.0-or-later
"""The soak's cluster: the e2e harness's three namespaced nodes (tests/e2e), in one of
four configurations, with leftover.so, the soak's users and a per-node /dev/shm and
scratch directory (so that what one node removes is that node's own, as on real nodes).
"""

from __future__ import annotations

import dataclasses
import os
import pwd
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

E2E = Path(__file__).resolve().parents[1] / "e2e"
sys.path.insert(0, str(E2E))

from e2e_accounts import USERS, ensure_test_users  # noqa: E402
from e2e_processes import HarnessError  # noqa: E402
from slurm_cluster import SlurmCluster, reap_stale_clusters  # noqa: E402
from slurm_config import ClusterConfig  # noqa: E402

NODES = ("lo-n1", "lo-n2", "lo-n3")
TOP = Path(__file__).resolve().parents[2]
PLUGIN = Path(os.environ.get("LEFTOVER_PLUGIN", TOP / "build/release/spank/leftover.so"))

# A second passwd entry for bobby's uid: leftover must protect the uid by either name.
ALIAS = "lo_soak_alias"
ALIAS_OF = "bobby"

# Who the workload runs as, and why each is (not) protected.
ORDINARY = ("lo_alice", "lo_bob", "je.kim", "jeXkim")
PROTECTED = {
    "alice": "listed in protected_users",
    ALIAS_OF: f"listed in protected_users through the alias {ALIAS}",
    "lo_low": "uid below uid_min",
    "lo_high": "uid above uid_max",
}
USERS_IN_SOAK = ORDINARY + tuple(PROTECTED)
UID_MIN, UID_MAX = 41001, 41099

GRACE = 2.0
SLURM_TIMEOUT = 2.0
# leftover's own deadline per evaluation (README: grace + slurm_timeout + 1 s).
DEADLINE = GRACE + SLURM_TIMEOUT + 1.0

CGROUP = ("ProctrackType=proctrack/cgroup", "TaskPlugin=task/cgroup")
CGROUP_CONF = "CgroupPlugin=cgroup/v1\nConstrainCores=no\nConstrainRAMSpace=no\n"


@dataclasses.dataclass(frozen=True)
class SoakConfig:
    name: str
    contain: bool
    cgroup: bool


CONFIGS = {c.name: c for c in (
    SoakConfig("linuxproc", False, False),
    SoakConfig("linuxproc-contain", True, False),
    SoakConfig("cgroup", False, True),
    SoakConfig("cgroup-contain", True, True),
)}

# Links to /bin/sleep: the kernel names a process after the file it executed, so the
# comm in leftover's log lines says what a process was to the workload.
PROGRAMS = ("soak-body", "soak-stray", "soak-stray-ti", "soak-login", "soak-login-ti")
BODY_COMMS = frozenset({"soak-body", "soak-job", "slurm_script"})


def uid_of(user: str) -> int:
    return USERS[user].uid


def protected_uids() -> dict[int, str]:
    return {uid_of(user): why for user, why in PROTECTED.items()}


def ensure_users() -> None:
    ensure_test_users()
    try:
        if pwd.getpwnam(ALIAS).pw_uid != uid_of(ALIAS_OF):
            raise HarnessError(f"{ALIAS} exists with another uid than {ALIAS_OF}'s")
    except KeyError:
        uid = uid_of(ALIAS_OF)
        # -o: a second name for an existing uid; getpwuid still answers the first name.
        subprocess.run(["useradd", "--badname", "-o", "-u", str(uid), "-g", str(uid), "-M",
                        "-d", "/tmp", "-s", "/bin/sh", ALIAS], check=True, capture_output=True)


# Positive controls: leftover configured against what the oracle believes, so that the
# named invariant must report violations (the oracle can fail).
CONTROLS = {
    "wrong-kill": 1,   # protected_users left out: alice's and bobby's strays get killed
    "stray-left": 2,   # dry_run: nothing is killed
}


def leftover_conf(scratch: Path, control: Optional[str] = None) -> str:
    listed = "" if control == "wrong-kill" else f"alice, {ALIAS}"
    return (f"debuglevel: debug\ngrace: {GRACE:g}\nslurm_timeout: {SLURM_TIMEOUT:g}\n"
            f"protected_users: [{listed}]\n" + ("dry_run: true\n" if control == "stray-left" else "") +
            f"cleanup: [posix_shm, files]\ncleanup_dirs: [{scratch}]\n"
            f"uid_min: {UID_MIN}\nuid_max: {UID_MAX}\n"
            # The cluster's slurmctld runs on this host: sweep it all the same.
            "sweep_on_controller_host: true\n")


def write_root_file(path: Path, text: str, mode: int = 0o644) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.chmod(mode)
    tmp.replace(path)


class SoakCluster:
    """A started cluster plus where the soak keeps its files."""

    def __init__(self, config: SoakConfig, control: Optional[str] = None):
        if not PLUGIN.exists():
            raise HarnessError(f"{PLUGIN} not built (set LEFTOVER_PLUGIN)")
        if config.cgroup and not Path("/sys/fs/cgroup/freezer").is_dir():
            raise HarnessError("proctrack/cgroup needs the cgroup v1 freezer hierarchy")
        self.config, self.control = config, control
        self.conf_dir = Path(tempfile.mkdtemp(prefix="leftover-soak-conf-"))
        self.conf_dir.chmod(0o755)
        self.conf_path = self.conf_dir / "leftover.conf"
        cluster_config = ClusterConfig(
            nodes=NODES, node_namespaces=True, prolog_flags="contain" if config.contain else None,
            plugstack=f"optional {PLUGIN} config={self.conf_path}\n",
            node_private_dirs=("/dev/shm", "scratch"),
            extra_conf=CGROUP if config.cgroup else (),
            extra_files={"cgroup.conf": CGROUP_CONF} if config.cgroup else {})
        self.cluster = SlurmCluster(cluster_config)
        self.scratch = self.cluster.dir / "scratch"
        self.bin = self.cluster.dir / "soakbin"
        self.reg = self.cluster.work_dir

    def start(self) -> "SoakCluster":
        reap_stale_clusters()
        ensure_users()
        write_root_file(self.conf_path, leftover_conf(self.scratch, self.control))
        self.bin.mkdir()
        for name in PROGRAMS:
            (self.bin / name).symlink_to("/bin/sleep")
        self.bin.chmod(0o755)
        self.cluster.start()
        return self

    def stop(self, keep_files: bool = False) -> None:
        self.cluster.stop()
        if not keep_files:
            self.cluster.remove_files()
        if self.conf_dir.exists():
            for path in self.conf_dir.iterdir():
                path.unlink()
            self.conf_dir.rmdir()
