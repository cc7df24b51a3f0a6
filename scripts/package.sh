#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds both packages into build/packages/: the .deb (CPack) and the RPM (rpmbuild
# from the source tarball). On Debian there is no rpm database to satisfy the spec's
# BuildRequires, so rpmbuild runs with --nodeps there. Inside scripts/in-release.sh
# (LEFTOVER_RELEASE=<suite>) it builds for that root's Slurm into build/pkg-<suite> and
# build/packages-<suite>, so that releases do not overwrite each other's packages.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
suffix=${LEFTOVER_RELEASE:+-$LEFTOVER_RELEASE}
build="$top/build/pkg$suffix"
out="$top/build/packages$suffix"
rm -rf "$out" "$build/_CPack_Packages" "$build/rpmbuild" "$build"/leftover_*.deb "$build"/leftover-*.tar.gz
mkdir -p "$out"

"$top/scripts/build.sh" "$build" -DCMAKE_INSTALL_PREFIX=/usr -DLEFTOVER_TESTS=OFF
(cd "$build" && cpack -G DEB >/dev/null && cpack --config CPackSourceConfig.cmake >/dev/null)
cp "$build"/leftover_*.deb "$build"/leftover-*.tar.gz "$out/"

# SLURM_VERSION_NUMBER is 0xMMmmuu: 0x160508 is 22.05.8.
version_number=$(sed -n 's/^#define SLURM_VERSION_NUMBER[[:space:]]*\(0x[0-9a-fA-F]*\).*/\1/p' /usr/include/slurm/slurm_version.h)
slurm_majmin=$(printf '%d.%02d' $(( (version_number >> 16) & 0xff )) $(( (version_number >> 8) & 0xff )))
nodeps=()
[ -f /etc/debian_version ] && nodeps=(--nodeps)
rpmbuild -bb "${nodeps[@]}" --quiet \
  --define "_topdir $build/rpmbuild" --define "_sourcedir $out" \
  --define "slurm_majmin $slurm_majmin" --define "debug_package %{nil}" \
  "$top/rpm/leftover.spec" >/dev/null
find "$build/rpmbuild/RPMS" -name '*.rpm' -exec cp {} "$out/" \;
ls -1 "$out"
