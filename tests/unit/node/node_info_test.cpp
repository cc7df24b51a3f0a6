// SPDX-License-Identifier: GPL-2.0-or-later
#include "node_info.hpp"

#include <doctest/doctest.h>

using namespace leftover::node;

TEST_CASE("SlurmdSpoolDir and SlurmdPidFile are expanded as slurmd does it") {
    CHECK(expand_slurmd_path("/var/spool/slurmd", "n1", "host") == "/var/spool/slurmd");
    CHECK(expand_slurmd_path("/var/spool/slurmd/%n", "n1", "host") == "/var/spool/slurmd/n1");
    CHECK(expand_slurmd_path("/var/spool/%h/slurmd", "n1", "host") == "/var/spool/host/slurmd");
    CHECK(expand_slurmd_path("/s/%h/%n", "n1", "host") == "/s/host/n1");
    CHECK(expand_slurmd_path("/run/slurmd-%n.pid", "n1", "host") == "/run/slurmd-n1.pid");
}
