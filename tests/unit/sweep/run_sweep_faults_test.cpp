// SPDX-License-Identifier: GPL-2.0-or-later
// The fault catalogue (tests/fault_catalogue.md) at the pipeline: a slurmstepd or a
// controller query that misbehaves kills nothing, and the log says why. Real strays of
// each test's own uid (414xx), as in run_sweep_test.cpp.
#include "accounts/accounts_bounded.hpp"
#include "controller/query_controller.hpp"
#include "steps/stepd_protocol.hpp"
#include "support/fake_stepd.hpp"
#include "support/hung_lookups.hpp"
#include "support/pipeline.hpp"
#include "support/plans.hpp"
#include "support/processes.hpp"
#include "support/unix_sockets.hpp"
#include "sweep/run_sweep.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace leftover;
using namespace leftover::test;

namespace {

// A slurmstepd stand-in on `path`: reads each request, answers `reply` and closes; with
// nullopt it accepts and never answers.
class MisbehavingStepd {
public:
    MisbehavingStepd(const std::string& path, std::optional<std::string> reply)
        : fd_(bind_unix(path)), reply_(std::move(reply)) {
        REQUIRE(::listen(fd_.get(), 8) == 0);
        thread_ = std::thread([this] { serve(); });
    }
    ~MisbehavingStepd() {
        stop_ = true;
        thread_.join();
    }
    MisbehavingStepd(const MisbehavingStepd&) = delete;
    MisbehavingStepd& operator=(const MisbehavingStepd&) = delete;

private:
    void serve() {
        std::vector<UniqueFd> held;
        while (!stop_) {
            pollfd listening{fd_.get(), POLLIN, 0};
            if (::poll(&listening, 1, 50) <= 0) continue;
            UniqueFd conn(::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
            if (!conn.valid()) continue;
            pollfd request{conn.get(), POLLIN, 0};
            char buf[4096];
            if (::poll(&request, 1, 1000) > 0) (void)!::read(conn.get(), buf, sizeof buf);
            if (reply_)
                (void)!::write(conn.get(), reply_->data(), reply_->size());
            else
                held.push_back(std::move(conn));
        }
    }
    UniqueFd fd_;
    std::optional<std::string> reply_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

void check_nothing_killed(Pipeline& pipeline, const KillReport& report, pid_t stray, const std::string& says) {
    INFO(pipeline.sink.text());
    REQUIRE(report.error);
    CHECK(report.actions.empty());
    CHECK(is_running(stray));
    CHECK(pipeline.sink.level_of(says) == LogLevel::err);
    CHECK(pipeline.summary().find("; killed 0; ") != std::string::npos);
}

}  // namespace

TEST_CASE("fault catalogue: a step socket that closes at once, hangs, or answers garbage or short kills nothing") {
    Pipeline pipeline(41482);
    // At a step end: slurmctld is not asked there, so a socket that cannot be asked keeps
    // everyone (the job epilog asks slurmctld about it instead, see the tests below).
    pipeline.request.trigger.label = "job 7 step 0";
    pipeline.request.trigger.job_ending = false;
    pipeline.request.trigger.ending_step = steps::StepId{7, 0};
    FakeStepd ending(pipeline.dir / "spool/n1_7.0", 41482, 2, Behaviour::answer, steps::build_stepd_protocol().version);
    const pid_t stray = spawn_as(41482, {"sleep", "600"});
    const std::string socket = pipeline.dir / "spool/n1_9.0";
    std::optional<std::string> reply;
    std::string why;
    SUBCASE("closes at once") { reply = ""; }
    SUBCASE("hangs") { reply = std::nullopt; }
    SUBCASE("garbage") { reply = std::string("\xde\xad\xbe\xef garbage, not Slurm\n"); }
    SUBCASE("short") { reply = std::string("\x01\x00", 2); }
    MisbehavingStepd stepd(socket, reply);
    const KillReport report = pipeline.run("grace: 0\nslurm_timeout: 1\n");
    const auto line = std::find_if(pipeline.sink.lines.begin(), pipeline.sink.lines.end(),
                                   [](const auto& l) { return l.second.starts_with("lookup error: "); });
    REQUIRE(line != pipeline.sink.lines.end());
    CHECK(line->second.find("slurmstepd socket " + socket + " of job 9: ") != std::string::npos);
    check_nothing_killed(pipeline, report, stray, line->second);
    CHECK(pipeline.controller.calls == 0);
}

namespace {

// A process of another test uid, ended when the test ends.
struct OtherUser {
    uid_t uid;
    pid_t pid;
    explicit OtherUser(uid_t u) : uid(u), pid(spawn_as(u, {"sleep", "600"})) {}
    ~OtherUser() { kill_all_of(uid); }
    OtherUser(const OtherUser&) = delete;
    OtherUser& operator=(const OtherUser&) = delete;
};

}  // namespace

TEST_CASE("fault catalogue: a step socket a user holds busy is resolved through slurmctld at the job epilog") {
    // The job 7 epilog of user 41488; job 9 of user 41489 runs here, its stepd's socket
    // held busy by a hostile client. 41488's stray is unrelated to job 9.
    Pipeline pipeline(41488);
    pipeline.accounts.names[41489] = "rs.other";
    OtherUser other(41489);
    const pid_t stray = spawn_as(41488, {"sleep", "600"});
    REQUIRE(is_running(stray));
    REQUIRE(is_running(other.pid));
    const std::string socket = pipeline.dir / "spool/n1_9.0";
    BlockedListener blocked(socket);
    const std::string named = "slurmstepd socket " + socket + " of job 9 (step 9.0) cannot be asked: ";

    SUBCASE("slurmctld says job 9 runs: its user is live, the unrelated stray is reaped") {
        pipeline.controller.live.uids = {41489};
        pipeline.controller.live.job_ids = {9};
        pipeline.controller.live.job_users = {{9, 41489}};
        const KillReport report = pipeline.run("grace: 0\nslurm_timeout: 5\n");
        INFO(pipeline.sink.text());
        CHECK_FALSE(report.error);
        CHECK(wait_gone(stray));
        CHECK(is_running(other.pid));
        CHECK(reason_of(report.first_plan, other.pid) == Reason::has_live_job);
        CHECK(pipeline.sink.level_of(named + "timed out connecting (listen backlog full)") == LogLevel::warn);
        CHECK(pipeline.sink.count("job 9 of the unanswered socket " + socket +
                                  " runs here, says slurmctld: uid 41489 is live") == 1);
        CHECK(pipeline.controller.calls >= 1);
    }
    SUBCASE("slurmctld does not list job 9: it has ended, like an ending step, and both strays go") {
        const KillReport report = pipeline.run("grace: 0\nslurm_timeout: 5\n");
        INFO(pipeline.sink.text());
        CHECK_FALSE(report.error);
        CHECK(wait_gone(stray));
        CHECK(wait_gone(other.pid));
        CHECK(pipeline.sink.count(named) == 1);
    }
    SUBCASE("slurmctld cannot be asked: nothing is killed, and the error names the socket") {
        pipeline.controller.error = Error::lookup("asking slurmctld: timed out", ErrorSource::controller);
        const KillReport report = pipeline.run("grace: 0\nslurm_timeout: 1\n");
        const auto line = std::find_if(pipeline.sink.lines.begin(), pipeline.sink.lines.end(),
                                       [](const auto& l) { return l.second.starts_with("lookup error: "); });
        REQUIRE(line != pipeline.sink.lines.end());
        CHECK(line->second.find("slurmstepd socket " + socket + " of job 9: timed out connecting") !=
              std::string::npos);
        CHECK(line->second.find("asking slurmctld instead: asking slurmctld: timed out") != std::string::npos);
        check_nothing_killed(pipeline, report, stray, line->second);
        CHECK(is_running(other.pid));
    }
}

TEST_CASE("fault catalogue: at a step end a step socket held busy keeps only its job's user, the others are judged") {
    // Step 7.0 of user 41541 ends. Job 9 of user 41542 runs here, and a hostile client
    // holds the listen backlog of its stepd's socket 9.0 full. A step end asks nobody, so
    // only the node itself can tell whose job 9 is: another socket of job 9 that answers,
    // or job 9's batch script in the spool dir (slurmstepd chowns it to the job's user).
    // Told, only 41542 is kept; 41541's stray and jobless 41543's are judged (and reaped).
    // Not told, everyone is kept.
    Pipeline pipeline(41541);
    pipeline.request.trigger.label = "step 7.0";
    pipeline.request.trigger.job_ending = false;
    pipeline.request.trigger.ending_step = steps::StepId{7, 0};
    pipeline.accounts.names[41542] = "rs.other";
    pipeline.accounts.names[41543] = "rs.third";
    OtherUser other(41542);
    OtherUser third(41543);
    const pid_t stray = spawn_as(41541, {"sleep", "600"});
    REQUIRE(is_running(stray));
    const int version = steps::build_stepd_protocol().version;
    std::optional<FakeStepd> ending;
    std::optional<BlockedListener> ending_held;
    const std::string socket = pipeline.dir / "spool/n1_9.0";
    const std::string job_dir = pipeline.dir / "spool/job00009";
    const std::string script = job_dir + "/slurm_script";
    const auto make_script = [&](uid_t owner) {
        REQUIRE(::mkdir(job_dir.c_str(), 0750) == 0);
        REQUIRE(::chmod(job_dir.c_str(), 0750) == 0);
        pipeline.dir.write("spool/job00009/slurm_script", "#!/bin/sh\nsleep 600\n", 0700, owner);
    };
    const auto check_judged = [&](const KillReport& report, const std::string& said) {
        INFO(pipeline.sink.text());
        CHECK_FALSE(report.error);
        CHECK(wait_gone(stray));
        CHECK(wait_gone(third.pid));
        CHECK(is_running(other.pid));
        CHECK(reason_of(report.first_plan, other.pid) == Reason::has_live_job);
        CHECK(pipeline.sink.level_of("slurmstepd socket " + socket + " of job 9 (step 9.0) cannot be asked: ") ==
              LogLevel::warn);
        CHECK(pipeline.sink.count(said) == 1);
    };
    const auto check_kept = [&](const KillReport& report, const std::string& why) {
        const auto line = std::find_if(pipeline.sink.lines.begin(), pipeline.sink.lines.end(),
                                       [](const auto& l) { return l.second.starts_with("lookup error: "); });
        REQUIRE(line != pipeline.sink.lines.end());
        CHECK(line->second.find("slurmstepd socket " + socket + " of job 9: timed out connecting") !=
              std::string::npos);
        CHECK(line->second.find(why) != std::string::npos);
        check_nothing_killed(pipeline, report, stray, line->second);
        CHECK(is_running(third.pid));
        CHECK(is_running(other.pid));
    };

    SUBCASE("another socket of job 9 answers: its user is job 9's") {
        ending.emplace(pipeline.dir / "spool/n1_7.0", 41541, 2, Behaviour::answer, version);
        FakeStepd extern_step(pipeline.dir / "spool/n1_9.4294967292", 41542, 2, Behaviour::answer, version);
        extern_step.set_daemon_pid(::getpid() + 1);  // not the listener: no stepd pid carried
        BlockedListener blocked(socket);
        check_judged(pipeline.run("grace: 0\nslurm_timeout: 2\n"),
                     "job 9 of the unanswered socket " + socket +
                         " is uid 41542's (its step 9.extern answered): that user is kept, the others are judged");
    }
    SUBCASE("job 9's batch script is in the spool dir: its owner is job 9's user") {
        ending.emplace(pipeline.dir / "spool/n1_7.0", 41541, 2, Behaviour::answer, version);
        make_script(41542);
        BlockedListener blocked(socket);
        check_judged(pipeline.run("grace: 0\nslurm_timeout: 2\n"), "job 9 of the unanswered socket " + socket +
                                                                       " is uid 41542's (its batch script " + script +
                                                                       "): that user is kept, the others are judged");
    }
    SUBCASE("the ending step's own socket held busy: the ending step never counts, the others are judged") {
        ending_held.emplace(pipeline.dir / "spool/n1_7.0");
        FakeStepd step(pipeline.dir / "spool/n1_9.0", 41542, 2, Behaviour::answer, version);
        step.set_daemon_pid(::getpid() + 1);
        const KillReport report = pipeline.run("grace: 0\nslurm_timeout: 2\n");
        INFO(pipeline.sink.text());
        CHECK_FALSE(report.error);
        CHECK(wait_gone(stray));
        CHECK(wait_gone(third.pid));
        CHECK(is_running(other.pid));
        CHECK(pipeline.sink.count("the ending step 7.0's own socket " + pipeline.dir / "spool/n1_7.0" +
                                  " cannot be asked: it does not count") == 1);
    }
    SUBCASE("nothing tells job 9's user: everyone is kept") {
        ending.emplace(pipeline.dir / "spool/n1_7.0", 41541, 2, Behaviour::answer, version);
        BlockedListener blocked(socket);
        check_kept(pipeline.run("grace: 0\nslurm_timeout: 2\n"), "job 9's user cannot be told here");
    }
    SUBCASE("job 9's batch script is still root's (slurmstepd has not chowned it yet): everyone is kept") {
        ending.emplace(pipeline.dir / "spool/n1_7.0", 41541, 2, Behaviour::answer, version);
        make_script(0);
        BlockedListener blocked(socket);
        check_kept(pipeline.run("grace: 0\nslurm_timeout: 2\n"), "job 9's user cannot be told here");
    }
    CHECK(pipeline.controller.calls == 0);
}

TEST_CASE("fault catalogue: a controller query that exits non-zero, hangs, prints nothing or garbage kills nothing") {
    Pipeline pipeline(41483);
    pipeline.request.node.prolog_contain = false;  // only slurmctld can clear the stray's user
    const pid_t stray = spawn_as(41483, {"sleep", "600"});
    std::string script;
    SUBCASE("non-zero") { script = "echo end; exit 3"; }
    SUBCASE("hangs") { script = "exec sleep 600"; }
    SUBCASE("empty") { script = "exit 0"; }
    SUBCASE("garbage") { script = "echo 'slurm_load_jobs: Socket timed out'; echo end"; }
    controller::QueryController controller(pipeline.dir.write("leftover-query", "#!/bin/sh\n" + script + "\n", 0755),
                                           "");
    const KillReport report = pipeline.run("grace: 0\nslurm_timeout: 1\n", &controller);
    const auto line = std::find_if(pipeline.sink.lines.begin(), pipeline.sink.lines.end(),
                                   [](const auto& l) { return l.second.starts_with("lookup error: "); });
    REQUIRE(line != pipeline.sink.lines.end());
    check_nothing_killed(pipeline, report, stray, line->second);
}

TEST_CASE("fault catalogue: an untrusted config kills nothing and the log names the file and the fault") {
    Pipeline pipeline(41484);
    const pid_t stray = spawn_as(41484, {"sleep", "600"});
    std::string path;
    std::string fault;
    SUBCASE("group-writable") {
        path = pipeline.dir.write("leftover.conf", "grace: 0\n", 0664);
        fault = "has mode 0664; it must not be writable by group or others";
    }
    SUBCASE("other-writable") {
        path = pipeline.dir.write("leftover.conf", "grace: 0\n", 0646);
        fault = "has mode 0646; it must not be writable by group or others";
    }
    SUBCASE("not root's") {
        path = pipeline.dir.write("leftover.conf", "grace: 0\n", 0644, 41484);
        fault = "is owned by uid 41484; expected uid 0 (root)";
    }
    SUBCASE("a symlink") {
        path = pipeline.dir / "leftover.conf";
        REQUIRE(::symlink(pipeline.dir.write("real.conf", "grace: 0\n").c_str(), path.c_str()) == 0);
        fault = "is a symbolic link; expected a regular file";
    }
    SUBCASE("in a directory others can write") {
        REQUIRE(::mkdir((pipeline.dir / "open").c_str(), 0777) == 0);
        REQUIRE(::chmod((pipeline.dir / "open").c_str(), 0777) == 0);
        path = pipeline.dir.write("open/leftover.conf", "grace: 0\n");
        fault = "directory " + pipeline.dir / "open" + " has mode 0777; it must not be writable by group or others";
    }
    SUBCASE("with a wrong type") {
        path = pipeline.dir.write("leftover.conf", "grace: soon\n");
        fault = ":1: key 'grace': expected ";
    }
    const auto loaded = sweep::load_config_and_exemptions(path, true, pipeline.request.node.slurm_uids);
    const KillReport report =
        sweep::run_sweep(loaded, pipeline.request, &pipeline.controller, pipeline.accounts, pipeline.log);
    const auto line = std::find_if(pipeline.sink.lines.begin(), pipeline.sink.lines.end(),
                                   [](const auto& l) { return l.second.starts_with("config error: "); });
    REQUIRE(line != pipeline.sink.lines.end());
    CHECK(line->second.find(path) != std::string::npos);
    CHECK(line->second.find(fault) != std::string::npos);
    check_nothing_killed(pipeline, report, stray, line->second);
}

TEST_CASE("fault catalogue: a step end whose account lookup hangs kills nothing, says so and ends by its deadline") {
    // The plugin's step end: no helper process (Slurm may kill it), the lookups on a
    // worker thread. The directory service hangs for 20 s, the deadline is 2 s away.
    constexpr uid_t kUser = 41702;
    Pipeline pipeline(kUser);
    pipeline.request.trigger.label = "step 7.0";
    pipeline.request.trigger.job_ending = false;
    pipeline.request.trigger.ending_step = steps::StepId{7, 0};
    // The ending step answers on its socket while its exit hook runs (its state does
    // not matter: the ending step is never live work).
    FakeStepd ending_step(pipeline.dir / "spool/n1_7.0", kUser, 2, Behaviour::answer,
                          steps::build_stepd_protocol().version);
    const pid_t stray = spawn_as(kUser, {"sleep", "600"});
    REQUIRE(is_running(stray));
    std::string config = "grace: 0\nslurm_timeout: 1\n";
    std::string says;
    SUBCASE("the user's name: the uid is kept") {
        says = fmt::format("account lookup for uid {} failed: account lookup timed out", kUser);
    }
    SUBCASE("a listed name: the evaluation is a lookup error") {
        config += "protected_users: [lo_op]\n";
        says = "account lookup failed: account lookup timed out";
    }
    HungLookups hung("rs.user");
    const ThreadBoundedAccounts accounts(hung.calls());
    pipeline.request.started = std::chrono::steady_clock::now();
    const KillReport report =
        sweep::run_sweep(pipeline.load(config), pipeline.request, nullptr, accounts, pipeline.log);
    CHECK(std::chrono::steady_clock::now() - pipeline.request.started < std::chrono::seconds(10));  // hang detector

    INFO(pipeline.sink.text());
    CHECK(hung.started() == 1);  // one worker; the summary's lookup of the job user started none
    CHECK(report.actions.empty());
    CHECK(is_running(stray));
    CHECK(pipeline.sink.count(says) == 1);
    CHECK(pipeline.summary().find("; killed 0; ") != std::string::npos);
}
