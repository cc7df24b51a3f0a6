#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Fails when a shipped binary lacks the hardening cmake/BuildFlags.cmake asks for
# (leftover_hardening): full RELRO (a GNU_RELRO segment and BIND_NOW), a stack that is not
# executable, stack canaries (__stack_chk_fail), for the programs position independence,
# and for -fcf-protection endbr64 at each exported function and the IBT/SHSTK property
# where the toolchain can keep it (fortified calls, __*_chk, are reported, not required).
# leftover.so runs as root inside slurmstepd, leftover and leftover-query run as root too.
# What a linked binary cannot show is checked in the build that made it (compiled()):
# every compile command of the shipped code has -D_GLIBCXX_ASSERTIONS,
# -fstack-clash-protection and -fcf-protection, and every object it made has the IBT/SHSTK
# property. A binary's import of std::__glibcxx_assert_fail (libstdc++ 12+) shows
# _GLIBCXX_ASSERTIONS, but its absence proves nothing (the compiler may have proven every
# check true), so it is reported like fortify; stack-clash probes are ordinary
# instructions, in no note or symbol.
#   check-hardening.sh <build dir>     the build's leftover.so, leftover and leftover-query,
#                                      and its compile commands and objects
#   check-hardening.sh --packages <dir or package>...
#                                      the same three in each .deb and .rpm named or in a
#                                      directory named
#   check-hardening.sh --compiled <build dir>...
#                                      the compile commands and objects only (the builds
#                                      the packages came from: scripts/package.sh)
#   check-hardening.sh <file>...       those files
# A build's compile commands are its compile_commands.json (scripts/build.sh and
# scripts/package.sh export it). Ends with one line, e.g.
# "hardening: 9 binaries checked, 0 lacking; 120 compiles checked, 0 lacking".
set -euo pipefail

checked=0 lacking=0 compiles=0 compiles_lacking=0

# -fcf-protection marks each object with the x86 IBT and SHSTK property; the linker keeps
# it in a binary only when every input has it, the C runtime's start files included. Debian
# 12's glibc is built without CET: its Scrt1.o, crti.o and crtn.o lack it (ld -z
# cet-report=warning names them), so nothing linked there has it. Required in the binaries
# where all the toolchain's start files have it; else said once, and compiled() checks it.
cet_required=""
cet_probe() {
  local crt path without=()
  for crt in Scrt1.o crti.o crtn.o crtbeginS.o crtendS.o; do
    path=$("${CXX:-c++}" -print-file-name="$crt" 2>/dev/null || true)
    [ -f "$path" ] && LC_ALL=C readelf -n "$path" 2>/dev/null | grep -q 'x86 feature: IBT, SHSTK' ||
      without+=("$crt")
  done
  cet_required=1
  if [ "${#without[@]}" -gt 0 ]; then
    cet_required=0
    echo "hardening: IBT/SHSTK (-fcf-protection) not required in the binaries: the toolchain's" \
      "${without[*]} lack it (a C library built without CET), so no link keeps it; the build's objects must have it"
  fi
}

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
  # The same for _GLIBCXX_ASSERTIONS: a failed check calls std::__glibcxx_assert_fail.
  grep -q -E ' UND +_ZSt21__glibcxx_assert_failPKciS0_S0_(@|$| )' <<<"$symbols" ||
    echo "hardening: $(basename "$file"): no std::__glibcxx_assert_fail call (_GLIBCXX_ASSERTIONS not visible in the binary; the build sets it)"
  # A program must be position independent (ELF type DYN), as a library always is.
  grep -q -E '^ +Type: +DYN ' <<<"$headers" || missing+=("PIE")
  # What shows -fcf-protection in a binary whatever the start files: the functions it
  # exports (leftover.so's SPANK hooks; the programs' template instances that a library
  # also uses) begin with endbr64, the landing pad an indirect call needs under IBT.
  local address function exported=0 unmarked=0 example=""
  while read -r address function; do
    exported=$((exported + 1))
    LC_ALL=C objdump -d "$file" --start-address="0x$address" --stop-address="$(printf '0x%x' $((0x$address + 4)))" |
      grep -q -E '^ +[0-9a-f]+:\s+f3 0f 1e fa\s+endbr64' && continue
    unmarked=$((unmarked + 1))
    example=${example:-$function}
  done < <(awk '$4 == "FUNC" && $7 != "UND" && $3 > 0 {print $2, $8}' <<<"$symbols")
  [ "$unmarked" -eq 0 ] || missing+=("endbr64 at $unmarked of $exported exported functions, e.g. ${example%%@*} (-fcf-protection)")
  [ -n "$cet_required" ] || cet_probe
  if [ "$cet_required" = 1 ]; then
    LC_ALL=C readelf -n "$file" | grep -q 'x86 feature: IBT, SHSTK' || missing+=("IBT/SHSTK (-fcf-protection)")
  fi
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

# compiled <build dir>: each compile of the shipped code (not tests/, bench/) in the build's
# compile_commands.json has the flags that leave no trace in a linked binary, the last of
# each kind (a later -U or =none undoes one) being the one that counts; and its object
# has the IBT/SHSTK property, which shows -fcf-protection reached the compiler.
compiled() {
  local dir=$1 object name flags unchecked=0 before=$compiles
  if [ ! -f "$dir/compile_commands.json" ]; then
    echo "hardening: $dir: no compile_commands.json (configure with -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)"
    compiles=$((compiles + 1)) compiles_lacking=$((compiles_lacking + 1))
    return
  fi
  # One line per compile: the object, its name in the build, what its command lacks.
  while IFS=$'\t' read -r object name flags; do
    compiles=$((compiles + 1))
    if [ -z "$flags" ] && [ ! -f "$object" ]; then
      unchecked=$((unchecked + 1))  # not built (yet): its command is checked, not its object
    elif [ -z "$flags" ] && ! LC_ALL=C readelf -n "$object" 2>/dev/null | grep -q 'x86 feature: IBT, SHSTK'; then
      flags="IBT/SHSTK property in the object"
    fi
    if [ -n "$flags" ]; then
      compiles_lacking=$((compiles_lacking + 1))
      echo "hardening: $dir: $name: lacks $flags"
    fi
  done < <(/usr/bin/python3 - "$dir" <<'PYTHON'
import json, os, re, shlex, sys
build = os.path.realpath(sys.argv[1])
wanted = [("-D_GLIBCXX_ASSERTIONS", r"-[DU]_GLIBCXX_ASSERTIONS(=.*)?", r"-D.*"),
          ("-fstack-clash-protection", r"-f(no-)?stack-clash-protection", r"-fstack-clash-protection"),
          ("-fcf-protection", r"-fcf-protection(=.*)?", r"-fcf-protection(=full)?")]
for entry in json.load(open(os.path.join(build, "compile_commands.json"))):
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    output = entry.get("output") or args[args.index("-o") + 1]
    output = os.path.realpath(os.path.join(entry["directory"], output))
    name = os.path.relpath(output, build)
    if name.split(os.sep)[0] in ("tests", "bench"):
        continue
    lacks = []
    for flag, kind, good in wanted:
        last = [arg for arg in args if re.fullmatch(kind, arg)][-1:]
        if not last or not re.fullmatch(good, last[0]):
            lacks.append(flag)
    print(f"{output}\t{name}\t{', '.join(lacks)}")
PYTHON
)
  if [ "$compiles" -eq "$before" ]; then  # an unreadable file, or a build of nothing shipped
    echo "hardening: $dir: no compile of the shipped code in compile_commands.json"
    compiles=$((compiles + 1)) compiles_lacking=$((compiles_lacking + 1))
  fi
  [ "$unchecked" -eq 0 ] || echo "hardening: $dir: $unchecked objects not built, their commands checked"
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
elif [ "${1-}" = "--compiled" ]; then
  shift
  [ $# -ge 1 ] || { echo "usage: check-hardening.sh --compiled <build dir>..." >&2; exit 2; }
  for dir in "$@"; do compiled "$dir"; done
elif [ $# -eq 1 ] && [ -d "$1" ]; then
  check_tree "$(cd "$1" && pwd)" "$1"
  compiled "$1"
elif [ $# -ge 1 ]; then
  for file in "$@"; do check "$file"; done
else
  echo "usage: check-hardening.sh <build dir> | --packages <dir> | --compiled <build dir> | <file>..." >&2
  exit 2
fi
parts=()
[ "$checked" -eq 0 ] && [ "$compiles" -gt 0 ] || parts+=("$checked binaries checked, $lacking lacking")
[ "$compiles" -eq 0 ] || parts+=("$compiles compiles checked, $compiles_lacking lacking")
echo "hardening: $(printf '%s; ' "${parts[@]}" | sed 's/; $//')"
[ "$lacking" -eq 0 ] && [ "$compiles_lacking" -eq 0 ]
