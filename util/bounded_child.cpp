// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/bounded_child.hpp"

#include "util/errno_text.hpp"
#include "util/poll_timeout.hpp"
#include "util/unique_fd.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <csignal>

namespace leftover {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
    std::vector<char*> out;
    out.reserve(strings.size() + 1);
    for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
    out.push_back(nullptr);
    return out;
}

struct Pipe {
    UniqueFd read, write;
};

Status open_pipe(Pipe& pipe) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
        return Error::lookup(fmt::format("pipe: {}", errno_text(errno)), ErrorSource::other);
    pipe.read.reset(fds[0]);
    pipe.write.reset(fds[1]);
    return Ok{};
}

// slurmstepd blocks most signals and the mask is inherited: give the child a clean slate.
void clean_signal_state(posix_spawnattr_t& attr) {
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
}

// What a child's start, and its kill and reap, may cost on a loaded node: none is started,
// and one still running is killed, this long before the caller's deadline, so that the
// call returns by it. (In a soak's burst of twenty job ends on one node, job epilogs whose
// lookups ran into the deadline returned 140-200 ms past it.)
constexpr std::chrono::milliseconds kEndMargin{100};

}  // namespace

std::string error_text(const ChildOutput& output) {
    std::string why = output.err;
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    return why.empty() ? "no message" : why;
}

Result<ChildOutput> run_bounded(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                                Clock::time_point caller_deadline) {
    // Past the deadline (less its margin) a child is not even started: on a loaded node
    // its spawn alone costs what the caller no longer has.
    const Clock::time_point deadline = caller_deadline - kEndMargin;
    if (Clock::now() >= deadline)
        return Error::lookup(
            fmt::format("{} not started: less than {} ms were left before the deadline", argv[0], kEndMargin.count()),
            ErrorSource::deadline);
    Pipe out, err;
    for (Pipe* pipe : {&out, &err}) LEFTOVER_TRY(open_pipe(*pipe));

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out.write.get(), 1);
    posix_spawn_file_actions_adddup2(&actions, err.write.get(), 2);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    clean_signal_state(attr);

    pid_t pid = 0;
    auto args = c_strings(argv);
    auto environment = c_strings(env);
    const int rc = ::posix_spawn(&pid, args[0], &actions, &attr, args.data(), environment.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) return Error::lookup(fmt::format("cannot run {}: {}", argv[0], errno_text(rc)), ErrorSource::other);
    // Only the child writes now: its exit is then the end of both streams.
    out.write.reset();
    err.write.reset();

    ChildOutput result;
    pollfd fds_to_poll[2] = {{out.read.get(), POLLIN, 0}, {err.read.get(), POLLIN, 0}};
    std::string* sinks[2] = {&result.out, &result.err};
    int open_streams = 2;
    bool timed_out = false;
    while (open_streams > 0) {
        const int left_ms = poll_timeout_ms(deadline);
        if (left_ms == 0) {
            timed_out = true;
            break;
        }
        const int ready = ::poll(fds_to_poll, 2, std::min(left_ms, 1000));
        if (ready < 0 && errno != EINTR) break;
        for (int i = 0; i < 2; ++i) {
            if (fds_to_poll[i].fd < 0 || fds_to_poll[i].revents == 0) continue;
            char buffer[4096];
            const ssize_t n = ::read(fds_to_poll[i].fd, buffer, sizeof buffer);
            if (n > 0) {
                sinks[i]->append(buffer, static_cast<std::size_t>(n));
            } else if (n == 0 || errno != EINTR) {
                fds_to_poll[i].fd = -1;
                --open_streams;
            }
        }
    }
    if (timed_out || open_streams > 0) ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (timed_out)
        return Error::lookup(fmt::format("{} did not finish before the deadline; killed", argv[0]), ErrorSource::other);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
}

}  // namespace leftover
