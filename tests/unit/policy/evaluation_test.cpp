// SPDX-License-Identifier: GPL-2.0-or-later
// One evaluation on a fake /proc tree: scan, job state, exemptions and the decision put together.
#include "evaluation.hpp"
#include "support/fake_accounts.hpp"
#include "support/fake_proc.hpp"

#include <doctest/doctest.h>

using namespace leftover;
using leftover::test::FakeAccounts;
using leftover::test::FakeProc;

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
