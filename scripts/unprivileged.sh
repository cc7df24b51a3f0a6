#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs a command as an ordinary user: as root, as nobody (no supplementary groups, no
# capabilities, no_new_privs: a setuid program gains nothing); as any other user, as
# that user. ctest runs the entries of unit_tests_pure through it (tests/CMakeLists.txt),
# so a test there that needs root fails also when the unit tests run as root.
#   scripts/unprivileged.sh <program> [args...]
# LEFTOVER_UNPRIVILEGED_USER names another user than nobody.
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then
  exec "$@"
fi
user=${LEFTOVER_UNPRIVILEGED_USER:-nobody}
uid=$(id -u "$user")
gid=$(id -g "$user")
drop=(setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all --no-new-privs)
# A build tree the user cannot reach (one under /root, or made with umask 077) would
# otherwise fail every test with a bare "Permission denied".
case $1 in
  */*)
    if [ -e "$1" ] && ! "${drop[@]}" test -x "$1"; then
      echo "unprivileged.sh: $user (uid $uid) cannot run $1: the build directory and the directories above it must be readable and searchable by others" >&2
      exit 126
    fi
    ;;
esac
exec "${drop[@]}" -- "$@"
