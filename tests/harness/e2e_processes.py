"""Process helpers of the e2e harness; none of them needs a cluster.

Waiting (`wait_until`, `wait_gone`), looking at processes through /proc
(`is_alive`, `pids_of_user`, `process_env`), killing (`kill_quietly`,
`kill_processes_with_env`) and running a command with a deadline
(`run_command`).  Failures and missed deadlines raise `HarnessError`, which
fails the test.
"""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence


class HarnessError(AssertionError):
    """A cluster operation failed or a deadline passed (fails the test)."""


def wait_until(predicate: Callable[[], object], timeout: float, what: str,
               interval: float = 0.05):
    """Polls predicate until it returns something truthy; fails at deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise HarnessError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def is_alive(pid: int) -> bool:
    """True if pid exists and is not a zombie.

    Killed strays are orphans; pid 1 of this container reaps them only every
    second or two, so they linger in /proc as zombies meanwhile.
    """
    stat = _proc_stat(pid)
    return stat is not None and stat[1] not in ("Z", "X")


def wait_gone(pid: int, timeout: float = 10.0) -> None:
    wait_until(lambda: not is_alive(pid), timeout, f"pid {pid} to be gone")


def _proc_stat(pid: int) -> Optional[tuple[str, str, int]]:
    """(comm, state, ppid) from /proc/<pid>/stat, None if the pid is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(errors="replace")
    except (FileNotFoundError, ProcessLookupError):
        return None
    # comm may hold spaces and parens; the fields after the last ')' do not.
    close = stat.rindex(")")
    state, ppid = stat[close + 2:].split()[:2]
    return stat[stat.index("(") + 1:close], state, int(ppid)


def _proc_uid(pid: int) -> Optional[int]:
    try:
        for line in Path(f"/proc/{pid}/status").read_text(errors="replace").splitlines():
            if line.startswith("Uid:"):
                return int(line.split()[1])  # real uid
    except (FileNotFoundError, ProcessLookupError):
        pass
    return None


def _all_pids() -> Iterable[int]:
    return (int(p) for p in os.listdir("/proc") if p.isdigit())


def pids_of_user(user: str) -> list[int]:
    """Live (non-zombie) pids whose real uid is the user's."""
    uid = pwd.getpwnam(user).pw_uid
    return sorted(p for p in _all_pids() if _proc_uid(p) == uid and is_alive(p))


def _has_env_entry(pid: int, entry: bytes) -> bool:
    try:
        return entry in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False


def process_env(pid: int) -> dict:
    """The environment a process started with ({} if it is gone or unreadable)."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return {}
    return dict(e.decode(errors="replace").split("=", 1)
                for e in raw.split(b"\0") if b"=" in e)


def kill_quietly(*pids: int) -> None:
    """SIGKILLs each pid; one that is gone already (or None) is skipped."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, TypeError):
            pass


def run_command(argv: Sequence[str], env: dict, timeout: float, cwd=None,
                input_text: Optional[str] = None,
                while_running: Optional[Callable[[], object]] = None
                ) -> subprocess.CompletedProcess:
    """subprocess.run that kills the whole process group on timeout.

    srun/sbatch run under runuser, so killing only the direct child would
    leave them behind.  while_running (if given) is called once after the
    start; if it raises, the process group is killed too.
    """
    proc = subprocess.Popen(
        list(argv), env=env, cwd=cwd, text=True, start_new_session=True,
        stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        if while_running is not None:
            while_running()
        out, err = proc.communicate(input_text, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise HarnessError(
            f"{' '.join(argv)} did not finish in {timeout:.0f}s\n"
            f"stdout: {out}\nstderr: {err}") from None
    except BaseException as failure:  # from while_running
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        if isinstance(failure, Exception):
            raise HarnessError(f"{' '.join(argv)}: {failure}\nstderr: {err}") from failure
        raise
    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)


def kill_processes_with_env(entry: str, spare: Sequence[int] = (),
                            what: str = "marked processes") -> None:
    """SIGKILLs every process whose environment holds entry ("NAME=value"),
    except this process and spare, until none is left (fails after 15 s)."""
    wanted = entry.encode()
    skip = {os.getpid(), *spare}

    def none_left():
        pids = [p for p in _all_pids() if p not in skip and is_alive(p)
                and _has_env_entry(p, wanted)]
        kill_quietly(*pids)
        return not pids
    wait_until(none_left, 15, f"{what} to die", interval=0.1)
