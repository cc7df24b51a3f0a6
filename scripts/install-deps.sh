#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Installs every Debian 12 package the build, the tests and the demo need.
# Safe to run again: it asks apt only for what is missing.
set -euo pipefail

packages=(
  # build
  g++ cmake make pkg-config
  libslurm-dev libyaml-cpp-dev libfmt-dev nlohmann-json3-dev doctest-dev
  # the fuzz targets (scripts/fuzz.sh): clang++ and its sanitizer and libFuzzer runtimes
  clang libclang-rt-14-dev
  # the format check and clang-tidy (scripts/lint.sh)
  clang-format clang-tidy
  # a real Slurm for the end-to-end tests and the demo
  slurmctld slurmd slurm-client munge
  # end-to-end test runner and the tools the tests use
  python3 python3-pytest util-linux procps passwd man-db
  # an operator's ssh login on the node (test_plugin_ssh.py runs its own sshd)
  openssh-server openssh-client
  # the metrics and check --json tests: a real Prometheus text parser, a JSON Schema validator
  python3-prometheus-client python3-jsonschema
  # packages: the .deb (CPack needs dpkg-shlibdeps and file) and the RPM; readelf for
  # their hardening (scripts/check-hardening.sh; rpm brings rpm2archive)
  dpkg-dev file rpm binutils
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages (${missing[*]}); run as root to install them" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# The tests and the demo start their own munged, slurmctld, slurmd and sshd, hermetically:
# the packages' own services (a system sshd on port 22, munged, slurmd) must not start
# on install. policy-rc.d exiting 101 tells invoke-rc.d so; an existing one is left alone.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\n# leftover install-deps.sh: no service starts while it installs\nexit 101\n' >/usr/sbin/policy-rc.d
  chmod 0755 /usr/sbin/policy-rc.d
  trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
# The downloaded .deb files (1.4 GB on a fresh machine) are not needed again: CI's
# machines may have little disk to spare (one ran out mid-suite).
apt-get clean
