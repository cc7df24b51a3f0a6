// SPDX-License-Identifier: GPL-2.0-or-later
// The fault catalogue (tests/fault_catalogue.md) on real processes: strays in states a
// sweep must still end, or that a wrong reading of /proc could misjudge. Every test
// uses a uid of its own (414xx) and scope job_user, as executor_test.cpp does.
#include "support/processes.hpp"
#include "support/scripted_system_calls.hpp"
#include "support/sweeper.hpp"
#include "util/escape.hpp"

#include <sched.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

using namespace leftover;
using namespace leftover::test;
using namespace std::chrono_literals;

namespace {

std::optional<uid_t> owner_of(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    return st.st_uid;
}

std::set<pid_t> pids_signalled(const KillReport& report, int signal) {
    std::set<pid_t> out;
    for (const KillRecord& r : report.actions)
        if (r.signal == signal) out.insert(r.pid);
    return out;
}

// Polls until `uid` has `count` processes running; false at the deadline.
bool wait_count(uid_t uid, std::size_t count) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (processes_of(uid).size() != count) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        ::usleep(5000);
    }
    return true;
}

// The pid that reuse_first_pin gave to another process, and that process.
struct PidReuse {
    pid_t reused = 0;
    pid_t replacement = 0;
};

// Scripts `calls` to give the first pid the executor pins to another process, as a small
// pid namespace soon does: ends the planned process and, through ns_last_pid, starts one
// of `new_uid` under the same pid, just before the pin.
void reuse_first_pin(ScriptedSystemCalls& calls, uid_t new_uid, PidReuse& reuse) {
    calls.script.pidfd_open = [new_uid, &reuse](pid_t pid) {
        if (reuse.reused == 0) {
            reuse.reused = pid;
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
            for (int attempt = 0; attempt < 100 && reuse.replacement != pid; ++attempt) {
                if (reuse.replacement > 0) {
                    ::kill(reuse.replacement, SIGKILL);
                    ::waitpid(reuse.replacement, nullptr, 0);
                }
                std::ofstream("/proc/sys/kernel/ns_last_pid") << pid - 1 << std::flush;
                reuse.replacement = spawn_as(new_uid, {"sleep", "1000"});
            }
        }
        return real_system_calls().pidfd_open(pid);
    };
}

[[noreturn]] void pause_forever() {
    for (;;) ::pause();
}

// The vfork child of a D-state parent: it runs on a stack of its own, sharing the
// parent's memory, and holds the parent in the kernel until it ends.
alignas(16) char vfork_child_stack[64 * 1024];
int vfork_child(void*) { pause_forever(); }

}  // namespace

TEST_CASE("fault catalogue: pid reuse in a pid namespace leaves the new process untouched") {
    Sweeper sweeper(41485);
    Sweeper newcomer(41486);  // ends the new process, whoever's it is
    pid_t planned = spawn_as(41485, {"sleep", "1000"});
    // Pid 2 is kthreadd's on a host, and the scan takes it and its children for kernel
    // threads: in a fresh pid namespace the first process of a test can be pid 2.
    if (planned <= 2) planned = spawn_as(41485, {"sleep", "1000"});
    ScriptedSystemCalls calls;
    PidReuse reuse;
    reuse_first_pin(calls, 41486, reuse);
    const KillReport report = sweeper.run(0ms, false, calls, 5s);
    REQUIRE(reuse.reused == planned);
    REQUIRE_MESSAGE(reuse.replacement == planned, "pid " << planned << " was not given out again");
    // The first pin (SIGSTOP, before any kill) finds another process under the pid: no
    // signal of the sweep reaches it, then or later.
    std::vector<Outcome> outcomes;
    for (const KillRecord& r : report.actions)
        if (r.pid == planned) outcomes.push_back(r.outcome);
    REQUIRE_FALSE(outcomes.empty());
    CHECK(outcomes.front() == Outcome::pid_reused);
    CHECK(std::count(outcomes.begin(), outcomes.end(), Outcome::signalled) == 0);
    CHECK(is_running(reuse.replacement));
    CHECK(processes_of(41486) == std::vector<pid_t>{planned});
}

TEST_CASE("fault catalogue: a stopped stray is killed and the sweep ends") {
    Sweeper sweeper(41470);
    const pid_t stopped = spawn_as(41470, {"sleep", "1000"});
    REQUIRE(::kill(stopped, SIGSTOP) == 0);
    REQUIRE(wait_state(stopped, 'T'));
    const KillReport report = sweeper.run(300ms);
    CHECK(wait_gone(stopped));
    CHECK(pids_signalled(report, SIGTERM).count(stopped) == 1);
    CHECK(report.survivors.empty());
    CHECK_FALSE(report.error);
}

TEST_CASE("fault catalogue: a traced stray, whom SIGTERM cannot end, escalates to SIGKILL") {
    Sweeper sweeper(41471);
    // Traced by this test process, it stops at every signal until the tracer lets it go
    // on, which the test never does: only SIGKILL ends it.
    const pid_t traced = sweeper.spawned.emplace_back(spawn_forked_as(41471, [] {
        ::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
        ::raise(SIGSTOP);
        pause_forever();
    }));
    REQUIRE(wait_state(traced, 't'));
    const KillReport report = sweeper.run(300ms);
    CHECK(wait_gone(traced));
    CHECK(pids_signalled(report, SIGTERM).count(traced) == 1);
    CHECK(pids_signalled(report, SIGKILL).count(traced) == 1);
    CHECK(report.survivors.empty());
}

TEST_CASE("fault catalogue: a stray in D state (a vfork parent) and its child are killed and the sweep ends") {
    Sweeper sweeper(41472);
    const pid_t parent = sweeper.spawned.emplace_back(spawn_forked_as(41472, [] {
        ::clone(vfork_child, vfork_child_stack + sizeof vfork_child_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, nullptr);
        pause_forever();
    }));
    REQUIRE(wait_state(parent, 'D'));
    const auto started = std::chrono::steady_clock::now();
    const KillReport report = sweeper.run(300ms);
    CHECK(std::chrono::steady_clock::now() - started < 15s);  // hang detector only
    CHECK(wait_gone(parent));
    CHECK(pids_signalled(report, SIGTERM).count(parent) == 1);
    CHECK(processes_of(41472).empty());
    CHECK(report.survivors.empty());
}

TEST_CASE("fault catalogue: a slow SIGTERM handler escalates to SIGKILL") {
    Sweeper sweeper(41473);
    SharedDir dir;
    // The handler outlasts grace: on SIGTERM the shell starts a long sleep and waits for it.
    spawn_as(41473, {"sh", "-c",
                     "trap 'sleep 1000' TERM; echo $$ > " + (dir / "slow.pid") + "; while :; do sleep 0.05; done"});
    const pid_t slow = wait_pid_file(dir / "slow.pid");
    REQUIRE(slow > 0);
    const KillReport report = sweeper.run(300ms);
    CHECK(wait_gone(slow));
    CHECK(pids_signalled(report, SIGTERM).count(slow) == 1);
    REQUIRE(pids_signalled(report, SIGKILL).count(slow) == 1);
    CHECK(action_for(report, slow, SIGKILL)->outcome == Outcome::signalled);
    CHECK(processes_of(41473).empty());  // the handler's sleep too
    CHECK(report.survivors.empty());
}

TEST_CASE("fault catalogue: real strays with hostile names are read as named, killed and logged escaped") {
    Sweeper sweeper(41487);
    // comm holds at most 15 bytes; each name is one a user can give a process.
    const std::vector<std::string> names = {"a b", "x) Z 1", "two\nlines", "\x1b[31mred", "\xff\xfe\x80 utf8", "*"};
    std::map<pid_t, std::string> named;
    for (const std::string& name : names)
        named[sweeper.spawned.emplace_back(spawn_forked_as(41487, [&name] {
            ::prctl(PR_SET_NAME, name.c_str(), 0, 0, 0);
            pause_forever();
        }))] = name;
    for (const auto& [pid, name] : named) {
        const auto deadline = std::chrono::steady_clock::now() + 5s;
        std::string comm;
        while (comm != name + "\n" && std::chrono::steady_clock::now() < deadline) {
            std::ifstream in("/proc/" + std::to_string(pid) + "/comm", std::ios::binary);
            comm.assign(std::istreambuf_iterator<char>(in), {});
        }
        REQUIRE(comm == name + "\n");
    }

    const KillReport report = sweeper.run(300ms);
    for (const auto& [pid, name] : named) {
        CAPTURE(escape_for_log(name));
        const Decision* decided = decision_for(report.first_plan, pid);
        REQUIRE(decided != nullptr);
        CHECK(decided->comm == name);
        CHECK(decided->verdict == Verdict::kill);
        REQUIRE(action_for(report, pid, SIGTERM) != nullptr);
        CHECK(action_for(report, pid, SIGTERM)->comm == escape_for_log(name));
        CHECK(wait_gone(pid));
    }
}

TEST_CASE("fault catalogue: a non-dumpable process is owned by its user in /proc and is killed as a stray") {
    Sweeper sweeper(41474);
    // As ssh-agent and gpg-agent make themselves: the kernel gives the files under
    // /proc/<pid> to root, but /proc/<pid> itself keeps the process's effective uid.
    const pid_t agent = sweeper.spawned.emplace_back(spawn_forked_as(41474, [] {
        ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        pause_forever();
    }));
    const std::string proc = "/proc/" + std::to_string(agent);
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (owner_of(proc + "/status") != 0u && std::chrono::steady_clock::now() < deadline) ::usleep(5000);
    REQUIRE(owner_of(proc + "/status") == 0u);
    CHECK(owner_of(proc) == 41474u);

    const KillReport report = sweeper.run(300ms);
    const Decision* decided = decision_for(report.first_plan, agent);
    REQUIRE(decided != nullptr);
    CHECK(decided->verdict == Verdict::kill);
    CHECK(decided->reason == Reason::stray);
    CHECK(wait_gone(agent));
}

TEST_CASE("fault catalogue: a setuid-style process is owned by its effective uid in /proc and kept as mixed uids") {
    Sweeper sweeper(41475);
    // Real uid another user's, effective and saved uid the swept one (a setuid program).
    const pid_t setuid_style = sweeper.spawned.emplace_back(spawn_with_uids(41476, 41475, 41475, {"sleep", "1000"}));
    REQUIRE(wait_owner(setuid_style, 41475));
    const KillReport report = sweeper.run(200ms);
    const Decision* decided = decision_for(report.first_plan, setuid_style);
    REQUIRE(decided != nullptr);
    CHECK(decided->verdict == Verdict::keep);
    CHECK(decided->reason == Reason::mixed_uids);
    CHECK(report.actions.empty());
    CHECK(is_running(setuid_style));
}

TEST_CASE("fault catalogue: an unshare -Urpf container of a stray is swept whole, its own pid 1 included") {
    Sweeper sweeper(41477);
    SharedDir dir;
    // The user's own container: a user namespace where the user is root, a pid
    // namespace where its sleep is pid 1. A chroot (the release roots) refuses user
    // namespaces: there root makes the pid namespace and the user runs in it.
    const std::string pid_file = dir / "inner.pid";
    const std::string inner = "echo $$ > " + pid_file + "; exec sleep 1000";
    const pid_t probe = spawn_as(41477, {"unshare", "-Ur", "true"});
    int status = 0;
    ::waitpid(probe, &status, 0);
    const bool user_namespaces = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (user_namespaces) {
        sweeper.spawn({"unshare", "-Urpf", "sh", "-c", inner});
    } else {
        MESSAGE("user namespaces refused here (chroot?): a root-made pid namespace instead");
        sweeper.spawned.push_back(spawn_as(
            0, {"unshare", "-pf", "setpriv", "--reuid=41477", "--regid=41477", "--clear-groups", "sh", "-c", inner}));
    }
    // The pid file holds the pid inside the container: 1.
    REQUIRE(wait_pid_file(pid_file) == 1);
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (processes_of(41477).size() < (user_namespaces ? 2u : 1u) && std::chrono::steady_clock::now() < deadline)
        ::usleep(5000);
    const auto container = processes_of(41477);
    REQUIRE(!container.empty());

    const KillReport report = sweeper.run(300ms);
    CHECK_FALSE(report.error);
    for (const pid_t pid : container) {
        CAPTURE(pid);
        CHECK(pid != 1);  // seen with our pids, not the container's
        CHECK(pids_signalled(report, SIGTERM).count(pid) == 1);
        CHECK(wait_gone(pid));
    }
    CHECK(processes_of(41477).empty());
}

TEST_CASE("fault catalogue: dry run and real run decide identically") {
    Sweeper sweeper(41478);
    SharedDir dir;
    spawn_as(41478, {"sleep", "1000"});
    spawn_stubborn(41478, dir, "sleep 1000");  // the shell and its sleep ignore SIGTERM
    REQUIRE(wait_count(41478, 3));
    const auto listed = processes_of(41478);
    const std::set<pid_t> strays(listed.begin(), listed.end());
    const pid_t protected_process = sweeper.spawned.emplace_back(spawn_as(41479, {"sleep", "1000"}));
    sweeper.accounts.names[41479] = "op.erator";
    sweeper.config.protected_users = {"op.erator"};
    const auto verdicts = [&](const KillReport& report) {
        std::map<pid_t, std::pair<Verdict, Reason>> out;
        for (const Decision& d : report.first_plan.decisions)
            if (strays.count(d.pid) == 1 || d.pid == protected_process) out[d.pid] = {d.verdict, d.reason};
        return out;
    };

    const KillReport dry = sweeper.run(200ms, true);
    const KillReport real = sweeper.run(200ms);
    CHECK(verdicts(dry).size() == strays.size() + 1);
    CHECK(verdicts(dry) == verdicts(real));
    CHECK(pids_signalled(dry, SIGTERM) == strays);
    CHECK(pids_signalled(real, SIGTERM) == strays);
    for (const pid_t pid : strays) CHECK(wait_gone(pid));
    CHECK(is_running(protected_process));
}

TEST_CASE("fault catalogue: two evaluations at once on one node both finish and kill only strays") {
    Sweeper sweeper(41480);
    SharedDir dir;
    sweeper.accounts.names[41481] = "op.erator";
    sweeper.config.protected_users = {"op.erator"};
    const pid_t protected_process = sweeper.spawned.emplace_back(spawn_as(41481, {"sleep", "1000"}));
    spawn_as(41480, {"sleep", "1000"});
    spawn_stubborn(41480, dir, "sleep 1000");
    REQUIRE(wait_count(41480, 3));
    const auto strays = processes_of(41480);

    // Two sweeps of the same node at the same moment, each its own process (two step
    // ends, or the periodic sweep and an epilog): each ends, neither fails, and every
    // signal either sends goes to the swept user (the other may have killed it first).
    std::vector<pid_t> sweeps;
    for (int i = 0; i < 2; ++i) {
        const pid_t child = ::fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            try {
                const KillReport report = sweeper.run(300ms);
                bool only_strays = !report.error && report.survivors.empty();
                for (const KillRecord& r : report.actions) only_strays = only_strays && r.uid == 41480;
                ::_exit(only_strays ? 0 : 1);
            } catch (...) {
                ::_exit(2);
            }
        }
        sweeps.push_back(child);
    }
    for (const pid_t child : sweeps) {
        int status = -1;
        REQUIRE(::waitpid(child, &status, 0) == child);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 0);
    }
    for (const pid_t pid : strays) CHECK(wait_gone(pid));
    CHECK(is_running(protected_process));
}
