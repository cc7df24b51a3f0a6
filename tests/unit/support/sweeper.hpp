// SPDX-License-Identifier: GPL-2.0-or-later
// The kill executor on real processes of one test uid: scope job_user and an account
// database that knows only that uid, so nothing else on the machine can be touched.
#pragma once

#include "kill/executor.hpp"
#include "policy/evaluation.hpp"
#include "support/fake_accounts.hpp"
#include "support/processes.hpp"
#include "support/temp_dir.hpp"
#include "sweep/report.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <functional>
#include <optional>
#include <string>
#include <vector>

using namespace std::chrono_literals;

namespace leftover::test {

struct Sweeper {
    uid_t uid;
    Config config;
    FakeAccounts accounts;
    std::function<Result<LiveWork>()> job_state = [] { return Result<LiveWork>(LiveWork{}); };
    AllocationCheck allocation_check;                                  // unset: PrologFlags=contain
    std::function<Result<std::optional<std::string>>()> job_starting;  // unset: not asked
    std::function<Result<bool>()> take_turn;                           // unset: no turn
    KillObserver observer;
    int stop_rounds = KillOptions{}.stop_rounds;
    std::chrono::milliseconds starting_wait = KillOptions{}.starting_wait;
    std::chrono::milliseconds replan_time = KillOptions{}.replan_time;
    bool unchanged_job_state_saves = true;
    std::optional<Plan> last_plan;                   // what the last evaluation of run() decided
    std::chrono::steady_clock::time_point deadline;  // of the last run()

    explicit Sweeper(uid_t u, std::string name = "stray.user") : uid(u) {
        accounts.names[u] = std::move(name);
        become_subreaper();
    }
    ~Sweeper() {
        kill_all_of(uid);
        for (const pid_t pid : spawned) ::kill(pid, SIGKILL);
    }
    pid_t spawn(const std::vector<std::string>& argv) { return spawned.emplace_back(spawn_as(uid, argv)); }
    std::vector<pid_t> spawned;  // killed at the end whatever their uids are by then
    Sweeper(const Sweeper&) = delete;
    Sweeper& operator=(const Sweeper&) = delete;

    KillReport run(std::chrono::milliseconds grace = std::chrono::seconds(2), bool dry_run = false,
                   SystemCalls& calls = real_system_calls(),
                   std::chrono::milliseconds budget = std::chrono::seconds(20)) {
        auto exemptions = Exemptions::load(config, {});
        REQUIRE(exemptions.ok());
        EvaluationContext context;
        context.self = ::getpid();
        context.event = Event{Scope::job_user, uid};
        Evaluation evaluation(exemptions.value(), accounts, job_state, allocation_check, context);
        KillOptions options;
        options.grace = grace;
        options.dry_run = dry_run;
        options.stop_rounds = stop_rounds;
        options.self = ::getpid();
        deadline = options.deadline = std::chrono::steady_clock::now() + budget;
        options.observer = observer;
        options.job_starting = job_starting;
        options.starting_wait = starting_wait;
        options.replan_time = replan_time;
        options.take_turn = take_turn;
        // As run_sweep: a stop round that met every target and nothing new ends on the
        // job state alone; unchanged_job_state_saves off: a new evaluation every time.
        if (unchanged_job_state_saves)
            options.job_state_unchanged = [&evaluation] { return evaluation.job_state_unchanged(); };
        return execute_kills(
            [&] {
                auto plan = evaluation();
                if (plan.ok()) last_plan = plan.value();
                return plan;
            },
            options, calls);
    }
};

// The plan's decision on `pid`; none: the plan did not see it.
inline const Decision* decision_for(const Plan& plan, pid_t pid) {
    for (const Decision& d : plan.decisions)
        if (d.pid == pid) return &d;
    return nullptr;
}

inline const KillRecord* action_for(const KillReport& report, pid_t pid, int signal) {
    for (const KillRecord& r : report.actions)
        if (r.pid == pid && r.signal == signal) return &r;
    return nullptr;
}

// A stray the sweep stopped and then let run again, never signalled to end: it runs, not
// stopped, and its SIGCONT (returned, for the caller's checks of why) went as the last word.
inline const KillRecord* check_continued_not_killed(const KillReport& report, pid_t stray) {
    CHECK(action_for(report, stray, SIGTERM) == nullptr);
    CHECK(action_for(report, stray, SIGKILL) == nullptr);
    CHECK(is_running(stray));
    CHECK(wait_not_stopped(stray));
    const KillRecord* cont = action_for(report, stray, SIGCONT);
    if (cont != nullptr) {
        CHECK(cont->outcome == Outcome::signalled);
        CHECK_FALSE(cont->intermediate);
    }
    return cont;
}

// Every action as the log would say it, one a line: for INFO() when a check fails.
inline std::string format_actions(const KillReport& report) {
    std::string lines;
    for (const KillRecord& r : report.actions) lines += sweep::format_action(r) + "\n";
    return lines;
}

// A directory every test user can write pid files into.
struct SharedDir : TempDir {
    SharedDir() { ::chmod(path().c_str(), 0777); }
};

// Starts `sh` ignoring SIGTERM and returns once the trap is in place.
inline pid_t spawn_stubborn(uid_t uid, const SharedDir& dir, const std::string& body = "while :; do sleep 0.05; done") {
    spawn_as(uid, {"sh", "-c", "trap '' TERM; echo $$ > " + (dir / "stubborn.pid") + "; " + body});
    return wait_pid_file(dir / "stubborn.pid");
}

}  // namespace leftover::test
