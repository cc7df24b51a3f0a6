// SPDX-License-Identifier: GPL-2.0-or-later
// A sweep on a host where slurmctld runs: people log in there without a job, so it
// kills and removes nothing and says why, unless sweep_on_controller_host says to sweep;
// when it cannot be told whether slurmctld runs, nothing is killed either.
#include "support/fake_proc.hpp"
#include "support/pipeline.hpp"
#include "support/processes.hpp"
#include "sweep/run_sweep.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>

using namespace leftover;
using namespace leftover::test;

namespace {

const std::string kNothingKilled =
    ": a sweep on a host where slurmctld runs kills and removes nothing (sweep_on_controller_host: true sweeps it)";

// A root slurmctld, pid 300, in the caller's pid namespace of `proc`.
void add_slurmctld(FakeProc& proc) {
    proc.add_process(
        {.pid = 300, .uids = {0, 0, 0, 0}, .comm = "slurmctld", .exe = "/usr/sbin/slurmctld", .gids = {0, 0, 0, 0}});
    proc.write_file("300/cmdline", std::string("/usr/sbin/slurmctld") + '\0');
    proc.set_pid_ns(300, "pid:[4026531836]");
}

}  // namespace

TEST_CASE("run_sweep on slurmctld's host (slurm.conf): a jobless user's stray lives, the log says why") {
    Pipeline pipeline(41331);
    pipeline.request.node.slurmctld_host = "localhost";
    const pid_t stray = spawn_as(41331, {"sleep", "600"});
    REQUIRE(is_running(stray));

    const KillReport report = pipeline.run("grace: 0\n");
    INFO(pipeline.sink.text());
    CHECK_FALSE(report.error);
    CHECK(report.actions.empty());
    CHECK(is_running(stray));
    CHECK(pipeline.sink.level_of("slurm.conf names this host as SlurmctldHost (localhost)" + kNothingKilled) ==
          LogLevel::info);
    CHECK(pipeline.summary().starts_with("job 7 epilog (user rs.user uid 41331): swept []; killed 0; "));

    // The same node with the key set: the stray is one, and goes.
    const KillReport swept = pipeline.run("grace: 0\nsweep_on_controller_host: true\n");
    CHECK(wait_gone(stray));
    CHECK(swept.evaluations >= 1);
    CHECK(pipeline.summary().starts_with("job 7 epilog (user rs.user uid 41331): swept [rs.user]; killed 1; "));
}

TEST_CASE("run_sweep on slurmctld's host (a running slurmctld): nothing would be killed, the log names its pid") {
    Pipeline pipeline(41332);
    OneStray fake(41332);
    add_slurmctld(fake);
    pipeline.use(fake);

    const KillReport report = pipeline.run("dry_run: true\n");
    INFO(pipeline.sink.text());
    CHECK_FALSE(report.error);
    CHECK(report.survivors.empty());
    CHECK(pipeline.sink.count("would kill pid=") == 0);
    CHECK(pipeline.sink.level_of("slurmctld runs on this host (pid 300)" + kNothingKilled) == LogLevel::info);

    // With the key, the same tree's stray (pid 200) would be killed.
    const KillReport swept = pipeline.run("dry_run: true\nsweep_on_controller_host: true\n");
    REQUIRE(swept.survivors.size() == 1);
    CHECK(swept.survivors.front().pid == 200);
}

TEST_CASE("run_sweep: when it cannot be told whether slurmctld runs here, a lookup error kills nothing") {
    Pipeline pipeline(41333);
    OneStray fake(41333);
    add_slurmctld(fake);
    fake.remove("300/ns/pid");
    fake.write_file("300/ns/pid", "");  // a regular file: readlink fails with EINVAL
    pipeline.use(fake);

    const KillReport report = pipeline.run("dry_run: true\n");
    INFO(pipeline.sink.text());
    REQUIRE(report.error);
    CHECK(report.error->kind == ErrorKind::lookup);
    CHECK(report.survivors.empty());
    CHECK(pipeline.sink.count("would kill pid=") == 0);
    CHECK(
        pipeline.sink.level_of(fmt::format("lookup error: cannot tell whether slurmctld runs on this host: cannot "
                                           "read {}/300/ns/pid of a process of uid 0: Invalid argument; nothing killed",
                                           fake.root())) == LogLevel::err);
    CHECK(pipeline.summary().find("; lookup errors 1; ") != std::string::npos);
}

TEST_CASE("check_node on slurmctld's host: the plan as a sweep with the key would make it, and the reason") {
    Pipeline pipeline(41334);
    OneStray fake(41334);
    add_slurmctld(fake);
    pipeline.use(fake);
    auto check = sweep::check_node(pipeline.load("cleanup: [ipc]\n"), pipeline.request, &pipeline.controller,
                                   pipeline.accounts, pipeline.log);
    REQUIRE(check.ok());
    REQUIRE(check->controller_host);
    CHECK(*check->controller_host == "slurmctld runs on this host (pid 300)");
    CHECK(check->plan.kills().size() == 1);
    CHECK_FALSE(check->cleanup);  // a sweep here removes nothing

    auto with_key = sweep::check_node(pipeline.load("sweep_on_controller_host: true\n"), pipeline.request,
                                      &pipeline.controller, pipeline.accounts, pipeline.log);
    REQUIRE(with_key.ok());
    CHECK_FALSE(with_key->controller_host);
}
