// SPDX-License-Identifier: GPL-2.0-or-later
// The evaluation reads cgroup files only when a job with a live step could protect by
// cgroup: read_job_cgroups fills in what a scan without cgroups left out.
#include "proc_table.hpp"
#include "support/fake_proc.hpp"

#include <doctest/doctest.h>

using namespace leftover;
using leftover::test::FakeProc;

namespace {

const Process& get(const ProcessTable& table, pid_t pid) {
    const Process* p = table.find(pid);
    REQUIRE(p != nullptr);
    return *p;
}

}  // namespace

TEST_CASE("job cgroups: a scan without cgroups, then read_job_cgroups, gives what a full scan gives") {
    FakeProc fake;
    fake.add_process({.pid = 700, .cgroup = "0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_0\n"});
    fake.add_process({.pid = 702, .cgroup = "0::/user.slice/user-1000.slice/user@1000.service/"
                                            "system.slice/slurmstepd.scope/job_7\n"});
    ScanOptions options = fake.options();
    options.read_cgroup = false;
    auto table = scan_processes(options);
    REQUIRE(table.ok());
    CHECK_FALSE(get(table.value(), 700).job_cgroup.has_value());

    REQUIRE(read_job_cgroups(fake.root(), table.value()).ok());
    CHECK(get(table.value(), 700).job_cgroup == std::optional<std::uint64_t>{42});
    CHECK_FALSE(get(table.value(), 702).job_cgroup.has_value());  // a user's delegated subtree
}

TEST_CASE("job cgroups: a process replaced since the scan is left alone; one gone is skipped") {
    FakeProc fake;
    fake.add_process({.pid = 700, .start_time = 5000, .cgroup = "0::/system.slice/slurmstepd.scope/job_42/step_0\n"});
    fake.add_process({.pid = 701, .cgroup = "0::/system.slice/slurmstepd.scope/job_43/step_0\n"});
    ScanOptions options = fake.options();
    options.read_cgroup = false;
    auto table = scan_processes(options);
    REQUIRE(table.ok());
    fake.add_process({.pid = 700, .start_time = 6000, .cgroup = "0::/system.slice/slurmstepd.scope/job_99/step_0\n"});
    fake.remove("701/cgroup");
    REQUIRE(read_job_cgroups(fake.root(), table.value()).ok());
    CHECK_FALSE(get(table.value(), 700).job_cgroup.has_value());
    CHECK_FALSE(get(table.value(), 701).job_cgroup.has_value());
}

TEST_CASE("job cgroups: an unparsable stat is a lookup error, not a skipped protection") {
    FakeProc fake;
    fake.add_process({.pid = 700, .cgroup = "0::/system.slice/slurmstepd.scope/job_42/step_0\n"});
    ScanOptions options = fake.options();
    options.read_cgroup = false;
    auto table = scan_processes(options);
    REQUIRE(table.ok());
    fake.write_file("700/stat", "garbage");
    auto status = read_job_cgroups(fake.root(), table.value());
    REQUIRE_FALSE(status.ok());
    CHECK(status.error().kind == ErrorKind::lookup);
}
