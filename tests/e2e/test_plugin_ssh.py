# SPDX-License-Identifier: GPL-2.0-or-later
"""The operators' file with a real sshd: an operator listed in it is logged in to the
node over ssh and runs a job there; the sweep at that job's end must leave the
login alone, while another user's stray goes.

sshd (Debian's openssh-server) runs on a loopback port with its own host key, config
and pid file in a temporary directory, and lets only the operator in, by key. The
operator is a test account inside the tests' uid range, like every swept uid here."""

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from harness.e2e_processes import kill_quietly, wait_until
from harness.plugin_support import (  # noqa: F401 (fixtures)
    conf_dir, config, jobs_done_after_each_test, LogWatch, plugin_config, summary_regex, write_config,
    write_leftover_conf)
from harness.slurm_config import free_ports

SSHD = Path("/usr/sbin/sshd")
OPERATOR = "je.kim"


@pytest.fixture(scope="module")
def cluster(make_cluster, conf_dir):
    write_leftover_conf(conf_dir, "{}\n")
    return make_cluster(plugin_config(conf_dir))


@pytest.fixture(scope="module")
def sshd():
    """(port, client key) of an sshd that lets OPERATOR in by that key."""
    if not SSHD.exists():
        raise AssertionError(f"{SSHD} missing: scripts/install-deps.sh installs openssh-server")
    d = Path(tempfile.mkdtemp(prefix="leftover-sshd-"))
    d.chmod(0o755)  # sshd reads the authorized keys as the operator
    for key in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / key)], check=True)
    shutil.copy(d / "client_key.pub", d / "authorized_keys")
    (d / "authorized_keys").chmod(0o644)
    port = free_ports(1)[0]
    # PAM decides the account (the test accounts have no password: without PAM sshd
    # calls them locked); only keys are asked for.
    (d / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d / 'host_key'}\nPidFile {d / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {d / 'authorized_keys'}\nAllowUsers {OPERATOR}\nPermitRootLogin no\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM yes\nStrictModes no\nUseDNS no\n")
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # its privilege separation directory
    daemon = subprocess.Popen([str(SSHD), "-D", "-e", "-f", str(d / "sshd_config")],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(d / "sshd.log", "w"))

    def listening():
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    try:
        wait_until(listening, 10, "sshd to listen")
        yield port, d / "client_key"
    finally:
        daemon.kill()
        daemon.wait()
        shutil.rmtree(d, ignore_errors=True)


def test_fault_catalogue_an_operators_ssh_session_survives_the_sweep_after_their_job(cluster, config, conf_dir,
                                                                                     sshd):
    port, key = sshd
    users_file = write_config(conf_dir, "# operators\nje.kim\n", "localusers.backup")
    config(f"protected_users_files: [{users_file}]\n")
    pidfile = Path(tempfile.mkdtemp(prefix="leftover-login-")) / "login.pid"
    pidfile.parent.chmod(0o777)
    login = subprocess.Popen(
        ["ssh", "-i", str(key), "-p", str(port), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
         "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", f"{OPERATOR}@127.0.0.1",
         f"echo $$ > {pidfile}; sleep 600; :"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: pidfile.exists() and pidfile.read_text().strip(), 15, "the ssh login's shell")
        shell = int(pidfile.read_text())
        # sshd's session process for the operator, the login shell and its command.
        wait_until(lambda: len(cluster.pids_of_user(OPERATOR)) == 3, 10, "the operator's ssh session")
        session = cluster.pids_of_user(OPERATOR)
        assert shell in session
        stray = cluster.spawn_outside_slurm("lo_alice", ["sleep", "600"])
        log = LogWatch(cluster)
        res, job = cluster.srun(OPERATOR, ["true"])
        assert res.returncode == 0, res.stderr
        cluster.wait_gone(stray, 20)  # the job's end swept the node
        log.wait_for(summary_regex(job, "epilog"))
        log.assert_absent(r"SIGTERM pid=\d+ user=je\.kim ")
        assert all(cluster.is_alive(pid) for pid in session)
        assert login.poll() is None, login.stderr.read()
    finally:
        login.kill()
        login.wait()
        kill_quietly(*cluster.pids_of_user(OPERATOR))
        shutil.rmtree(pidfile.parent, ignore_errors=True)
