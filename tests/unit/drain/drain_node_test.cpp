// SPDX-License-Identifier: GPL-2.0-or-later
// drain_on_survivors: which sweeps drain the node, when, with what reason, and what a
// node already drained, a controller that does not answer or a record that cannot be
// believed come to.
#include "drain/drain_node.hpp"
#include "node/node_info.hpp"
#include "support/fake_controller.hpp"
#include "support/fake_proc.hpp"
#include "support/temp_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <csignal>

using namespace leftover;
using namespace leftover::drain;
using namespace std::chrono_literals;

namespace {

constexpr uid_t kBob = 41002;

// Whether an earlier sweep, a minute ago, found the same two processes alive after its SIGKILL.
enum class Earlier { recorded, none };

// A sweep that sent SIGKILL to two of bob's processes; /proc still shows both, in D.
struct Survived {
    test::FakeProc proc;
    test::TempDir spool;
    KillReport report;
    Config config;
    test::FakeController controller;
    std::chrono::milliseconds clock = 1000s;              // CLOCK_BOOTTIME of the sweep
    std::vector<std::pair<LogLevel, std::string>> notes;  // the last sweep's

    explicit Survived(Earlier earlier = Earlier::recorded) {
        ::chmod(spool.path().c_str(), 0755);
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
        if (earlier == Earlier::recorded)
            REQUIRE(write_survivor_record(
                        place(), {{501, 7501, kBob, "bob", clock - 60s}, {502, 7502, kBob, "bob", clock - 60s}})
                        .ok());
    }
    RecordPlace place() const { return {survivor_record_path(spool.path(), "n1"), std::nullopt, "boot-1"}; }
    DrainContext context(bool step_end = false) const {
        DrainContext c;
        c.label = "job 12 epilog";
        c.node_name = "n1";
        c.step_end = step_end;
        c.proc_root = proc.root();
        c.record = place();
        c.now = clock;
        return c;
    }
    std::optional<DrainReport> report_of_drain(bool step_end = false) {
        auto outcome = drain_on_survivors(config, context(step_end), report, &controller);
        notes = outcome.notes;
        return outcome.request;
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
    Survived s(Earlier::none);
    s.report.actions.pop_back();  // 502 never got its SIGKILL (deadline)
    s.proc.add_process({.pid = 501, .uids = {kBob, kBob, kBob, kBob}, .state = 'Z', .start_time = 7501});
    CHECK_FALSE(s.drain());
    s.clock += 60s;
    s.proc.add_process({.pid = 501, .uids = {kBob, kBob, kBob, kBob}, .state = 'D', .start_time = 9999});  // reused
    CHECK_FALSE(s.drain());
    s.proc.add_process({.pid = 501, .uids = {kBob, kBob, kBob, kBob}, .state = 'D', .start_time = 7501});
    CHECK_FALSE(s.drain());  // first found alive after SIGKILL now
    CHECK(s.controller.drain_reasons.empty());
    s.clock += 60s;
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

namespace {

bool has_note(const std::vector<std::pair<LogLevel, std::string>>& notes, LogLevel level, const std::string& part) {
    for (const auto& [at, text] : notes)
        if (at == level && text.find(part) != std::string::npos) return true;
    return false;
}

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

}  // namespace

// A process in uninterruptible sleep (a large sync, the exit of a huge address space,
// which any user can cause) can outlive SIGKILL for seconds and then die: Slurm drains for
// its own steps only after UnkillableStepTimeout. So does leftover, and no sweep waits for it.
TEST_CASE("fault catalogue: a survivor drains the node only when still alive UnkillableStepTimeout after SIGKILL") {
    Survived s(Earlier::none);
    CHECK_FALSE(s.drain());
    CHECK(has_note(s.notes, LogLevel::info,
                   "job 12 epilog: pid 501 (bob, D, 0 s after SIGKILL), pid 502 (bob, D, 0 s after SIGKILL) outlived "
                   "SIGKILL: node n1 is drained if one is still alive 60 s after its SIGKILL (UnkillableStepTimeout) "
                   "when a later sweep looks"));
    s.clock += 59s;
    CHECK_FALSE(s.drain());
    CHECK(has_note(s.notes, LogLevel::info, "pid 501 (bob, D, 59 s after SIGKILL)"));
    CHECK(s.controller.drain_reasons.empty());
    s.clock += 1s;
    CHECK(s.drain() == DrainResult::drained);
    CHECK(s.controller.drain_reasons == std::vector<std::string>{"leftover: 2 processes of bob survived SIGKILL (D)"});
}

TEST_CASE("fault catalogue: a survivor that dies before the bound drains nothing, later sweeps neither") {
    Survived s(Earlier::none);
    CHECK_FALSE(s.drain());
    REQUIRE(exists(s.place().path));
    // Released after 5 s: both die of the pending SIGKILL; the next sweep, past the bound, finds none.
    s.clock += 5s;
    s.proc.remove("501");
    s.proc.remove("502");
    s.clock += 60s;
    CHECK_FALSE(s.drain());
    s.report = KillReport{};  // a sweep that signalled nothing
    CHECK_FALSE(s.drain());
    CHECK(s.controller.drain_reasons.empty());
    CHECK_FALSE(exists(s.place().path));
    CHECK(s.notes.empty());
}

TEST_CASE("fault catalogue: a survivor already exiting (PF_EXITING) never drains the node") {
    Survived s;
    for (const pid_t pid : {501, 502})
        s.proc.add_process({.pid = pid,
                            .uids = {kBob, kBob, kBob, kBob},
                            .state = 'D',
                            .start_time = 7000u + pid,
                            .flags = 0x00400000 | 0x4});
    CHECK_FALSE(s.drain());
    CHECK(has_note(s.notes, LogLevel::info,
                   "job 12 epilog: pid 501 outlived SIGKILL but is exiting (PF_EXITING, state D): no reason to drain"));
    s.clock += 600s;
    s.report = KillReport{};
    CHECK_FALSE(s.drain());
    CHECK(s.controller.drain_reasons.empty());
}

TEST_CASE("drain on survivors: what an earlier sweep recorded drains the node, though this sweep did not signal it") {
    Survived s;
    s.report = KillReport{};  // e.g. scope job_user, another user's job end
    CHECK(s.drain() == DrainResult::drained);
    CHECK(s.controller.drain_reasons == std::vector<std::string>{"leftover: 2 processes of bob survived SIGKILL (D)"});
    // Its pid now another process: gone from the record, no reason to drain.
    s.controller.node_drained = false;
    s.proc.add_process({.pid = 501, .uids = {kBob, kBob, kBob, kBob}, .state = 'D', .start_time = 9501});
    s.proc.add_process({.pid = 502, .uids = {kBob, kBob, kBob, kBob}, .state = 'S', .start_time = 7502});
    CHECK(s.drain() == DrainResult::drained);
    CHECK(s.controller.drain_reasons.back() == "leftover: 1 process of bob survived SIGKILL (S)");
}

TEST_CASE("drain on survivors: the bound is the node's UnkillableStepTimeout, 60 s when slurm.conf does not say") {
    CHECK(node::NodeInfo{}.unkillable_step_timeout == 60);
    CHECK(DrainContext{}.bound == 60s);
    Survived s(Earlier::none);
    const auto at_20 = [&s] {
        DrainContext context = s.context();
        context.bound = 20s;
        return drain_on_survivors(s.config, context, s.report, &s.controller).request;
    };
    CHECK_FALSE(at_20());
    s.clock += 20s;
    const auto drained = at_20();
    REQUIRE(drained);
    CHECK(drained->result == DrainResult::drained);
}

TEST_CASE("drain on survivors: a record not to be believed drains nothing and says why, an earlier boot's is empty") {
    SUBCASE("writable by others") {
        Survived s;
        ::chmod(s.place().path.c_str(), 0666);
        CHECK_FALSE(s.drain());
        CHECK(has_note(s.notes, LogLevel::warn,
                       "job 12 epilog: no drain of node n1 requested: survivors' record " + s.place().path +
                           ": writable by group or others (mode 0666)"));
    }
    SUBCASE("owned by a user") {
        Survived s;
        REQUIRE(::chown(s.place().path.c_str(), kBob, kBob) == 0);
        CHECK_FALSE(s.drain());
        CHECK(has_note(s.notes, LogLevel::warn, "owned by uid 41002, not by root"));
    }
    SUBCASE("its directory writable by others") {
        Survived s;
        ::chmod(s.spool.path().c_str(), 01777);
        CHECK_FALSE(s.drain());
        CHECK(has_note(s.notes, LogLevel::warn, "its directory is writable by group or others"));
    }
    SUBCASE("garbled") {
        Survived s;
        s.spool.write("leftover-survivors-n1", "leftover-survivors 1 boot-1\n501 7501 41002 0 626f62 x\n", 0600);
        CHECK_FALSE(s.drain());
        CHECK(has_note(s.notes, LogLevel::warn, "line 2 does not parse"));
    }
    SUBCASE("of an earlier boot") {
        Survived s;
        s.spool.write("leftover-survivors-n1", "leftover-survivors 1 boot-0\n501 7501 41002 0 626f62\n", 0600);
        CHECK_FALSE(s.drain());
        CHECK(s.notes.size() == 1);
        CHECK(has_note(s.notes, LogLevel::info, "pid 501 (bob, D, 0 s after SIGKILL)"));
    }
    CHECK(true);
}
