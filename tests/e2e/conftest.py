"""Fixtures for the real-Slurm end-to-end tests.

`make_cluster(config)` starts a cluster that lives until the end of the
test module (one node, or with ClusterConfig(nodes=..., node_namespaces=True)
several nodes, each in its own namespaces); `cluster` is the default one (no SPANK plugin).  Clusters are
stopped by fixture finalizers even when tests fail, processes planted by a
test are killed after that test, and a failing test gets the tails of the
daemon logs attached to its report.
"""

import atexit
import os

import pytest

from harness.e2e_accounts import USERS, ensure_test_users
from harness.slurm_cluster import SlurmCluster, reap_stale_clusters
from harness.slurm_config import ClusterConfig

# Every cluster not yet stopped, so per-test cleanup and failure reports
# can reach clusters from any fixture scope.
_LIVE: list[SlurmCluster] = []

# Set LEFTOVER_E2E_KEEP=1 to keep each cluster's directory (logs, conf).
_KEEP_FILES = os.environ.get("LEFTOVER_E2E_KEEP") == "1"


def _require_environment() -> None:
    if os.geteuid() != 0:
        pytest.skip("e2e tests start slurmd/slurmctld and need root")
    for tool in ("/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged",
                 "/usr/bin/srun"):
        if not os.access(tool, os.X_OK):
            pytest.skip(f"{tool} missing (apt-get install slurmctld slurmd "
                        "slurm-client munge)")


@pytest.fixture(scope="session")
def test_users():
    """The test accounts (created if missing), by name."""
    _require_environment()
    reap_stale_clusters()  # left by an earlier run that was killed
    ensure_test_users()
    return USERS


def _shutdown(cluster: SlurmCluster) -> None:
    if cluster in _LIVE:
        _LIVE.remove(cluster)
    cluster.stop()
    if not _KEEP_FILES:
        cluster.remove_files()


@pytest.fixture(scope="module")
def make_cluster(test_users):
    """Factory: make_cluster(ClusterConfig(...)) -> started SlurmCluster."""
    mine: list[SlurmCluster] = []

    def make(config: ClusterConfig = None) -> SlurmCluster:
        cluster = SlurmCluster(config)
        # Registered before start() so a half-started cluster is cleaned too;
        # atexit covers a pytest that dies before running finalizers.
        mine.append(cluster)
        _LIVE.append(cluster)
        atexit.register(cluster.stop)
        return cluster.start()

    yield make
    for cluster in mine:
        _shutdown(cluster)


@pytest.fixture(scope="module")
def cluster(make_cluster):
    """A default cluster: one node "lo-n1", empty plugstack, no PrologFlags."""
    return make_cluster()


@pytest.fixture(autouse=True)
def _kill_planted_processes():
    """Strays planted by a test must not outlive it, pass or fail."""
    yield
    for cluster in list(_LIVE):
        cluster.kill_planted()


def _tail(text: str, lines: int = 60) -> str:
    return "\n".join(text.splitlines()[-lines:])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    for cluster in _LIVE:
        report.sections.append((f"slurmctld log ({cluster.dir})",
                                _tail(cluster.slurmctld_log_text())))
        for node in cluster.nodes:
            report.sections.append((f"slurmd log {node.name} ({cluster.dir})",
                                    _tail(cluster.slurmd_log_text(node.name))))
            # A namespaced node's init, munged and slurmd say why they died here.
            for name in (f"init-{node.name}", f"munged-{node.name}", f"slurmd-{node.name}"):
                out = cluster.log_dir / f"{name}.out"
                if out.exists() and out.stat().st_size:
                    report.sections.append((f"{name}.out ({cluster.dir})",
                                            _tail(out.read_text(errors="replace"), 20)))
