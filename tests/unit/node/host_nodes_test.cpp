// SPDX-License-Identifier: GPL-2.0-or-later
// Which of slurm.conf's nodes run on this host: by NodeHostname or NodeAddr, the
// host lists paired as Slurm pairs them.
#include "node/host_nodes.hpp"

#include <doctest/doctest.h>

using namespace leftover::node;

namespace {
const ThisHost kHost{{"big", "big.cluster.example"}, {"127.0.0.1", "10.1.2.3", "fe80::1"}};
}

TEST_CASE("fault catalogue: the nodes slurm.conf puts on this host are found by NodeHostname or NodeAddr") {
    const std::vector<NodeLine> lines = {
        {{"n1", "n2"}, {"n1", "n2"}, {"n1", "n2"}},               // other hosts
        {{"v1", "v2", "v3"}, {"big"}, {"big"}},                   // multiple slurmd: one NodeHostname
        {{"w1"}, {"w1"}, {"10.1.2.3"}},                           // NodeAddr only, an interface address
        {{"x1"}, {"x1"}, {"big.cluster.example"}},                // NodeAddr: the full host name
        {{"y1", "y2"}, {"y1", "y2"}, {"10.9.9.9", "010.1.2.3"}},  // pairs one by one; not inet_pton's form
        {{"z1"}, {"z1"}, {"127.0.0.2"}},                          // loopback, but no interface address
        {{"v1"}, {"big"}, {"big"}},                               // listed twice: once
    };
    CHECK(nodes_on_host(lines, kHost) == std::vector<std::string>{"v1", "v2", "v3", "w1", "x1"});
}

TEST_CASE("this host's addresses: names, interface addresses in any form inet_pton reads") {
    CHECK(is_this_host_address("big", kHost));
    CHECK(is_this_host_address("10.1.2.3", kHost));
    CHECK(is_this_host_address("fe80:0::1", kHost));
    CHECK_FALSE(is_this_host_address("10.1.2.4", kHost));
    CHECK_FALSE(is_this_host_address("bigger", kHost));
    CHECK_FALSE(is_this_host_address("", kHost));
}

TEST_CASE("this host: its own names and loopback address") {
    const ThisHost host = this_host();
    CHECK_FALSE(host.names.empty());
    CHECK(host.addresses.count("127.0.0.1") == 1);
}
