// SPDX-License-Identifier: GPL-2.0-or-later
// Job cgroups are read only for the processes a plan would kill, and only when a job
// with a live step could protect them: read_job_cgroups and the evaluation around it.
#include "evaluation.hpp"
#include "proc_table.hpp"
#include "support/fake_accounts.hpp"
#include "support/fake_proc.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>

using namespace leftover;
using leftover::test::FakeAccounts;
using leftover::test::FakeProc;

namespace {

const Process& get(const ProcessTable& table, pid_t pid) {
    const Process* p = table.find(pid);
    REQUIRE(p != nullptr);
    return *p;
}

ProcessTable scan_without_cgroups(const FakeProc& fake) {
    ScanOptions options = fake.options();
    options.read_cgroup = false;
    auto table = scan_processes(options);
    REQUIRE(table.ok());
    return std::move(table).value();
}

}  // namespace

TEST_CASE("job cgroups: only the listed processes are read, and only Slurm's own job cgroups count") {
    FakeProc fake;
    fake.add_process({.pid = 700, .cgroup = "0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_0\n"});
    fake.add_process({.pid = 701, .cgroup = "0::/system.slice/slurmstepd.scope/job_43/step_0\n"});
    fake.add_process({.pid = 702, .cgroup = "0::/user.slice/user-1000.slice/user@1000.service/"
                                            "system.slice/slurmstepd.scope/job_7\n"});
    ProcessTable table = scan_without_cgroups(fake);
    CHECK_FALSE(get(table, 700).job_cgroup.has_value());

    REQUIRE(read_job_cgroups(fake.root(), table, {700, 702}).ok());
    CHECK(get(table, 700).job_cgroup == std::optional<std::uint64_t>{42});
    CHECK_FALSE(get(table, 701).job_cgroup.has_value());  // not listed
    CHECK_FALSE(get(table, 702).job_cgroup.has_value());  // a user's delegated subtree
}

TEST_CASE("job cgroups: a process gone since the scan is skipped, an unreadable cgroup is a lookup error") {
    FakeProc fake;
    fake.add_process({.pid = 700, .cgroup = "0::/system.slice/slurmstepd.scope/job_42/step_0\n"});
    fake.add_process({.pid = 701, .cgroup = "0::/system.slice/slurmstepd.scope/job_43/step_0\n"});
    ProcessTable table = scan_without_cgroups(fake);
    fake.remove("700/cgroup");
    REQUIRE(read_job_cgroups(fake.root(), table, {700}).ok());
    CHECK_FALSE(get(table, 700).job_cgroup.has_value());

    fake.remove("701/cgroup");
    REQUIRE(::mkdir(fake.path("701/cgroup").c_str(), 0755) == 0);  // a directory where the file should be
    auto status = read_job_cgroups(fake.root(), table, {701});
    REQUIRE_FALSE(status.ok());
    CHECK(status.error().kind == ErrorKind::lookup);
}

TEST_CASE("evaluation: a process in the cgroup of a job with a live step is kept, others of that user are not") {
    FakeProc fake;
    fake.add_process({.pid = 700, .uids = {41201, 41201, 41201, 41201},
                      .cgroup = "0::/system.slice/slurmstepd.scope/job_42/step_0\n"});
    fake.add_process({.pid = 701, .uids = {41201, 41201, 41201, 41201},
                      .cgroup = "0::/system.slice/slurmstepd.scope/job_43/step_0\n"});
    Config config;
    auto exemptions = Exemptions::load(config, {});
    REQUIRE(exemptions.ok());
    FakeAccounts accounts;
    accounts.names[41201] = "cg.user";
    EvaluationContext context;
    context.proc_root = fake.root();
    context.self = FakeProc::caller_pid;
    LiveWork live;
    live.job_ids = {42};  // job 42 has a live step (owned by someone else); job 43 has none
    Evaluation evaluation(exemptions.value(), accounts, [&] { return Result<LiveWork>(live); }, {}, context);
    auto plan = evaluation();
    REQUIRE(plan.ok());
    for (const Decision& d : plan->decisions) {
        if (d.pid == 700) CHECK(d.reason == Reason::live_job_cgroup);
        if (d.pid == 701) CHECK(d.reason == Reason::stray);
    }
}
