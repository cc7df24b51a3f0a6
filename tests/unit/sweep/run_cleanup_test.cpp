// SPDX-License-Identifier: GPL-2.0-or-later
// The cleanup's guard (sweep/run_cleanup.cpp) on hand-made plans, and the cleanup in the
// sweep pipeline on real strays and files of test uids 41610-41620 in a root-owned temp
// directory given as cleanup_dirs.
#include "support/fake_accounts.hpp"
#include "support/pipeline.hpp"
#include "support/plans.hpp"
#include "support/processes.hpp"
#include "support/temp_dir.hpp"
#include "sweep/run_cleanup.hpp"
#include "sweep/run_sweep.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <csignal>
#include <map>
#include <optional>
#include <string>
#include <vector>

using namespace leftover;
using namespace leftover::test;

namespace {

// A guard's inputs for one candidate uid: nothing failed, no process, no live work.
struct GuardCase {
    Config config;
    FakeAccounts accounts;
    Plan fresh;
    LiveWork live;
    std::map<uid_t, std::vector<pid_t>> holders;
    sweep::GuardInput input;
    explicit GuardCase(uid_t uid) {
        accounts.names[uid] = "g.user";
        input.candidates = {uid};
        input.fresh = &fresh;
        input.fresh_live = &live;
        input.holders = &holders;
    }
    Result<sweep::GuardedUsers> guard() {
        auto exemptions = Exemptions::load(config, {});
        REQUIRE(exemptions.ok());
        return sweep::guarded_uids(input, exemptions.value(), accounts, std::chrono::steady_clock::time_point::max());
    }
    Result<std::set<uid_t>> run() {
        auto users = guard();
        LEFTOVER_TRY(users);
        return users->cleaned;
    }
    // Why the one candidate is kept ("" when it is not).
    std::string kept() {
        auto users = guard();
        REQUIRE(users.ok());
        const auto why = users->kept.find(*input.candidates.begin());
        return why == users->kept.end() ? std::string() : why->second;
    }
};

Decision process_of(uid_t uid, Verdict verdict, Reason reason) { return decision_for(300, uid, verdict, reason); }

}  // namespace

TEST_CASE("cleanup guard: only a swept user with nothing left and nothing failed may be cleaned") {
    GuardCase g(41610);
    SUBCASE("nothing in the way") {
        const auto uids = g.run();
        REQUIRE(uids.ok());
        CHECK(uids.value() == std::set<uid_t>{41610});
    }
    SUBCASE("a lookup error in the evaluation") {
        g.input.error = Error::lookup("slurmstepd socket x: timed out", ErrorSource::step_socket);
        REQUIRE_FALSE(g.run().ok());
        CHECK(g.run().error().message == "lookup error: slurmstepd socket x: timed out");
    }
    SUBCASE("a failed account lookup of another user") {
        g.input.failed_lookups = true;
        CHECK_FALSE(g.run().ok());
    }
    SUBCASE("the deadline") {
        g.input.deadline_reached = true;
        CHECK_FALSE(g.run().ok());
    }
    SUBCASE("a round skipped for a job starting on the node") {
        g.input.job_starting = "slurmstepd pid 4242 has no step socket yet";
        REQUIRE_FALSE(g.run().ok());
        CHECK(g.run().error().message == "a job is starting on this node (slurmstepd pid 4242 has no step socket yet)");
    }
    SUBCASE("the candidate's own account lookup fails") {
        g.accounts.failing.insert(41610);
        REQUIRE_FALSE(g.run().ok());
        CHECK(g.run().error().message == "account lookup for uid 41610 failed");
    }
    SUBCASE("a listed name's lookup fails") {
        g.config.protected_users = {"ops"};
        g.accounts.failing_names.insert("ops");
        CHECK_FALSE(g.run().ok());
    }
    SUBCASE("protected by name") {
        g.config.protected_users = {"g.user"};
        CHECK(g.run().value().empty());
        CHECK(g.kept().starts_with("protected: "));
    }
    SUBCASE("protected by the uid range") {
        g.config.uid_max = 41609;
        CHECK(g.run().value().empty());
        CHECK(g.kept().starts_with("protected: "));
    }
    SUBCASE("no account") {
        g.accounts.names.clear();
        CHECK(g.run().value().empty());
        CHECK_FALSE(g.kept().empty());
        CHECK(g.guard()->names.empty());
    }
    SUBCASE("live work") {
        g.live.uids.insert(41610);
        CHECK(g.run().value().empty());
        CHECK(g.kept() == "live work on this node");
        CHECK(g.guard()->names.at(41610) == "g.user");
    }
    SUBCASE("a survivor") {
        g.input.survivors.insert(41610);
        CHECK(g.run().value().empty());
        CHECK(g.kept() == "a process of it survived the kill");
    }
    SUBCASE("a process kept for any reason") {
        g.fresh.decisions.push_back(process_of(41610, Verdict::keep, Reason::mixed_uids));
        CHECK(g.run().value().empty());
        CHECK(g.kept() == fmt::format("its process 300 ('{}') is left (mixed_uids)", g.fresh.decisions[0].comm));
    }
    SUBCASE("a process still to kill, outside a dry run") {
        g.fresh.decisions.push_back(process_of(41610, Verdict::kill, Reason::stray));
        CHECK(g.run().value().empty());
        CHECK(g.kept().starts_with("its process 300 "));
        g.input.dry_run = true;  // a dry run counts its targets as gone
        CHECK(g.run().value() == std::set<uid_t>{41610});
        CHECK(g.kept().empty());
    }
    SUBCASE("a zombie does not count") {
        g.fresh.decisions.push_back(process_of(41610, Verdict::keep, Reason::zombie));
        CHECK(g.run().value() == std::set<uid_t>{41610});
    }
    SUBCASE("without contain, a candidate slurmctld did not clear") {
        std::set<uid_t> cleared;
        g.input.cleared = &cleared;
        CHECK(g.run().value().empty());
        CHECK(g.kept() == "slurmctld says it holds an allocation on this node");
        cleared.insert(41610);
        CHECK(g.run().value() == std::set<uid_t>{41610});
    }
    SUBCASE("a process holding the uid as one of its uids, also in a dry run") {
        g.holders[41610] = {300};
        CHECK(g.run().value().empty());
        CHECK(g.kept() == "process 300 holds it as one of its uids");
        g.input.dry_run = true;
        CHECK(g.run().value().empty());
        // A dry run's own target counts as gone there.
        g.fresh.decisions.push_back(process_of(41610, Verdict::kill, Reason::stray));
        CHECK(g.run().value() == std::set<uid_t>{41610});
    }
    SUBCASE("the processes holding the candidates were not read") {
        g.input.holders = nullptr;
        REQUIRE_FALSE(g.run().ok());
    }
}

namespace {

// A pipeline whose config cleans `files` in a root-owned temp dir holding one file of
// the pipeline's uid and one of root's.
struct CleanupPipeline : Pipeline {
    TempDir scratch;
    std::string users_file;
    std::string roots_file;
    explicit CleanupPipeline(uid_t u) : Pipeline(u) {
        users_file = scratch.write("scratch.dat", "1234", 0644, u);
        roots_file = scratch.write("roots.dat", "root", 0644, 0);
    }
    std::string config(const std::string& more = "") const {
        return fmt::format("grace: 1\ncleanup: [files]\ncleanup_dirs: [{}]\n{}", scratch.path(), more);
    }
    std::string removed_line() const {
        return fmt::format("cleanup: removed file path='{}' uid={} bytes=4", users_file, uid);
    }
};

}  // namespace

TEST_CASE("run cleanup: after a kill the swept user's files go, one line each and the totals in the summary") {
    CleanupPipeline pipeline(41611);
    const pid_t stray = spawn_as(41611, {"sleep", "600"});
    const KillReport report = pipeline.run(pipeline.config());
    CHECK(wait_gone(stray));
    CHECK_FALSE(report.error);
    CHECK_FALSE(path_exists(pipeline.users_file));
    CHECK(path_exists(pipeline.roots_file));
    CHECK(pipeline.sink.level_of(pipeline.removed_line()) == LogLevel::info);
    const std::string summary = pipeline.summary();
    CHECK(summary.starts_with("job 7 epilog (user rs.user uid 41611): swept [rs.user]; killed 1; "));
    CHECK(summary.ends_with(" ms; cleanup: removed 0 IPC objects, 1 files, 4 B"));
}

TEST_CASE("run cleanup: a cleanup that throws still leaves the sweep its summary line") {
    CleanupPipeline pipeline(41620);
    const pid_t stray = spawn_as(41620, {"sleep", "600"});
    pipeline.sink.throw_on = "cleanup: removed";
    const KillReport report = pipeline.run(pipeline.config());
    CHECK(wait_gone(stray));
    CHECK(pipeline.sink.level_of("cleanup: stopped: sink failed") == LogLevel::err);
    CHECK(pipeline.summary().starts_with("job 7 epilog (user rs.user uid 41620): swept [rs.user]; killed 1; "));
    CHECK(pipeline.summary().find("cleanup") == std::string::npos);
}

TEST_CASE("run cleanup: the job's user who left no process is cleaned at the job's epilog") {
    CleanupPipeline pipeline(41612);
    pipeline.run(pipeline.config());
    CHECK_FALSE(path_exists(pipeline.users_file));
    CHECK(path_exists(pipeline.roots_file));
    CHECK(pipeline.sink.count(pipeline.removed_line()) == 1);
}

TEST_CASE("run cleanup: cleanup off, a dry run, a protected user and a lookup error remove nothing") {
    CleanupPipeline pipeline(41613);
    SUBCASE("cleanup off (the default)") {
        pipeline.run(fmt::format("grace: 1\ncleanup_dirs: [{}]\n", pipeline.scratch.path()));
        CHECK(pipeline.summary().find("cleanup") == std::string::npos);
    }
    SUBCASE("dry run") {
        pipeline.run(pipeline.config("dry_run: true\n"));
        CHECK(pipeline.sink.count(fmt::format("cleanup: would remove file path='{}' uid=41613 bytes=4 (dry run)",
                                              pipeline.users_file)) == 1);
        CHECK(pipeline.summary().ends_with("; cleanup: would remove 0 IPC objects, 1 files, 4 B"));
    }
    SUBCASE("protected user") { pipeline.run(pipeline.config("protected_users: [rs.user]\n")); }
    SUBCASE("a users file that cannot be read") {
        const KillReport report = pipeline.run(pipeline.config("protected_users_files: [/nonexistent/users]\n"));
        CHECK(report.error);
    }
    SUBCASE("the job user's account lookup fails") {
        pipeline.accounts.failing.insert(41613);
        pipeline.run(pipeline.config());
        // Asked by the guard, or already by the evaluation when another test's process
        // (the node is the real one) made it look names up: either way nothing goes.
        CHECK(pipeline.sink.count("cleanup: nothing removed: account lookup for uid 41613 failed") +
                  pipeline.sink.count("cleanup: nothing removed: an account lookup failed in this evaluation") ==
              1);
    }
    CHECK(path_exists(pipeline.users_file));
    CHECK(pipeline.sink.count("cleanup: removed") == 0);
}

TEST_CASE("run cleanup: a dry run lists the files a stray's user would leave, and keeps both") {
    CleanupPipeline pipeline(41615);
    const pid_t stray = spawn_as(41615, {"sleep", "600"});
    pipeline.run(pipeline.config("dry_run: true\n"));
    CHECK(is_running(stray));
    CHECK(path_exists(pipeline.users_file));
    CHECK(pipeline.sink.count(fmt::format("cleanup: would remove file path='{}' uid=41615 bytes=4 (dry run)",
                                          pipeline.users_file)) == 1);
    CHECK(pipeline.summary().find("would kill 1; ") != std::string::npos);
    CHECK(pipeline.summary().ends_with("; cleanup: would remove 0 IPC objects, 1 files, 4 B"));
}

TEST_CASE("run cleanup: leftover check shows what a sweep would remove and removes nothing") {
    CleanupPipeline pipeline(41614);
    const pid_t stray = spawn_as(41614, {"sleep", "600"});
    auto check = sweep::check_node(pipeline.load(pipeline.config()), pipeline.request, &pipeline.controller,
                                   pipeline.accounts, pipeline.log);
    REQUIRE(check.ok());
    REQUIRE(check->cleanup);
    CHECK(totals_of(*check->cleanup, true).files == 1);
    CHECK(check->cleanup->records.at(0).outcome == CleanupOutcome::would_remove);
    CHECK(path_exists(pipeline.users_file));
    CHECK(is_running(stray));
}

TEST_CASE("cleanup candidates: the reaped users, the job's user at its epilog only, and scope job_user") {
    Config config;
    sweep::SweepRequest request;
    request.trigger.uid = 41616;
    Plan plan;
    plan.decisions.push_back(process_of(41617, Verdict::kill, Reason::stray));
    plan.decisions.push_back(process_of(41618, Verdict::keep, Reason::has_live_job));
    SUBCASE("a step end: the reaped only") {
        request.trigger.ending_step = steps::StepId{7, 0};
        CHECK(sweep::cleanup_candidates(config, request, plan) == std::set<uid_t>{41617});
        plan.decisions.clear();
        CHECK(sweep::cleanup_candidates(config, request, plan).empty());
    }
    SUBCASE("the job's epilog: the job's user too") {
        request.trigger.job_ending = true;
        CHECK(sweep::cleanup_candidates(config, request, plan) == std::set<uid_t>{41616, 41617});
        config.scope = Scope::job_user;
        CHECK(sweep::cleanup_candidates(config, request, plan) == std::set<uid_t>{41616});
    }
    SUBCASE("a node-wide sweep: the reaped only") {
        request.trigger.uid.reset();
        CHECK(sweep::cleanup_candidates(config, request, plan) == std::set<uid_t>{41617});
    }
}

TEST_CASE("run cleanup: in the job's epilog a reaped other user is cleaned too, unless scope is job_user") {
    CleanupPipeline pipeline(41616);
    pipeline.accounts.names[41617] = "rs.other";
    const std::string others_file = pipeline.scratch.write("others.dat", "12", 0644, 41617);
    const pid_t stray = spawn_as(41617, {"sleep", "600"});
    SUBCASE("scope node") {
        pipeline.run(pipeline.config());
        CHECK(wait_gone(stray));
        CHECK_FALSE(path_exists(others_file));
    }
    SUBCASE("scope job_user") {
        pipeline.run(pipeline.config("scope: job_user\n"));
        CHECK(is_running(stray));
        CHECK(path_exists(others_file));
    }
    CHECK_FALSE(path_exists(pipeline.users_file));
    kill_all_of(41617);
}

TEST_CASE("run cleanup: without contain, the job's user who slurmctld says holds an allocation here keeps her files") {
    // Her other job is allocated here with no step running (a multi-node job whose batch
    // script runs elsewhere, salloc --no-shell): only slurmctld knows.
    CleanupPipeline pipeline(41622);
    pipeline.request.node.prolog_contain = false;
    SUBCASE("slurmctld says she holds an allocation here") {
        pipeline.controller.live.uids = {41622};
        pipeline.run(pipeline.config());
        CHECK(pipeline.controller.calls > 0);
        CHECK(path_exists(pipeline.users_file));
        CHECK(pipeline.sink.count("cleanup: removed") == 0);
    }
    SUBCASE("slurmctld cannot be asked") {
        pipeline.controller.error = Error::lookup("squeue: timed out", ErrorSource::controller);
        pipeline.run(pipeline.config());
        CHECK(pipeline.controller.calls > 0);
        CHECK(path_exists(pipeline.users_file));
        CHECK(pipeline.sink.count("cleanup: nothing removed: lookup error: squeue: timed out") == 1);
    }
    SUBCASE("slurmctld says she holds none: her files go, after one query") {
        pipeline.run(pipeline.config());
        CHECK(pipeline.controller.calls == 1);
        CHECK_FALSE(path_exists(pipeline.users_file));
    }
    CHECK(path_exists(pipeline.roots_file));
}

TEST_CASE("run cleanup: without contain, a reaped user and the job's user are cleared in one query together") {
    CleanupPipeline pipeline(41623);
    pipeline.request.node.prolog_contain = false;
    pipeline.request.trigger.uid = 41624;  // the ending job's user, who left no process
    pipeline.accounts.names[41624] = "rs.jobuser";
    const std::string job_users_file = pipeline.scratch.write("job_user.dat", "12", 0644, 41624);
    const pid_t stray = spawn_as(41623, {"sleep", "600"});
    SUBCASE("both hold nothing here") {
        pipeline.run(pipeline.config());
        CHECK(wait_gone(stray));
        CHECK_FALSE(path_exists(pipeline.users_file));
        CHECK_FALSE(path_exists(job_users_file));
    }
    SUBCASE("the job's user holds an allocation here") {
        pipeline.controller.live.uids = {41624};
        pipeline.run(pipeline.config());
        CHECK(wait_gone(stray));
        CHECK_FALSE(path_exists(pipeline.users_file));
        CHECK(path_exists(job_users_file));
    }
    kill_all_of(41624);
}

TEST_CASE("run cleanup: a process that holds the user as any one of its four uids keeps the user's files") {
    CleanupPipeline pipeline(41625);
    FakeProc fake;
    pipeline.use(fake);
    SUBCASE("no process of hers: her files go") {
        pipeline.run(pipeline.config());
        CHECK_FALSE(path_exists(pipeline.users_file));
    }
    // A setuid-root program she runs has uids U/0/0/0 and a /proc entry of root's.
    const auto with_uids = [&](Uids uids, std::optional<uid_t> owner) {
        fake.add_process({.pid = 200, .uids = uids, .owner = owner, .gids = {0, 0, 0, 0}});
        pipeline.run(pipeline.config());
        CHECK(path_exists(pipeline.users_file));
        CHECK(pipeline.sink.count("cleanup: removed") == 0);
    };
    SUBCASE("real") { with_uids({41625, 0, 0, 0}, 0); }
    SUBCASE("effective") { with_uids({0, 41625, 0, 0}, std::nullopt); }
    SUBCASE("saved") { with_uids({0, 0, 41625, 0}, 0); }
    SUBCASE("filesystem") { with_uids({0, 0, 0, 41625}, 0); }
    SUBCASE("real, under another user's /proc entry") { with_uids({41625, 41626, 41626, 41626}, std::nullopt); }
}

TEST_CASE("run cleanup: a real process running with the user's real uid and root's others keeps the user's files") {
    CleanupPipeline pipeline(41627);
    // As a setuid-root program she started: uids U/0/0/0, /proc/<pid> root's.
    const pid_t setuid_style = spawn_with_uids(41627, 0, 0, {"sleep", "600"});
    pipeline.run(pipeline.config());
    CHECK(is_running(setuid_style));
    CHECK(path_exists(pipeline.users_file));
    CHECK(pipeline.sink.count("cleanup: removed") == 0);
    ::kill(setuid_style, SIGKILL);
    CHECK(wait_gone(setuid_style));
}
