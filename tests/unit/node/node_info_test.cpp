// SPDX-License-Identifier: GPL-2.0-or-later
#include "node/node_info.hpp"

#include <doctest/doctest.h>

using namespace leftover::node;

TEST_CASE("node info: SlurmdSpoolDir and SlurmdPidFile are expanded as slurmd does it") {
    CHECK(expand_slurmd_path("/var/spool/slurmd", "n1", "host") == "/var/spool/slurmd");
    CHECK(expand_slurmd_path("/var/spool/slurmd/%n", "n1", "host") == "/var/spool/slurmd/n1");
    CHECK(expand_slurmd_path("/var/spool/%h/slurmd", "n1", "host") == "/var/spool/host/slurmd");
    CHECK(expand_slurmd_path("/s/%h/%n", "n1", "host") == "/s/host/n1");
    CHECK(expand_slurmd_path("/run/slurmd-%n.pid", "n1", "host") == "/run/slurmd-n1.pid");
}

TEST_CASE("fault catalogue: every node's spool dir and name, each dir once, a running node's must exist") {
    NodeInfo info;
    info.node_name = "n1";
    info.spool_dir = "/spool/n1";
    add_host_node(info, {"n1", "/spool/n1", true});  // the node itself: not another
    add_host_node(info, {"n2", "/spool/n2", false});
    add_host_node(info, {"n3", "/spool/shared", false});
    add_host_node(info, {"n4", "/spool/shared", true});
    add_host_node(info, {"n2", "/spool/n2", true});  // seen running after slurm.conf named it
    REQUIRE(info.other_nodes.size() == 3);
    CHECK(info.other_nodes[0] == HostNode{"n2", "/spool/n2", true});

    const leftover::steps::StepSockets where = info.step_sockets();
    CHECK(where.node_names == std::vector<std::string>{"n1", "n2", "n3", "n4"});
    REQUIRE(where.spool_dirs.size() == 3);
    CHECK(where.spool_dirs[0].path == "/spool/n1");
    CHECK(where.spool_dirs[0].must_exist);
    CHECK(where.spool_dirs[1].path == "/spool/n2");
    CHECK(where.spool_dirs[1].must_exist);
    CHECK(where.spool_dirs[2].path == "/spool/shared");
    CHECK(where.spool_dirs[2].must_exist);
    CHECK(info.describe_nodes() ==
          "n1 (/spool/n1), n2 (/spool/n2, running), n3 (/spool/shared), n4 (/spool/shared, "
          "running)");
}
