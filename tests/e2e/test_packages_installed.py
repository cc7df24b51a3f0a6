# SPDX-License-Identifier: GPL-2.0-or-later
"""The release's .deb installed with dpkg into the Debian root it was built in, and
loaded by slurmd by its bare name from Slurm's PluginDir, as the shipped plugstack
line has it: it reaps a stray, and its epilog reaches slurmctld through the installed
/usr/libexec/leftover/leftover-query. Only inside scripts/in-release.sh, whose
throwaway overlay takes the installed files away again; on the host nothing is ever
installed into the machine's own /etc or /usr."""

import os
import subprocess
from pathlib import Path

import pytest

from harness.plugin_support import LogWatch, summary_regex, write_leftover_conf
from harness.slurm_config import ClusterConfig
from test_packages import PLUGIN_DIR, only

pytestmark = pytest.mark.skipif(not os.environ.get("LEFTOVER_RELEASE"),
                                reason="installs into the system: only in a release's throwaway root")


@pytest.fixture(scope="module")
def installed():
    deb = only("leftover_*.deb")
    subprocess.run(["dpkg", "-i", str(deb)], check=True, capture_output=True, text=True)
    return deb


@pytest.fixture(scope="module")
def cluster(make_cluster, installed, tmp_path_factory):
    conf_dir = tmp_path_factory.mktemp("installed-conf")
    conf = write_leftover_conf(conf_dir, "{}\n")
    shipped = Path("/etc/slurm/plugstack.conf.d/leftover.conf").read_text().splitlines()
    assert [line for line in shipped if not line.startswith("#")] == ["optional leftover.so config=/etc/leftover.conf"]
    # The shipped line, pointed at a test config (the shipped one is a dry run).
    return make_cluster(ClusterConfig(plugstack=f"optional leftover.so config={conf}\n"))


def test_the_installed_package_is_where_slurm_and_the_plugin_look(installed):
    assert Path("/", PLUGIN_DIR, "leftover.so").is_file()
    assert os.access("/usr/libexec/leftover/leftover-query", os.X_OK)
    assert "dry_run: true" in Path("/etc/leftover.conf").read_text()


def test_the_installed_plugin_reaps_a_stray_at_the_jobs_epilog(cluster):
    log = LogWatch(cluster)
    stray, job = cluster.plant_stray_in_step("lo_alice")
    assert cluster.wait_job_done(job).state == "COMPLETED"
    cluster.wait_gone(stray, 20)
    log.wait_for(rf"leftover: SIGTERM pid={stray} user=lo_alice")
    log.wait_for(summary_regex(job, "epilog"))
    log.assert_absent(r"leftover: lookup error")
