// SPDX-License-Identifier: GPL-2.0-or-later
#include "node_info.hpp"

#include <doctest/doctest.h>

using namespace leftover::node;

TEST_CASE("SlurmdSpoolDir is expanded as slurmd does it") {
    CHECK(expand_spool_dir("/var/spool/slurmd", "n1", "host") == "/var/spool/slurmd");
    CHECK(expand_spool_dir("/var/spool/slurmd/%n", "n1", "host") == "/var/spool/slurmd/n1");
    CHECK(expand_spool_dir("/var/spool/%h/slurmd", "n1", "host") == "/var/spool/host/slurmd");
    CHECK(expand_spool_dir("/s/%h/%n", "n1", "host") == "/s/host/n1");
}
