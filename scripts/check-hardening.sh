#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Fails when a shipped binary lacks the hardening cmake/BuildFlags.cmake asks for
# (leftover_hardening): full RELRO (a GNU_RELRO segment and BIND_NOW), a stack that is not
# executable, stack canaries (__stack_chk_fail) and, for
# the programs, position independence (fortified calls, __*_chk, are reported, not
# required). leftover.so runs as root inside slurmstepd,
# leftover and leftover-query run as root too.
#   check-hardening.sh <build dir>     the build's leftover.so, leftover and leftover-query
#   check-hardening.sh --packages <dir or package>...
#                                      the same three in each .deb and .rpm named or in a
#                                      directory named
#   check-hardening.sh <file>...       those files
# Ends with one line, e.g. "hardening: 9 binaries checked, 0 lacking".
set -euo pipefail

checked=0 lacking=0
check() {  # check <file> [<name to show>]
  local file=$1 name=${2:-$1} missing=() headers dynamic symbols
  checked=$((checked + 1))
  if ! headers=$(LC_ALL=C readelf -W -h -l "$file" 2>&1); then
    echo "hardening: $name: not an ELF file: $headers"
    lacking=$((lacking + 1))
    return
  fi
  dynamic=$(LC_ALL=C readelf -W -d "$file")
  symbols=$(LC_ALL=C readelf -W --dyn-syms "$file")
  grep -q -E '^ +GNU_RELRO ' <<<"$headers" || missing+=("GNU_RELRO")
  grep -q -E '\(FLAGS\).*BIND_NOW|\(FLAGS_1\).*NOW' <<<"$dynamic" || missing+=("BIND_NOW")
  # No GNU_STACK header means an executable stack, as does one with E in its flags.
  grep -q -E '^ +GNU_STACK +(0x[0-9a-f]+ +){5}RW +0x' <<<"$headers" || missing+=("non-executable stack")
  grep -q -E ' UND +__stack_chk_fail' <<<"$symbols" || missing+=("stack protector (__stack_chk_fail)")
  # No __*_chk import does not prove the build lacks fortify: a newer compiler resolves
  # every check at compile time where the sizes are known (sid's leftover.so). Said, not failed.
  grep -q -E ' UND +__[a-z0-9_]+_chk(@|$| )' <<<"$symbols" ||
    echo "hardening: $(basename "$file"): no __*_chk call (fortify not visible in the binary; the build sets it)"
  # A program must be position independent (ELF type DYN), as a library always is.
  grep -q -E '^ +Type: +DYN ' <<<"$headers" || missing+=("PIE")
  if [ "${#missing[@]}" -gt 0 ]; then
    lacking=$((lacking + 1))
    echo "hardening: $name: lacks $(printf '%s, ' "${missing[@]}" | sed 's/, $//')"
  fi
}

# The three binaries under a directory tree (a build or an unpacked package).
check_tree() {  # check_tree <dir> <label>
  local dir=$1 label=$2 name path
  for name in leftover.so leftover leftover-query; do
    path=$(find "$dir" -type f -name "$name" -not -path '*/CMakeFiles/*' | sort | head -n1)
    if [ -z "$path" ]; then
      echo "hardening: $label: no $name"
      checked=$((checked + 1)) lacking=$((lacking + 1))
      continue
    fi
    check "$path" "$label: ${path#"$dir"/}"
  done
}

if [ "${1-}" = "--packages" ]; then
  shift
  [ $# -ge 1 ] || { echo "usage: check-hardening.sh --packages <dir or package>..." >&2; exit 2; }
  work=$(mktemp -d /tmp/leftover-hardening.XXXXXX)
  trap 'rm -rf "$work"' EXIT
  packages=()
  for arg in "$@"; do
    if [ -d "$arg" ]; then
      for package in "$arg"/*.deb "$arg"/*.rpm; do [ -f "$package" ] && packages+=("$package"); done
    else
      packages+=("$arg")
    fi
  done
  [ "${#packages[@]}" -gt 0 ] || { echo "hardening: no .deb or .rpm in $*"; exit 1; }
  for package in "${packages[@]}"; do
    unpacked=$work/$(basename "$package")
    mkdir "$unpacked"
    case $package in
      *.deb) dpkg-deb -x "$package" "$unpacked" ;;
      # rpm2archive (in rpm2cpio, which Debian's rpm depends on) writes the payload as a
      # compressed tar; tar finds out which compression from the file.
      *.rpm) rpm2archive - <"$package" >"$unpacked.tar" && tar -xf "$unpacked.tar" -C "$unpacked" ;;
    esac
    check_tree "$unpacked" "$(basename "$package")"
  done
elif [ $# -eq 1 ] && [ -d "$1" ]; then
  check_tree "$(cd "$1" && pwd)" "$1"
elif [ $# -ge 1 ]; then
  for file in "$@"; do check "$file"; done
else
  echo "usage: check-hardening.sh <build dir> | --packages <dir> | <file>..." >&2
  exit 2
fi
echo "hardening: $checked binaries checked, $lacking lacking"
[ "$lacking" -eq 0 ]
