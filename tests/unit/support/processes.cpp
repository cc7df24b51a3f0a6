// SPDX-License-Identifier: GPL-2.0-or-later
#include "support/processes.hpp"

#include "util/unique_fd.hpp"

#include <fcntl.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace leftover::test {
namespace {

void reap_children() {
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {}
}

// Checks `done` every 5 ms until it holds; false once `timeout` has passed.
bool poll_until(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
}

// The owner of /proc/<pid>; nullopt once the process is gone.
std::optional<uid_t> proc_owner(pid_t pid) {
    struct stat st {};
    if (::stat(("/proc/" + std::to_string(pid)).c_str(), &st) != 0) return std::nullopt;
    return st.st_uid;
}

// In a child just forked: a session of its own, stdin and stdout on /dev/null (our
// stdout may be a pipe someone reads to the end: never hold it open), then the uids.
// Exits 126 when they cannot be taken.
void become(uid_t real, uid_t effective, uid_t saved) {
    ::setsid();
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0);
    ::dup2(null, 1);
    if (::setgroups(0, nullptr) != 0 || ::setresgid(real, real, real) != 0 || ::setresuid(real, effective, saved) != 0)
        ::_exit(126);
}

}  // namespace

void become_subreaper() { ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); }

pid_t spawn_as(uid_t uid, const std::vector<std::string>& argv) { return spawn_with_uids(uid, uid, uid, argv); }

pid_t spawn_with_uids(uid_t real, uid_t effective, uid_t saved, const std::vector<std::string>& argv) {
    std::vector<char*> args;
    for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    // The pipe closes on a successful exec: returning only then means the process
    // already runs with its final uids and name when the test looks at it.
    int sync[2];
    if (::pipe2(sync, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    UniqueFd sync_read(sync[0]), sync_write(sync[1]);
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        sync_read.reset();
        become(real, effective, saved);
        ::execvp(args[0], args.data());
        const char failed = 1;
        (void)!::write(sync_write.get(), &failed, 1);
        ::_exit(127);
    }
    sync_write.reset();
    char byte = 0;
    ssize_t n;
    while ((n = ::read(sync_read.get(), &byte, 1)) < 0 && errno == EINTR) {}
    sync_read.reset();
    if (n != 0) throw std::runtime_error("exec failed: " + argv.front());
    // The kernel gives /proc/<pid> its owner a moment after exec (and root for good when
    // the process is not dumpable, as when euid != ruid): wait for the final owner.
    if (real == effective)
        poll_until([pid, effective] { return proc_owner(pid).value_or(effective) == effective; },
                   std::chrono::seconds(5));
    return pid;
}

pid_t spawn_forked_as(uid_t uid, const std::function<void()>& body) {
    int sync[2];
    if (::pipe2(sync, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    UniqueFd sync_read(sync[0]), sync_write(sync[1]);
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        sync_read.reset();
        become(uid, uid, uid);
        sync_write.reset();  // runs as uid now
        body();
        ::_exit(0);
    }
    sync_write.reset();
    char byte = 0;
    while (::read(sync_read.get(), &byte, 1) < 0 && errno == EINTR) {}
    if (!poll_until([pid, uid] { return proc_owner(pid).value_or(uid) == uid; }, std::chrono::seconds(5)))
        throw std::runtime_error("forked child never ran as its uid");
    return pid;
}

char state_of(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::ostringstream content;
    content << stat.rdbuf();
    const std::string text = content.str();
    const auto close = text.rfind(')');
    if (close == std::string::npos || close + 2 >= text.size()) return 0;
    return text[close + 2];
}

bool wait_state(pid_t pid, char state, std::chrono::milliseconds timeout) {
    return poll_until([pid, state] { return state_of(pid) == state; }, timeout);
}

bool is_running(pid_t pid) {
    reap_children();
    const char state = state_of(pid);
    return state != 0 && state != 'Z' && state != 'X';
}

bool wait_gone(pid_t pid, std::chrono::milliseconds timeout) {
    return poll_until([pid] { return !is_running(pid); }, timeout);
}

namespace {

// Whether a SIGSTOP waits in the process's pending sets (SigPnd: its own, ShdPnd: its
// thread group's): sent and not acted on yet, as on a busy machine that has not run it.
bool stop_pending(pid_t pid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);)
        if (line.starts_with("SigPnd:") || line.starts_with("ShdPnd:"))
            if (std::stoull(line.substr(7), nullptr, 16) & (1ULL << (SIGSTOP - 1))) return true;
    return false;
}

}  // namespace

bool wait_not_stopped(pid_t pid, std::chrono::milliseconds timeout) {
    return poll_until([pid] { return state_of(pid) != 'T' && !stop_pending(pid); }, timeout) && is_running(pid);
}

bool wait_owner(pid_t pid, uid_t uid, std::chrono::milliseconds timeout) {
    return poll_until([pid, uid] { return proc_owner(pid) == uid; }, timeout);
}

pid_t wait_pid_file(const std::string& path, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        std::ifstream in(path);
        pid_t pid = 0;
        if (in >> pid && pid > 0) return pid;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return 0;
}

std::vector<pid_t> processes_of(uid_t uid) {
    std::vector<pid_t> out;
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
        const std::string name = entry.path().filename();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream status(entry.path() / "status");
        std::string line;
        while (std::getline(status, line)) {
            if (line.rfind("Uid:", 0) != 0) continue;
            std::istringstream fields(line.substr(4));
            uid_t real = 0;
            if (fields >> real && real == uid && is_running(std::stoi(name))) out.push_back(std::stoi(name));
            break;
        }
    }
    return out;
}

void kill_all_of(uid_t uid) {
    for (int round = 0; round < 20; ++round) {
        const auto pids = processes_of(uid);
        if (pids.empty()) return;
        for (const pid_t pid : pids) ::kill(pid, SIGKILL);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

}  // namespace leftover::test
