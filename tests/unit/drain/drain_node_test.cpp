// SPDX-License-Identifier: GPL-2.0-or-later
// drain_on_survivors: which sweeps drain the node, with what reason, and what a node
// already drained or a controller that does not answer come to.
#include "drain/drain_node.hpp"
#include "support/fake_controller.hpp"
#include "support/fake_proc.hpp"

#include <doctest/doctest.h>

#include <csignal>

using namespace leftover;
using namespace leftover::drain;

namespace {

constexpr uid_t kBob = 41002;

// A sweep that sent SIGKILL to two of bob's processes; /proc still shows both, in D.
struct Survived {
    test::FakeProc proc;
    KillReport report;
    Config config;
    test::FakeController controller;

    Survived() {
        config.drain_on_survivors = true;
        for (const pid_t pid : {501, 502}) {
            proc.add_process({.pid = pid, .uids = {kBob, kBob, kBob, kBob}, .state = 'D', .start_time = 7000u + pid});
            Decision d;
            d.pid = pid;
            d.uid = kBob;
            d.user = "bob";
            d.start_time = 7000u + pid;
            d.verdict = Verdict::kill;
            report.survivors.push_back(d);
            KillRecord record;
            record.pid = pid;
            record.uid = kBob;
            record.signal = SIGKILL;
            report.actions.push_back(record);
        }
    }
    DrainContext context(bool step_end = false) const { return {"job 12 epilog", "n1", step_end, proc.root()}; }
    std::optional<DrainReport> report_of_drain(bool step_end = false) {
        return drain_on_survivors(config, context(step_end), report, &controller).request;
    }
    std::optional<DrainResult> drain(bool step_end = false) {
        const auto drained = report_of_drain(step_end);
        return drained ? std::optional(drained->result) : std::nullopt;
    }
};

}  // namespace

TEST_CASE("drain on survivors: processes that outlived SIGKILL drain the node, the reason names user and count") {
    Survived s;
    const auto drained = s.report_of_drain();
    REQUIRE(drained);
    CHECK(drained->result == DrainResult::drained);
    REQUIRE(s.controller.drain_reasons.size() == 1);
    CHECK(s.controller.drain_reasons[0] == "leftover: 2 processes of bob survived SIGKILL (D)");
    CHECK(drained->text == "job 12 epilog: node n1 drained: leftover: 2 processes of bob survived SIGKILL (D)");
}

TEST_CASE("drain on survivors: a node already drained keeps its reason, one drain per state change") {
    Survived s;
    CHECK(s.drain() == DrainResult::drained);
    const auto kept = s.report_of_drain();
    REQUIRE(kept);
    CHECK(kept->result == DrainResult::kept);
    CHECK(s.controller.node_reason == "leftover: 2 processes of bob survived SIGKILL (D)");
    CHECK(kept->text ==
          "job 12 epilog: node n1 is IDLE+DRAIN already (reason 'leftover: 2 processes of bob survived SIGKILL (D)'): "
          "its reason kept, no drain requested");
    // Resumed by an admin: the next job end with survivors drains again.
    s.controller.node_drained = false;
    CHECK(s.drain() == DrainResult::drained);
}

TEST_CASE("drain on survivors: nothing asked with the key off, in a dry run, after an error or at a step end") {
    {
        Survived s;
        s.config.drain_on_survivors = false;
        CHECK_FALSE(s.drain());
        CHECK(s.controller.drain_reasons.empty());
    }
    {
        Survived s;
        s.config.dry_run = true;
        CHECK_FALSE(s.drain());
        CHECK(s.controller.drain_reasons.empty());
    }
    {
        Survived s;
        s.report.error = Error::lookup("slurmstepd socket: timed out", ErrorSource::step_socket);
        CHECK_FALSE(s.drain());
        CHECK(s.controller.drain_reasons.empty());
    }
    {
        Survived s;
        CHECK_FALSE(s.drain(true));
        CHECK(s.controller.drain_reasons.empty());
    }
}

TEST_CASE("drain on survivors: only processes that got SIGKILL and are still the same, living process count") {
    Survived s;
    s.report.actions.pop_back();  // 502 never got its SIGKILL (deadline)
    s.proc.add_process({.pid = 501, .uids = {kBob, kBob, kBob, kBob}, .state = 'Z', .start_time = 7501});
    CHECK_FALSE(s.drain());
    s.proc.add_process({.pid = 501, .uids = {kBob, kBob, kBob, kBob}, .state = 'D', .start_time = 9999});  // reused
    CHECK_FALSE(s.drain());
    CHECK(s.controller.drain_reasons.empty());
    s.proc.add_process({.pid = 501, .uids = {kBob, kBob, kBob, kBob}, .state = 'D', .start_time = 7501});
    CHECK(s.drain() == DrainResult::drained);
    CHECK(s.controller.drain_reasons.back() == "leftover: 1 process of bob survived SIGKILL (D)");
}

// The scanner's rule (procfs/process.hpp, Process::zombie): a leader whose own thread
// exited shows Z while its other threads live; such a process has not died of SIGKILL.
TEST_CASE("fault catalogue: a zombie leader whose threads outlive SIGKILL is a survivor, one without them is gone") {
    Survived s;
    s.proc.add_process({.pid = 501, .uids = {kBob, kBob, kBob, kBob}, .state = 'Z', .start_time = 7501, .threads = 3});
    s.proc.add_process({.pid = 502, .uids = {kBob, kBob, kBob, kBob}, .state = 'Z', .start_time = 7502, .threads = 1});
    CHECK(s.drain() == DrainResult::drained);
    REQUIRE(s.controller.drain_reasons.size() == 1);
    CHECK(s.controller.drain_reasons[0] == "leftover: 1 process of bob survived SIGKILL (Z)");
}

TEST_CASE("drain on survivors: slurmctld down is logged as a failed request, and nothing else happens") {
    Survived s;
    s.controller.drain_error = Error::lookup(
        "asking slurmctld: leftover-query did not finish before the deadline; killed", ErrorSource::controller);
    const auto failed = s.report_of_drain();
    REQUIRE(failed);
    CHECK(failed->result == DrainResult::failed);
    CHECK(failed->text ==
          "job 12 epilog: drain of node n1 failed: asking slurmctld: leftover-query did not finish before the "
          "deadline; killed; the node stays as it is");
}
