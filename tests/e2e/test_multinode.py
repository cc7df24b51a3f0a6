"""leftover.so on a real three-node cluster built on one machine.

Each node (lo-n1, lo-n2, lo-n3) is its own slurmd with its own name, address,
port, spool dir and munged, in its own pid, mount and UTS namespaces with a
small reaping init as pid 1 (slurm_cluster.py, node_namespace.py): each node's
plugin sees only its own /proc, as on real nodes.  Client commands run on the
host like on a login node.

Pids: the harness tracks every process by host pid (it runs in the root pid
namespace and sees all nodes) and matches the plugin's log lines, which name
namespace pids, by the pid in that node's namespace (`NodePid`).  Two nodes may
well use the same namespace pid at once, so every "gone"/"alive" check is made
on host pids.

Clusters: `bare` (no plugin, PrologFlags=contain) shows that strays survive
without the plugin and gives the sdiag baseline; `cluster` (plugin, no
PrologFlags) and `contained` (plugin, PrologFlags=contain) run the cases; one
more, plugin-less, is started and stopped to show that stopping leaves nothing.

Other engineers' plugins on this machine run in the root pid namespace, which
sees every process, also those in these nodes: run concurrently with such a
cluster, these tests may see strays vanish early.  Rerun alone.
"""

import os
import re
import uuid

import pytest

from harness.e2e_accounts import USERS
from harness.plugin_support import (  # noqa: F401 (conf_dir: a shared fixture)
    LogWatch, conf_dir, daemon_fragment, plugin_config, read_pid, summary_regex, swept_with,
    swept_without, write_leftover_conf)
from harness.e2e_processes import wait_until
from harness.slurm_cluster import MARKER_VAR
from harness.slurm_config import ClusterConfig

# The fixed test accounts' uids, for the lines and outputs the tests expect.
ALICE_UID = USERS["lo_alice"].uid
BOB_UID = USERS["lo_bob"].uid

NODES = ("lo-n1", "lo-n2", "lo-n3")
N1, N2, N3 = NODES
ALL = f"--nodelist={','.join(NODES)}"

# Read-only controller queries; leftover-query's slurm_load_jobs is REQUEST_JOB_INFO.
QUERY_RPCS = ("REQUEST_JOB_INFO", "REQUEST_JOB_USER_INFO", "REQUEST_JOB_INFO_SINGLE",
              "REQUEST_NODE_INFO", "REQUEST_NODE_INFO_SINGLE", "REQUEST_PARTITION_INFO",
              "REQUEST_JOB_STEP_INFO", "REQUEST_FED_INFO", "REQUEST_STEP_LAYOUT")
# What one `scontrol show job <id>` of the harness costs the controller.
SCONTROL_SHOW_JOB = ("REQUEST_FED_INFO", "REQUEST_JOB_INFO_SINGLE")
# srun polls slurm_job_node_ready (srun/libsrun/allocate.c) until the nodes of its
# new allocation are ready, as often as the prolog's timing wants.
SRUN_POLLS = "REQUEST_JOB_READY"


def namespaced(**overrides) -> dict:
    return dict(nodes=NODES, node_namespaces=True, **overrides)


@pytest.fixture(scope="module")
def bare(make_cluster):
    return make_cluster(ClusterConfig(**namespaced(prolog_flags="contain")))


@pytest.fixture(scope="module")
def cluster(make_cluster, conf_dir):
    write_leftover_conf(conf_dir, "debuglevel: debug\n")
    return make_cluster(plugin_config(conf_dir, **namespaced()))


@pytest.fixture(scope="module")
def contain_conf_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("leftover-conf-contain")


@pytest.fixture(scope="module")
def contained(make_cluster, contain_conf_dir):
    write_leftover_conf(contain_conf_dir, "debuglevel: debug\n")
    return make_cluster(plugin_config(contain_conf_dir, **namespaced(prolog_flags="contain")))


def watch(cluster) -> dict:
    return {node: LogWatch(cluster, node) for node in NODES}


def sigterm_lines(log: LogWatch) -> list[str]:
    return re.findall(r"leftover: SIGTERM pid=\d+ user=\S+", log.text())


def start_time(pid: int):
    """Field 22 of /proc/<pid>/stat (None once the pid is gone)."""
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return int(stat[stat.rindex(")") + 2:].split()[19])


def wait_epilogs(logs: dict, job: int, nodes=NODES) -> None:
    for node in nodes:
        logs[node].wait_for(summary_regex(job, "epilog"))


# ---- the cluster itself -----------------------------------------------------------

def test_each_node_has_its_own_name_address_proc_and_munged(bare):
    for node in NODES:
        inside = bare.run_on_node(node, ["/bin/sh", "-c",
                                          "hostname; cat /proc/1/cmdline | tr '\\0' ' '; echo; "
                                          "for p in /proc/[0-9]*; do cat $p/comm; done"])
        assert inside.returncode == 0, inside.stderr
        hostname, init, *comms = inside.stdout.splitlines()
        assert hostname == node
        assert "node_init.py" in init
        assert comms.count("slurmd") == 1 and comms.count("munged") == 1, comms
        info = bare.scontrol("-o", "show", "node", node).stdout
        addr = f"127.0.0.{2 + NODES.index(node)}"
        assert f"NodeAddr={addr} " in info and f"NodeHostName={node} " in info
        assert (bare.node_dir(node) / "munge" / "munge.socket").exists()
        assert bare.spool_dir(node).name == node
    res, job = bare.srun("lo_alice", ["/bin/sh", "-c", 'echo "$(hostname) $SLURMD_NODENAME"'],
                         args=[ALL, "--nodes=3", "--ntasks-per-node=1"])
    assert res.returncode == 0, res.stderr
    assert sorted(res.stdout.split("\n")[:-1]) == [f"{n} {n}" for n in NODES]
    assert bare.wait_job_done(job).state == "COMPLETED"


def test_without_the_plugin_strays_survive_on_every_node(bare):
    # The control: the reaping tests below can fail.
    strays, job = bare.plant_strays_on_nodes("lo_alice", NODES)
    assert bare.wait_job_done(job).state == "COMPLETED"
    for stray in strays.values():
        assert bare.is_alive(stray.host_pid), stray
        assert bare.node_namespace(stray.node).contains(stray.host_pid)


def test_stop_ends_every_node_and_everything_that_ran_there(make_cluster):
    spare = make_cluster(ClusterConfig(**namespaced()))
    strays = [spare.spawn_on_node(node, "lo_alice", ["sleep", "600"]) for node in NODES]
    pids = [stray.host_pid for stray in strays]
    for node in spare.nodes:
        pids += [node.namespace.init_pid, node.munged.pid, node.process.pid]
    started = {pid: start_time(pid) for pid in pids}
    spare.stop()
    # Same pid and start time: the same process (pids get reused quickly on a busy machine).
    assert [pid for pid in pids if spare.is_alive(pid) and start_time(pid) == started[pid]] == []
    left = [pid for pid in map(int, filter(str.isdigit, os.listdir("/proc")))
            if spare.process_env(pid).get(MARKER_VAR) == str(spare.dir) and spare.is_alive(pid)]
    assert left == []


# ---- the plugin on every node --------------------------------------------------

def test_a_three_node_srun_leaves_a_stray_on_every_node_and_each_node_reaps_its_own(cluster):
    logs = watch(cluster)
    strays, job = cluster.plant_strays_on_nodes("lo_alice", NODES)
    for stray in strays.values():
        cluster.wait_gone(stray.host_pid, 20)
    assert cluster.wait_job_done(job).state == "COMPLETED"
    wait_epilogs(logs, job)
    for node, stray in strays.items():
        # Killed by the plugin of its own node, which killed nothing else.
        assert sigterm_lines(logs[node]) == [f"leftover: SIGTERM pid={stray.ns_pid} user=lo_alice"]


def test_a_job_on_node_1_protects_the_users_strays_there_only_until_it_ends(cluster):
    holder, release = cluster.sbatch_until_released("lo_alice", args=[f"--nodelist={N1}"])
    cluster.wait_job_state(holder, ["RUNNING"])
    strays = {node: cluster.spawn_on_node(node, "lo_alice", ["sleep", "600"]) for node in NODES}
    logs = watch(cluster)
    # Another user's job on all three nodes ends: every node sweeps.
    res, trigger = cluster.srun("lo_bob", ["/bin/true"], args=[ALL, "--nodes=3"])
    assert res.returncode == 0, res.stderr
    assert cluster.wait_job_done(trigger).state == "COMPLETED"
    wait_epilogs(logs, trigger)
    for node in (N2, N3):
        cluster.wait_gone(strays[node].host_pid, 20)
        logs[node].wait_for(rf"leftover: SIGTERM pid={strays[node].ns_pid} user=lo_alice .*"
                            r"reason=stray \(no live work on this node\)")
    assert cluster.is_alive(strays[N1].host_pid)
    logs[N1].assert_absent(r"leftover: SIGTERM")
    logs[N1].wait_for(rf"leftover: job {trigger} epilog \(user lo_bob uid {BOB_UID}\): "
                      rf"{swept_without('lo_alice')}; killed \d+; kept \d+ \(.*has_live_job [1-9]")

    log1 = LogWatch(cluster, N1)
    release.touch()
    assert cluster.wait_job_done(holder).state == "COMPLETED"
    cluster.wait_gone(strays[N1].host_pid, 20)
    log1.wait_for(rf"leftover: SIGTERM pid={strays[N1].ns_pid} user=lo_alice")


BATCH_STEPS = r"""#!/bin/sh
srun --nodes=3 --ntasks-per-node=1 /bin/sh {step1} || exit 11
touch {step1}.done
while [ ! -e {go} ]; do sleep 0.1; done
srun --nodes=3 --ntasks-per-node=1 /bin/sh {step2}
echo $? > {step2}.rc
while [ ! -e {release} ]; do sleep 0.1; done
"""

# Step 1 on every node: a daemon that answers a ping file with a pong file.
STEP1 = r"""pidfile={base}.$SLURMD_NODENAME
( setsid /bin/sh -c 'echo $$ > "$0.tmp" && mv "$0.tmp" "$0"
  while :; do [ -e "$0.ping" ] && echo pong > "$0.pong"; sleep 0.2; done' "$pidfile" \
  </dev/null >/dev/null 2>&1 & )
i=0; while [ ! -s "$pidfile" ]; do i=$((i+1)); [ $i -gt 400 ] && exit 3; sleep 0.05; done
"""

# Step 2 on every node: uses the daemon its node's step 1 left (same pid namespace).
STEP2 = r"""pidfile={base}.$SLURMD_NODENAME
kill -0 "$(cat "$pidfile")" || exit 5
touch "$pidfile.ping"
i=0; while [ ! -e "$pidfile.pong" ]; do i=$((i+1)); [ $i -gt 200 ] && exit 4; sleep 0.05; done
"""


@pytest.mark.parametrize("which", ["cluster", "contained"])
def test_daemons_of_a_three_node_batch_job_live_between_its_steps_and_go_with_the_job(request, which):
    cluster = request.getfixturevalue(which)
    logs = watch(cluster)
    w, tag = cluster.work_dir, uuid.uuid4().hex[:8]
    base, go, release = w / f"daemon-{tag}", w / f"go-{tag}", w / f"release-{tag}"
    step1, step2 = w / f"step1-{tag}.sh", w / f"step2-{tag}.sh"
    step1.write_text(STEP1.format(base=base))
    step2.write_text(STEP2.format(base=base))
    job = cluster.sbatch("lo_alice", BATCH_STEPS.format(step1=step1, step2=step2, go=go,
                                                         release=release),
                         args=[ALL, "--nodes=3"])
    try:
        wait_until(lambda: (w / f"{step1.name}.done").exists()
                   or cluster.job_state(job) not in ("PENDING", "RUNNING"), 30, "step 1")
        assert (w / f"{step1.name}.done").exists(), f"step 1 failed: {cluster.job_info(job)}"
        daemons = {node: cluster.node_pid(node, read_pid(base.with_name(f"{base.name}.{node}")))
                   for node in NODES}
        for node in NODES:  # step 0 ended and was evaluated on every node
            logs[node].wait_for(summary_regex(job, "0"))
            assert cluster.is_alive(daemons[node].host_pid), f"daemon on {node} killed after step 0"
        go.touch()
        rc_file = w / f"{step2.name}.rc"
        wait_until(lambda: rc_file.exists() or cluster.job_state(job) != "RUNNING", 30, "step 2")
        assert rc_file.exists(), f"the batch script ended early: {cluster.job_info(job)}"
        assert rc_file.read_text().strip() == "0", "step 2 could not use every node's daemon"
        for node in NODES:
            logs[node].wait_for(summary_regex(job, "1"))
            assert cluster.is_alive(daemons[node].host_pid), f"daemon on {node} killed after step 1"
    finally:
        release.touch()
    assert cluster.wait_job_done(job).state == "COMPLETED"
    wait_epilogs(logs, job)
    for node, daemon in daemons.items():
        cluster.wait_gone(daemon.host_pid, 20)
        logs[node].wait_for(rf"leftover: SIGTERM pid={daemon.ns_pid} user=lo_alice")
    if which == "cluster":
        # Between the steps nodes 2 and 3 look empty locally: the controller said
        # the allocation still holds them.  At the end no step runs there: the job
        # epilog is what reaps.
        for node in (N2, N3):
            logs[node].assert_absent(r"lookup error:|lookup errors [1-9]")
            logs[node].wait_for(r"asking slurmctld whether these users hold an allocation here")
            logs[node].wait_for(rf"leftover: job {job} epilog \(user lo_alice uid {ALICE_UID}\): "
                                rf"{swept_with('lo_alice')}; killed [1-9]")
    else:
        for node in NODES:
            logs[node].assert_absent(r"asking slurmctld")


def test_two_users_jobs_ending_together_on_different_nodes_each_node_sweeps_its_own(cluster):
    # Strays of both users on node 3, where nothing ends: no other node reaches them.
    bystanders = [cluster.spawn_on_node(N3, user, ["sleep", "600"]) for user in ("lo_alice", "lo_bob")]
    logs = watch(cluster)
    tag = uuid.uuid4().hex[:8]
    release = cluster.work_dir / f"release-{tag}"
    daemon_files = {N1: cluster.work_dir / f"alice-{tag}", N2: cluster.work_dir / f"bob-{tag}"}
    users = {N1: "lo_alice", N2: "lo_bob"}
    jobs = {node: cluster.sbatch(users[node], "#!/bin/sh\n" + daemon_fragment(daemon_files[node]) +
                                 f"while [ ! -e {release} ]; do sleep 0.1; done\n",
                                 args=[f"--nodelist={node}"])
            for node in (N1, N2)}
    try:
        daemons = {node: cluster.node_pid(node, read_pid(daemon_files[node])) for node in (N1, N2)}
    finally:
        release.touch()  # both jobs end at the same moment
    for node in (N1, N2):
        assert cluster.wait_job_done(jobs[node]).state == "COMPLETED"
        cluster.wait_gone(daemons[node].host_pid, 20)
    wait_epilogs(logs, jobs[N1], [N1])
    wait_epilogs(logs, jobs[N2], [N2])
    for node in (N1, N2):
        assert sigterm_lines(logs[node]) == [
            f"leftover: SIGTERM pid={daemons[node].ns_pid} user={users[node]}"]
    for stray in bystanders:
        assert cluster.is_alive(stray.host_pid), stray
    assert logs[N3].leftover_lines() == []


# ---- controller load (sdiag) --------------------------------------------------------

def rpcs_of_a_three_node_job(cluster, plugin: bool) -> dict:
    """Per-type slurmctld RPC counts of one three-node srun that leaves strays,
    less the harness's own `scontrol show job` polls.

    Between the reset and the count the harness only runs srun (as the user),
    polls `scontrol show job <id>` and reads files (the strays' tasks name their
    job themselves)."""
    cluster.sdiag_reset()
    polls = cluster.scontrol_calls
    strays, job = cluster.plant_strays_on_nodes("lo_alice", NODES)
    # COMPLETED means every node's epilog (and every sweep before it) is over.
    assert cluster.wait_job_done(job).state == "COMPLETED"
    for stray in strays.values():
        if plugin:
            cluster.wait_gone(stray.host_pid, 20)
        else:
            assert cluster.is_alive(stray.host_pid)
    polls = cluster.scontrol_calls - polls
    counts = cluster.sdiag_rpc_counts()
    for rpc in SCONTROL_SHOW_JOB:
        assert counts.get(rpc, 0) >= polls, (rpc, polls, counts)
        counts[rpc] = counts.get(rpc, 0) - polls
    assert counts.pop(SRUN_POLLS, 0) >= 1, counts
    return {rpc: n for rpc, n in counts.items() if n}


def differing(a: dict, b: dict) -> dict:
    return {k: (a.get(k, 0), b.get(k, 0)) for k in sorted(set(a) | set(b))
            if a.get(k, 0) != b.get(k, 0)}


def test_with_contain_and_local_job_source_the_plugin_sends_the_controller_nothing(
        bare, contained, contain_conf_dir):
    write_leftover_conf(contain_conf_dir, "debuglevel: debug\njob_source: local\n")
    without = rpcs_of_a_three_node_job(bare, plugin=False)
    logs = watch(contained)
    with_plugin = rpcs_of_a_three_node_job(contained, plugin=True)
    for node in NODES:
        logs[node].wait_for(r"leftover: SIGTERM pid=\d+ user=lo_alice")
    assert differing(with_plugin, without) == {}, (with_plugin, without)
    assert [rpc for rpc in QUERY_RPCS if rpc in with_plugin] == [], with_plugin


def test_the_sdiag_count_sees_controller_queries_when_the_plugin_makes_them(contained, contain_conf_dir):
    # The positive control of the test above: job_source controller asks slurmctld
    # (leftover-query, REQUEST_JOB_INFO) in every evaluation, on every node.
    write_leftover_conf(contain_conf_dir, "debuglevel: debug\njob_source: controller\n")
    try:
        counts = rpcs_of_a_three_node_job(contained, plugin=True)
    finally:
        write_leftover_conf(contain_conf_dir, "debuglevel: debug\n")
    assert counts.get("REQUEST_JOB_INFO", 0) >= len(NODES), counts
