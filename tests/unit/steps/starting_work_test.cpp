// SPDX-License-Identifier: GPL-2.0-or-later
#include "steps/starting_work.hpp"
#include "support/fake_proc.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

using namespace leftover;
using namespace leftover::steps;
using namespace leftover::test;

namespace {

std::string cmdline(const std::vector<std::string>& argv) {
    std::string text;
    for (const std::string& arg : argv) text += arg + '\0';
    return text;
}

// A node: slurmd 50, the caller (100) running `slurmstepd spank epilog` inside slurmd's
// fork 60, and a running step whose slurmstepd 200 answers on its socket, with its
// task 201 on the way to exec.
struct Node {
    FakeProc proc;
    Node() {
        add(50, 1, "/usr/sbin/slurmd", {"/usr/sbin/slurmd", "-D"});
        add(60, 50, "/usr/sbin/slurmd", {"/usr/sbin/slurmd", "-D"});
        add(100, 60, "/usr/sbin/slurmstepd", {"/usr/sbin/slurmstepd", "spank", "epilog"});
        add(200, 1, "/usr/sbin/slurmstepd", {"slurmstepd: [7.0]"});
        add(201, 200, "/usr/sbin/slurmstepd", {"slurmstepd: [7.0]"});
    }
    void add(pid_t pid, pid_t ppid, const std::string& exe, const std::vector<std::string>& argv) {
        proc.add_process({.pid = pid, .ppid = ppid, .uids = {0, 0, 0, 0}, .comm = "slurm", .exe = exe});
        proc.write_file(std::to_string(pid) + "/cmdline", cmdline(argv));
        proc.set_pid_ns(pid, "pid:[4026531836]");
    }
    // `slurmd` feeds stepd its launch: slurmd's _forkexec_slurmstepd dup2s one pipe onto
    // the stepd's stdin and another onto its stdout, and holds their other ends until the
    // stepd has made its step socket and said so (slurmstepd.c close_slurmd_conn).
    void feed(pid_t stepd, pid_t slurmd, int pipe) {
        std::filesystem::create_directories(proc.path(fmt::format("{}/fd", stepd)));
        std::filesystem::create_directories(proc.path(fmt::format("{}/fd", slurmd)));
        proc.symlink(fmt::format("pipe:[{}]", pipe), fmt::format("{}/fd/0", stepd));
        proc.symlink(fmt::format("pipe:[{}]", pipe + 1), fmt::format("{}/fd/1", stepd));
        proc.symlink("/dev/null", fmt::format("{}/fd/2", stepd));
        proc.symlink(fmt::format("pipe:[{}]", pipe), fmt::format("{}/fd/{}", slurmd, 10 + pipe % 100));
        proc.symlink(fmt::format("pipe:[{}]", pipe + 1), fmt::format("{}/fd/{}", slurmd, 11 + pipe % 100));
    }
    std::optional<std::string> starting(const std::set<pid_t>& answering = {200}, std::size_t unplaced = 0) {
        SeenSteps seen;
        seen.stepds = answering;
        seen.steps = {"7.0"};
        seen.unplaced_stepds = unplaced;
        return starting(seen);
    }
    std::optional<std::string> starting(const SeenSteps& seen, const std::set<std::string>& listed = {}) {
        auto found = work_being_set_up(proc.root(), seen, [&]() -> Result<std::set<std::string>> { return listed; },
                                       {100, 60, 50, 1});
        REQUIRE_MESSAGE(found.ok(), (found.ok() ? "" : found.error().message));
        return found.value();
    }
};

}  // namespace

TEST_CASE("fault catalogue: a slurmstepd with no step socket yet is a job starting, one that answers is not") {
    Node node;
    CHECK(node.starting() == std::nullopt);  // the caller, its slurmd fork, an answering stepd and its task
    node.add(300, 1, "/usr/sbin/slurmstepd-wlm", {"/usr/sbin/slurmstepd"});
    node.feed(300, 50, 7000);
    CHECK(node.starting() == "slurmstepd pid 300 has no step socket yet");
    CHECK(node.starting({200, 300}) == std::nullopt);  // it answers now
    // A stepd whose socket could not be asked (or names a pid of another namespace) is that one.
    CHECK(node.starting({200}, 1) == std::nullopt);
    // Without a socket for minutes it is stuck, not starting (it started 10 s after boot).
    node.proc.write_file("uptime", "100000.00 1.00\n");
    CHECK(node.starting() == std::nullopt);
    node.proc.write_file("uptime", "20.00 1.00\n");
    CHECK(node.starting() == "slurmstepd pid 300 has no step socket yet");
}

TEST_CASE("starting work: the caller's own process and its ancestors are no doubt, another slurmd fork is") {
    Node node;
    CHECK(node.starting() == std::nullopt);
    node.add(61, 50, "/usr/sbin/slurmd", {"/usr/sbin/slurmd", "-D"});
    CHECK(node.starting() == "slurmd pid 61, a fork of slurmd pid 50, may be starting a step");
}

TEST_CASE("starting work: an exe link root cannot read is judged by the process's name, not an error") {
    Node node;
    node.proc.add_process({.pid = 500, .ppid = 1, .uids = {0, 0, 0, 0}, .comm = "systemd", .exe = ""});
    node.proc.write_file("500/exe", "");  // a regular file: readlink fails with EINVAL
    CHECK(node.starting() == std::nullopt);
    node.proc.add_process({.pid = 501, .ppid = 1, .uids = {0, 0, 0, 0}, .comm = "slurmstepd", .exe = ""});
    node.proc.write_file("501/exe", "");
    node.proc.write_file("501/cmdline", cmdline({"slurmstepd"}));
    node.feed(501, 50, 7002);
    CHECK(node.starting() == "slurmstepd pid 501 has no step socket yet");
}

TEST_CASE("starting work: a spank epilog, an epilog fork, another pid namespace's stepd are no doubt") {
    Node node;
    node.add(301, 1, "/usr/sbin/slurmstepd", {"/usr/sbin/slurmstepd", "spank", "epilog"});
    node.add(62, 50, "/usr/sbin/slurmd", {"slurmd: epilog"});
    CHECK(node.starting() == std::nullopt);
    // Another host's: a node in a pid namespace of its own, its /proc seen from outside.
    node.add(303, 1, "/usr/sbin/slurmstepd", {"/usr/sbin/slurmstepd"});
    node.proc.set_pid_ns(303, "pid:[4026532999]");
    CHECK(node.starting() == std::nullopt);
    node.add(302, 1, "/usr/sbin/slurmstepd", {"/usr/sbin/slurmstepd", "spank", "prolog"});
    node.feed(302, 50, 7004);
    CHECK(node.starting() == "slurmstepd pid 302 has no step socket yet");
}

TEST_CASE("starting work: a user's program named slurmstepd is no doubt, and an unreadable /proc is an error") {
    Node node;
    node.proc.add_process({.pid = 400, .ppid = 1, .uids = {1000, 1000, 1000, 1000}, .exe = "/home/u/slurmstepd"});
    node.proc.write_file("400/cmdline", cmdline({"slurmstepd"}));
    CHECK(node.starting() == std::nullopt);
    auto found = work_being_set_up("/nonexistent-proc", SeenSteps{},
                                   []() -> Result<std::set<std::string>> { return std::set<std::string>{}; }, {});
    REQUIRE_FALSE(found.ok());
    CHECK(found.error().kind == ErrorKind::lookup);
}

// One sweep's looks at a node where job 8's batch stepd 300 ends beside the answering 200.
SeenSteps looks(std::initializer_list<LocalJobState> states) {
    SeenSteps seen;
    for (const LocalJobState& state : states) seen.add(state);
    return seen;
}

LocalStep answering(std::uint32_t job, std::uint32_t step, pid_t stepd) {
    LocalStep live;
    live.job_id = job;
    live.step_id = step;
    live.stepd_pid = stepd;
    return live;
}

constexpr std::uint32_t kBatch = 0xfffffffbu;

TEST_CASE("starting work: an ending slurmstepd whose step socket refused is no job starting") {
    Node node;
    // Its listener closed, the process lives on: no answer, and a title naming its step,
    // whose socket is still in the spool dir.
    node.add(300, 1, "/usr/sbin/slurmstepd", {"slurmstepd: [8.batch]"});
    const std::set<std::string> listed{"7.0", "8.batch"};
    LocalJobState look;
    look.live = {answering(7, 0, 200)};
    CHECK(node.starting(looks({look}), listed) == "slurmstepd pid 300 has no step socket yet");
    look.dead = {{8, kBatch, "/spool/n1_8.4294967291"}};
    CHECK(node.starting(looks({look}), listed) == std::nullopt);
    // 26.05's title of a step manager, and a het step's component, name the step too.
    node.proc.write_file("300/cmdline", cmdline({"slurmstepd: [8.batch stepmgr]"}));
    CHECK(node.starting(looks({look}), listed) == std::nullopt);
    node.proc.write_file("300/cmdline", cmdline({"slurmstepd: [8.batch+1]"}));
    CHECK(node.starting(looks({look}), listed) == std::nullopt);
}

TEST_CASE("starting work: a slurmstepd that answered in an earlier look of the sweep is no job starting") {
    Node node;
    // Judged by its pid alone: a title that names no step (none set, or a form not known).
    node.add(300, 1, "/usr/sbin/slurmstepd", {"/usr/sbin/slurmstepd"});
    node.feed(300, 50, 7000);
    LocalJobState first;
    first.live = {answering(7, 0, 200), answering(8, kBatch, 300)};
    LocalJobState last;  // its socket removed as its step ended: the last look lists it no more
    last.live = {answering(7, 0, 200)};
    CHECK(node.starting(looks({last})) == "slurmstepd pid 300 has no step socket yet");
    CHECK(node.starting(looks({first, last})) == std::nullopt);
}

TEST_CASE("fault catalogue: a fresh slurmstepd whose step no look has seen is still a job starting") {
    Node node;
    LocalJobState look;
    look.live = {answering(7, 0, 200)};
    look.dead = {{8, kBatch, "/spool/n1_8.4294967291"}};
    // Before its title: the command line of the exec. slurmd 50 feeds it its launch.
    node.add(300, 1, "/usr/sbin/slurmstepd", {"/usr/sbin/slurmstepd"});
    node.feed(300, 50, 7000);
    CHECK(node.starting(looks({look})) == "slurmstepd pid 300 has no step socket yet");
    // Titled with a step whose socket no look listed: job 9's, or job 8's next step.
    node.proc.write_file("300/cmdline", cmdline({"slurmstepd: [9.batch]"}));
    CHECK(node.starting(looks({look})) == "slurmstepd pid 300 has no step socket yet");
    node.proc.write_file("300/cmdline", cmdline({"slurmstepd: [8.0]"}));
    CHECK(node.starting(looks({look})) == "slurmstepd pid 300 has no step socket yet");
    // An unanswered socket of another step does not stand for it.
    look.unanswered = {{10, 0, "/spool/n1_10.0", "timed out"}};
    CHECK(node.starting(looks({look})) == "slurmstepd pid 300 has no step socket yet");
}

TEST_CASE("fault catalogue: a step socket held busy does not excuse another job's slurmstepd that is starting") {
    // A hostile client holds job 10's step socket busy: its stepd 310 does not answer, but
    // its title names step 10.0, listed by the look. Job 11's stepd 300 has just been
    // exec'd (no title, no socket yet): the held socket is not its, and must not stand
    // for it.
    Node node;
    node.add(310, 1, "/usr/sbin/slurmstepd", {"slurmstepd: [10.0]"});
    node.add(300, 1, "/usr/sbin/slurmstepd", {"/usr/sbin/slurmstepd"});
    node.feed(300, 50, 7000);
    LocalJobState look;
    look.live = {answering(7, 0, 200)};
    look.unanswered = {{10, 0, "/spool/n1_10.0", "timed out connecting (listen backlog full)"}};
    CHECK(node.starting(looks({look})) == "slurmstepd pid 300 has no step socket yet");
    // Without the newcomer, the held socket's own stepd is no sign: its title names its step.
    node.proc.remove("300");
    CHECK(node.starting(looks({look})) == std::nullopt);
}

TEST_CASE("fault catalogue: a slurmstepd that is not this node's is no job starting, however young") {
    // Another cluster's slurmstepd on this host (or another node's, whose spool dir this
    // node does not read): titled with its step, long done with its setup, no step socket
    // here. It is no sign of this node's work being set up, for as long as it runs.
    Node node;
    node.add(300, 1, "/usr/sbin/slurmstepd", {"slurmstepd: [5.batch]"});
    CHECK(node.starting() == std::nullopt);
    // One whose step's socket this node's spool dir holds, though no look saw it, has
    // just made it: this node's, and new.
    CHECK(node.starting(SeenSteps{{200}, {"7.0"}, 0, {}, {}}, {"7.0", "5.batch"}) ==
          "slurmstepd pid 300 has no step socket yet");
    // One that a slurmd of this host is still feeding its launch is being set up here,
    // on stdin or on stdout alone.
    node.feed(300, 50, 7000);
    CHECK(node.starting() == "slurmstepd pid 300 has no step socket yet");
    node.proc.symlink("/dev/null", "300/fd/0");
    CHECK(node.starting() == "slurmstepd pid 300 has no step socket yet");
    node.proc.symlink("/dev/null", "300/fd/1");
    CHECK(node.starting() == std::nullopt);  // done: close_slurmd_conn put /dev/null there
    // Just exec'd, untitled: fed by a slurmd here, or by none (another host's, a stepd
    // run by hand).
    node.add(301, 1, "/usr/sbin/slurmstepd", {"/usr/sbin/slurmstepd"});
    std::filesystem::create_directories(node.proc.path("301/fd"));
    node.proc.symlink("pipe:[8000]", "301/fd/0");  // a pipe no slurmd holds
    CHECK(node.starting() == std::nullopt);
    node.feed(301, 50, 8000);
    CHECK(node.starting() == "slurmstepd pid 301 has no step socket yet");
}

TEST_CASE("fault catalogue: slurmd's orphaned fork holding its pipes is a job starting, a young daemon is not") {
    // _forkexec_slurmstepd: slurmd 50 forks 70, which calls setsid, forks 71 and exits;
    // 71, a slurmd by its binary whose parent is no slurmd, holds the launch pipes whose
    // other ends slurmd 50 holds, until it execs slurmstepd. It passed for a slurmd daemon.
    Node node;
    const auto starting = [&](const std::set<pid_t>& not_doubt) {
        auto found = work_being_set_up(
            node.proc.root(), SeenSteps{{200}, {"7.0"}, 0, {}, {}},
            []() -> Result<std::set<std::string>> { return std::set<std::string>{}; }, not_doubt);
        REQUIRE_MESSAGE(found.ok(), (found.ok() ? "" : found.error().message));
        return found.value();
    };
    const std::set<pid_t> caller{100, 60, 1};  // the daemon 50 itself is judged too
    node.proc.add_process(
        {.pid = 71, .ppid = 1, .uids = {0, 0, 0, 0}, .comm = "slurmd", .start_time = 5000, .exe = "/usr/sbin/slurmd"});
    node.proc.write_file("71/cmdline", cmdline({"/usr/sbin/slurmd", "-D"}));
    node.proc.set_pid_ns(71, "pid:[4026531836]");
    std::filesystem::create_directories(node.proc.path("71/fd"));
    std::filesystem::create_directories(node.proc.path("50/fd"));
    node.proc.symlink("/dev/null", "71/fd/0");
    node.proc.symlink("/dev/null", "50/fd/0");
    node.proc.symlink("pipe:[9100]", "50/fd/3");  // slurmd's own pipe: the fork shares it until its exec
    node.proc.symlink("pipe:[9100]", "71/fd/3");
    CHECK(starting(caller) == "slurmd pid 71, a fork of a slurmd whose parent exited, may be starting a step");
    // After its dup2s: the launch pipes on its stdin and stdout alone.
    node.proc.remove("71/fd/3");
    node.proc.symlink("pipe:[9000]", "71/fd/0");
    node.proc.symlink("pipe:[9001]", "71/fd/1");
    CHECK(starting(caller) == std::nullopt);  // slurmd does not hold them: another's, not ours
    node.proc.symlink("pipe:[9000]", "50/fd/12");
    node.proc.symlink("pipe:[9001]", "50/fd/13");
    CHECK(starting(caller) == "slurmd pid 71, a fork of a slurmd whose parent exited, may be starting a step");
    // It exec'd: a slurmstepd fed its launch, a sign of its own.
    node.proc.symlink("/usr/sbin/slurmstepd", "71/exe");
    node.proc.write_file("71/cmdline", cmdline({"slurmstepd: [8.extern]"}));
    CHECK(starting(caller) == "slurmstepd pid 71 has no step socket yet");
    // Another young slurmd daemon is no sign, though it shares its stdout with an older
    // one (both started by one shell): slurmd's own ends of a launch's pipes are never its
    // stdio.
    node.proc.remove("71");
    node.proc.remove("50/fd/12");
    node.proc.remove("50/fd/13");
    node.proc.add_process(
        {.pid = 80, .ppid = 1, .uids = {0, 0, 0, 0}, .comm = "slurmd", .start_time = 5000, .exe = "/usr/sbin/slurmd"});
    node.proc.write_file("80/cmdline", cmdline({"/usr/sbin/slurmd", "-D"}));
    node.proc.set_pid_ns(80, "pid:[4026531836]");
    std::filesystem::create_directories(node.proc.path("80/fd"));
    node.proc.symlink("pipe:[9200]", "50/fd/1");
    node.proc.symlink("pipe:[9200]", "80/fd/1");
    node.proc.symlink("pipe:[9300]", "80/fd/4");
    CHECK(starting(caller) == std::nullopt);
}

TEST_CASE("fault catalogue: a starting slurmstepd whose socket refused while slurmd still feeds it is a job starting") {
    // 26.05, a job's extern stepd: its socket exists a moment before it listens; a look
    // then is refused, as by an ending stepd's closed listener. slurmd still feeds its
    // launch: it is starting, not ending.
    Node node;
    node.add(300, 1, "/usr/sbin/slurmstepd", {"slurmstepd: [8.extern]"});
    node.feed(300, 50, 7000);
    LocalJobState look;
    look.live = {answering(7, 0, 200)};
    look.dead = {{8, 0xfffffffcu, "/spool/n1_8.4294967292"}};
    CHECK(node.starting(looks({look}), {"7.0", "8.extern"}) == "slurmstepd pid 300 has no step socket yet");
    // Unasked (its listen backlog full), the same.
    look.dead.clear();
    look.unanswered = {{8, 0xfffffffcu, "/spool/n1_8.4294967292", "timed out"}};
    CHECK(node.starting(looks({look}), {"7.0", "8.extern"}) == "slurmstepd pid 300 has no step socket yet");
    // Once it has answered, it is past its setup.
    look.unanswered.clear();
    look.live.push_back(answering(8, 0xfffffffcu, 300));
    CHECK(node.starting(looks({look}), {"7.0", "8.extern"}) == std::nullopt);
}
