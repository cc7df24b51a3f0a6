// SPDX-License-Identifier: GPL-2.0-or-later
// slurmctld's answer shared by the sweeps of one node: read back as written, believed
// only while young, about the same nodes, and never across a job the node showed since.
#include "controller/shared_answer.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace leftover;
using namespace leftover::controller;
using namespace std::chrono_literals;
using leftover::test::TempDir;

namespace {

SharedAnswer answer_at(std::chrono::milliseconds asked) {
    // Come at once: asked and answered in the same ms.
    return SharedAnswer{asked, {"lo-n1", "lo-n2"}, {30, 31}, {{30, 41950}, {32, 41951}, {33, 41950}}, asked};
}

}  // namespace

TEST_CASE("shared answer: read back as written, nothing of another boot, a broken file not believed") {
    TempDir spool;
    const RootFile file{"slurmctld's shared answer", shared_answer_path(spool.path(), "lo-n1/x"), std::nullopt};
    CHECK(file.path == spool / "leftover-answer-lo-n1_x");
    const auto none = read_shared_answer(file, "boot-1");
    REQUIRE(none.ok());
    CHECK_FALSE(none->has_value());
    const SharedAnswer written = answer_at(123456ms);
    REQUIRE(write_shared_answer(file, "boot-1", written).ok());
    const auto read = read_shared_answer(file, "boot-1");
    REQUIRE(read.ok());
    REQUIRE(read->has_value());
    CHECK(**read == written);
    const SharedAnswer no_jobs{5ms, {"lo-n1"}, {}, {}, 1700ms};
    REQUIRE(write_shared_answer(file, "boot-1", no_jobs).ok());
    CHECK(**read_shared_answer(file, "boot-1") == no_jobs);
    const auto other_boot = read_shared_answer(file, "boot-2");
    REQUIRE(other_boot.ok());
    CHECK_FALSE(other_boot->has_value());

    // An older writer's, which said no answered time, is not believed: the sweep asks.
    spool.write("leftover-answer-lo-n1_x", "leftover-answer 1 boot-1\nasked 5\nnodes lo-n1\nlocal\nend\n", 0600);
    const auto older = read_shared_answer(file, "boot-1");
    REQUIRE_FALSE(older.ok());
    CHECK(older.error().message == "slurmctld's shared answer " + file.path + ": not leftover's answer in format 2");

    std::string broken;
    const std::string head = "leftover-answer 2 boot-1\nasked 5\n";
    SUBCASE("no end line") { broken = head + "nodes lo-n1\nlocal\nanswered 9\njob 3 uid 41950\n"; }
    SUBCASE("no nodes") { broken = head + "nodes\nlocal\nanswered 9\nend\n"; }
    SUBCASE("a time that is no number") {
        broken = "leftover-answer 2 boot-1\nasked soon\nnodes lo-n1\nlocal\nanswered 9\nend\n";
    }
    SUBCASE("another file") { broken = "leftover-survivors 1 boot-1\n"; }
    SUBCASE("no answered time") { broken = head + "nodes lo-n1\nlocal\nend\n"; }
    SUBCASE("an answered time that is no number") { broken = head + "nodes lo-n1\nlocal\nanswered now\nend\n"; }
    SUBCASE("answered before it was asked") { broken = head + "nodes lo-n1\nlocal\nanswered 4\nend\n"; }
    spool.write("leftover-answer-lo-n1_x", broken, 0600);
    const auto bad = read_shared_answer(file, "boot-1");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().message.find("slurmctld's shared answer " + file.path + ": ") == 0);
}

TEST_CASE("shared answer: taken if asked since the sweep began, young, about its nodes, knowing its jobs") {
    const SharedAnswer answer = answer_at(10000ms);
    const std::vector<std::string> nodes = {"lo-n1", "lo-n2"};
    // A sweep that began at 9900 ms and asks at `now` with the node showing `local`.
    const auto sweep = [&](std::chrono::milliseconds now, std::set<std::uint64_t> local = {}) {
        return SharingSweep{9900ms, now, nodes, std::move(local)};
    };
    CHECK_FALSE(why_not_shared(answer, sweep(10000ms)));
    CHECK_FALSE(why_not_shared(answer, sweep(10000ms + kSharedAnswerLife, {30, 31})));
    // A job the node showed when it was asked, or that slurmctld listed, is no job start.
    CHECK_FALSE(why_not_shared(answer, sweep(10500ms, {31, 32})));

    const auto old = why_not_shared(answer, sweep(10001ms + kSharedAnswerLife));
    REQUIRE(old);
    CHECK(*old == "came 1001 ms ago, not within 1000 ms");
    CHECK(why_not_shared(answer, sweep(9999ms)));  // from the future: another clock
    const auto before = why_not_shared(answer, SharingSweep{10200ms, 10300ms, nodes, {}});
    REQUIRE(before);
    CHECK(*before == "asked 200 ms before this sweep began");
    CHECK_FALSE(why_not_shared(answer, SharingSweep{10002ms, 10300ms, nodes, {}}));  // the clocks' 2 ms
    const auto other_nodes = why_not_shared(answer, SharingSweep{9900ms, 10100ms, {"lo-n1"}, {}});
    REQUIRE(other_nodes);
    CHECK(*other_nodes == "about nodes lo-n1,lo-n2, not lo-n1");
    const auto started = why_not_shared(answer, sweep(10100ms, {30, 34}));
    REQUIRE(started);
    CHECK(*started == "job 34 showed here since (a job start the answer does not know)");
}

TEST_CASE("shared answer: its life counts from when it came, so that a question slow on a loaded node is shared") {
    // Asked at 10 s, come 1.5 s later: young until 12.5 s.
    SharedAnswer answer = answer_at(10000ms);
    answer.answered = 11500ms;
    const SharingSweep at_12_5{9900ms, 11500ms + kSharedAnswerLife, {"lo-n1", "lo-n2"}, {}};
    CHECK_FALSE(why_not_shared(answer, at_12_5));
    const SharingSweep later{9900ms, 11501ms + kSharedAnswerLife, {"lo-n1", "lo-n2"}, {}};
    const auto old = why_not_shared(answer, later);
    REQUIRE(old);
    CHECK(*old == "came 1001 ms ago, not within 1000 ms");
    // Its question still had to begin after the sweep did.
    const auto before = why_not_shared(answer, SharingSweep{10500ms, 11600ms, {"lo-n1", "lo-n2"}, {}});
    REQUIRE(before);
    CHECK(*before == "asked 500 ms before this sweep began");
}

TEST_CASE("shared answer: each sweep leaves its own ending job out, and its user unless another job runs") {
    const SharedAnswer answer = answer_at(0ms);
    const steps::LiveWork all = live_work_of(answer, std::nullopt);
    CHECK(all.uids == std::set<uid_t>{41950, 41951});
    CHECK(all.job_ids == std::set<std::uint64_t>{30, 32, 33});
    const steps::LiveWork without_32 = live_work_of(answer, 32);
    CHECK(without_32.uids == std::set<uid_t>{41950});
    CHECK(without_32.job_users.count(32) == 0);
    const steps::LiveWork without_30 = live_work_of(answer, 30);
    CHECK(without_30.uids == std::set<uid_t>{41950, 41951});  // job 33 is 41950's too
    CHECK(without_30.job_ids == std::set<std::uint64_t>{32, 33});
}
