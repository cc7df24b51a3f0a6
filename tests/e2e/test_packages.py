# SPDX-License-Identifier: GPL-2.0-or-later
"""The packages scripts/package.sh builds: their contents, and the plugin from the
unpacked .deb reaping a stray on the test cluster (nothing is installed into the
machine's own /etc or /usr)."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.e2e_accounts import USERS
from harness.plugin_support import TOP, LogWatch, leftover_conf, summary_regex, still_alive_after, wait_all_jobs_done
from harness.slurm_config import ClusterConfig, slurm_major_minor

# The fixed test accounts' uids, for the lines and outputs the tests expect.
ALICE_UID = USERS["lo_alice"].uid

PACKAGES = Path(os.environ.get("LEFTOVER_PACKAGES", TOP / "build/packages"))
PLUGIN_DIR = "usr/lib/x86_64-linux-gnu/slurm-wlm"


def only(pattern: str) -> Path:
    found = sorted(PACKAGES.glob(pattern))
    if not found:
        pytest.fail(f"no {pattern} in {PACKAGES}: run scripts/package.sh first")
    assert len(found) == 1, found
    return found[0]


def run(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def release():
    """The packages name and require the Slurm release they were built for, this
    machine's: (its major.minor, the next one), e.g. ("24.11", "24.12")."""
    this = slurm_major_minor()
    major, minor = this.split(".")
    return this, f"{major}.{int(minor) + 1:02d}"


@pytest.fixture(scope="module")
def deb():
    return only("leftover_*.deb")


@pytest.fixture(scope="module")
def rpm():
    return only("leftover-*.rpm")


def test_deb_file_list(deb):
    # mode, owner, size, date, time, path (and "-> target" for a link, leftover-health)
    files = {line.split()[5].lstrip(".") for line in run("dpkg-deb", "-c", str(deb)).splitlines()}
    for path in (f"/{PLUGIN_DIR}/leftover.so", "/usr/libexec/leftover/leftover-query",
                 "/etc/leftover.conf", "/etc/slurm/plugstack.conf.d/leftover.conf",
                 "/usr/share/doc/leftover/LICENSE", "/usr/sbin/leftover", "/usr/sbin/leftover-health",
                 "/usr/share/man/man8/leftover.8", "/usr/share/man/man5/leftover.conf.5",
                 "/lib/systemd/system/leftover-sweep.service", "/lib/systemd/system/leftover-sweep.timer"):
        assert path in files, path
    modes = {line.split()[5].lstrip("."): line.split()[:2] for line in run("dpkg-deb", "-c", str(deb)).splitlines()}
    assert modes["/etc/leftover.conf"] == ["-rw-r--r--", "root/root"]


def test_deb_control(deb, tmp_path, release):
    this, after = release
    run("dpkg-deb", "-e", str(deb), str(tmp_path / "control"))
    assert (tmp_path / "control/conffiles").read_text().split() == [
        "/etc/leftover.conf", "/etc/slurm/plugstack.conf.d/leftover.conf"]
    assert deb.name == f"leftover_0.1.0-1+slurm{this}_amd64.deb"
    fields = run("dpkg-deb", "-f", str(deb), "Package", "Version", "Depends")
    assert "Package: leftover" in fields
    assert re.search(rf"Version: 0\.1\.0-1\+slurm{re.escape(this)}$", fields, re.MULTILINE)
    assert f"slurmd (>= {this}), slurmd (<< {after})" in fields


def test_rpm_spec_parses_and_the_package_holds_the_plugin(rpm, release):
    this, after = release
    parsed = run("rpmspec", "-P", "--define", f"slurm_majmin {this}", str(TOP / "rpm/leftover.spec"))
    assert f"Requires:       slurm < {after}" in parsed
    files = run("rpm", "-qlp", str(rpm)).split()
    for path in ("/usr/lib64/slurm/leftover.so", "/usr/libexec/leftover/leftover-query",
                 "/etc/leftover.conf", "/etc/slurm/plugstack.conf.d/leftover.conf", "/usr/sbin/leftover",
                 "/usr/sbin/leftover-health", "/usr/lib/systemd/system/leftover-sweep.timer"):
        assert path in files, path
    configs = run("rpm", "-qcp", str(rpm)).split()
    assert configs == ["/etc/leftover.conf", "/etc/slurm/plugstack.conf.d/leftover.conf"]
    assert run("rpm", "-qp", "--queryformat", "%{RELEASE}", str(rpm)).startswith(f"1.slurm{this}")
    requires = run("rpm", "-qp", "--requires", str(rpm))
    assert f"slurm >= {this}" in requires and f"slurm < {after}" in requires


@pytest.fixture(scope="module")
def unpacked(deb, tmp_path_factory):
    root = tmp_path_factory.mktemp("deb-root")
    run("dpkg-deb", "-x", str(deb), str(root))
    root.chmod(0o755)
    return root


@pytest.fixture(scope="module")
def cluster(make_cluster, unpacked):
    # The job epilog looks accounts up through leftover-query, which the plugin finds
    # beside itself (as in a build tree) or at its installed path, /usr/libexec/leftover,
    # where nothing is installed on this machine: the unpacked one is put beside it.
    helper = unpacked / "usr/libexec/leftover/leftover-query"
    shutil.copy2(helper, unpacked / PLUGIN_DIR / "leftover-query")
    line = f"optional {unpacked / PLUGIN_DIR / 'leftover.so'} config={unpacked / 'etc/leftover.conf'}\n"
    # The shipped config with the test accounts' uid range added: it sweeps node-wide.
    shipped = unpacked / "etc/leftover.conf"
    shipped.write_text(leftover_conf(shipped.read_text()))
    return make_cluster(ClusterConfig(plugstack=line, prolog_flags="contain"))


def test_the_unpacked_plugin_ships_in_dry_run_then_reaps_when_switched_live(cluster, unpacked):
    shipped = unpacked / "etc/leftover.conf"
    assert "dry_run: true" in shipped.read_text()

    log = LogWatch(cluster)
    spared, job = cluster.plant_stray_in_step("lo_alice")
    log.wait_for(rf"leftover: would kill pid={spared} user=lo_alice")
    log.wait_for(summary_regex(job, "epilog"))
    assert still_alive_after(cluster, spared, 0.5)

    shipped.write_text(shipped.read_text().replace("dry_run: true", "dry_run: false"))
    log = LogWatch(cluster)
    stray, job = cluster.plant_stray_in_step("lo_alice")
    cluster.wait_gone(stray, 20)
    log.wait_for(rf"leftover: SIGTERM pid={stray} user=lo_alice")
    # The epilog found its helper: it names the job's user, and no lookup failed.
    assert f"(user lo_alice uid {ALICE_UID})" in log.wait_for(summary_regex(job, "epilog")).group(0)
    log.assert_absent(r"leftover: .*(account lookup .* failed|config error)")
    wait_all_jobs_done(cluster)
