#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs a command inside the Debian root of another Slurm release, as a throwaway
# machine of its own:
#   in-release.sh <suite> <command> [args...]      suite: trixie | sid
# - fresh pid, mount, UTS, network and IPC namespaces; whatever the command starts
#   (daemons included) is killed when it returns, and `ps -e` inside shows only them;
#   the other way round it is not isolated: the host's pid namespace sees every process
#   inside, so a host e2e run's plugin, sweeping the same test accounts, kills them
#   (an e2e run in here holds /tmp/leftover-e2e.lock too, see test-release.sh);
# - LEFTOVER_RELEASE_HOST_PIDS=1: no pid namespace of its own, for a command that must
#   name processes as the kernel's tracefs and fanotify do (the soak's witness); its /proc
#   shows the host's processes. What it leaves running when it returns (or when this
#   script gets a signal) is every process in its mount namespace: those get SIGTERM,
#   then SIGKILL 10 s later (its test nodes' pid namespaces end with their pid 1);
# - the root (made or reused by release-root.sh) sits under a tmpfs-backed overlay:
#   useradd, /etc edits, /tmp, /var all vanish afterwards, the cached root stays clean;
# - the project tree is bind-mounted read-write at the same path as on the host, so
#   host paths work in arguments and error messages; by convention a release's build
#   directory is build/<suite> in the tree, and it persists between runs;
# - /dev and /sys are bind-mounted, /proc, /dev/shm and /tmp are fresh;
# - lo is up with 127.0.0.1 and 127.0.1.1 (without a second loopback address glibc's
#   AI_ADDRCONFIG resolves nothing and the Slurm daemons cannot bind), the host name
#   is $LEFTOVER_RELEASE_HOSTNAME (default leftover-<suite>) and /etc/hosts maps it;
# - the environment is clean except TERM, CI and LEFTOVER_* variables; LEFTOVER_RELEASE
#   is set to the suite.
# The command starts in the current directory if it lies in the tree, else at its top.
# Its exit code is passed through; 77 means the root could not be made (see
# release-root.sh).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd -P)

# end_run <mount namespace> <pids to spare>: with host pids, what a run left running: every
# process in its mount namespace gets SIGTERM, and SIGKILL once 10 s have passed.
in_run() {
  local self=$BASHPID pid
  # One listing (ls), not a readlink per process: "... /proc/<pid>/ns/mnt -> mnt:[...]";
  # the listing's own processes (gone once it has ended) are not in the run.
  # shellcheck disable=SC2012
  for pid in $(ls -l /proc/[0-9]*/ns/mnt 2>/dev/null | awk -v ns="$1" -v spare=" $2 $self " '
      $NF == ns { split($(NF - 2), part, "/"); if (index(spare, " " part[3] " ") == 0) print part[3] }'); do
    [ ! -d "/proc/$pid" ] || echo "$pid"
  done
}
end_run() {
  local pids end=$((SECONDS + 10))
  pids=$(in_run "$1" "$2")
  [ -n "$pids" ] || return 0
  # shellcheck disable=SC2086  # a list of pids
  kill -TERM $pids 2>/dev/null || true
  while [ -n "$(in_run "$1" "$2")" ] && [ $SECONDS -lt $end ]; do sleep 0.2; done
  pids=$(in_run "$1" "$2")
  # shellcheck disable=SC2086
  [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
}

if [ "${1-}" = "--inner" ]; then
  # Second stage: pid 1 of the new namespaces, still in the host's file system view.
  shift
  suite=$1 root=$2 mnt=$3 cwd=$4
  shift 4
  exec 9<&-  # the root's lock stays with unshare, out of the command's reach
  m="$mnt/merged"
  mount --make-rprivate /
  mount -t tmpfs -o mode=0755 leftover-release "$mnt"
  mkdir "$mnt/upper" "$mnt/work" "$m"
  mount -t overlay overlay -o "lowerdir=$root,upperdir=$mnt/upper,workdir=$mnt/work" "$m"
  mount --rbind /dev "$m/dev"
  # A private /dev/shm: the host's would let files leak out of the run.
  mount -t tmpfs -o mode=1777,nosuid,nodev shm "$m/dev/shm"
  mount --rbind /sys "$m/sys"
  mount -t proc proc "$m/proc"
  # /tmp on a tmpfs of its own, not the overlay: fanotify's file handles (the soak's
  # witness) need a file system that can make them, which overlayfs cannot.
  mount -t tmpfs -o mode=1777,nodev tmp "$m/tmp"
  mkdir -p "$m$top"
  mount --bind "$top" "$m$top"
  # Hide the roots themselves from inside (700 MB each that a find or a glob over
  # the tree would otherwise walk, and that nothing inside should write to).
  roots=$(dirname "$(dirname "$root")")
  case "$roots/" in
    "$top"/*) mount -t tmpfs -o ro,size=4k,mode=0755 hidden "$m$roots" ;;
  esac

  name=${LEFTOVER_RELEASE_HOSTNAME:-leftover-$suite}
  echo "$name" >/proc/sys/kernel/hostname
  echo "$name" >"$m/etc/hostname"
  printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' "$name" >"$m/etc/hosts"
  chroot "$m" ip link set lo up
  chroot "$m" ip addr add 127.0.1.1/8 dev lo

  env=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
       LANG=C.UTF-8 LEFTOVER_RELEASE="$suite")
  while IFS= read -r -d '' var; do
    case "$var" in TERM=* | CI=* | LEFTOVER_*) env+=("$var") ;; esac
  done < <(env -0)
  # Not exec: this shell stays pid 1 and reaps orphaned daemons; when it exits, the
  # kernel kills everything left in the pid namespace (with host pids: end_run does).
  rc=0
  # shellcheck disable=SC2016  # $1 and $@ are the inner shell's
  chroot "$m" /usr/bin/env -i "${env[@]}" /bin/sh -c 'cd "$1" && shift && exec "$@"' sh "$cwd" "$@" || rc=$?
  [ "${LEFTOVER_RELEASE_HOST_PIDS:-0}" != 1 ] || end_run "$(readlink /proc/self/ns/mnt)" "$$ $PPID"
  exit "$rc"
fi

[ $# -ge 2 ] || { echo "usage: in-release.sh trixie|sid <command> [args...]" >&2; exit 2; }
suite=$1
shift
# shellcheck source=scripts/lib.sh
. "$top/scripts/lib.sh"
require_root "namespaces, mounts, chroot"
root=$("$top/scripts/release-root.sh" "$suite" | tail -n1) || exit $?
# Its real path: when build/roots is a symlink to roots kept elsewhere, the roots are not in
# the tree, and hiding "build/roots" inside would hide (through the symlink) the overlay itself.
root=$(cd "$root" && pwd -P)
base=$(dirname "$root")
# An empty directory on the host; each run mounts its own tmpfs on it in its own
# mount namespace, so runs at once do not meet.
mkdir -p "$base/mnt"
cwd=$(pwd -P)
case "$cwd/" in "$top"/*) ;; *) cwd=$top ;; esac

# A shared lock for the run: release-root.sh --rebuild waits until no run uses the root.
exec 9<"$base/lock"
flock -s 9
# unshare blocks SIGTERM and SIGINT while its child runs, and pid 1 of a namespace
# ignores signals it has no handler for: so this script stays, and a signal for it
# SIGKILLs unshare, whose death (--kill-child) kills pid 1 and the whole namespace.
# (<&0: a background command would otherwise get /dev/null as its input.)
pid_ns=(--pid --mount-proc)
[ "${LEFTOVER_RELEASE_HOST_PIDS:-0}" != 1 ] || pid_ns=()
unshare "${pid_ns[@]}" --mount --uts --net --ipc --fork --kill-child \
  "$top/scripts/in-release.sh" --inner "$suite" "$root" "$base/mnt" "$cwd" "$@" <&0 9<&- &
child=$!
signal=0
# With host pids the run's processes outlive unshare: they are ended by mount namespace
# (unshare made it for itself before it forked).
# shellcheck disable=SC2317  # called from the traps below
stop_run() {
  local namespace=""
  [ "${LEFTOVER_RELEASE_HOST_PIDS:-0}" != 1 ] || namespace=$(readlink "/proc/$child/ns/mnt" 2>/dev/null || true)
  kill -KILL "$child" 2>/dev/null || true
  [ -z "$namespace" ] || end_run "$namespace" "$$"
}
for sig in HUP INT TERM; do
  # shellcheck disable=SC2064
  trap "signal=\$(kill -l $sig); stop_run" "$sig"
done
rc=0
until wait "$child"; do
  rc=$?
  kill -0 "$child" 2>/dev/null || break  # else a trap interrupted wait: wait again
done
[ "$signal" -eq 0 ] || exit $((128 + signal))
exit "$rc"
