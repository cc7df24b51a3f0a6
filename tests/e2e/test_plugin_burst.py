# SPDX-License-Identifier: GPL-2.0-or-later
"""A burst of job epilogs on one node without PrologFlags=contain: each must learn from
slurmctld who still has work here before it removes a user's files, and one question at
a time per node answers them all. The plugin runs from a directory of its own, where its
leftover-query takes 1.5 s over every question about jobs (and notes each), so that the
epilogs of jobs ending together meet a question in flight, as on a loaded node."""

from __future__ import annotations

import re
import shutil
import tempfile
import uuid
from pathlib import Path

import pytest

from harness.e2e_accounts import ensure_test_users, fresh_accounts
from harness.e2e_processes import wait_gone, wait_until
from harness.plugin_support import (  # noqa: F401 (conf_dir, jobs_done_...: fixtures)
    PLUGIN, LogWatch, conf_dir, jobs_done_after_each_test, summary_regex, write_leftover_conf)
from harness.slurm_config import ClusterConfig
from harness.slurm_jobs import plant_stray_script

BURST = fresh_accounts(4)
QUESTION_PAUSE = 1.5
SHARED = r"leftover: slurmctld's answer that another sweep of this node asked for \d+ ms ago is used"


@pytest.fixture(scope="module")
def plugin_dir():
    """leftover.so beside a leftover-query that pauses over each jobs question."""
    where = Path(tempfile.mkdtemp(prefix="leftover-burst-", dir="/tmp"))
    where.chmod(0o755)
    shutil.copy2(PLUGIN, where / "leftover.so")
    helper = where / "leftover-query"
    helper.write_text(
        "#!/bin/sh\n"
        "for arg; do\n"
        "  if [ \"$arg\" = --node ]; then\n"
        f"    echo \"start $$ $(/bin/date +%s.%N)\" >> {where}/questions\n"
        f"    /bin/sleep {QUESTION_PAUSE}\n"
        f"    {PLUGIN.parent / 'leftover-query'} \"$@\"\n"
        "    rc=$?\n"
        f"    echo \"end $$ $(/bin/date +%s.%N)\" >> {where}/questions\n"
        "    exit $rc\n"
        "  fi\n"
        "done\n"
        f"exec {PLUGIN.parent / 'leftover-query'} \"$@\"\n")
    helper.chmod(0o755)
    yield where
    shutil.rmtree(where, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster(make_cluster, conf_dir, plugin_dir):
    ensure_test_users(BURST)
    # Room for four such questions one after another, as a loaded machine may need: once,
    # beside a release build, an epilog waited 4.5 s for three others' questions and its
    # own, with 6 s, did not finish in time (a lookup error, nothing of hers removed).
    write_leftover_conf(conf_dir, "cleanup: [posix_shm]\nslurm_timeout: 15\ndebuglevel: debug\n")
    line = f"optional {plugin_dir / 'leftover.so'} config={conf_dir / 'leftover.conf'}\n"
    return make_cluster(ClusterConfig(plugstack=line))  # no PrologFlags: no extern step


def questions(plugin_dir: Path) -> list[tuple[float, float]]:
    """Each jobs question the helper was asked, as (start, end), in the order begun."""
    path = plugin_dir / "questions"
    begun: dict[str, float] = {}
    spans = []
    for line in path.read_text().splitlines() if path.exists() else []:
        what, pid, when = line.split()
        if what == "start":
            begun[pid] = float(when)
        else:
            spans.append((begun.pop(pid), float(when)))
    assert not begun, f"questions never answered: {begun}"
    return sorted(spans)


def test_a_burst_of_job_epilogs_asks_one_question_at_a_time_shares_answers_and_every_users_leftovers_go(cluster, plugin_dir):
    log = LogWatch(cluster)
    tag = uuid.uuid4().hex[:8]
    release = cluster.work_dir / f"release-{tag}"
    jobs, pidfiles, shm_files = {}, {}, {}
    for user in BURST:
        pidfiles[user.name] = cluster.work_dir / f"stray-{tag}-{user.uid}.pid"
        shm_files[user.name] = Path(f"/dev/shm/lo-e2e-{tag}-{user.uid}")
        jobs[user.name] = cluster.sbatch(user.name, f"""#!/bin/sh
echo data > {shm_files[user.name]}
{plant_stray_script(str(pidfiles[user.name]))}i=0; while [ ! -e {release} ]; do i=$((i+1)); [ $i -gt 600 ] && exit 9; sleep 0.1; done
""")
    try:
        for user in BURST:
            wait_until(lambda: pidfiles[user.name].exists() and pidfiles[user.name].read_text().strip(), 30,
                       f"{user.name}'s stray to start")
        strays = {name: int(path.read_text()) for name, path in pidfiles.items()}
        assert all(cluster.is_alive(pid) for pid in strays.values())   # they outlive nothing yet
        asked_before = len(questions(plugin_dir))
        release.touch()   # every job ends at once
        for user in BURST:
            assert cluster.wait_job_done(jobs[user.name]).state == "COMPLETED"
        summaries = [log.wait_for(summary_regex(jobs[user.name], "epilog") + ".*$", 40).group(0) for user in BURST]
        for summary in summaries:
            assert "lookup errors 0" in summary, summary
        for pid in strays.values():
            wait_gone(pid, 20)
        for path in shm_files.values():
            wait_until(lambda: not path.exists(), 20, f"{path} to go")
        asked = questions(plugin_dir)[asked_before:]
        assert asked, log.text()
        for (_, first_end), (second_start, _) in zip(asked, asked[1:]):
            assert second_start >= first_end, f"two questions to slurmctld in flight at once: {asked}"
        shared = re.findall(SHARED, log.text())
        assert shared, f"no epilog took another's answer ({len(asked)} questions)\n{log.text()}"
    finally:
        release.touch()
        for path in shm_files.values():
            path.unlink(missing_ok=True)
