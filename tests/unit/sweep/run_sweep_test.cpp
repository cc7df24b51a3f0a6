// SPDX-License-Identifier: GPL-2.0-or-later
// The pipeline both front ends run: config and exemptions, job state from the spool
// directory or slurmctld, the evaluation, the kills and what is logged about them.
// Kills run on real processes of a uid of each test's own, which the test's account
// database alone knows (every other process is an unknown uid, so kept); decisions
// that must not signal run on a fake /proc, always as dry runs.
#include "metrics/metrics.hpp"
#include "support/fake_accounts.hpp"
#include "support/fake_controller.hpp"
#include "support/fake_proc.hpp"
#include "support/pipeline.hpp"
#include "support/plans.hpp"
#include "support/processes.hpp"
#include "support/unix_sockets.hpp"
#include "sweep/run_sweep.hpp"

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

using namespace leftover;
using namespace leftover::test;

TEST_CASE("run_sweep: a stray is killed, and each action, the grace wait and the summary are logged") {
    Pipeline pipeline(41301);
    make_stale_socket(pipeline.dir / "spool/n1_5.0");  // a step whose slurmstepd crashed
    const pid_t stray = spawn_as(41301, {"sleep", "600"});
    REQUIRE(is_running(stray));

    const KillReport report = pipeline.run("grace: 2\n");
    CHECK(wait_gone(stray));
    CHECK_FALSE(report.error);
    // Before SIGSTOP, and again before any SIGKILL; between the stop and SIGTERM the job
    // state alone is read again (nothing new appeared).
    CHECK(report.evaluations == 2);
    const RecordingSink& sink = pipeline.sink;
    CHECK(sink.level_of(fmt::format("SIGTERM pid={} user=rs.user uid=41301 comm='sleep' reason=stray", stray)) ==
          LogLevel::info);
    CHECK(sink.count("waiting up to 2.0 s for 1 process(es) to end after SIGTERM") == 1);
    // Read in both evaluations, logged once.
    CHECK(sink.count("step 5.0 is gone: its slurmstepd does not answer on " + pipeline.dir / "spool/n1_5.0" +
                     " (stale socket)") == 1);
    CHECK(pipeline.summary().starts_with("job 7 epilog (user rs.user uid 41301): swept [rs.user]; killed 1; "));
}

TEST_CASE("fault catalogue: the SIGSTOP before a kill and the SIGCONT after SIGTERM are debug lines") {
    // One line per action would double every kill's lines: the stop and the continue
    // that let a SIGTERM handler run are steps on the way, the SIGTERM is the line.
    Pipeline pipeline(41310);
    const pid_t stray = spawn_as(41310, {"sleep", "600"});
    const KillReport report = pipeline.run("grace: 2\ndebuglevel: debug\n");
    CHECK(wait_gone(stray));
    const std::string who = fmt::format("pid={} user=rs.user uid=41310 comm='sleep' reason=stray", stray);
    CHECK(pipeline.sink.level_of("SIGSTOP " + who) == LogLevel::debug);
    CHECK(pipeline.sink.level_of("SIGTERM " + who) == LogLevel::info);
    CHECK(pipeline.sink.level_of("SIGCONT " + who) == LogLevel::debug);
    CHECK(report.stop_rounds == 1);
    CHECK(pipeline.summary().find("; killed 1; ") != std::string::npos);
}

TEST_CASE("run_sweep: a dry run logs what it would kill and signals nothing") {
    Pipeline pipeline(41302);
    const pid_t stray = spawn_as(41302, {"sleep", "600"});
    const KillReport report = pipeline.run("dry_run: true\n");
    CHECK(is_running(stray));
    REQUIRE(report.survivors.size() == 1);
    CHECK(report.survivors.front().pid == stray);
    CHECK(pipeline.sink.level_of(fmt::format("would kill pid={} user=rs.user uid=41302 comm='sleep' reason=stray "
                                             "(no live work on this node) (dry run)",
                                             stray)) == LogLevel::info);
    CHECK(pipeline.summary().starts_with(
        "job 7 epilog (user rs.user uid 41302): dry run: swept [rs.user]; would kill 1; "));
}

TEST_CASE("run_sweep: a config or lookup error kills nothing, says why, and still ends with the summary") {
    Pipeline pipeline(41303);
    const pid_t stray = spawn_as(41303, {"sleep", "600"});
    KillReport report;
    std::string says;
    SUBCASE("an unknown key") {
        report = pipeline.run("protected_user: [rs.user]\n");
        says =
            "config error: " + pipeline.dir / "leftover.conf" + ":1: unknown key 'protected_user'; expected one of: ";
        CHECK(pipeline.sink.count("; nothing killed") == 1);
    }
    SUBCASE("a missing protected users file") {
        report = pipeline.run("protected_users_files: [" + pipeline.dir / "absent.list" + "]\n");
        says =
            "lookup error: protected users file " + pipeline.dir / "absent.list" + ": does not exist; nothing killed";
    }
    SUBCASE("a spool directory that cannot be read") {
        pipeline.request.node.spool_dir = pipeline.dir / "absent-spool";
        report = pipeline.run("grace: 0\n");
        says = "lookup error: slurmd spool directory " + pipeline.dir / "absent-spool" +
               ": cannot list it: No such file or directory; nothing killed";
    }
    SUBCASE("slurmctld does not answer (no PrologFlags=contain)") {
        pipeline.request.node.prolog_contain = false;
        pipeline.controller.error =
            Error::lookup("asking slurmctld: did not finish before the deadline", ErrorSource::controller);
        report = pipeline.run("grace: 0\n");
        says = "lookup error: asking slurmctld: did not finish before the deadline; nothing killed";
    }
    INFO(pipeline.sink.text());
    REQUIRE(report.error);
    CHECK(report.actions.empty());
    CHECK(is_running(stray));
    CHECK(pipeline.sink.level_of(says) == LogLevel::err);
    const std::string summary = pipeline.summary();
    CHECK(summary.starts_with("job 7 epilog (user rs.user uid 41303): swept []; killed 0; "));
    CHECK(summary.find("; lookup errors 1; ") != std::string::npos);
}

TEST_CASE("run_sweep: without PrologFlags=contain slurmctld must confirm a user has no allocation here") {
    Pipeline pipeline(41304);
    OneStray fake(41304);
    pipeline.use(fake);
    pipeline.request.node.prolog_contain = false;
    pipeline.controller.live.uids = {41304};
    KillReport report = pipeline.run("dry_run: true\n");
    CHECK(pipeline.controller.calls == 1);
    CHECK(reason_of(report.first_plan, 200) == Reason::has_live_job);
    CHECK(report.actions.empty());

    // slurmctld's answer changes; the last one, shared through the spool dir for 1 s, is
    // gone as if that second had passed.
    pipeline.controller.live = {};
    REQUIRE(std::filesystem::remove(pipeline.dir / "spool/leftover-answer-n1"));
    report = pipeline.run("dry_run: true\n");
    CHECK(pipeline.controller.calls == 2);
    CHECK(reason_of(report.first_plan, 200) == Reason::stray);
    CHECK(report.actions.size() == 1);

    pipeline.request.node.prolog_contain = true;  // every allocation shows locally: nobody asks
    report = pipeline.run("dry_run: true\n");
    CHECK(pipeline.controller.calls == 2);
    CHECK(report.actions.size() == 1);

    pipeline.request.node.prolog_contain = false;
    const KillReport unconnected =
        sweep::run_sweep(pipeline.load("dry_run: true\n"), pipeline.request, nullptr, pipeline.accounts, pipeline.log);
    REQUIRE(unconnected.error);
    CHECK(unconnected.error->message == "allocation check: no controller connection");
    CHECK(unconnected.actions.empty());
}

TEST_CASE("run_sweep: job_source controller takes live work from slurmctld, not from the spool directory") {
    Pipeline pipeline(41305);
    OneStray fake(41305);
    pipeline.use(fake);
    pipeline.request.node.spool_dir = pipeline.dir / "absent-spool";  // reading it would be a lookup error
    pipeline.controller.live.uids = {41305};
    const KillReport report = pipeline.run("job_source: controller\ndry_run: true\n");
    CHECK_FALSE(report.error);
    CHECK(pipeline.controller.calls == 1);
    CHECK(reason_of(report.first_plan, 200) == Reason::has_live_job);

    const KillReport unconnected = sweep::run_sweep(pipeline.load("job_source: controller\ndry_run: true\n"),
                                                    pipeline.request, nullptr, pipeline.accounts, pipeline.log);
    REQUIRE(unconnected.error);
    CHECK(unconnected.error->message == "job_source controller: no controller connection");
}

TEST_CASE("fault catalogue: slurmctld is asked about every node this host runs") {
    Pipeline pipeline(41307);
    OneStray fake(41307);
    pipeline.use(fake);
    std::filesystem::create_directories(pipeline.dir / "spool-n2");
    pipeline.request.node.other_nodes = {{"n2", pipeline.dir / "spool-n2", true}};
    const std::vector<std::string> both{"n1", "n2"};
    // A job of the user on n2 between its steps: only slurmctld knows about it.
    pipeline.controller.live.uids = {41307};

    KillReport report = pipeline.run("job_source: controller\ndry_run: true\n");
    CHECK(pipeline.controller.last_nodes == both);
    CHECK(reason_of(report.first_plan, 200) == Reason::has_live_job);

    pipeline.request.node.prolog_contain = false;  // the job epilog's allocation check
    pipeline.controller.last_nodes.clear();
    report = pipeline.run("dry_run: true\n");
    CHECK(pipeline.controller.last_nodes == both);
    CHECK(reason_of(report.first_plan, 200) == Reason::has_live_job);
    CHECK(report.actions.empty());
}

TEST_CASE("run_sweep: debuglevel from the config decides what is logged") {
    Pipeline pipeline(41306);
    OneStray fake(41306);
    pipeline.use(fake);
    pipeline.run("debuglevel: debug\nslew: 5\ndry_run: true\n");
    CHECK(pipeline.sink.level_of("slew/slew_max ignored: they delay periodic sweeps, never the plugin") ==
          LogLevel::debug);

    pipeline.sink.lines.clear();
    pipeline.run("debuglevel: err\ndry_run: true\n");
    CHECK(pipeline.sink.lines.empty());  // the would-kill and the summary are info lines
}

TEST_CASE("run_sweep: without a config file at the default path the defaults apply, and the log says so") {
    Pipeline pipeline(41307);
    FakeProc fake;  // root's processes only: nothing to kill
    pipeline.use(fake);
    const auto loaded = sweep::load_config_and_exemptions(pipeline.dir / "absent.conf", false, {});
    const KillReport report =
        sweep::run_sweep(loaded, pipeline.request, &pipeline.controller, pipeline.accounts, pipeline.log);
    CHECK_FALSE(report.error);
    CHECK(report.actions.empty());
    CHECK(pipeline.sink.level_of("no config file, using defaults") == LogLevel::info);
}

TEST_CASE("check_node: the plan and live work run_sweep starts from, with errors returned, not logged") {
    Pipeline pipeline(41308);
    OneStray fake(41308);
    fake.add_process({.pid = 201, .uids = {41309, 41309, 41309, 41309}, .gids = {41309, 41309, 41309, 41309}});
    pipeline.accounts.names[41309] = "rs.other";
    pipeline.use(fake);
    pipeline.request.trigger = sweep::Trigger{};
    pipeline.request.trigger.label = "node sweep";
    pipeline.request.node.prolog_contain = false;
    pipeline.controller.live.uids = {41309};

    const auto check = sweep::check_node(pipeline.load("{}\n"), pipeline.request, &pipeline.controller,
                                         pipeline.accounts, pipeline.log);
    REQUIRE(check.ok());
    CHECK(reason_of(check->plan, 200) == Reason::stray);
    CHECK(reason_of(check->plan, 201) == Reason::has_live_job);
    CHECK(check->live.uids == std::set<uid_t>{41309});
    CHECK(pipeline.sink.lines.empty());  // no action, no summary

    const auto failed = sweep::check_node(pipeline.load("grace: 31\n"), pipeline.request, &pipeline.controller,
                                          pipeline.accounts, pipeline.log);
    REQUIRE_FALSE(failed.ok());
    CHECK(failed.error().kind == ErrorKind::config);
    CHECK(pipeline.sink.lines.empty());
}

TEST_CASE("run_sweep: a step end with job_source controller asks nobody and sweeps nothing") {
    // Slurm may kill a helper started inside the ending step: slurmctld is asked from
    // the job epilog only.
    Pipeline pipeline(41306);
    OneStray fake(41306);
    pipeline.use(fake);
    pipeline.request.trigger.label = "step 7.0";
    pipeline.request.trigger.job_ending = false;
    pipeline.request.trigger.ending_step = steps::StepId{7, 0};
    const KillReport report = pipeline.run("job_source: controller\ndry_run: true\n");
    CHECK_FALSE(report.error);
    CHECK(pipeline.controller.calls == 0);
    CHECK(report.actions.empty());
    CHECK(pipeline.sink.lines.back().second ==
          "step 7.0: job_source controller: slurmctld is asked in the job epilog, not at a step end");
}

TEST_CASE("run_sweep: each evaluation adds its kill, its reasons and its trigger to the metrics file") {
    Pipeline pipeline(41306);
    const std::string file = pipeline.dir / "leftover.prom";
    const pid_t stray = spawn_as(41306, {"sleep", "600"});
    const KillReport report = pipeline.run(fmt::format("grace: 2\nmetrics_file: {}\n", file));
    CHECK(wait_gone(stray));
    REQUIRE_FALSE(report.error);
    const Metrics metrics = metrics_in(file);
    CHECK(metrics.value("leftover_evaluations_total", "epilog") == 1);
    CHECK(metrics.value("leftover_evaluations_total", "step") == 0);
    CHECK(metrics.value("leftover_processes_killed_total", "SIGTERM") == 1);
    CHECK(metrics.value("leftover_users_swept_total") == 1);
    CHECK(metrics.value("leftover_last_strays_found") == 1);
    CHECK(metrics.value("leftover_last_evaluation_failed") == 0);
    for (const auto& [reason, count] : report.first_plan.count_by_reason())
        if (reason != Reason::stray)
            CHECK(metrics.value("leftover_processes_kept_total", to_string(reason)) == static_cast<double>(count));
    CHECK(pipeline.sink.text().find("rs.user") != std::string::npos);
    std::ifstream in(file);
    CHECK(std::string(std::istreambuf_iterator<char>(in), {}).find("rs.user") == std::string::npos);

    pipeline.request.trigger.ending_step = steps::StepId{7, 0};
    pipeline.request.trigger.job_ending = false;
    pipeline.run(fmt::format("metrics_file: {}\nmetrics_users: true\n", file));
    CHECK(metrics_in(file).value("leftover_evaluations_total", "step") == 1);
    CHECK(metrics_in(file).value("leftover_user_processes_killed_total", "rs.user") == 0);  // nothing killed now
}

TEST_CASE("run_sweep: a config or lookup error is counted by its kind, and nothing is killed") {
    Pipeline pipeline(41307);
    const std::string file = pipeline.dir / "leftover.prom";
    const std::string metrics_line = fmt::format("metrics_file: {}\n", file);
    const pid_t stray = spawn_as(41307, {"sleep", "600"});
    std::string kind;
    SUBCASE("config: an unknown key, the metrics file still named") {
        pipeline.run(metrics_line + "protected_user: [rs.user]\n");
        kind = "config";
    }
    SUBCASE("users_file: a missing protected users file") {
        pipeline.run(metrics_line + "protected_users_files: [" + pipeline.dir / "absent.list" + "]\n");
        kind = "users_file";
    }
    SUBCASE("step_socket: a spool directory that cannot be read") {
        pipeline.request.node.spool_dir = pipeline.dir / "absent-spool";
        pipeline.run(metrics_line + "grace: 0\n");
        kind = "step_socket";
    }
    SUBCASE("controller: slurmctld does not answer (no PrologFlags=contain)") {
        pipeline.request.node.prolog_contain = false;
        pipeline.controller.error =
            Error::lookup("asking slurmctld: did not finish before the deadline", ErrorSource::controller);
        pipeline.run(metrics_line + "grace: 0\n");
        kind = "controller";
    }
    SUBCASE("deadline: the evaluation's deadline passed before the scan ended") {
        pipeline.request.started = std::chrono::steady_clock::now() - std::chrono::hours(1);
        pipeline.run(metrics_line + "grace: 0\n");
        kind = "deadline";
    }
    SUBCASE("account_lookup: a listed name's lookup fails") {
        pipeline.accounts.failing_names = {"rs.operator"};
        pipeline.run(metrics_line + "grace: 0\nprotected_users: [rs.operator]\n");
        kind = "account_lookup";
    }
    SUBCASE("proc: /proc is not slurmd's pid namespace") {
        pipeline.request.node.slurmd_pid = 999999;  // no such process
        pipeline.run(metrics_line + "grace: 0\n");
        kind = "proc";
    }
    INFO(pipeline.sink.text());
    CHECK(is_running(stray));
    const Metrics metrics = metrics_in(file);
    CHECK(metrics.value("leftover_lookup_errors_total", kind) == 1);
    double all_errors = 0;
    for (const auto& [label, value] : metrics.series().at("leftover_lookup_errors_total")) all_errors += value;
    CHECK(all_errors == 1);
    CHECK(metrics.value("leftover_evaluations_total", "epilog") == 1);
    CHECK(metrics.value("leftover_last_evaluation_failed") == 1);
    CHECK(metrics.value("leftover_processes_killed_total", "SIGTERM") == 0);
}

TEST_CASE("run_sweep: a metrics file that cannot be written is one warning, and the sweep goes on") {
    Pipeline pipeline(41308);
    const std::string open_dir = pipeline.dir / "open";
    REQUIRE(::mkdir(open_dir.c_str(), 0777) == 0);
    REQUIRE(::chmod(open_dir.c_str(), 0777) == 0);
    const pid_t stray = spawn_as(41308, {"sleep", "600"});
    const KillReport report = pipeline.run(fmt::format("grace: 0\nmetrics_file: {}/leftover.prom\n", open_dir));
    CHECK(wait_gone(stray));
    CHECK_FALSE(report.error);
    CHECK(std::count_if(report.actions.begin(), report.actions.end(),
                        [](const KillRecord& r) { return !r.intermediate; }) == 1);  // not the SIGSTOP/SIGCONT
    CHECK(pipeline.sink.level_of("metrics not written: metrics directory " + open_dir +
                                 ": mode 0777; it must not be writable by group or others") == LogLevel::warn);
    CHECK_FALSE(std::filesystem::exists(open_dir + "/leftover.prom"));
    CHECK(pipeline.sink.count("killed 1;") == 1);
}

TEST_CASE("run_sweep: a metrics file that is not ours is replaced, with a warning") {
    Pipeline pipeline(41309);
    const std::string file = pipeline.dir.write("leftover.prom", "garbage\n");
    pipeline.run(fmt::format("dry_run: true\nmetrics_file: {}\n", file));
    CHECK(pipeline.sink.level_of("metrics file " + file + " was not leftover's (line 1: ") == LogLevel::warn);
    CHECK(metrics_in(file).value("leftover_evaluations_total", "epilog") == 1);
}

TEST_CASE("run_sweep: a sweep short of descriptors for its pins says so once and gives every stray its SIGTERM") {
    Pipeline pipeline(41330);
    std::vector<pid_t> strays;
    for (int i = 0; i < 200; ++i) strays.push_back(spawn_as(41330, {"sleep", "600"}));
    for (const pid_t stray : strays) REQUIRE(is_running(stray));
    // In a child, whose hard limit may stay low: room for a few pins, not for 200.
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        const auto open_now = static_cast<rlim_t>(
            std::distance(std::filesystem::directory_iterator("/proc/self/fd"), std::filesystem::directory_iterator{}));
        const rlimit low{open_now + 24, open_now + 24};
        if (::setrlimit(RLIMIT_NOFILE, &low) != 0) ::_exit(10);
        pipeline.request.self = ::getpid();
        const KillReport report = pipeline.run("grace: 2\n");
        const RecordingSink& sink = pipeline.sink;
        int code = 0;
        if (sink.count("room for about") != 1) code |= 1;
        // No pin found the limit: a round lets each pin go as it goes, or watches in /proc.
        if (sink.count("Too many open files") != 0) code |= 2;
        if (!report.survivors.empty() || report.error) code |= 4;
        // The grace the config asks for, for every one: a SIGTERM each, and no SIGKILL
        // (sleep ends at its SIGTERM).
        std::set<pid_t> termed;
        bool killed = false;
        for (const KillRecord& r : report.actions) {
            if (r.outcome != Outcome::signalled) continue;
            if (r.signal == SIGTERM) termed.insert(r.pid);
            killed = killed || r.signal == SIGKILL;
        }
        if (termed.size() != strays.size() || killed) code |= 8;
        std::fprintf(stderr, "child: %zu of %zu strays got SIGTERM, SIGKILL %s\n", termed.size(), strays.size(),
                     killed ? "sent" : "not sent");
        if (code != 0)
            for (const auto& line : sink.lines) std::fprintf(stderr, "child: %s\n", line.second.c_str());
        ::_exit(code);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    // One bound for all 200 (hang detector only): a sweep that left them must not cost 200 waits.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    std::size_t left = 0;
    for (const pid_t stray : strays)
        if (!wait_gone(stray, std::chrono::duration_cast<std::chrono::milliseconds>(std::max(
                                  until - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration{}))))
            ++left;
    CHECK(left == 0);
    kill_all_of(41330);
}
