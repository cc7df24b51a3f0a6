// SPDX-License-Identifier: GPL-2.0-or-later
// The jobs slurmd is setting up here, as the job prolog records them (steps/setup_records):
// read back as written, only this boot's and this host's nodes', believed while no step of
// the job is here and for kSetupRecordLife at most; a broken record is a lookup error.
#include "steps/setup_records.hpp"
#include "support/temp_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <fstream>
#include <string>

using namespace leftover;
using namespace leftover::steps;
using namespace std::chrono_literals;
using leftover::test::path_exists;
using leftover::test::TempDir;

namespace {

StepSockets sockets_of(const TempDir& spool, std::vector<std::string> nodes) {
    StepSockets where;
    where.spool_dirs.push_back({spool.path(), true});
    where.node_names = std::move(nodes);
    return where;
}

bool all_jobs(std::uint32_t) { return true; }

}  // namespace

TEST_CASE("setup record: read back as written and gone after its epilog removes it") {
    TempDir spool;
    const SetupRecord record{19, 41960, "lo-n1", 123456ms};
    REQUIRE(write_setup_record(spool.path(), std::nullopt, "boot-1", record).ok());
    CHECK(path_exists(spool / "leftover-setup-lo-n1.19"));
    const auto read = read_setup_records(sockets_of(spool, {"lo-n1"}), std::nullopt, "boot-1", all_jobs);
    REQUIRE(read.ok());
    REQUIRE(read->size() == 1);
    CHECK(read->front().path == spool / "leftover-setup-lo-n1.19");
    SetupRecord found = read->front();
    found.path.clear();
    CHECK(found == record);
    REQUIRE(remove_setup_record(spool.path(), "lo-n1", std::nullopt, 19).ok());
    CHECK_FALSE(path_exists(spool / "leftover-setup-lo-n1.19"));
    CHECK(read_setup_records(sockets_of(spool, {"lo-n1"}), std::nullopt, "boot-1", all_jobs)->empty());
    CHECK(remove_setup_record(spool.path(), "lo-n1", std::nullopt, 19).ok());  // none there: no error
}

TEST_CASE("setup record: one of another boot or of a node this host does not run is not read") {
    TempDir spool;
    REQUIRE(write_setup_record(spool.path(), std::nullopt, "boot-0", {20, 41961, "lo-n1", 5ms}).ok());
    REQUIRE(write_setup_record(spool.path(), std::nullopt, "boot-1", {21, 41961, "other", 5ms}).ok());
    REQUIRE(write_setup_record(spool.path(), std::nullopt, "boot-1", {22, 41961, "lo-n1", 5ms}).ok());
    const auto read = read_setup_records(sockets_of(spool, {"lo-n1"}), std::nullopt, "boot-1", all_jobs);
    REQUIRE(read.ok());
    REQUIRE(read->size() == 1);
    CHECK(read->front().job_id == 22);
    StepSockets missing;
    missing.spool_dirs.push_back({spool / "gone", false});
    missing.node_names = {"lo-n1"};
    CHECK(read_setup_records(missing, std::nullopt, "boot-1", all_jobs)->empty());
}

TEST_CASE("setup record: one that does not parse is a lookup error naming its file, unless its job is not wanted") {
    TempDir spool;
    {
        std::ofstream out(spool / "leftover-setup-lo-n1.23");
        out << "leftover-setup 1 boot-1\njob 23\nuid nobody\nnode lo-n1\nbegan 5\n";
    }
    ::chmod((spool / "leftover-setup-lo-n1.23").c_str(), 0600);
    const auto read = read_setup_records(sockets_of(spool, {"lo-n1"}), std::nullopt, "boot-1", all_jobs);
    REQUIRE_FALSE(read.ok());
    CHECK(read.error().message.find(spool / "leftover-setup-lo-n1.23") != std::string::npos);
    CHECK(read.error().message.find("do not parse") != std::string::npos);
    // A job not wanted (the ending one, one with a step here): its record is not opened.
    const auto skipped = read_setup_records(sockets_of(spool, {"lo-n1"}), std::nullopt, "boot-1",
                                            [](std::uint32_t job) { return job != 23; });
    REQUIRE(skipped.ok());
    CHECK(skipped->empty());
}

TEST_CASE("setup record: believed for its life after the job prolog, and says nothing once a step of its job is here") {
    const SetupRecord record{24, 41962, "lo-n1", 10'000ms};
    CHECK_FALSE(why_not_believed(record, 10'000ms).has_value());
    CHECK_FALSE(why_not_believed(record, 10'000ms + kSetupRecordLife).has_value());
    CHECK(why_not_believed(record, 10'001ms + kSetupRecordLife).has_value());
    CHECK(why_not_believed(record, 9'000ms).has_value());
    LocalJobState steps;
    CHECK_FALSE(has_step_here(24, steps));
    UnansweredStep unanswered;
    unanswered.job_id = 24;
    steps.unanswered.push_back(unanswered);
    CHECK(has_step_here(24, steps));
    steps.unanswered.clear();
    steps.dead.push_back({.job_id = 24, .step_id = 0, .socket_path = "x"});
    CHECK(has_step_here(24, steps));
    CHECK_FALSE(has_step_here(25, steps));
}

TEST_CASE("setup record: a spool dir that is a symlink holds its records where it points") {
    TempDir top;
    REQUIRE(::mkdir((top / "real").c_str(), 0755) == 0);
    REQUIRE(::symlink((top / "real").c_str(), (top / "spool").c_str()) == 0);
    REQUIRE(write_setup_record(top / "spool", std::nullopt, "boot-1", {26, 41963, "lo-n1", 5ms}).ok());
    CHECK(path_exists(top / "real/leftover-setup-lo-n1.26"));
    StepSockets where;
    where.spool_dirs.push_back({top / "spool", true});
    where.node_names = {"lo-n1"};
    const auto read = read_setup_records(where, std::nullopt, "boot-1", all_jobs);
    REQUIRE(read.ok());
    REQUIRE(read->size() == 1);
    CHECK(read->front().job_id == 26);
    REQUIRE(remove_setup_record(top / "spool", "lo-n1", std::nullopt, 26).ok());
    CHECK_FALSE(path_exists(top / "real/leftover-setup-lo-n1.26"));
}
