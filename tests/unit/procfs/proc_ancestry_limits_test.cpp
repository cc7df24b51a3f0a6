// SPDX-License-Identifier: GPL-2.0-or-later
// The process scan's ancestry under attack: an owner that changes under the
// probe, chains too deep to believe or looping, a fan under a deep chain, the scan's
// deadline, and zombie thread-group leaders whose threads still run.
#include "kill/executor.hpp"
#include "policy/evaluation.hpp"
#include "procfs/proc_table.hpp"
#include "support/fake_accounts.hpp"
#include "support/fake_proc.hpp"
#include "support/plans.hpp"
#include "support/processes.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

using namespace leftover;
using leftover::test::FakeAccounts;
using leftover::test::FakeProc;
using leftover::test::FakeProcess;
using leftover::test::get;
using leftover::test::reason_of;
using leftover::test::scan_ok;

namespace {

constexpr uid_t kDeep = 41411, kStray = 41412, kThreads = 41413;

FakeProcess user_process(pid_t pid, pid_t ppid, uid_t uid, std::uint64_t start_time) {
    return {.pid = pid, .ppid = ppid, .uids = {uid, uid, uid, uid}, .start_time = start_time};
}

ScanOptions users_only(const FakeProc& fake) {
    auto options = fake.options();
    options.wants_detail = [](uid_t owner) { return owner != 0; };
    return options;
}

// One node-wide evaluation of a fake tree with no live work.
struct Node {
    FakeProc fake;
    FakeAccounts accounts;
    Config config;
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();

    Node() { accounts.names = {{kDeep, "deep.user"}, {kStray, "stray.user"}, {kThreads, "threads.user"}}; }

    Result<Plan> evaluate() {
        auto exemptions = Exemptions::load(config, {});
        REQUIRE(exemptions.ok());
        EvaluationContext context;
        context.proc_root = fake.root();
        context.self = FakeProc::caller_pid;
        context.deadline = deadline;
        Evaluation evaluation(
            exemptions.value(), accounts, [] { return Result<LiveWork>(LiveWork{}); }, {}, context);
        return evaluation();
    }
};

// A chain of `depth` user processes, the first under `top`; returns the deepest pid.
pid_t add_chain(FakeProc& fake, pid_t first, pid_t top, int depth, uid_t uid) {
    pid_t parent = top;
    for (int i = 0; i < depth; ++i) {
        const pid_t pid = first + i;
        fake.add_process(user_process(pid, parent, uid, 1000 + static_cast<std::uint64_t>(i)));
        parent = pid;
    }
    return parent;
}

}  // namespace

TEST_CASE("fault catalogue: the ancestry probe keeps the owner the listing read") {
    FakeProc fake;
    // 300 is root's when /proc is listed, so it is not read in detail; by the time the
    // walk from its child 301 probes it, it belongs to another uid (a daemon that
    // switched uids and exec'd, or a reused pid).
    fake.add_process(
        {.pid = 300, .ppid = 1, .uids = {}, .comm = "screen", .start_time = 100, .exe = "/usr/bin/screen"});
    fake.add_process(user_process(301, 300, kStray, 200));
    auto options = users_only(fake);
    options.wants_detail = [&](uid_t owner) {
        if (owner == kStray)
            fake.add_process({.pid = 300,
                              .ppid = 1,
                              .uids = {kDeep, kDeep, kDeep, kDeep},
                              .comm = "other",
                              .state = 'R',
                              .start_time = 100});
        return owner != 0;
    };
    const auto table = scan_ok(options);
    const Process& probed = get(table, 300);
    CHECK(probed.owner == 0);
    CHECK_FALSE(probed.detailed);
    CHECK(probed.comm.empty());
    CHECK(probed.state == '?');
    CHECK(get(table, 301).ancestors() == std::vector<pid_t>{300, 1});
}

TEST_CASE("fault catalogue: a chain deeper than 512 keeps only its deep processes, the rest is judged") {
    Node node;
    constexpr pid_t first = 1000;
    constexpr int depth = 600, max_depth = 512;
    const pid_t deepest = add_chain(node.fake, first, 1, depth, kDeep);
    node.fake.add_process(user_process(5000, 1, kStray, 900));

    const auto table = scan_ok(node.fake.options());
    for (int i = 0; i < depth; ++i) {
        CAPTURE(i);
        const Process& p = get(table, first + i);
        // The process at index i has i + 1 ancestors (its chain ends at pid 1).
        CHECK(p.ancestry_unreadable == (i + 1 > max_depth));
        if (!p.ancestry_unreadable) CHECK(p.ancestors().size() == static_cast<std::size_t>(i + 1));
    }

    const auto plan = node.evaluate();
    REQUIRE_MESSAGE(plan.ok(), (plan.ok() ? std::string() : plan.error().message));
    CHECK(reason_of(*plan, 5000) == Reason::stray);
    CHECK(reason_of(*plan, deepest) == Reason::unreadable_ancestry);
    CHECK(reason_of(*plan, first + max_depth) == Reason::unreadable_ancestry);
    CHECK(reason_of(*plan, first + max_depth - 1) == Reason::stray);
    CHECK(std::string(to_string(Reason::unreadable_ancestry)) == "unreadable_ancestry");
    std::size_t kept = 0;
    for (const Decision& d : plan->decisions)
        if (d.reason == Reason::unreadable_ancestry) {
            ++kept;
            CHECK(d.verdict == Verdict::keep);
        }
    CHECK(kept == depth - max_depth);
}

TEST_CASE("fault catalogue: a loop keeps its members and what hangs below it, the rest is judged") {
    Node node;
    node.fake.add_process(user_process(400, 402, kDeep, 1000));
    node.fake.add_process(user_process(401, 400, kDeep, 1000));
    node.fake.add_process(user_process(402, 401, kDeep, 1000));
    node.fake.add_process(user_process(403, 401, kDeep, 1000));  // below the loop
    node.fake.add_process(user_process(404, 404, kDeep, 1000));  // its own parent
    node.fake.add_process(user_process(5000, 1, kStray, 900));
    const auto plan = node.evaluate();
    REQUIRE_MESSAGE(plan.ok(), (plan.ok() ? std::string() : plan.error().message));
    for (const pid_t pid : {400, 401, 402, 403, 404}) {
        CAPTURE(pid);
        CHECK(reason_of(*plan, pid) == Reason::unreadable_ancestry);
    }
    CHECK(reason_of(*plan, 5000) == Reason::stray);
}

TEST_CASE("fault catalogue: a fan under a deep chain gets every chain and stepd_ancestor right") {
    FakeProc fake;
    fake.add_process({.pid = 300,
                      .ppid = 1,
                      .uids = {},
                      .comm = "slurmstepd: [5.0]",
                      .start_time = 100,
                      .exe = "/usr/sbin/slurmstepd"});
    constexpr int depth = 400, fan = 300;
    const pid_t bottom = add_chain(fake, 1000, 300, depth, kDeep);
    for (int i = 0; i < fan; ++i) fake.add_process(user_process(3000 + i, bottom, kDeep, 5000));
    // A fan member older than its parent: that pid was reused, its real parent is gone.
    fake.add_process(user_process(3000 + fan, bottom, kDeep, 10));
    // A second chain under pid 1 that shares no stepd.
    fake.add_process(user_process(4000, 1, kStray, 500));
    fake.add_process(user_process(4001, 4000, kStray, 600));

    const auto table = scan_ok(users_only(fake));
    std::vector<pid_t> chain;  // of the fan: the whole chain nearest first, then 300, 1
    for (int i = depth - 1; i >= 0; --i) chain.push_back(1000 + i);
    chain.push_back(300);
    chain.push_back(1);
    for (int i = 0; i < fan; ++i) {
        CAPTURE(i);
        const Process& p = get(table, 3000 + i);
        CHECK_FALSE(p.ancestry_unreadable);
        CHECK(p.stepd_ancestor == std::optional<pid_t>{300});
        CHECK(p.ancestors() == chain);
    }
    for (int i = 0; i < depth; ++i) {
        CAPTURE(i);
        const Process& p = get(table, 1000 + i);
        CHECK(p.stepd_ancestor == std::optional<pid_t>{300});
        CHECK(p.ancestors().size() == static_cast<std::size_t>(i + 2));
    }
    const Process& orphan = get(table, 3000 + fan);
    CHECK(orphan.ancestors().empty());
    CHECK_FALSE(orphan.stepd_ancestor.has_value());
    CHECK(get(table, 4001).ancestors() == std::vector<pid_t>{4000, 1});
    CHECK_FALSE(get(table, 4001).stepd_ancestor.has_value());
}

TEST_CASE("fault catalogue: a scan past its deadline is a lookup error that says so") {
    Node node;
    add_chain(node.fake, 1000, 1, 20, kDeep);
    auto options = node.fake.options();
    options.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    const auto result = scan_processes(options);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().kind == ErrorKind::lookup);
    CHECK(result.error().message.find("deadline") != std::string::npos);
    // How far it got: what it left unread.
    CHECK(result.error().message ==
          "the scan of " + node.fake.root() + " stopped while listing it: the evaluation's deadline was reached");

    // The evaluation passes its deadline to the scan: nothing is decided, so nothing killed.
    node.deadline = options.deadline;
    const auto plan = node.evaluate();
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.error().message.find("deadline") != std::string::npos);
}

TEST_CASE("fault catalogue: a zombie leader with live threads is alive, one without is a zombie") {
    Node node;
    node.fake.add_process(
        {.pid = 600, .uids = {kThreads, kThreads, kThreads, kThreads}, .state = 'Z', .exe = "", .threads = 3});
    node.fake.add_process(
        {.pid = 601, .uids = {kThreads, kThreads, kThreads, kThreads}, .state = 'Z', .exe = "", .threads = 1});
    const auto table = scan_ok(node.fake.options());
    CHECK(get(table, 600).threads == 3);
    CHECK_FALSE(get(table, 600).zombie());
    CHECK(get(table, 601).zombie());
    const auto plan = node.evaluate();
    REQUIRE(plan.ok());
    CHECK(reason_of(*plan, 600) == Reason::stray);
    CHECK(reason_of(*plan, 601) == Reason::zombie);

    SUBCASE("a Threads line that does not parse is a lookup error") {
        node.fake.write_file("600/status",
                             "Name:\tx\nState:\tZ (zombie)\nUid:\t41413\t41413\t41413\t41413\n"
                             "Threads:\tmany\n");
        const auto result = scan_processes(node.fake.options());
        REQUIRE_FALSE(result.ok());
        CHECK(result.error().message.find("/600/status") != std::string::npos);
    }
}

namespace {

void* park(void*) {
    for (;;) ::pause();
}

// A process of uid whose main thread has exited while a second thread runs: its
// leader shows state Z. Made dumpable, as a program exec'd by the user is.
pid_t spawn_zombie_leader(uid_t uid) {
    // In a fresh pid namespace (as the unit tests run) the first child would be pid 2,
    // which the scan takes for kthreadd: use up the low pids first.
    for (pid_t burnt = 0; burnt >= 0 && burnt <= 2;) {
        burnt = ::fork();
        if (burnt == 0) ::_exit(0);
        if (burnt > 0) ::waitpid(burnt, nullptr, 0);
    }
    int ready[2];
    REQUIRE(::pipe2(ready, O_CLOEXEC) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::close(ready[0]);
        ::setsid();
        if (::setgroups(0, nullptr) != 0 || ::setresgid(uid, uid, uid) != 0 || ::setresuid(uid, uid, uid) != 0)
            ::_exit(126);
        ::prctl(PR_SET_DUMPABLE, 1);
        // Not the test runner any more: default signal actions (SIGTERM must end it,
        // not run doctest's crash report) and nothing written to the runner's output.
        for (const int sig : {SIGTERM, SIGINT, SIGABRT, SIGSEGV, SIGFPE, SIGILL}) ::signal(sig, SIG_DFL);
        const int null = ::open("/dev/null", O_RDWR);
        ::dup2(null, 1);
        ::dup2(null, 2);
        pthread_t thread;
        if (::pthread_create(&thread, nullptr, park, nullptr) != 0) ::_exit(125);
        (void)!::write(ready[1], "x", 1);
        // Ends the main thread only, as pthread_exit would, without unwinding through
        // the test runner's frames.
        ::syscall(SYS_exit, 0);
    }
    ::close(ready[1]);
    char byte = 0;
    const bool started = ::read(ready[0], &byte, 1) == 1;
    ::close(ready[0]);
    REQUIRE(started);
    return pid;
}

char state_of(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    return close == std::string::npos || close + 2 >= text.size() ? '?' : text[close + 2];
}

}  // namespace

TEST_CASE("fault catalogue: a real process whose main thread exited is found alive and killed") {
    test::become_subreaper();
    const pid_t pid = spawn_zombie_leader(kThreads);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (state_of(pid) != 'Z' && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    REQUIRE(state_of(pid) == 'Z');

    ScanOptions options;
    options.caller_pid = ::getpid();
    options.wants_detail = [](uid_t owner) { return owner == kThreads; };
    const auto table = scan_ok(options);
    const Process& leader = get(table, pid);
    CHECK(leader.detailed);
    CHECK(leader.state == 'Z');
    CHECK(leader.threads == 2);
    CHECK_FALSE(leader.zombie());

    // The executor signals the leader's pidfd: the whole thread group dies, and the
    // pidfd polls readable only then.
    FakeAccounts accounts;
    accounts.names = {{kThreads, "threads.user"}};
    auto exemptions = Exemptions::load(Config{}, {});
    REQUIRE(exemptions.ok());
    EvaluationContext context;
    context.self = ::getpid();
    context.event = Event{Scope::job_user, kThreads};
    Evaluation evaluation(
        exemptions.value(), accounts, [] { return Result<LiveWork>(LiveWork{}); }, {}, context);
    KillOptions kill;
    kill.self = ::getpid();
    kill.grace = std::chrono::milliseconds(2000);
    kill.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    const KillReport report = execute_kills([&] { return evaluation(); }, kill);
    CHECK_FALSE(report.error.has_value());
    CHECK(reason_of(report.first_plan, pid) == Reason::stray);
    // Reaped (not just a zombie): every thread of the group is gone.
    int status = 0;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (::waitpid(pid, &status, WNOHANG) != pid && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(WIFSIGNALED(status));
    CHECK(report.survivors.empty());
    test::kill_all_of(kThreads);
}
