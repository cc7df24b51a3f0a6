// SPDX-License-Identifier: GPL-2.0-or-later
// A hostile user's process for the kill executor's tests (pid hoppers and fork storms):
//   forker hop [PERIOD_US]          forks, lets the parent exit, and repeats every PERIOD_US
//                                   (2000): a process that never keeps its pid
//   forker bomb CGROUP              waits until it has been moved into the cgroup whose path
//                                   ends with /CGROUP, then every process forks again every
//                                   2 ms, for ever: a fork bomb that stays at its pids.max
// Both ignore SIGTERM, as a hostile process would. Each leads a process group of its own
// (its first pid), so that a test can kill what a failed sweep left with one kill(-pgid),
// and lets go of the test's stdin, stdout and stderr (a survivor must not keep ctest
// waiting for their end). Exits 2 on bad arguments, 3 if it is not moved into the cgroup
// within 10 s.
#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace {

[[noreturn]] void hop(long period_us) {
    for (;;) {
        const pid_t child = ::fork();
        if (child > 0) ::_exit(0);  // the parent exits: the work goes on under a new pid
        ::usleep(static_cast<useconds_t>(period_us));
    }
}

[[noreturn]] void bomb() {
    for (;;) {
        (void)::fork();  // fails with EAGAIN at pids.max: try again
        ::usleep(2000);
    }
}

// A line of /proc/self/cgroup ("<id>:<controllers>:<path>") whose path ends with /name.
bool in_cgroup(const std::string& name) {
    std::ifstream file("/proc/self/cgroup");
    for (std::string line; std::getline(file, line);)
        if (line.size() > name.size() && line.ends_with("/" + name)) return true;
    return false;
}

}  // namespace

void let_go_of_the_test() {
    (void)::setpgid(0, 0);
    const int null = ::open("/dev/null", O_RDWR);
    if (null < 0) return;
    for (int fd = 0; fd <= 2; ++fd) (void)::dup2(null, fd);
    if (null > 2) ::close(null);
}

int main(int argc, char** argv) {
    std::signal(SIGTERM, SIG_IGN);
    if (argc >= 2 && (std::strcmp(argv[1], "hop") == 0 || std::strcmp(argv[1], "bomb") == 0)) let_go_of_the_test();
    if (argc >= 2 && std::strcmp(argv[1], "hop") == 0) hop(argc > 2 ? std::atol(argv[2]) : 2000);
    if (argc == 3 && std::strcmp(argv[1], "bomb") == 0) {
        for (int waited_ms = 0; !in_cgroup(argv[2]); ++waited_ms) {
            if (waited_ms == 10000) return 3;
            ::usleep(1000);
        }
        bomb();
    }
    std::fputs("usage: forker hop [PERIOD_US] | forker bomb CGROUP\n", stderr);
    return 2;
}
