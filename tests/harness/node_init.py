"""pid 1 of one test node's pid namespace (run by `unshare --fork --pid
--mount-proc --uts`, see node_namespace.py).

    node_init.py NODE_NAME READY_FILE [SOURCE TARGET]...

Names the node (its own UTS namespace), bind-mounts each SOURCE over TARGET in
the node's own mount namespace (its /etc/hosts, its munge socket directory),
creates READY_FILE, and from then on only reaps: every process orphaned in the
namespace (double-forked strays, slurmstepds after a slurmd restart, killed
processes) becomes a child of pid 1, and pid 1 must wait for it or it stays a
zombie.  slurmd and munged are started into the namespace by the harness with
nsenter, so a slurmd restart leaves the node and its slurmstepds alive, as on
a real node.

SIGTERM or SIGINT ends it; when pid 1 of a pid namespace ends, the kernel kills
every process left in that namespace, so ending this process ends the node.
Kept deliberately tiny: the standard library only, no state.
"""

import os
import signal
import socket
import subprocess
import sys
import time


def reap(*_):
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main(argv):
    name, ready, binds = argv[1], argv[2], argv[3:]
    if os.getpid() != 1 or len(binds) % 2:
        sys.exit("usage: node_init.py NODE_NAME READY_FILE [SOURCE TARGET]... as pid 1")
    # pid 1 gets a signal from outside its namespace only if it handles it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
    socket.sethostname(name)
    for source, target in zip(binds[::2], binds[1::2]):
        subprocess.run(["/usr/bin/mount", "--bind", source, target], check=True)
    signal.signal(signal.SIGCHLD, reap)
    with open(ready, "w") as f:
        f.write(f"{name}\n")
    while True:
        reap()            # also catches a SIGCHLD that came before the handler
        time.sleep(1.0)   # a SIGCHLD runs reap() at once; this is a safety net


if __name__ == "__main__":
    main(sys.argv)
