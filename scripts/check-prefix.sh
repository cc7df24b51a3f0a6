#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Fails when a directory derived from the install prefix does not follow it: a build
# directory configured for one prefix and reconfigured for another must install where a
# fresh build for the second one does (the demo's /usr/local build reused for the /usr
# packages shipped the plugin in /usr/local). A directory given explicitly stays; a build
# directory configured before the plugin directory followed the prefix (its cache holds
# the value derived then) follows it after its next configure. Configures only, in
# throwaway directories (a few seconds each); reads where cmake_install.cmake puts leftover.so.
# Ends with one line, e.g. "prefix: 4 checks, 0 failed".
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/leftover-prefix.XXXXXX)
trap 'rm -rf "$work"' EXIT

configure() {  # configure <dir> <cmake options...>
  local dir=$1
  shift
  cmake -S "$top" -B "$dir" -DLEFTOVER_TESTS=OFF "$@" >"$dir.log" 2>&1 ||
    { cat "$dir.log" >&2; echo "prefix: configuring $dir failed" >&2; exit 1; }
}
# Where the build installs leftover.so: the DESTINATION of its file(INSTALL) line.
plugin_dir() {  # plugin_dir <dir>
  sed -n 's/.*file(INSTALL DESTINATION "\([^"]*\)".*\/leftover\.so").*/\1/p' "$1/cmake_install.cmake"
}
checks=0 failed=0
expect() {  # expect <what> <actual> <expected>
  checks=$((checks + 1))
  if [ "$2" = "$3" ]; then
    echo "prefix: $1: $2"
  else
    failed=$((failed + 1))
    echo "prefix: $1: FAILED: leftover.so goes to '$2', expected '$3'"
  fi
}

configure "$work/usr" -DCMAKE_INSTALL_PREFIX=/usr
usr=$(plugin_dir "$work/usr")
configure "$work/local" -DCMAKE_INSTALL_PREFIX=/usr/local
local_dir=$(plugin_dir "$work/local")
if [ -z "$usr" ] || [ "$usr" = "$local_dir" ]; then
  echo "prefix: no plugin directory derived from the prefix ('$usr', '$local_dir')"
  exit 1
fi

# /usr/local, then /usr: where a fresh /usr build installs; and back.
configure "$work/local" -DCMAKE_INSTALL_PREFIX=/usr
expect "/usr/local reconfigured for /usr" "$(plugin_dir "$work/local")" "$usr"
configure "$work/local" -DCMAKE_INSTALL_PREFIX=/usr/local
expect "then for /usr/local again" "$(plugin_dir "$work/local")" "$local_dir"

# An explicit directory stays across a change of prefix.
configure "$work/explicit" -DCMAKE_INSTALL_PREFIX=/usr/local -DLEFTOVER_SLURM_PLUGIN_DIR=/opt/slurm/plugins
configure "$work/explicit" -DCMAKE_INSTALL_PREFIX=/usr
expect "explicit directory, prefix changed" "$(plugin_dir "$work/explicit")" /opt/slurm/plugins

# A build directory from before: its cache holds the directory derived for /usr/local and
# no mark that the entry is empty by default (-U removes it, and it is set again at once).
configure "$work/old" -DCMAKE_INSTALL_PREFIX=/usr/local
configure "$work/old" -U LEFTOVER_PLUGIN_DIR_FOLLOWS_PREFIX -DLEFTOVER_SLURM_PLUGIN_DIR="$local_dir"
configure "$work/old" -DCMAKE_INSTALL_PREFIX=/usr
expect "earlier build directory reconfigured for /usr" "$(plugin_dir "$work/old")" "$usr"

echo "prefix: $checks checks, $failed failed"
[ "$failed" -eq 0 ]
