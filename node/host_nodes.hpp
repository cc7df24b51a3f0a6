// SPDX-License-Identifier: GPL-2.0-or-later
// Which of slurm.conf's nodes run on this host. Several slurmd may run on one host
// (Debian builds Slurm with --enable-multiple-slurmd), each with its own NodeName and
// step sockets: a node's live steps must not be missed because the evaluation read
// another node's. This is what `scontrol show aliases` answers, widened to NodeAddr.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace leftover::node {

// One NodeName line of slurm.conf, its host lists expanded. Slurm fills in the
// defaults (NodeHostname = NodeName, NodeAddr = NodeHostname) and pairs the lists
// one by one, a shorter list repeating its last entry (node_conf.c expand_nodeline_info).
struct NodeLine {
    std::vector<std::string> names;
    std::vector<std::string> hostnames;
    std::vector<std::string> addresses;
};

// This host as slurm.conf may name it: its host names (short and full) and the
// addresses of its interfaces (numeric, as inet_ntop writes them). No DNS is asked:
// a NodeAddr that is a name counts only when it is one of the host names.
struct ThisHost {
    std::set<std::string> names;
    std::set<std::string> addresses;
};

// gethostname (short and full) and getifaddrs.
ThisHost this_host();

// A NodeAddr of this host: one of its names, or an address of one of its interfaces
// written in any form inet_pton reads. Not the rest of 127.0.0.0/8: test clusters give
// nodes on one machine 127.0.0.<n> each, and each is a host of its own there.
bool is_this_host_address(const std::string& address, const ThisHost& host);

// The NodeNames whose NodeHostname is one of this host's names or whose NodeAddr is
// this host's, in slurm.conf order, each once.
std::vector<std::string> nodes_on_host(const std::vector<NodeLine>& lines, const ThisHost& host);

}  // namespace leftover::node
