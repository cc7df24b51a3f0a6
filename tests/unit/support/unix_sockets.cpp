// SPDX-License-Identifier: GPL-2.0-or-later
#include "support/unix_sockets.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <cerrno>
#include <cstring>

namespace leftover::test {
namespace {

sockaddr_un unix_address(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    REQUIRE(path.size() < sizeof(addr.sun_path));
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    return addr;
}

}  // namespace

UniqueFd bind_unix(const std::string& path) {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    REQUIRE(fd.valid());
    const sockaddr_un addr = unix_address(path);
    REQUIRE(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0);
    return fd;
}

void make_stale_socket(const std::string& path) {
    const UniqueFd fd = bind_unix(path);
    REQUIRE(::listen(fd.get(), 4) == 0);
}

BlockedListener::BlockedListener(const std::string& path) : listener_(bind_unix(path)) {
    REQUIRE(::listen(listener_.get(), 0) == 0);
    const sockaddr_un addr = unix_address(path);
    for (int i = 0; i < 64; ++i) {
        UniqueFd client(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        REQUIRE(client.valid());
        if (::connect(client.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
            REQUIRE(errno == EAGAIN);  // the backlog is full: what every later client meets
            return;
        }
        held_.push_back(std::move(client));
    }
    FAIL("the listen backlog never filled");
}

}  // namespace leftover::test
