// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/privileges.hpp"

#include <unistd.h>

#include <thread>

namespace leftover {

bool wait_for_root(std::chrono::steady_clock::time_point deadline) {
    for (;;) {
        if (::geteuid() == 0 && ::getegid() == 0) return true;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

}  // namespace leftover
