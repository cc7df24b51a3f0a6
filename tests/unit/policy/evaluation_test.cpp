// SPDX-License-Identifier: GPL-2.0-or-later
// One evaluation on a fake /proc tree: scan, job state, exemptions and the decision put
// together, job cgroups read only when they could matter, slurmctld asked only when a
// plan would kill, again each round for users it cleared.
#include "policy/evaluation.hpp"
#include "support/fake_accounts.hpp"
#include "support/fake_proc.hpp"
#include "support/plans.hpp"

#include <sys/stat.h>

#include <doctest/doctest.h>

#include <functional>
#include <optional>
#include <set>
#include <vector>

using namespace leftover;
using leftover::test::classify;
using leftover::test::FakeAccounts;
using leftover::test::FakeProc;
using leftover::test::FakeProcess;
using leftover::test::reason_of;

namespace {

constexpr uid_t kStray = 41201, kOther = 41202, kLate = 41203, kOperator = 41204;

FakeProcess user_process(pid_t pid, uid_t uid, std::string cgroup = "0::/user.slice/user-41201.slice\n") {
    return {.pid = pid, .uids = {uid, uid, uid, uid}, .cgroup = std::move(cgroup), .gids = {uid, uid, uid, uid}};
}

// A node as one evaluation sees it: a fake /proc, the accounts, and the live work the
// job-state reader returns (or its error) at each call.
struct Node {
    FakeProc fake;
    Config config;
    FakeAccounts accounts;
    LiveWork live;
    std::optional<Error> job_state_error;
    std::function<LiveWork(int call)> live_at;  // set: the live work at each read (1, 2, ...)
    int reads = 0;
    bool examine_live_users = false;
    std::optional<Exemptions> exemptions;

    Node() {
        accounts.names = {{kStray, "cg.user"}, {kOther, "other.user"}, {kLate, "late.user"}, {kOperator, "op.erator"}};
        config.protected_users = {"op.erator"};
    }

    Evaluation evaluation(AllocationCheck allocation_check = {}) {
        auto loaded = Exemptions::load(config, {});
        REQUIRE(loaded.ok());
        exemptions = loaded.value();
        EvaluationContext context;
        context.proc_root = fake.root();
        context.self = FakeProc::caller_pid;
        context.examine_live_users = examine_live_users;
        const auto job_state = [this]() -> Result<LiveWork> {
            ++reads;
            if (job_state_error) return *job_state_error;
            return live_at ? live_at(reads) : live;
        };
        return Evaluation(*exemptions, accounts, job_state, std::move(allocation_check), context);
    }
};

}  // namespace

TEST_CASE("evaluation: a process in the cgroup of a job with a live step is kept, others of that user are not") {
    Node node;
    node.fake.add_process(user_process(700, kStray, "0::/system.slice/slurmstepd.scope/job_42/step_0\n"));
    node.fake.add_process(user_process(701, kStray, "0::/system.slice/slurmstepd.scope/job_43/step_0\n"));
    node.live.job_ids = {42};  // job 42 has a live step (owned by someone else); job 43 has none
    Evaluation evaluation = node.evaluation();
    auto plan = evaluation();
    REQUIRE(plan.ok());
    for (const Decision& d : plan->decisions) {
        if (d.pid == 700) CHECK(d.reason == Reason::live_job_cgroup);
        if (d.pid == 701) CHECK(d.reason == Reason::stray);
    }
}

TEST_CASE("evaluation: job cgroups are read only when a live job could protect a process that would be killed") {
    Node node;
    node.fake.add_process(user_process(700, kStray));
    node.fake.remove("700/cgroup");
    REQUIRE(::mkdir(node.fake.path("700/cgroup").c_str(), 0755) == 0);  // reading it fails the evaluation
    Evaluation evaluation = node.evaluation();

    auto plan = evaluation();  // no job with a live step: no cgroup can protect
    REQUIRE(plan.ok());
    CHECK(reason_of(*plan, 700) == Reason::stray);

    // A live job, but nothing would be killed.
    node.live = {.uids = {kStray}, .job_ids = {42}, .job_sluids = {}, .stepd_pids = {}, .job_users = {}};
    plan = evaluation();
    REQUIRE(plan.ok());
    CHECK(reason_of(*plan, 700) == Reason::has_live_job);

    // A live job and a would-be kill: the cgroup is read.
    node.live = {.uids = {}, .job_ids = {42}, .job_sluids = {}, .stepd_pids = {}, .job_users = {}};
    plan = evaluation();
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.error().kind == ErrorKind::lookup);
}

TEST_CASE("evaluation: slurmctld is asked only about users a plan would kill, and a held allocation is remembered") {
    Node node;
    node.fake.add_process(user_process(700, kStray));
    node.fake.add_process(user_process(701, kOther));
    node.fake.add_process(user_process(702, kOperator));
    std::vector<std::set<uid_t>> asked;
    Evaluation evaluation = node.evaluation([&asked](const std::set<uid_t>& uids) -> Result<std::set<uid_t>> {
        asked.push_back(uids);
        return std::set<uid_t>{kOther};  // other.user holds an allocation here that local state cannot show
    });

    auto plan = evaluation();
    REQUIRE(plan.ok());
    CHECK(asked == std::vector<std::set<uid_t>>{{kStray, kOther}});  // not the protected op.erator
    CHECK(reason_of(*plan, 700) == Reason::stray);
    CHECK(reason_of(*plan, 701) == Reason::has_live_job);
    CHECK(reason_of(*plan, 702) == Reason::protected_account);
    CHECK(evaluation.last_live_work().uids == std::set<uid_t>{kOther});

    // The next round: the allocation still counts without asking about other.user again;
    // cg.user, who held none, is asked again (see the test below on a user
    // slurmctld cleared in one round).
    plan = evaluation();
    REQUIRE(plan.ok());
    CHECK(asked.size() == 2);
    CHECK(asked.back() == std::set<uid_t>{kStray});
    CHECK(reason_of(*plan, 701) == Reason::has_live_job);

    node.fake.add_process(user_process(703, kLate));  // a user not asked yet
    plan = evaluation();
    REQUIRE(plan.ok());
    CHECK(asked.size() == 3);
    CHECK(asked.back() == std::set<uid_t>{kStray, kLate});
    CHECK(reason_of(*plan, 703) == Reason::stray);
}

TEST_CASE("fault catalogue: a user slurmctld cleared in one round is asked again in the next") {
    // Without PrologFlags=contain, a multi-node job of the user may land here during grace:
    // a "no allocation" answer must not outlive the round it was given for.
    Node node;
    node.fake.add_process(user_process(700, kStray));
    int calls = 0;
    Evaluation evaluation = node.evaluation([&calls](const std::set<uid_t>&) -> Result<std::set<uid_t>> {
        return ++calls == 1 ? std::set<uid_t>{} : std::set<uid_t>{kStray};
    });
    auto plan = evaluation();
    REQUIRE(plan.ok());
    CHECK(reason_of(*plan, 700) == Reason::stray);

    plan = evaluation();  // the round before SIGKILL: the job has landed
    REQUIRE(plan.ok());
    CHECK(calls == 2);
    CHECK(reason_of(*plan, 700) == Reason::has_live_job);
    CHECK(plan->kills().empty());
}

TEST_CASE("evaluation: the users a cleanup may touch are asked about with the kill candidates, in one query") {
    Node node;
    node.fake.add_process(user_process(700, kStray));  // kLate left no process: never a kill candidate
    node.live.uids = {kOperator};
    std::vector<std::set<uid_t>> asked;
    Evaluation evaluation = node.evaluation([&asked](const std::set<uid_t>& uids) -> Result<std::set<uid_t>> {
        asked.push_back(uids);
        return std::set<uid_t>{kOther};
    });
    CHECK(evaluation.checks_allocations());
    evaluation.ask_allocations_of({kLate, kOther, kOperator});  // kOperator: live here, not asked
    auto plan = evaluation();
    REQUIRE(plan.ok());
    CHECK(asked == std::vector<std::set<uid_t>>{{kStray, kLate, kOther}});
    CHECK(evaluation.cleared_allocations() == std::set<uid_t>{kStray, kLate});
    CHECK(evaluation.last_live_work().uids.count(kOther) == 1);

    // Nothing to kill: the cleanup's users alone are asked, and cleared only by that answer.
    node.fake.remove("700");
    plan = evaluation();
    REQUIRE(plan.ok());
    CHECK(asked.back() == std::set<uid_t>{kLate});  // kOther's allocation is remembered
    CHECK(evaluation.cleared_allocations() == std::set<uid_t>{kLate});
}

TEST_CASE("evaluation: a failed allocation check of the cleanup's users alone is the evaluation's error") {
    Node node;
    Evaluation evaluation = node.evaluation([](const std::set<uid_t>&) -> Result<std::set<uid_t>> {
        return Error::lookup("slurmctld did not answer", ErrorSource::controller);
    });
    CHECK(evaluation().ok());  // nobody asked about yet
    evaluation.ask_allocations_of({kLate});
    const auto plan = evaluation();
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.error().message == "slurmctld did not answer");
    CHECK(evaluation.cleared_allocations().empty());
}

TEST_CASE("evaluation: nothing that would be killed means slurmctld is not asked") {
    Node node;
    node.fake.add_process(user_process(702, kOperator));
    int asked = 0;
    Evaluation evaluation = node.evaluation([&asked](const std::set<uid_t>&) -> Result<std::set<uid_t>> {
        ++asked;
        return std::set<uid_t>{};
    });
    REQUIRE(evaluation().ok());
    CHECK(asked == 0);
}

TEST_CASE("evaluation: a failed scan, job-state read or allocation check is the evaluation's error") {
    Node node;
    node.fake.add_process(user_process(700, kStray));
    node.job_state_error = Error::lookup("slurmstepd did not answer", ErrorSource::step_socket);
    auto plan = node.evaluation()();
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.error().message == "slurmstepd did not answer");

    node.job_state_error.reset();
    plan = node.evaluation([](const std::set<uid_t>&) -> Result<std::set<uid_t>> {
        return Error::lookup("slurmctld did not answer", ErrorSource::controller);
    })();
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.error().message == "slurmctld did not answer");

    node.fake.remove("self");
    plan = node.evaluation()();
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.error().kind == ErrorKind::lookup);
}

TEST_CASE("evaluation: the caller's parent chain, read from the proc root, is never a candidate") {
    Node node;
    node.fake.add_process(user_process(150, kStray));  // the user's shell that started the caller
    node.fake.add_process(user_process(151, kStray));
    node.fake.add_process({.pid = FakeProc::caller_pid,
                           .ppid = 150,
                           .uids = {},
                           .comm = "leftover",
                           .start_time = 2000,
                           .gids = {0, 0, 0, 0},
                           .cap_eff = leftover::test::all_caps});
    auto plan = node.evaluation()();
    REQUIRE(plan.ok());
    CHECK(reason_of(*plan, 150) == Reason::caller_ancestor);
    CHECK(reason_of(*plan, 151) == Reason::stray);
    CHECK(reason_of(*plan, FakeProc::caller_pid) == Reason::self);
}

TEST_CASE("fault catalogue: below a live step's stepd pid, or a root slurmstepd-wlm, is inside a live step") {
    Node node;
    const Uids root{};
    const auto child = [](pid_t pid, pid_t ppid, std::string comm = "sleep") {
        FakeProcess p = user_process(pid, kStray);
        p.ppid = ppid;
        p.comm = std::move(comm);
        return p;
    };
    // A stepd whose binary has another name: only its socket's answer tells.
    node.fake.add_process({.pid = 300, .uids = root, .comm = "slurmstepd: [7.0]", .exe = "/opt/site/sbin/stepd"});
    node.fake.add_process(child(301, 300, "bash"));
    node.fake.add_process(child(302, 301));
    // Debian's slurmstepd of a step this evaluation cannot see (another slurmd's), run by root.
    node.fake.add_process(
        {.pid = 310, .uids = root, .comm = "slurmstepd: [14.batch]", .exe = "/usr/sbin/slurmstepd-wlm"});
    node.fake.add_process(child(311, 310, "slurm_script"));
    // The same binary run by a user (anyone may exec it): not a slurmstepd.
    FakeProcess users_stepd = child(320, 1, "slurmstepd: [9.0]");
    users_stepd.exe = "/usr/sbin/slurmstepd-wlm";
    node.fake.add_process(users_stepd);
    node.fake.add_process(child(321, 320));
    node.fake.add_process(child(330, 1));  // outside every step

    node.live.stepd_pids = {300};
    auto plan = node.evaluation()();
    REQUIRE(plan.ok());
    CHECK(reason_of(*plan, 301) == Reason::inside_live_step);
    CHECK(reason_of(*plan, 302) == Reason::inside_live_step);
    CHECK(reason_of(*plan, 311) == Reason::inside_live_step);
    CHECK(reason_of(*plan, 320) == Reason::stray);
    CHECK(reason_of(*plan, 321) == Reason::stray);
    CHECK(reason_of(*plan, 330) == Reason::stray);

    node.live.stepd_pids.clear();  // no socket names 300 any more
    plan = node.evaluation()();
    REQUIRE(plan.ok());
    CHECK(reason_of(*plan, 302) == Reason::stray);
    CHECK(reason_of(*plan, 311) == Reason::inside_live_step);
}

TEST_CASE("fault catalogue: a not-detailed entry of a protected user does not drop the user's name protection") {
    // A root-owned entry (not detailed) at a lower pid whose owner became kOperator, as a
    // re-read ancestor or a reused pid leaves it, and a detailed process of kOperator,
    // who is listed in protected_users.
    Node node;
    node.fake.add_process({.pid = 500, .uids = {0, 0, 0, 0}, .comm = "screen", .gids = {0, 0, 0, 0}});
    node.fake.add_process(user_process(600, kOperator));
    ScanOptions options = node.fake.options();
    options.wants_detail = [](uid_t owner) { return owner != 0; };  // as the evaluation scans
    auto scanned = scan_processes(options);
    REQUIRE(scanned.ok());
    ProcessTable table = std::move(scanned).value();
    Process* entry = const_cast<Process*>(table.find(500));
    REQUIRE(entry != nullptr);
    REQUIRE_FALSE(entry->detailed);
    entry->owner = kOperator;

    auto loaded = Exemptions::load(node.config, {});
    REQUIRE(loaded.ok());
    const std::map<uid_t, Exemption> by_name = {{kOperator, classify(loaded.value(), kOperator, node.accounts)}};
    const auto exemptions = table_exemptions(table, loaded.value(), by_name);
    REQUIRE(exemptions.count(kOperator) == 1);
    CHECK(exemptions.at(kOperator).protection == Protection::protected_users);

    const Plan plan = decide(DecisionInput{table, exemptions, LiveWork{}, Event{}, FakeProc::caller_pid, {}, {}, {}});
    CHECK(reason_of(plan, 600) == Reason::protected_account);
}

TEST_CASE("fault catalogue: a second passwd name of a uid, listed in protected_users, protects that uid") {
    Node node;
    node.accounts.aliases = {{"cg.alias", kStray}};  // kStray's first name stays cg.user
    node.config.protected_users = {"cg.alias"};
    node.fake.add_process(user_process(700, kStray));
    node.fake.add_process(user_process(701, kOther));
    auto plan = node.evaluation()();
    REQUIRE(plan.ok());
    CHECK(reason_of(*plan, 700) == Reason::protected_account);
    for (const Decision& d : plan->decisions)
        if (d.pid == 700) CHECK(d.detail == "protected: listed in protected_users as cg.alias");
    CHECK(reason_of(*plan, 701) == Reason::stray);
}

TEST_CASE("fault catalogue: a listed name whose lookup fails makes the evaluation a lookup error") {
    Node node;
    node.accounts.failing_names = {"op.erator"};
    node.fake.add_process(user_process(700, kStray));
    auto plan = node.evaluation()();
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.error().kind == ErrorKind::lookup);
    CHECK(plan.error().message.starts_with(
        "protected user 'op.erator' (listed in protected_users): account lookup failed"));
}

TEST_CASE("fault catalogue: names are looked up only for users a plan would kill, in one call, listed names once") {
    Node node;
    node.fake.add_process(user_process(700, kStray));
    node.fake.add_process(user_process(701, kOther));
    node.live.uids = {kOther};
    Evaluation evaluation = node.evaluation();
    auto plan = evaluation();
    REQUIRE(plan.ok());
    using Asked = std::vector<std::pair<std::set<uid_t>, std::set<std::string>>>;
    CHECK(node.accounts.asked == Asked{{{kStray}, {"op.erator"}}});
    CHECK(reason_of(*plan, 700) == Reason::stray);
    CHECK(reason_of(*plan, 701) == Reason::has_live_job);

    plan = evaluation();  // the next round: nothing asked again
    REQUIRE(plan.ok());
    CHECK(node.accounts.asked.size() == 1);

    node.live.uids = {};
    node.accounts.asked.clear();
    REQUIRE(node.evaluation()().ok());
    CHECK(node.accounts.asked == Asked{{{kStray, kOther}, {"op.erator"}}});
}

TEST_CASE("evaluation: nothing that would be killed means no account is looked up") {
    Node node;
    node.fake.add_process(user_process(701, kOther));
    node.live.uids = {kOther};
    REQUIRE(node.evaluation()().ok());
    CHECK(node.accounts.asked.empty());
}

TEST_CASE("fault catalogue: a sweep reads no detail of a process whose user has live work, a check does") {
    Node node;
    node.fake.add_process(user_process(700, kStray));
    node.fake.add_process(user_process(701, kOther));
    node.fake.remove("701/status");
    REQUIRE(::mkdir(node.fake.path("701/status").c_str(), 0755) == 0);  // reading it fails the scan
    node.live = {.uids = {kOther}, .job_ids = {42}, .job_sluids = {}, .stepd_pids = {}, .job_users = {}};

    Evaluation sweep = node.evaluation();
    auto plan = sweep();
    REQUIRE_MESSAGE(plan.ok(), (plan.ok() ? std::string() : plan.error().message));
    CHECK(reason_of(*plan, 700) == Reason::stray);
    CHECK(reason_of(*plan, 701) == Reason::has_live_job);
    CHECK(node.reads == 2);  // before the scan, and again after it since the plan kills

    node.examine_live_users = true;
    Evaluation check = node.evaluation();
    CHECK_FALSE(check().ok());
}

TEST_CASE("fault catalogue: an unexamined process is kept when its user's live work ends during the scan") {
    Node node;
    node.fake.add_process(user_process(700, kStray));
    node.fake.add_process(user_process(701, kOther));
    // The control: kOther has no live work at any read, so its process is a stray.
    Evaluation control = node.evaluation();
    auto plan = control();
    REQUIRE(plan.ok());
    CHECK(reason_of(*plan, 701) == Reason::stray);

    node.reads = 0;
    node.live_at = [](int call) {
        LiveWork live;
        if (call == 1) live.uids = {kOther};  // its job ends between the two reads
        return live;
    };
    Evaluation evaluation = node.evaluation();
    plan = evaluation();
    REQUIRE(plan.ok());
    CHECK(reason_of(*plan, 700) == Reason::stray);
    CHECK(reason_of(*plan, 701) == Reason::has_live_job);
    CHECK(test::decision_of(*plan, 701).detail == "not examined: its user had live work when /proc was read");
    CHECK(test::decision_of(*plan, 701).verdict == Verdict::keep);
}

TEST_CASE("evaluation: a plan that would kill reads the job state again, and a job started meanwhile protects") {
    Node node;
    node.fake.add_process(user_process(700, kStray));
    node.live_at = [](int call) {
        LiveWork live;
        if (call >= 2) live.uids = {kStray};  // a job of the user starts while /proc is read
        return live;
    };
    Evaluation evaluation = node.evaluation();
    auto plan = evaluation();
    REQUIRE(plan.ok());
    CHECK(reason_of(*plan, 700) == Reason::has_live_job);
    CHECK(node.reads == 2);

    // Nothing to kill on the first look: one read is all it takes.
    node.reads = 0;
    node.live_at = {};
    node.live = {.uids = {kStray}, .job_ids = {}, .job_sluids = {}, .stepd_pids = {}, .job_users = {}};
    Evaluation quiet = node.evaluation();
    REQUIRE(quiet().ok());
    CHECK(node.reads == 1);
}
