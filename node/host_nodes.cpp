// SPDX-License-Identifier: GPL-2.0-or-later
#include "node/host_nodes.hpp"

#include "node/node_info.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

namespace leftover::node {
namespace {

// An address literal in the one form inet_ntop writes; nullopt for a name.
std::optional<std::string> canonical_address(const std::string& text) {
    char buf[INET6_ADDRSTRLEN] = {};
    in_addr v4{};
    if (::inet_pton(AF_INET, text.c_str(), &v4) == 1) {
        if (::inet_ntop(AF_INET, &v4, buf, sizeof buf) == nullptr) return std::nullopt;
        return std::string(buf);
    }
    in6_addr v6{};
    if (::inet_pton(AF_INET6, text.c_str(), &v6) == 1) {
        if (::inet_ntop(AF_INET6, &v6, buf, sizeof buf) == nullptr) return std::nullopt;
        return std::string(buf);
    }
    return std::nullopt;
}

const std::string& paired(const std::vector<std::string>& list, std::size_t i) {
    return list[std::min(i, list.size() - 1)];
}

}  // namespace

ThisHost this_host() {
    ThisHost host;
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) == 0 && name[0] != '\0') {
        host.names.insert(name);
        host.names.insert(short_hostname());
    }
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) == 0) {
        for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
            if (entry->ifa_addr == nullptr) continue;
            char buf[INET6_ADDRSTRLEN] = {};
            const int family = entry->ifa_addr->sa_family;
            const void* address = nullptr;
            if (family == AF_INET)
                address = &reinterpret_cast<const sockaddr_in*>(entry->ifa_addr)->sin_addr;
            else if (family == AF_INET6)
                address = &reinterpret_cast<const sockaddr_in6*>(entry->ifa_addr)->sin6_addr;
            if (address != nullptr && ::inet_ntop(family, address, buf, sizeof buf) != nullptr)
                host.addresses.insert(buf);
        }
        ::freeifaddrs(list);
    }
    return host;
}

bool is_this_host_address(const std::string& address, const ThisHost& host) {
    if (host.names.count(address) != 0) return true;
    const auto canonical = canonical_address(address);
    return canonical && host.addresses.count(*canonical) != 0;
}

std::vector<std::string> nodes_on_host(const std::vector<NodeLine>& lines, const ThisHost& host) {
    std::vector<std::string> nodes;
    for (const NodeLine& line : lines) {
        for (std::size_t i = 0; i < line.names.size(); ++i) {
            const bool by_hostname = !line.hostnames.empty() && host.names.count(paired(line.hostnames, i)) != 0;
            const bool by_address = !line.addresses.empty() && is_this_host_address(paired(line.addresses, i), host);
            if ((by_hostname || by_address) && std::find(nodes.begin(), nodes.end(), line.names[i]) == nodes.end())
                nodes.push_back(line.names[i]);
        }
    }
    return nodes;
}

}  // namespace leftover::node
