#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Configures and builds one flavour of the project: build.sh <dir> [cmake options...]
# LEFTOVER_BUILD_TARGET=<target> builds that target (and what it needs) only.
# With ccache installed it is the compiler launcher (never required; an option
# -DCMAKE_CXX_COMPILER_LAUNCHER=... given here wins). It writes compile_commands.json,
# which scripts/check-hardening.sh and clang-tidy read.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=$1
shift
launcher=()
# The unit tests' precompiled header: ccache caches its users only with this sloppiness.
command -v ccache >/dev/null &&
  launcher=("-DCMAKE_CXX_COMPILER_LAUNCHER=env;CCACHE_SLOPPINESS=pch_defines,time_macros;ccache")
cmake -S "$top" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_EXPORT_COMPILE_COMMANDS=ON "${launcher[@]}" "$@" >/dev/null
cmake --build "$dir" -j "$(nproc)" ${LEFTOVER_BUILD_TARGET:+--target "$LEFTOVER_BUILD_TARGET"}
