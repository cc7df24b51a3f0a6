"""Jobs and planted processes on a test cluster: the `ClusterJobs` part of
`SlurmCluster` (submitting and following jobs; starting processes outside Slurm
and leaving strays behind, and killing them after the test), and how to read
`scontrol -o` output.
"""

from __future__ import annotations

import pwd
import re
import subprocess
import time
import uuid
from pathlib import Path
from typing import Iterable, NamedTuple, Sequence

from .e2e_processes import HarnessError, kill_quietly, run_command, wait_gone, wait_until
from .node_namespace import NodePid
from .slurm_config import BIN

# Slurm's special step ids, as they appear in step socket names.
EXTERN_STEP = 4294967292  # SLURM_EXTERN_CONT
BATCH_STEP = 4294967291   # SLURM_BATCH_SCRIPT

# Base states after which a job will not change any more.  While a job is
# still cleaning up, scontrol reports COMPLETING instead, so waiting for one
# of these also waits for the epilogue/step cleanup on the node.
FINAL_STATES = frozenset({
    "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
    "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY",
})

JOB_TIMEOUT = 30.0  # a job that needs longer than this is a failure


def plant_stray_script(pidfile: str) -> str:
    """Shell that plants a stray: a session leader that records its own pid in `pidfile`
    (a shell word) and then becomes `sleep 600`; the subshell around it exits at once
    (double fork), so the sleeper is re-parented out of the job's process tree."""
    return (f"( setsid /bin/sh -c 'echo $$ > \"$0.tmp\" && mv \"$0.tmp\" \"$0\"; exec sleep 600' \\\n"
            f"    {pidfile} </dev/null >/dev/null 2>&1 & )\n")


class JobResult(NamedTuple):
    state: str       # e.g. "COMPLETED"
    exit_code: int   # the job's exit status
    signal: int      # signal that ended it, 0 if none


def parse_fields(line: str) -> dict:
    """key=value pairs of one `scontrol -o` line (values without spaces)."""
    return dict(re.findall(r"(\w+)=(\S*)", line))


class ClusterJobs:
    """Jobs and planted processes; a part of SlurmCluster, which provides
    run_as, scontrol, root_env, user_env, run_on_node, node_pid, config,
    work_dir and the set _planted."""

    # ---- jobs ------------------------------------------------------------

    def sbatch(self, user: str, script: str, args: Sequence[str] = ()) -> int:
        """Submits script (full text, with #! line) as user; returns the job id."""
        path = self.work_dir / f"job-{uuid.uuid4().hex[:8]}.sh"
        path.write_text(script)
        path.chmod(0o755)
        res = self.run_as(user, [
            str(BIN / "sbatch"), "--parsable",
            f"--output={self.work_dir}/slurm-%j.out", *args, str(path)])
        if res.returncode != 0:
            raise HarnessError(f"sbatch as {user} failed: {res.stderr}")
        return int(res.stdout.strip().split(";")[0])

    def sbatch_until_released(self, user: str, in_step: bool = False,
                              args: Sequence[str] = ()) -> tuple[int, Path]:
        """Submits a job that runs until the returned path is created.

        With in_step the waiting happens in an srun step (step 0) rather
        than in the batch script itself.  The job gives up after 60 s so a
        forgotten release cannot keep the node busy forever.
        """
        release = self.work_dir / f"release-{uuid.uuid4().hex[:8]}"
        wait = (f"i=0; while [ ! -e {release} ]; do i=$((i+1)); "
                f"[ $i -gt 600 ] && exit 9; sleep 0.1; done")
        body = f"srun /bin/sh -c '{wait}'" if in_step else wait
        return self.sbatch(user, f"#!/bin/sh\n{body}\n", args), release

    def srun(self, user: str, argv: Sequence[str], args: Sequence[str] = (),
             timeout: float = JOB_TIMEOUT) -> tuple[subprocess.CompletedProcess, int]:
        """Runs argv in a new allocation via srun; returns (result, job id)."""
        # A unique job name lets us find the job id without racing other jobs.
        name = f"e2e-{uuid.uuid4().hex[:10]}"
        res = self.run_as(user, [str(BIN / "srun"), f"--job-name={name}",
                                 *args, *argv], timeout=timeout)
        return res, self.job_id_by_name(name)

    def scancel(self, jobid: int) -> None:
        res = run_command([str(BIN / "scancel"), str(jobid)], self.root_env(), 20)
        if res.returncode != 0:
            raise HarnessError(f"scancel {jobid} failed: {res.stderr}")

    def job_id_by_name(self, name: str) -> int:
        res = self.scontrol("-o", "show", "job")
        for line in res.stdout.splitlines():
            fields = parse_fields(line)
            if fields.get("JobName") == name:
                return int(fields["JobId"])
        raise HarnessError(f"no job named {name}")

    def job_info(self, jobid: int) -> dict:
        return parse_fields(self.scontrol("-o", "show", "job", str(jobid)).stdout)

    def job_state(self, jobid: int) -> str:
        return self.job_info(jobid)["JobState"]

    def wait_job_state(self, jobid: int, states: Iterable[str],
                       timeout: float = JOB_TIMEOUT) -> str:
        wanted = set(states)
        return wait_until(lambda: (s := self.job_state(jobid)) in wanted and s,
                          timeout, f"job {jobid} to reach {sorted(wanted)}",
                          interval=0.1)

    def wait_job_done(self, jobid: int, timeout: float = JOB_TIMEOUT) -> JobResult:
        """Waits until the job finished (including cleanup on the node)."""
        deadline = time.monotonic() + timeout
        info: dict = {}
        while time.monotonic() < deadline:
            info = self.job_info(jobid)
            if info.get("JobState") in FINAL_STATES:
                code, sig = info.get("ExitCode", "0:0").split(":")
                return JobResult(info["JobState"], int(code), int(sig))
            time.sleep(0.1)
        raise HarnessError(f"job {jobid} not done after {timeout:.0f}s: {info}")

    # ---- planting processes ----------------------------------------------

    def spawn_outside_slurm(self, user: str, argv: Sequence[str]) -> int:
        """Starts argv as user outside Slurm, detached; returns its pid.

        A shell forks argv into the background and exits, so argv is
        re-parented away from the test process and leads no Slurm job;
        setsid gives it its own session like a daemonised leftover would.
        """
        pw = pwd.getpwnam(user)
        res = subprocess.run(
            [str(BIN / "setsid"), "/bin/sh", "-c",
             '"$@" </dev/null >/dev/null 2>&1 & echo $!', "sh", *argv],
            env=self.user_env(user), cwd=self.work_dir, user=pw.pw_uid,
            group=pw.pw_gid, extra_groups=[], capture_output=True, text=True,
            check=True, timeout=10)
        pid = int(res.stdout.strip())
        self._planted.add(pid)
        return pid

    def spawn_on_node(self, node: str, user: str, argv: Sequence[str]) -> NodePid:
        """Like spawn_outside_slurm, but inside a namespaced node."""
        res = self.run_on_node(node, [
            str(BIN / "setsid"), "/bin/sh", "-c",
            '"$@" </dev/null >/dev/null 2>&1 & echo $!', "sh", *argv], user=user)
        if res.returncode != 0:
            raise HarnessError(f"spawning {argv} on {node} failed: {res.stderr}")
        proc = self.node_pid(node, int(res.stdout.strip()))
        self._planted.add(proc.host_pid)
        return proc

    # The step plants a stray (plant_stray_script) and only ends once the pid
    # file exists, so the caller never races it.
    _STRAY_SCRIPT = 'pidfile="$1"\n' + plant_stray_script('"$pidfile"') + r'''i=0
while [ ! -s "$pidfile" ]; do
  i=$((i+1)); [ $i -gt 200 ] && exit 3
  sleep 0.05
done
'''

    def plant_stray_in_step(self, user: str, srun_args: Sequence[str] = ()
                            ) -> tuple[int, int]:
        """Runs an srun job that leaves a stray behind; returns (pid, jobid).

        The pid is a host pid; on namespaced nodes see plant_strays_on_nodes.
        """
        if self.config.node_namespaces:
            raise HarnessError("plant_stray_in_step would return a namespace pid: "
                               "use plant_strays_on_nodes on namespaced nodes")
        pidfile = self.work_dir / f"stray-{uuid.uuid4().hex[:8]}.pid"
        res, jobid = self.srun(user, ["/bin/sh", "-c", self._STRAY_SCRIPT,
                                      "sh", str(pidfile)], args=srun_args)
        if pidfile.exists():
            self._planted.add(int(pidfile.read_text()))
        if res.returncode != 0:
            raise HarnessError(f"stray-planting srun failed ({res.returncode}): "
                               f"{res.stderr}")
        return int(pidfile.read_text()), jobid

    def plant_strays_on_nodes(self, user: str, nodes: Sequence[str],
                              srun_args: Sequence[str] = ()
                              ) -> tuple[dict[str, NodePid], int]:
        """An srun job over `nodes` (namespaced) that leaves a stray on each.

        Returns ({node: stray}, jobid).  Each task writes its node's stray
        pid (a pid in that node's namespace) to its own file and waits for the
        harness to find the stray's host pid: the step's end may reap it.
        """
        pidfile = self.work_dir / f"stray-{uuid.uuid4().hex[:8]}.pid"
        ack = Path(f"{pidfile}.ack")
        # The task names its job itself: no `scontrol show job` (an RPC of the
        # type the plugin's controller query uses) while sdiag counts.
        script = ('echo "$SLURM_JOB_ID" > "$1.job.$SLURMD_NODENAME"\n' +
                  self._STRAY_SCRIPT.replace('pidfile="$1"', 'pidfile="$1.$SLURMD_NODENAME"') +
                  'i=0; while [ ! -e "$1.ack" ]; do\n'
                  '  i=$((i+1)); [ $i -gt 400 ] && exit 4; sleep 0.05\n'
                  'done\n')
        strays = {}

        def find_strays():
            for node in nodes:
                path = Path(f"{pidfile}.{node}")
                wait_until(lambda: path.exists() and path.read_text().strip(), 20,
                           f"the stray's pid file on {node}")
                strays[node] = self.node_pid(node, int(path.read_text()))
                self._planted.add(strays[node].host_pid)
            ack.touch()

        res = self.run_as(user, [
            str(BIN / "srun"), f"--nodelist={','.join(nodes)}", f"--nodes={len(nodes)}",
            "--ntasks-per-node=1", *srun_args, "/bin/sh", "-c", script, "sh", str(pidfile)],
            while_running=find_strays)
        job_file = Path(f"{pidfile}.job.{nodes[0]}")
        jobid = int(job_file.read_text()) if job_file.exists() else None
        if res.returncode != 0 or len(strays) != len(nodes) or jobid is None:
            raise HarnessError(f"stray-planting srun failed ({res.returncode}, strays on "
                               f"{sorted(strays)}): {res.stderr}")
        return strays, jobid

    def plant_stray_via_srun(self, user: str, srun_args: Sequence[str] = ()) -> int:
        """Pid of a double-forked `setsid sleep` an srun step left behind."""
        return self.plant_stray_in_step(user, srun_args)[0]

    def kill_planted(self) -> None:
        """Kills every process planted by spawn_outside_slurm/plant_stray_*."""
        kill_quietly(*self._planted)
        for pid in self._planted:
            wait_gone(pid, 10)
        self._planted.clear()

