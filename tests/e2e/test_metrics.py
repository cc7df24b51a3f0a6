# SPDX-License-Identifier: GPL-2.0-or-later
"""The metrics file on a real one-node cluster (no PrologFlags=contain): each of the
plugin's evaluations adds to it, concurrent step ends lose no update, a config error
is counted and kills nothing, and the file is what a real Prometheus parser reads
(Debian's python3-prometheus-client)."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from harness.e2e_processes import wait_until
from harness.plugin_support import (  # noqa: F401 (conf_dir, config, jobs_done_...: fixtures)
    conf_dir, config, jobs_done_after_each_test, LogWatch, plugin_config, still_alive_after,
    summary_regex, write_leftover_conf)

Values = dict[tuple[str, tuple], float]


@pytest.fixture(scope="module")
def metrics_file(tmp_path_factory) -> Path:
    """In a directory of root's that nobody else can write (pytest makes it 0700)."""
    return tmp_path_factory.mktemp("metrics") / "leftover.prom"


@pytest.fixture(scope="module")
def cluster(make_cluster, conf_dir, metrics_file):
    write_leftover_conf(conf_dir, f"metrics_file: {metrics_file}\n")
    return make_cluster(plugin_config(conf_dir))


def read_metrics(path: Path) -> Values:
    """Every sample, parsed by prometheus_client: (name, sorted labels) -> value."""
    if not path.exists():
        return {}
    values = {}
    for family in text_string_to_metric_families(path.read_text()):
        assert family.documentation, f"{family.name} has no HELP"
        for sample in family.samples:
            values[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return values


def delta(after: Values, before: Values, name: str, **labels: str) -> float:
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0.0) - before.get(key, 0.0)


def summed(values: Values, name: str) -> float:
    return sum(value for (sample, _), value in values.items() if sample == name)


def summaries(log: LogWatch, job: int) -> list[str]:
    """The summary line of every evaluation of the job (its steps and its epilog)."""
    return re.findall(rf"leftover: (?:step {job}\.\S+|job {job} epilog) \(user .*\): .*ms$", log.text(),
                      re.MULTILINE)


def kept_by_reason(lines: list[str]) -> dict[str, int]:
    """The kept counts the summary lines log, added up: "kept 74 (init 1, zombie 2)"."""
    kept: dict[str, int] = {}
    for line in lines:
        detail = re.search(r"; kept \d+(?: \(([^)]*)\))?;", line)
        assert detail, line
        for entry in filter(None, (detail.group(1) or "").split(", ")):
            reason, count = entry.rsplit(" ", 1)
            kept[reason] = kept.get(reason, 0) + int(count)
    return kept


def counted(metrics_file: Path, before: Values, evaluations: int) -> Values:
    """The metrics once they hold `evaluations` more evaluations (each is written just
    after its summary line)."""
    def done():
        after = read_metrics(metrics_file)
        return after if summed(after, "leftover_evaluations_total") - summed(before, "leftover_evaluations_total") \
            == evaluations else None
    return wait_until(done, 20, f"{evaluations} more evaluations in {metrics_file}")


def test_a_reaped_stray_is_one_more_kill_and_the_kept_reasons_are_the_logs(cluster, config, metrics_file):
    config(f"metrics_file: {metrics_file}\ngrace: 2\n")
    before = read_metrics(metrics_file)
    log = LogWatch(cluster)
    stray, job = cluster.plant_stray_in_step("lo_alice")
    cluster.wait_gone(stray, 20)
    assert cluster.wait_job_done(job).state == "COMPLETED"
    log.wait_for(summary_regex(job, "epilog"))
    lines = summaries(log, job)
    after = counted(metrics_file, before, len(lines))

    assert delta(after, before, "leftover_processes_killed_total", signal="SIGTERM") == 1
    assert delta(after, before, "leftover_processes_killed_total", signal="SIGKILL") == 0
    assert delta(after, before, "leftover_users_swept_total") == 1
    assert delta(after, before, "leftover_evaluations_total", trigger="epilog") == 1
    assert delta(after, before, "leftover_evaluations_total", trigger="step") == len(lines) - 1
    assert summed(after, "leftover_lookup_errors_total") == summed(before, "leftover_lookup_errors_total")
    logged = kept_by_reason(lines)
    for (name, labels), value in after.items():
        if name == "leftover_processes_kept_total":
            reason = dict(labels)["reason"]
            assert value - before.get((name, labels), 0.0) == logged.get(reason, 0), reason
    assert after[("leftover_last_evaluation_failed", ())] == 0
    assert "lo_alice" not in metrics_file.read_text(), "no user names without metrics_users"


def test_two_steps_ending_at_the_same_moment_both_count(cluster, config, metrics_file):
    config(f"metrics_file: {metrics_file}\n")
    before = read_metrics(metrics_file)
    log = LogWatch(cluster)
    tag = uuid.uuid4().hex[:8]
    started, release = cluster.work_dir / f"started-{tag}", cluster.work_dir / f"release-{tag}"
    wait = f"touch {started}-$SLURM_STEP_ID; while [ ! -e {release} ]; do sleep 0.02; done"
    job = cluster.sbatch("lo_alice", "#!/bin/sh\n"
                         f"srun --overlap -n1 /bin/sh -c '{wait}' &\n"
                         f"srun --overlap -n1 /bin/sh -c '{wait}' &\n"
                         "wait\n")
    wait_until(lambda: Path(f"{started}-0").exists() and Path(f"{started}-1").exists(), 30, "both steps")
    release.touch()  # both steps end now
    assert cluster.wait_job_done(job).state == "COMPLETED"
    log.wait_for(summary_regex(job, "epilog"))
    lines = summaries(log, job)
    assert any(f"step {job}.0 " in line for line in lines) and any(f"step {job}.1 " in line for line in lines)
    after = counted(metrics_file, before, len(lines))
    assert delta(after, before, "leftover_evaluations_total", trigger="step") == len(lines) - 1
    assert delta(after, before, "leftover_evaluations_total", trigger="epilog") == 1
    log.assert_absent(r"metrics not written")


def test_a_config_error_is_counted_and_kills_nothing(cluster, config, metrics_file):
    config(f"metrics_file: {metrics_file}\nprotected_user: [lo_alice]\n")  # a typo: a config error
    before = read_metrics(metrics_file)
    log = LogWatch(cluster)
    stray, job = cluster.plant_stray_in_step("lo_alice")
    assert cluster.wait_job_done(job) == ("COMPLETED", 0, 0)
    log.wait_for(r"leftover: config error: .*unknown key 'protected_user'.*; nothing killed")
    log.wait_for(summary_regex(job, "epilog"))
    lines = summaries(log, job)
    after = counted(metrics_file, before, len(lines))
    assert delta(after, before, "leftover_lookup_errors_total", kind="config") == len(lines)
    assert summed(after, "leftover_processes_killed_total") == summed(before, "leftover_processes_killed_total")
    assert after[("leftover_last_evaluation_failed", ())] == 1
    assert still_alive_after(cluster, stray, 1.0)


def test_the_file_is_prometheus_text_with_help_and_type_for_every_family(cluster, config, metrics_file):
    config(f"metrics_file: {metrics_file}\nmetrics_users: true\n")
    log = LogWatch(cluster)
    stray, job = cluster.plant_stray_in_step("lo_alice")
    cluster.wait_gone(stray, 20)
    cluster.wait_job_done(job)
    log.wait_for(summary_regex(job, "epilog"))
    wait_until(lambda: 'user="lo_alice"' in metrics_file.read_text(), 20, "lo_alice's kills in the metrics")
    families = {family.name: family for family in text_string_to_metric_families(metrics_file.read_text())}
    # The parser names a counter's family without its _total.
    for name in ("leftover_evaluations", "leftover_processes_killed", "leftover_processes_kept",
                 "leftover_users_swept", "leftover_lookup_errors", "leftover_survivors",
                 "leftover_user_processes_killed"):
        assert families[name].type == "counter", name
    for name in ("leftover_last_evaluation_timestamp_seconds", "leftover_last_evaluation_duration_seconds",
                 "leftover_last_strays_found", "leftover_last_evaluation_failed"):
        assert families[name].type == "gauge", name
    kinds = {sample.labels["kind"] for sample in families["leftover_lookup_errors"].samples}
    assert kinds == {"config", "users_file", "step_socket", "controller", "account_lookup", "deadline", "proc"}
    assert {s.labels["user"] for s in families["leftover_user_processes_killed"].samples} >= {"lo_alice"}
