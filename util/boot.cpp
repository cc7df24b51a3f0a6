// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/boot.hpp"

#include "util/unique_fd.hpp"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

namespace leftover {

std::string read_boot_id(const std::string& proc_root) {
    const UniqueFd fd(::open((proc_root + "/sys/kernel/random/boot_id").c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return "-";
    char buffer[64];
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n <= 0) return "-";
    std::string id(buffer, static_cast<std::size_t>(n));
    while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
    return id.empty() || id.find(' ') != std::string::npos ? std::string("-") : id;
}

std::chrono::milliseconds boot_clock_now() {
    timespec now{};
    ::clock_gettime(CLOCK_BOOTTIME, &now);
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::seconds(now.tv_sec) +
                                                                 std::chrono::nanoseconds(now.tv_nsec));
}

}  // namespace leftover
