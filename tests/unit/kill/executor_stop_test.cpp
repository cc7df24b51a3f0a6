// SPDX-License-Identifier: GPL-2.0-or-later
// The kill executor stops a user's targets before it signals them: on real processes of
// a test uid each, among them a pid hopper and a fork bomb held to its pids.max
// (tests/unit/helpers/forker.cpp).
#include "kill/executor.hpp"
#include "support/plans.hpp"
#include "support/processes.hpp"
#include "support/scripted_system_calls.hpp"
#include "support/sweeper.hpp"
#include "support/temp_dir.hpp"
#include "util/unique_fd.hpp"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

using namespace leftover;
using namespace leftover::test;
using namespace std::chrono_literals;

namespace {

// The hoppers' exited parents are reparented to this test process (a subreaper, pid 1
// in the test's pid namespace): reap them while a test runs, as init would.
class Reaper {
public:
    Reaper()
        : thread_([this] {
              while (!stop_) {
                  while (::waitpid(-1, nullptr, WNOHANG) > 0) {}
                  std::this_thread::sleep_for(1ms);
              }
          }) {}
    ~Reaper() {
        stop_ = true;
        thread_.join();
    }

private:
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

// Whatever a failed sweep leaves of a forker: its whole process group, at once.
struct KillGroup {
    pid_t pgid;
    ~KillGroup() { ::kill(-pgid, SIGKILL); }
};

// The forker, copied where every test uid can run it.
std::string forker(const SharedDir& dir) {
    const std::string path = dir / "forker";
    std::filesystem::copy_file(LEFTOVER_TEST_FORKER, path);
    ::chmod(path.c_str(), 0755);
    return path;
}

// Polls until `uid` has at least `count` processes; false at the deadline.
bool wait_processes(uid_t uid, std::size_t count, std::chrono::milliseconds timeout = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (processes_of(uid).size() < count)
        if (std::chrono::steady_clock::now() >= deadline)
            return false;
        else
            std::this_thread::sleep_for(5ms);
    return true;
}

// Whether `uid` has a process: a hopper is missed by a single look at /proc now and
// then (listed under a pid it has left, not yet under its new one), so look for 300 ms.
bool has_processes(uid_t uid) {
    const auto until = std::chrono::steady_clock::now() + 300ms;
    do {
        if (!processes_of(uid).empty()) return true;
        std::this_thread::sleep_for(1ms);
    } while (std::chrono::steady_clock::now() < until);
    return false;
}

// Polls until `uid` has no process left (none seen for 300 ms); false at the deadline.
bool wait_processes_gone(uid_t uid, std::chrono::milliseconds timeout = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (has_processes(uid))
        if (std::chrono::steady_clock::now() >= deadline) return false;
    return true;
}

// Reads a one-line file (a cgroup's pids.current); empty when it cannot.
std::string read_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

bool write_file(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    out.close();
    return static_cast<bool>(out);
}

// A pids cgroup of the test's own, with a pids.max (cgroup v1 under /sys/fs/cgroup/pids,
// or v2 with the pids controller enabled at /sys/fs/cgroup); removed at the end.
class PidsCgroup {
public:
    explicit PidsCgroup(int max) : name_("leftover-test-" + std::to_string(::getpid())) {
        for (const std::string base : {"/sys/fs/cgroup/pids", "/sys/fs/cgroup"}) {
            if (!std::filesystem::exists(base + "/cgroup.procs")) continue;
            const std::string path = base + "/" + name_;
            if (::mkdir(path.c_str(), 0755) != 0) {
                why_ += base + ": cannot create a cgroup there; ";
                continue;
            }
            if (!write_file(path + "/pids.max", std::to_string(max))) {
                ::rmdir(path.c_str());
                why_ += base + ": no pids controller; ";
                continue;
            }
            path_ = path;
            return;
        }
        why_ += "no cgroup v1 pids hierarchy or cgroup v2 root with the pids controller";
    }
    ~PidsCgroup() {
        for (int attempt = 0; !path_.empty() && attempt < 100 && ::rmdir(path_.c_str()) != 0; ++attempt)
            std::this_thread::sleep_for(20ms);
    }
    PidsCgroup(const PidsCgroup&) = delete;
    PidsCgroup& operator=(const PidsCgroup&) = delete;

    bool ok() const { return !path_.empty(); }
    const std::string& why() const { return why_; }
    const std::string& name() const { return name_; }
    bool add(pid_t pid) const { return write_file(path_ + "/cgroup.procs", std::to_string(pid)); }
    std::string current() const { return read_line(path_ + "/pids.current"); }

private:
    std::string name_;
    std::string path_;
    std::string why_;
};

// The kept process of the process-group test writes a byte for each signal it gets here.
int kept_signals_fd = -1;

void note_signal(int signal) {
    const char byte = signal == SIGHUP ? 'H' : signal == SIGCONT ? 'C' : 'W';
    (void)!::write(kept_signals_fd, &byte, 1);
}

// Reads `fd` until `last` comes (or 10 s pass): what came, `last` included.
std::string read_until(int fd, char last) {
    std::string got;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (got.empty() || got.back() != last) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        pollfd ready{fd, POLLIN, 0};
        if (left.count() <= 0 || ::poll(&ready, 1, static_cast<int>(left.count())) <= 0) break;
        char byte = 0;
        if (::read(fd, &byte, 1) != 1) break;
        got += byte;
    }
    return got;
}

}  // namespace

TEST_CASE("fault catalogue: a pid hopper outruns a sweep that does not stop it first, and not one that does") {
    Sweeper sweeper(41126);
    SharedDir dir;
    Reaper reaper;
    const pid_t hopper = sweeper.spawn({forker(dir), "hop", "2000"});
    const KillGroup kill_group{hopper};
    REQUIRE(wait_processes(41126, 1));
    // Reading the node's job state (slurmstepd sockets, slurmctld) comes between the scan
    // and the signals and takes far longer than a hopper keeps a pid.
    sweeper.job_state = [] {
        std::this_thread::sleep_for(50ms);
        return Result<LiveWork>(LiveWork{});
    };

    // The control: signals alone chase a pid that has moved on by the time they land.
    // On a busy machine the hopper may not get the CPU to move within those 50 ms: the
    // signals wait here until it has (as on a node where it does), so the control holds.
    // 10 s is a hang detector: once, beside a release build, a second was not enough, and
    // the control's signals pinned the hopper before it moved and killed it.
    ScriptedSystemCalls late;
    late.script.pidfd_open = [](pid_t pid) {
        const auto until = std::chrono::steady_clock::now() + 10s;
        while (::kill(pid, 0) == 0 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
        return real_system_calls().pidfd_open(pid);
    };
    sweeper.stop_rounds = 0;
    const KillReport chased = sweeper.run(200ms, false, late);
    INFO(format_actions(chased));
    CHECK(has_processes(41126));

    // A scan may still miss a pid in the middle of its hop (its parent chain changing as
    // it is read keeps it, as unreadable ancestry): the next sweep, as on a node the next
    // job end, meets it again. Stopping first ends it within a few sweeps; signals alone
    // (the control) never do.
    sweeper.stop_rounds = KillOptions{}.stop_rounds;
    int sweeps = 0;
    std::string actions;
    for (; sweeps < 6 && has_processes(41126); ++sweeps) {
        const KillReport stopped = sweeper.run(200ms);
        actions += format_actions(stopped);
        CHECK(stopped.survivors.empty());
        CHECK(stopped.stop_rounds <= 2 * (stopped.rounds + 1) * KillOptions{}.stop_rounds);
    }
    INFO(actions);
    CHECK(wait_processes_gone(41126));
    MESSAGE("pid hopper: gone after ", sweeps, " sweep(s) that stop first");
}

TEST_CASE("fault catalogue: a fork bomb held to its pids.max is stopped whole, and none of it is left") {
    const PidsCgroup cgroup(32);
    if (!cgroup.ok()) {
        MESSAGE("skipped: no pids cgroup for the fork bomb: ", cgroup.why());
        return;
    }
    Sweeper sweeper(41119);
    SharedDir dir;
    Reaper reaper;
    const pid_t bomb = sweeper.spawn({forker(dir), "bomb", cgroup.name()});
    const KillGroup kill_group{bomb};
    REQUIRE(cgroup.add(bomb));
    const auto full_by = std::chrono::steady_clock::now() + 10s;
    while (cgroup.current() != "32" && std::chrono::steady_clock::now() < full_by) std::this_thread::sleep_for(5ms);
    REQUIRE(cgroup.current() == "32");

    const KillReport report = sweeper.run(200ms);
    CHECK(wait_processes_gone(41119));
    CHECK(cgroup.current() == "0");
    CHECK(report.survivors.empty());
    CHECK_FALSE(report.error);
    CHECK(report.left_running == 0);
    MESSAGE("fork bomb: ", report.stop_rounds, " SIGSTOP rounds, ", report.rounds, " SIGKILL rounds, ",
            report.evaluations, " evaluations");
}

TEST_CASE("fault catalogue: a stopped process whose user gets live work meanwhile runs again, never signalled") {
    Sweeper sweeper(41118);
    const pid_t stray = sweeper.spawn({"sleep", "1000"});
    int reads = 0;
    sweeper.job_state = [&reads] {
        LiveWork live;
        // A job of the user starts after the first evaluation (which looks before and after its scan).
        if (++reads > 2) live.uids.insert(41118);
        return Result<LiveWork>(live);
    };
    const KillReport report = sweeper.run(2000ms);
    INFO(format_actions(report));
    REQUIRE(action_for(report, stray, SIGSTOP) != nullptr);
    CHECK(action_for(report, stray, SIGSTOP)->outcome == Outcome::signalled);
    CHECK(action_for(report, stray, SIGSTOP)->intermediate);
    const KillRecord* cont = check_continued_not_killed(report, stray);
    REQUIRE(cont != nullptr);
    CHECK(cont->reason == Reason::has_live_job);
    CHECK(report.survivors.empty());
}

TEST_CASE("fault catalogue: a stop that met every target and nothing new reads the job state, not /proc, again") {
    Sweeper sweeper(41127);
    const pid_t stray = sweeper.spawn({"sleep", "1000"});
    int reads = 0;
    sweeper.job_state = [&reads] {
        ++reads;
        return Result<LiveWork>(LiveWork{});
    };
    KillReport report;
    SUBCASE("the job state read alone") {
        report = sweeper.run(0ms);
        CHECK(report.evaluations == 2);  // before SIGSTOP, after SIGKILL
        CHECK(reads == 4);               // 2 in the first, 1 after SIGSTOP, 1 in the last (no kill: no second)
    }
    SUBCASE("a whole evaluation after the stop") {
        sweeper.unchanged_job_state_saves = false;
        report = sweeper.run(0ms);
        CHECK(report.evaluations == 3);
        CHECK(reads == 5);
    }
    INFO(format_actions(report));
    REQUIRE(action_for(report, stray, SIGSTOP) != nullptr);
    REQUIRE(action_for(report, stray, SIGKILL) != nullptr);
    CHECK(action_for(report, stray, SIGKILL)->outcome == Outcome::signalled);
    CHECK(wait_gone(stray));
    CHECK(report.survivors.empty());
}

TEST_CASE("fault catalogue: a child forked before its parent stopped makes the sweep decide again") {
    Sweeper sweeper(41128);
    SharedDir dir;
    const pid_t parent = sweeper.spawn({"sh", "-c", "echo $$ > " + (dir / "parent.pid") + "; exec sleep 1000"});
    REQUIRE(wait_pid_file(dir / "parent.pid") == parent);
    pid_t child = 0;
    // A child the first plan never saw: as if forked between its scan and the SIGSTOP.
    sweeper.observer.on_action = [&](const KillRecord& record) {
        if (record.signal == SIGSTOP && child == 0) child = spawn_as(41128, {"sleep", "1000"});
    };
    const KillReport report = sweeper.run(0ms);
    INFO(format_actions(report));
    REQUIRE(child > 0);
    CHECK(report.evaluations == 3);  // before SIGSTOP, after it (the child is new), after SIGKILL
    REQUIRE(action_for(report, child, SIGSTOP) != nullptr);  // stopped once seen, then killed
    CHECK(action_for(report, child, SIGKILL)->outcome == Outcome::signalled);
    CHECK(wait_gone(parent));
    CHECK(wait_gone(child));
    CHECK(report.survivors.empty());
}

TEST_CASE("fault catalogue: a dry run stops nothing and reports what it would do as before") {
    Sweeper sweeper(41120);
    const pid_t stray = sweeper.spawn({"sleep", "1000"});
    ScriptedSystemCalls calls;  // counts the signals sent
    const KillReport report = sweeper.run(2000ms, true, calls);
    CHECK(calls.count.pidfd_send_signal == 0);
    REQUIRE(report.actions.size() == 1);
    CHECK(report.actions.front().pid == stray);
    CHECK(report.actions.front().signal == SIGTERM);
    CHECK(report.actions.front().outcome == Outcome::dry_run);
    CHECK(report.stop_rounds == 0);
    CHECK(report.evaluations == 1);
    CHECK(wait_not_stopped(stray));
}

TEST_CASE("fault catalogue: stopping that never settles gives up after its rounds, says so, and the kills go ahead") {
    Sweeper sweeper(41121);
    sweeper.spawn({"sleep", "1000"});
    // Each SIGSTOP is lost and the user has a new process, as if the target forked first.
    ScriptedSystemCalls calls;
    calls.script.pidfd_send_signal = [&sweeper](int pidfd, int signal) {
        if (signal != SIGSTOP) return real_system_calls().pidfd_send_signal(pidfd, signal);
        sweeper.spawn({"sleep", "1000"});
        return 0;
    };
    sweeper.stop_rounds = 3;
    const KillReport report = sweeper.run(200ms, false, calls);
    INFO(format_actions(report));
    CHECK(report.stop_rounds == 3);
    CHECK(report.left_running == 1);
    CHECK(wait_processes_gone(41121));  // SIGTERM went to all four
    CHECK(report.survivors.empty());
}

TEST_CASE("fault catalogue: a log line that fails does not stop the sweep with its targets stopped") {
    Sweeper sweeper(41124);
    const pid_t stray = sweeper.spawn({"sleep", "1000"});
    int thrown = 0;
    // The front end's sink fails at every line, starting with the SIGSTOP's.
    sweeper.observer.on_action = [&thrown](const KillRecord&) {
        ++thrown;
        throw std::runtime_error("log sink failed");
    };
    const KillReport report = sweeper.run(300ms);
    INFO(format_actions(report));
    CHECK(thrown > 0);
    REQUIRE(action_for(report, stray, SIGSTOP) != nullptr);
    CHECK(wait_gone(stray));
    CHECK(report.survivors.empty());
}

TEST_CASE("fault catalogue: a target whose root parent waits as su does is killed, its parent not left stopped") {
    // su, runuser and sudo wait for their child with WUNTRACED and stop themselves when
    // it stops; resumed, they continue it. A SIGSTOP to the child would leave the root
    // parent stopped for good once the child is gone (seen in e2e: runuser -u USER srun).
    constexpr uid_t user = 41125;
    Sweeper sweeper(user);
    const pid_t watcher = spawn_forked_as(0, [] {
        const pid_t child = ::fork();
        if (child == 0) {
            std::signal(SIGTERM, SIG_DFL);
            if (::setgroups(0, nullptr) != 0 || ::setgid(user) != 0 || ::setuid(user) != 0) ::_exit(4);
            for (;;) ::pause();
        }
        int status = 0;
        while (::waitpid(child, &status, WUNTRACED) == child && WIFSTOPPED(status)) {
            ::kill(::getpid(), SIGSTOP);
            ::kill(child, SIGCONT);
        }
        ::_exit(0);
    });
    sweeper.spawned.push_back(watcher);
    REQUIRE(wait_processes(user, 1));
    const std::vector<pid_t> before = processes_of(user);
    REQUIRE(before.size() == 1);
    CHECK(is_running(before.front()));  // it runs without us, under its watching parent

    const KillReport report = sweeper.run(200ms);
    INFO(format_actions(report));
    CHECK(action_for(report, before.front(), SIGSTOP) == nullptr);
    CHECK(action_for(report, before.front(), SIGTERM) != nullptr);
    CHECK(wait_processes_gone(user));
    CHECK(report.survivors.empty());
    // The parent saw its child end and exited: it was never stopped.
    int status = 0;
    pid_t reaped = 0;
    const auto until = std::chrono::steady_clock::now() + 10s;
    while ((reaped = ::waitpid(watcher, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(5ms);
    CHECK(reaped == watcher);
    if (reaped != watcher) ::kill(watcher, SIGCONT);
}

TEST_CASE("fault catalogue: no member of a process group that holds a kept process is stopped") {
    // The kernel (kernel/exit.c, kill_orphaned_pgrp): when an exit leaves a process group with
    // no member whose parent is outside it in the same session, and a member of the group is
    // stopped, every member gets SIGHUP (POSIX; the stopped ones only on some kernels), then
    // SIGCONT. A session of the user's: its leader (`parent`, a stray) and below it a group of
    // its own holding a stray (`member`) and a root process the member started, as a setuid
    // program would be (`kept`, protected). Stopping the member and then killing the parent
    // would signal the root process, which no sweep may.
    constexpr uid_t user = 41764;
    Sweeper sweeper(user);
    SharedDir dir;
    const std::string member_command = "echo $$ > " + (dir / "member.pid") + "; exec sleep 1000";
    int signals[2];  // the kept process's pid, then a byte for each signal it gets
    REQUIRE(::pipe2(signals, O_CLOEXEC) == 0);
    const UniqueFd signals_read(signals[0]), signals_write(signals[1]);
    const auto become_user = [] {
        if (::setgroups(0, nullptr) != 0 || ::setresgid(user, user, user) != 0 || ::setresuid(user, user, user) != 0)
            ::_exit(126);
    };
    const pid_t parent = ::fork();
    REQUIRE(parent >= 0);
    if (parent == 0) {  // root until it drops, in a session of its own; never holds the test's output
        ::setsid();
        const int null = ::open("/dev/null", O_RDWR);
        ::dup2(null, 0);
        ::dup2(null, 1);
        if (::fork() == 0) {
            ::setpgid(0, 0);
            if (::fork() == 0) {  // the kept process: root, in the member's group, noting its signals
                kept_signals_fd = signals[1];
                struct sigaction note {};
                note.sa_handler = note_signal;
                for (const int signal : {SIGHUP, SIGCONT, SIGWINCH}) ::sigaction(signal, &note, nullptr);
                const pid_t self = ::getpid();
                (void)!::write(signals[1], &self, sizeof self);
                for (;;) ::pause();
            }
            become_user();
            ::execlp("sh", "sh", "-c", member_command.c_str(), nullptr);
            ::_exit(127);
        }
        become_user();
        ::execlp("sleep", "sleep", "1000", nullptr);
        ::_exit(127);
    }
    sweeper.spawned.push_back(parent);
    pid_t kept = 0;
    REQUIRE(::read(signals[0], &kept, sizeof kept) == sizeof kept);
    sweeper.spawned.push_back(kept);
    const pid_t member = wait_pid_file(dir / "member.pid");
    REQUIRE(member > 0);
    REQUIRE(wait_owner(parent, user));
    REQUIRE(wait_owner(member, user));
    REQUIRE(::getpgid(member) == member);
    REQUIRE(::getpgid(kept) == member);
    REQUIRE(::getsid(member) == parent);
    // Pids rise here (this pid namespace is the tests'), and a round signals in pid order:
    // the parent first. Its SIGKILL ends it before the member's SIGKILL goes (as it may on
    // any node), and its exit leaves the member's group orphaned.
    REQUIRE(parent < member);
    ScriptedSystemCalls calls;
    auto pid_of = std::make_shared<std::map<int, pid_t>>();
    calls.script.pidfd_open = [pid_of](pid_t pid) {
        const int fd = real_system_calls().pidfd_open(pid);
        if (fd >= 0) (*pid_of)[fd] = pid;
        return fd;
    };
    // A stop takes effect once its process runs: a member the sweep stopped is seen stopped
    // before the parent's SIGKILL goes, as on a node it is long since.
    bool member_stopped = false;
    calls.script.pidfd_send_signal = [&](int pidfd, int signal) {
        const pid_t pid = pid_of->at(pidfd);
        if (signal == SIGKILL && pid == parent && member_stopped) CHECK(wait_state(member, 'T'));
        if (signal == SIGKILL && pid == member) CHECK(wait_gone(parent));
        const int rc = real_system_calls().pidfd_send_signal(pidfd, signal);
        member_stopped = member_stopped || (rc == 0 && signal == SIGSTOP && pid == member);
        return rc;
    };
    const KillReport report = sweeper.run(0ms, false, calls);
    INFO(format_actions(report));
    const KillRecord* stop = action_for(report, member, SIGSTOP);
    REQUIRE(stop != nullptr);
    CHECK(stop->outcome == Outcome::not_stopped);
    CHECK(sweep::format_action(*stop).ends_with(": its process group holds pid " + std::to_string(kept) +
                                                ", which the sweep keeps: were the group orphaned with a member "
                                                "stopped, the kernel would send it SIGHUP and SIGCONT"));
    CHECK(action_for(report, parent, SIGSTOP)->outcome == Outcome::signalled);  // a group of its own
    CHECK(wait_gone(parent));
    CHECK(wait_gone(member));
    CHECK(report.survivors.empty());
    // The kept process got no signal before the one the test sends now (a higher number:
    // pending signals are taken lowest first), and runs.
    REQUIRE(::kill(kept, SIGWINCH) == 0);
    CHECK(read_until(signals[0], 'W') == "W");
    CHECK(is_running(kept));
}

TEST_CASE("executor: a process group orphaned already is stopped in, and what it holds that is kept gets no signal") {
    // A daemon's group (a pid hopper's, a setsid'd stray's): no member's parent is in the
    // same session and another group, so no exit can orphan it and the kernel sends its
    // members nothing when one exits. A session and group of its own led by a stray
    // (`leader`, its parent the test in another session) holding a root process it started
    // (`kept`): the stray is stopped before it is killed, and the root process gets no signal.
    constexpr uid_t user = 41765;
    Sweeper sweeper(user);
    int signals[2];  // the kept process's pid, then a byte for each signal it gets
    REQUIRE(::pipe2(signals, O_CLOEXEC) == 0);
    const UniqueFd signals_read(signals[0]), signals_write(signals[1]);
    const pid_t leader = ::fork();
    REQUIRE(leader >= 0);
    if (leader == 0) {  // root until it drops; never holds the test's output
        ::setsid();
        const int null = ::open("/dev/null", O_RDWR);
        ::dup2(null, 0);
        ::dup2(null, 1);
        if (::fork() == 0) {  // the kept process: root, in the leader's group, noting its signals
            kept_signals_fd = signals[1];
            struct sigaction note {};
            note.sa_handler = note_signal;
            for (const int signal : {SIGHUP, SIGCONT, SIGWINCH}) ::sigaction(signal, &note, nullptr);
            const pid_t self = ::getpid();
            (void)!::write(signals[1], &self, sizeof self);
            for (;;) ::pause();
        }
        if (::setgroups(0, nullptr) != 0 || ::setresgid(user, user, user) != 0 || ::setresuid(user, user, user) != 0)
            ::_exit(126);
        ::execlp("sleep", "sleep", "1000", nullptr);
        ::_exit(127);
    }
    sweeper.spawned.push_back(leader);
    pid_t kept = 0;
    REQUIRE(::read(signals[0], &kept, sizeof kept) == sizeof kept);
    sweeper.spawned.push_back(kept);
    REQUIRE(wait_owner(leader, user));
    REQUIRE(::getpgid(kept) == leader);
    REQUIRE(::getsid(leader) == leader);
    const KillReport report = sweeper.run(0ms);
    INFO(format_actions(report));
    const KillRecord* stop = action_for(report, leader, SIGSTOP);
    REQUIRE(stop != nullptr);
    CHECK(stop->outcome == Outcome::signalled);
    CHECK(wait_gone(leader));
    CHECK(report.survivors.empty());
    REQUIRE(::kill(kept, SIGWINCH) == 0);
    CHECK(read_until(signals[0], 'W') == "W");
    CHECK(is_running(kept));
}
