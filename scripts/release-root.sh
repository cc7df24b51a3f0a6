#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Makes, or reuses, a Debian root for another Slurm release:
#   release-root.sh <suite> [--rebuild]      suite: trixie (Slurm 24.11) | sid (Slurm 26.05)
# The root lands in build/roots/<suite>/root (LEFTOVER_ROOTS_DIR moves build/roots);
# the last line printed is its path. Exit codes: 0 ready, 77 the Debian archive
# cannot provide the suite right now (reason on stderr, the caller reports a skip),
# anything else is a local error.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

usage() { echo "usage: release-root.sh trixie|sid [--rebuild]" >&2; exit 2; }
[ $# -ge 1 ] || usage
suite=$1
rebuild=0
case "${2-}" in --rebuild) rebuild=1 ;; "") ;; *) usage ;; esac
case "$suite" in trixie | sid) ;; *) usage ;; esac

# What the build, the unit tests, the packages (package.sh: .deb and RPM) and the
# end-to-end tests (a real Slurm; man for the man-page test; sshd for an operator's
# ssh login) need inside the root.
packages=(
  slurmd slurmctld slurm-client munge libslurm-dev
  g++ cmake make pkg-config libyaml-cpp-dev libfmt-dev doctest-dev nlohmann-json3-dev
  python3 python3-pytest python3-prometheus-client python3-jsonschema
  procps util-linux iproute2 psmisc passwd dpkg-dev file
  rpm man-db openssh-server openssh-client
)

# shellcheck source=scripts/lib.sh
. "$top/scripts/lib.sh"
require_root "debootstrap needs it"

roots=${LEFTOVER_ROOTS_DIR:-$top/build/roots}
base="$roots/$suite"
root="$base/root"
stamp="$base/complete"
# The stamp holds the package list: a root made for another list is made again.
want=$(printf '%s\n' "${packages[@]}" | sort)
mkdir -p "$base"

complete() { [ -f "$stamp" ] && [ -d "$root" ] && [ "$(cat "$stamp")" = "$want" ]; }

# Runs in the root hold the lock shared (in-release.sh); making the root takes it
# exclusively, so two callers never build at once and a root is never replaced
# under a running namespace.
exec 9>>"$base/lock"
flock -s 9
if [ "$rebuild" -eq 0 ] && complete; then
  echo "$root"
  exit 0
fi
flock -x 9
if [ "$rebuild" -eq 0 ] && complete; then  # another caller made it while we waited
  echo "$root"
  exit 0
fi

# The archive this machine's apt already uses (the only one it can reach): the URI of
# the first "deb" source for the host's own suite, deb822 or one-line format.
mirror() {
  local codename files=()
  # shellcheck disable=SC1091
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [ -f /etc/apt/sources.list ] && files+=(/etc/apt/sources.list)
  for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && files+=("$f")
  done
  [ "${#files[@]}" -gt 0 ] || return 0
  awk -v codename="$codename" '
    function flush() {
      if (!found && types ~ /(^|[ \t])deb([ \t]|$)/ && (" " suites " ") ~ (" " codename " ") && uris != "") {
        split(uris, u, /[ \t]+/); print u[1]; found = 1; exit
      }
      types = ""; suites = ""; uris = ""
    }
    FNR == 1 { flush() }
    FILENAME ~ /\.sources$/ {
      if ($0 ~ /^[ \t]*$/) { flush(); next }
      if ($0 ~ /^[ \t]*#/) next
      line = $0; key = tolower(line); sub(/:.*/, "", key)
      val = line; sub(/^[^:]*:[ \t]*/, "", val)
      if (key == "types") types = val
      else if (key == "suites") suites = val
      else if (key == "uris") uris = val
      next
    }
    {
      flush()
      sub(/#.*/, "")
      if ($1 != "deb") next
      i = 2
      if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
      if ($(i + 1) == codename) { print $i; found = 1; exit }
    }
    END { flush() }
  ' "${files[@]}"
}
url=${LEFTOVER_DEBIAN_MIRROR:-$(mirror)}
if [ -z "$url" ]; then
  echo "release-root.sh: found no Debian archive in /etc/apt/sources.list{,.d}" >&2
  exit 1
fi

if ! command -v debootstrap >/dev/null; then
  echo "release-root.sh: installing debootstrap" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap </dev/null >/dev/null ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap </dev/null >/dev/null; }
fi

# A half-made root (no stamp) is thrown away. debootstrap's mounts stay in its own
# mount namespace (below), so nothing is mounted in there; --one-file-system is the
# belt to those braces.
rm -f "$stamp"
rm -rf --one-file-system "$root" "$base/partial"
log="$base/debootstrap.log"
start=$SECONDS
echo "release-root.sh: debootstrap $suite from $url (1-3 min)" >&2
# Own pid and mount namespaces: whatever a package's install script starts, and the
# /proc and /sys debootstrap mounts, end with debootstrap.
if ! unshare --pid --mount --fork --kill-child \
  debootstrap --variant=minbase --include="$(IFS=,; echo "${packages[*]}")" \
  "$suite" "$base/partial" "$url" >"$log" 2>&1 </dev/null; then
  # A failure here is the archive's (unreachable, mid-transition, a package missing
  # or uninstallable today), not the project's: say why in one line and exit 77.
  reason=$(grep -m1 -E '^(E|W): ' "$log" || tail -n1 "$log")
  [ -f "$base/partial/debootstrap/debootstrap.log" ] && cp "$base/partial/debootstrap/debootstrap.log" "$base/debootstrap-inner.log"
  rm -rf --one-file-system "$base/partial"
  echo "release-root.sh: cannot make a $suite root from $url: ${reason//$'\n'/ } (log: $log)" >&2
  exit 77
fi

# debootstrap removes its own policy-rc.d when done: put one back so that anything
# installed later never starts a service of the root on the host.
printf '#!/bin/sh\n# leftover: never start services in this root\nexit 101\n' >"$base/partial/usr/sbin/policy-rc.d"
chmod 755 "$base/partial/usr/sbin/policy-rc.d"
# Package caches are not needed again; dropping them saves ~150 MB per root.
rm -rf "$base/partial/var/cache/apt/archives/"*.deb
mv "$base/partial" "$root"
echo "$want" >"$stamp"
echo "release-root.sh: $suite root ready in $((SECONDS - start)) s, $(du -sh "$root" | cut -f1)" >&2
echo "$root"
