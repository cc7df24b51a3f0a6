#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds both packages into build/packages/: the .deb (CPack) and the RPM (rpmbuild
# from the source tarball, with rpm's own build flags), then checks the hardening of the
# binaries they ship and, for what a binary cannot show, the compile commands and objects
# of both builds (check-hardening.sh).
#   scripts/package.sh                 configures and builds build/pkg for the .deb first
#   scripts/package.sh <build dir>     the .deb from that build, compiled no second time
#                                      (it must be configured with -DCMAKE_INSTALL_PREFIX=/usr)
# On Debian there is no rpm database to satisfy the spec's BuildRequires, so rpmbuild runs
# with --nodeps there. Inside scripts/in-release.sh (LEFTOVER_RELEASE=<suite>) it builds
# for that root's Slurm into build/pkg-<suite> and build/packages-<suite>, so that
# releases do not overwrite each other's packages.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
suffix=${LEFTOVER_RELEASE:+-$LEFTOVER_RELEASE}
out="$top/build/packages$suffix"
if [ $# -ge 1 ]; then
  build=$(cd "$1" && pwd)
  prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
  if [ "$prefix" != /usr ]; then
    echo "package.sh: $build is configured for prefix '${prefix:-?}', a package needs -DCMAKE_INSTALL_PREFIX=/usr" >&2
    exit 1
  fi
  cmake --build "$build" -j "$(nproc)"  # nothing to do when the caller just built it
else
  build="$top/build/pkg$suffix"
  "$top/scripts/build.sh" "$build" -DCMAKE_INSTALL_PREFIX=/usr -DLEFTOVER_TESTS=OFF
fi
rm -rf "$out" "$build/_CPack_Packages" "$build/rpmbuild" "$build"/leftover_*.deb "$build"/leftover-*.tar.gz
mkdir -p "$out"
(cd "$build" && cpack -G DEB >/dev/null && cpack --config CPackSourceConfig.cmake >/dev/null)
cp "$build"/leftover_*.deb "$build"/leftover-*.tar.gz "$out/"

# SLURM_VERSION_NUMBER is 0xMMmmuu: 0x160508 is 22.05.8.
version_number=$(sed -n 's/^#define SLURM_VERSION_NUMBER[[:space:]]*\(0x[0-9a-fA-F]*\).*/\1/p' /usr/include/slurm/slurm_version.h)
slurm_majmin=$(printf '%d.%02d' $(( (version_number >> 16) & 0xff )) $(( (version_number >> 8) & 0xff )))
nodeps=()
[ -f /etc/debian_version ] && nodeps=(--nodeps)
# The RPM's one compile. ccache, when installed, through CMake's environment default; so
# is its compile_commands.json, which the hardening check reads. --noclean keeps its build
# tree for that (rpm 4.20 removes it after a successful build); the next run removes it.
launcher=()
command -v ccache >/dev/null && launcher=(CMAKE_CXX_COMPILER_LAUNCHER=ccache)
env "${launcher[@]}" CMAKE_EXPORT_COMPILE_COMMANDS=ON rpmbuild -bb --noclean "${nodeps[@]}" --quiet \
  --define "_topdir $build/rpmbuild" --define "_sourcedir $out" \
  --define "slurm_majmin $slurm_majmin" --define "debug_package %{nil}" \
  "$top/rpm/leftover.spec" >"$build/rpmbuild.log" 2>&1 ||
  { tail -n 30 "$build/rpmbuild.log" >&2; echo "package.sh: rpmbuild failed (log: $build/rpmbuild.log)" >&2; exit 1; }
find "$build/rpmbuild/RPMS" -name '*.rpm' -exec cp {} "$out/" \;
ls -1 "$out"
if command -v rpm2archive >/dev/null; then
  "$top/scripts/check-hardening.sh" --packages "$out"
else
  # No rpm2archive to unpack the RPM: its binaries as rpmbuild left them, and the .deb.
  "$top/scripts/check-hardening.sh" "$build/rpmbuild/BUILD"
  "$top/scripts/check-hardening.sh" --packages "$out"/*.deb
fi
# The .deb's build and the RPM's (wherever this rpm's BUILD layout puts it).
rpm_build=$(find "$build/rpmbuild/BUILD" -name CMakeCache.txt -printf '%h\n' | head -n1)
"$top/scripts/check-hardening.sh" --compiled "$build" "${rpm_build:-$build/rpmbuild/BUILD}"
# The RPM's build tree (300 MB) is not needed once checked: a CI machine's disk may be small.
rm -rf "$build/rpmbuild/BUILD" "$build/rpmbuild/BUILDROOT"
