// SPDX-License-Identifier: GPL-2.0-or-later
// read_local_steps against fake slurmstepd servers (support/fake_stepd.hpp) in a
// temporary spool directory. The numbers are written out here and there on purpose,
// independently of stepd_protocol.hpp, so that a wrong constant on either side makes
// these tests fail.
#include "steps/local_steps.hpp"
#include "support/fake_stepd.hpp"
#include "support/unix_sockets.hpp"
#include "util/unique_fd.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using leftover::ErrorKind;
using leftover::UniqueFd;
using leftover::steps::LocalJobState;
using leftover::steps::parse_any_step_socket_name;
using leftover::steps::parse_step_socket_name;
using leftover::steps::read_local_steps;
using leftover::steps::StepdProtocol;
using leftover::steps::StepdState;
using leftover::steps::StepSocketCalls;
using leftover::steps::StepSocketName;
using leftover::steps::StepSockets;
using leftover::test::Behaviour;
using leftover::test::bind_unix;
using leftover::test::FakeStepd;
using leftover::test::k2205ProtocolVersion;
using leftover::test::k2511ProtocolVersion;
using leftover::test::kMinProtocolVersion;
using leftover::test::kRequestDaemonPid;
using leftover::test::kRequestSluid;
using leftover::test::kRequestState;
using leftover::test::kRequestStepUid;
using leftover::test::make_stale_socket;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// From src/common/slurm_protocol_common.h and src/common/stepd_api.h of each release
// (slurm-22-05-8-1, -23-02-8-1, -23-11-11-1, -24-05-8-1, -24-11-5-1, -25-05-8-1,
// -25-11-7-1, -26-05-3-1).
constexpr std::int32_t k2302ProtocolVersion = 39 << 8;
constexpr std::int32_t k2311ProtocolVersion = 40 << 8;
constexpr std::int32_t k2411ProtocolVersion = 42 << 8;
constexpr std::int32_t k2605ProtocolVersion = 45 << 8;
constexpr std::int32_t kStateRunning = 2;        // SLURMSTEPD_STEP_RUNNING
constexpr std::int32_t kStateEnding = 3;         // SLURMSTEPD_STEP_ENDING before 23.11
constexpr std::int32_t kStateCancelled2311 = 3;  // SLURMSTEPD_STEP_CANCELLED from 23.11
constexpr std::int32_t kStateEnding2311 = 4;     // SLURMSTEPD_STEP_ENDING from 23.11
// The client rows the tests play (a 22.05 build is what this machine builds).
constexpr StepdProtocol k2205Client{22, 5, k2205ProtocolVersion, kMinProtocolVersion};
constexpr StepdProtocol k2411Client{24, 11, k2411ProtocolVersion, k2302ProtocolVersion};
constexpr StepdProtocol k2605Client{26, 5, k2605ProtocolVersion, k2411ProtocolVersion};
constexpr std::uint32_t kBatchStep = 0xfffffffb;   // SLURM_BATCH_SCRIPT
constexpr std::uint32_t kExternStep = 0xfffffffc;  // SLURM_EXTERN_CONT

// A scratch spool directory, removed with everything in it.
class TempDir {
public:
    TempDir() {
        char templ[] = "/tmp/lo-steps-XXXXXX";  // short: unix socket paths are limited
        if (!::mkdtemp(templ)) throw std::runtime_error("mkdtemp failed");
        path_ = templ;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::string& path() const { return path_; }
    std::string file(const std::string& name) const { return path_ + "/" + name; }

private:
    std::string path_;
};

void make_regular_file(const std::string& path) { std::ofstream(path) << "not a socket\n"; }

Clock::time_point soon() { return Clock::now() + 5s; }

}  // namespace

TEST_CASE("local steps: step socket names: <node>_<job>.<step> with an optional .<component>, of this node only") {
    CHECK(parse_step_socket_name("n1_12.0", "n1") == StepSocketName{12, 0, std::nullopt});
    CHECK(parse_step_socket_name("n1_12.4294967292", "n1") == StepSocketName{12, kExternStep, std::nullopt});
    CHECK(parse_step_socket_name("n1_7.3.1", "n1") == StepSocketName{7, 3, 1u});
    CHECK(parse_step_socket_name("n1_4294967295.0", "n1") == StepSocketName{4294967295u, 0, std::nullopt});

    CHECK_FALSE(parse_step_socket_name("n2_12.0", "n1"));
    CHECK_FALSE(parse_step_socket_name("n10_12.0", "n1"));
    CHECK_FALSE(parse_step_socket_name("n1_12.0", "n10"));
    CHECK_FALSE(parse_step_socket_name("n1_12.0", ""));
    CHECK_FALSE(parse_step_socket_name("n1_12", "n1"));
    CHECK_FALSE(parse_step_socket_name("n1_12.", "n1"));
    CHECK_FALSE(parse_step_socket_name("n1_.0", "n1"));
    CHECK_FALSE(parse_step_socket_name("n1_12.0.", "n1"));
    CHECK_FALSE(parse_step_socket_name("n1_12.0.1.2", "n1"));
    CHECK_FALSE(parse_step_socket_name("n1_4294967296.0", "n1"));
    CHECK_FALSE(parse_step_socket_name("n1_-1.0", "n1"));
    CHECK_FALSE(parse_step_socket_name("n1_+1.0", "n1"));
    CHECK_FALSE(parse_step_socket_name("n1_1 .0", "n1"));
    CHECK_FALSE(parse_step_socket_name("n1_12.0x", "n1"));
    CHECK_FALSE(parse_step_socket_name("n1_", "n1"));
    CHECK_FALSE(parse_step_socket_name("cred_state", "n1"));
}

TEST_CASE("local steps: a live step: uid and state over the 22.05 protocol, one connection") {
    TempDir spool;
    FakeStepd step(spool.file("n1_42.0"), 1234, kStateRunning);

    auto result = read_local_steps(spool.path(), "n1", soon(), k2205Client);
    REQUIRE_MESSAGE(result.ok(), (result.ok() ? "" : result.error().message));
    REQUIRE(result->live.size() == 1);
    CHECK(result->dead.empty());
    const auto& live = result->live[0];
    CHECK(live.job_id == 42);
    CHECK(live.step_id == 0);
    CHECK_FALSE(live.het_component.has_value());
    CHECK(live.uid == 1234);
    CHECK(live.state == StepdState::running);
    CHECK(live.raw_state == kStateRunning);
    CHECK(live.stepd_version == k2205ProtocolVersion);
    CHECK(live.socket_path == spool.file("n1_42.0"));

    CHECK(step.client_version() == k2205ProtocolVersion);
    CHECK(step.connections() == 1);
    const auto requests = step.requests();
    CHECK(requests.size() == 3);
    CHECK(std::count(requests.begin(), requests.end(), kRequestStepUid) == 1);
    CHECK(std::count(requests.begin(), requests.end(), kRequestState) == 1);
    CHECK(std::count(requests.begin(), requests.end(), kRequestDaemonPid) == 1);
    CHECK(live.stepd_pid == std::optional<pid_t>{::getpid()});
}

TEST_CASE("local steps: an ending step is flagged ending, batch and extern steps are listed") {
    TempDir spool;
    FakeStepd batch(spool.file("n1_8." + std::to_string(kBatchStep)), 1001, kStateEnding);
    FakeStepd ext(spool.file("n1_8." + std::to_string(kExternStep)), 1001, kStateRunning);

    auto result = read_local_steps(spool.path(), "n1", soon(), k2205Client);
    REQUIRE_MESSAGE(result.ok(), (result.ok() ? "" : result.error().message));
    REQUIRE(result->live.size() == 2);
    // sorted by job, step: batch (0xfffffffb) before extern (0xfffffffc)
    CHECK(result->live[0].step_id == kBatchStep);
    CHECK(result->live[0].raw_state == kStateEnding);
    CHECK(result->live[0].state == StepdState::ending);
    CHECK(result->live[1].step_id == kExternStep);
    CHECK(result->live[1].raw_state == kStateRunning);
    CHECK(result->live[1].state == StepdState::running);
}

TEST_CASE("local steps: a heterogeneous job component socket") {
    TempDir spool;
    FakeStepd step(spool.file("n1_77.2.1"), 500, kStateRunning);

    auto result = read_local_steps(spool.path(), "n1", soon(), k2205Client);
    REQUIRE_MESSAGE(result.ok(), (result.ok() ? "" : result.error().message));
    REQUIRE(result->live.size() == 1);
    CHECK(result->live[0].job_id == 77);
    CHECK(result->live[0].step_id == 2);
    REQUIRE(result->live[0].het_component.has_value());
    CHECK(*result->live[0].het_component == 1);
    CHECK(result->live[0].uid == 500);
}

TEST_CASE("local steps: non-socket files and names that are no step socket's are ignored") {
    TempDir spool;
    FakeStepd mine(spool.file("n1_5.0"), 600, kStateRunning);
    make_stale_socket(spool.file("n1_9.0.1.2"));  // not a step socket name
    make_stale_socket(spool.file("_9.0"));        // no node name
    make_regular_file(spool.file("n1_11.0"));     // right name, not a socket
    make_regular_file(spool.file("n2_11.0"));     // another node's name, not a socket
    REQUIRE(::mkdir(spool.file("n1_12.0").c_str(), 0700) == 0);
    REQUIRE(::symlink(spool.file("n1_5.0").c_str(), spool.file("n1_13.0").c_str()) == 0);
    make_regular_file(spool.file("cred_state"));
    make_regular_file(spool.file("hwloc_topo_5.0.xml"));
    REQUIRE(::mkdir(spool.file("job00005").c_str(), 0700) == 0);

    auto result = read_local_steps(spool.path(), "n1", soon(), k2205Client);
    REQUIRE_MESSAGE(result.ok(), (result.ok() ? "" : result.error().message));
    REQUIRE(result->live.size() == 1);
    CHECK(result->live[0].job_id == 5);
    CHECK(result->live[0].uid == 600);
    CHECK(result->dead.empty());
    CHECK(mine.connections() == 1);
}

TEST_CASE("local steps: step socket names of any node: the node is what comes before the last underscore") {
    const auto parsed = parse_any_step_socket_name("rack_1_7.3.1");
    REQUIRE(parsed);
    CHECK(parsed->node == "rack_1");
    CHECK(parsed->step == StepSocketName{7, 3, 1u});
    CHECK(parse_any_step_socket_name("n10_12.0")->node == "n10");
    CHECK_FALSE(parse_any_step_socket_name("_12.0"));
    CHECK_FALSE(parse_any_step_socket_name("cred_state"));
    CHECK_FALSE(parse_any_step_socket_name("hwloc_topo_5.0.xml"));
    CHECK_FALSE(parse_any_step_socket_name("n1_12"));
}

TEST_CASE("fault catalogue: a socket of another known node counts as live work") {
    TempDir spool;
    FakeStepd mine(spool.file("n1_5.0"), 600, kStateRunning);
    FakeStepd other(spool.file("n2_6.0"), 700, kStateRunning);
    FakeStepd longer_name(spool.file("n10_7.0"), 800, kStateRunning);

    const StepSockets where{{{spool.path(), true}}, {"n1", "n2", "n10"}};
    auto result = read_local_steps(where, soon(), k2205Client);
    REQUIRE_MESSAGE(result.ok(), (result.ok() ? "" : result.error().message));
    REQUIRE(result->live.size() == 3);
    CHECK(result->live[0].uid == 600);
    CHECK(result->live[1].uid == 700);
    CHECK(result->live[1].socket_path == spool.file("n2_6.0"));
    CHECK(result->live[2].uid == 800);
    CHECK(other.connections() == 1);
}

TEST_CASE("fault catalogue: a socket of an unknown node in the spool dir is a lookup error") {
    TempDir spool;
    FakeStepd mine(spool.file("n1_5.0"), 600, kStateRunning);
    std::optional<FakeStepd> other;
    SUBCASE("a live one") { other.emplace(spool.file("n2_6.0"), 700, kStateRunning); }
    SUBCASE("a stale one") { make_stale_socket(spool.file("n2_6.0")); }

    auto result = read_local_steps(spool.path(), "n1", soon(), k2205Client);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().kind == ErrorKind::lookup);
    CHECK(result.error().message ==
          "slurmstepd socket " + spool.file("n2_6.0") +
              " is of node n2, which is none of the nodes known to run on this host (n1): the steps of its "
              "slurmd would go unseen (if no slurmd runs here as n2, the socket is stale: remove it)");
    CHECK(mine.connections() == 0);  // nothing asked: the evaluation stops at the listing
}

TEST_CASE("fault catalogue: two spool dirs (%n) are both read, each directory once") {
    TempDir top;
    const std::string dir1 = top.file("n1"), dir2 = top.file("n2");
    REQUIRE(::mkdir(dir1.c_str(), 0755) == 0);
    REQUIRE(::mkdir(dir2.c_str(), 0755) == 0);
    REQUIRE(::symlink(dir2.c_str(), top.file("alias").c_str()) == 0);
    FakeStepd first(dir1 + "/n1_5.0", 600, kStateRunning);
    FakeStepd second(dir2 + "/n2_6.0", 700, kStateRunning);

    const StepSockets where{{{dir1, true}, {dir2, true}, {top.file("alias"), true}, {top.file("n3"), false}},
                            {"n1", "n2", "n3"}};
    auto result = read_local_steps(where, soon(), k2205Client);
    REQUIRE_MESSAGE(result.ok(), (result.ok() ? "" : result.error().message));
    REQUIRE(result->live.size() == 2);
    CHECK(result->live[0].socket_path == dir1 + "/n1_5.0");
    CHECK(result->live[1].socket_path == dir2 + "/n2_6.0");
    CHECK(second.connections() == 1);

    // The spool dir of a node that runs must exist; one only slurm.conf names may not.
    const StepSockets missing{{{dir1, true}, {top.file("n3"), true}}, {"n1", "n3"}};
    auto error = read_local_steps(missing, soon(), k2205Client);
    REQUIRE_FALSE(error.ok());
    CHECK(error.error().message.find(top.file("n3") + ": cannot list it") != std::string::npos);
}

TEST_CASE("local steps: a stale socket (nobody listens: ECONNREFUSED) is a dead step") {
    TempDir spool;
    make_stale_socket(spool.file("n1_3.4294967292"));
    FakeStepd live(spool.file("n1_4.0"), 900, kStateRunning);

    auto result = read_local_steps(spool.path(), "n1", soon(), k2205Client);
    REQUIRE_MESSAGE(result.ok(), (result.ok() ? "" : result.error().message));
    REQUIRE(result->dead.size() == 1);
    CHECK(result->dead[0].job_id == 3);
    CHECK(result->dead[0].step_id == kExternStep);
    CHECK(result->dead[0].socket_path == spool.file("n1_3.4294967292"));
    REQUIRE(result->live.size() == 1);
    CHECK(result->live[0].job_id == 4);
}

TEST_CASE("local steps: an empty spool directory has no steps") {
    TempDir spool;
    auto result = read_local_steps(spool.path(), "n1", soon(), k2205Client);
    REQUIRE(result.ok());
    CHECK(result->live.empty());
    CHECK(result->dead.empty());
}

TEST_CASE("local steps: a missing or unreadable spool directory is a lookup error, never 'no jobs'") {
    TempDir spool;
    const std::string missing = spool.file("nope");
    auto result = read_local_steps(missing, "n1", soon());
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().kind == ErrorKind::lookup);
    CHECK(result.error().message.find(missing) != std::string::npos);

    make_regular_file(spool.file("file"));
    auto not_dir = read_local_steps(spool.file("file"), "n1", soon());
    REQUIRE_FALSE(not_dir.ok());
    CHECK(not_dir.error().kind == ErrorKind::lookup);
}

TEST_CASE("local steps: a spool dir writable by group or others, or another user's, is a lookup error naming it") {
    TempDir spool;
    // What a user would plant: a socket that says its job is theirs and running.
    FakeStepd planted(spool.file("n1_60.0"), 41001, kStateRunning);
    const auto refused = [&](const std::string& why) {
        auto result = read_local_steps(spool.path(), "n1", soon(), k2205Client);
        REQUIRE_FALSE(result.ok());
        CHECK(result.error().kind == ErrorKind::lookup);
        CHECK(result.error().message.find("slurmd spool directory " + spool.path()) != std::string::npos);
        CHECK_MESSAGE(result.error().message.find(why) != std::string::npos, result.error().message);
    };
    SUBCASE("writable by others, even with the sticky bit") {
        REQUIRE(::chmod(spool.path().c_str(), 01777) == 0);
        refused("writable by others (mode 1777)");
    }
    SUBCASE("writable by its group") {
        REQUIRE(::chmod(spool.path().c_str(), 0775) == 0);
        refused("writable by its group (mode 0775)");
    }
    SUBCASE("owned by a user, not root or SlurmdUser") {
        REQUIRE(::chmod(spool.path().c_str(), 0755) == 0);
        REQUIRE(::chown(spool.path().c_str(), 41002, 0) == 0);
        refused("owned by uid 41002, not by root or SlurmdUser");
    }
    SUBCASE("owned by SlurmdUser, 0755: believed") {
        REQUIRE(::chmod(spool.path().c_str(), 0755) == 0);
        REQUIRE(::chown(spool.path().c_str(), 41003, 0) == 0);
        StepSockets where{{{spool.path(), true}}, {"n1"}};
        where.spool_owners.insert(41003);
        auto result = read_local_steps(where, soon(), k2205Client);
        REQUIRE(result.ok());
        REQUIRE(result->live.size() == 1);
        CHECK(result->live.front().job_id == 60);
    }
}

TEST_CASE("local steps: a slurmstepd that accepts but never answers: lookup error at the deadline") {
    TempDir spool;
    FakeStepd step(spool.file("n1_20.0"), 1000, kStateRunning, Behaviour::silent);

    const auto start = Clock::now();
    const auto deadline = start + 300ms;
    auto pending =
        std::async(std::launch::async, [&] { return read_local_steps(spool.path(), "n1", deadline, k2205Client); });
    // Generous hang bound only: a reader that ignores the deadline fails here, and
    // step.stop() below then closes the connection so the test cannot hang.
    const bool returned = pending.wait_for(20s) == std::future_status::ready;
    step.stop();
    CHECK_MESSAGE(returned, "read_local_steps did not honour its deadline");
    auto result = pending.get();
    const auto elapsed = Clock::now() - start;
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().kind == ErrorKind::lookup);
    CHECK(result.error().message.find(spool.file("n1_20.0")) != std::string::npos);
    CHECK(result.error().message.find("timed out") != std::string::npos);
    CHECK(elapsed >= 300ms);
}

TEST_CASE("local steps: a listen backlog a client holds full is given up on after a short retry, not at the deadline") {
    TempDir spool;
    FakeStepd good(spool.file("n1_40.0"), 10, kStateRunning);
    leftover::test::BlockedListener blocked(spool.file("n1_41.0"));
    // The deadline is far off: waiting for it would leave nothing of the evaluation's time.
    auto pending = std::async(std::launch::async,
                              [&] { return read_local_steps(spool.path(), "n1", Clock::now() + 120s, k2205Client); });
    const bool returned = pending.wait_for(60s) == std::future_status::ready;  // generous hang bound only
    REQUIRE_MESSAGE(returned, "a full backlog was waited on until the deadline");
    auto result = pending.get();
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().message ==
          "slurmstepd socket " + spool.file("n1_41.0") + ": timed out connecting (listen backlog full)");
    auto asked =
        leftover::steps::ask_local_steps(StepSockets{{{spool.path(), true}}, {"n1"}}, Clock::now() + 120s, k2205Client);
    REQUIRE(asked.ok());
    REQUIRE(asked->live.size() == 1);
    CHECK(asked->live.front().job_id == 40);
    REQUIRE(asked->unanswered.size() == 1);
    CHECK(asked->unanswered.front().job_id == 41);
    CHECK(asked->unanswered.front().socket_path == spool.file("n1_41.0"));
    CHECK(asked->unanswered.front().error == "timed out connecting (listen backlog full)");
}

TEST_CASE("local steps: an unanswered socket's job user is told by another step of the job or its batch script") {
    TempDir spool;  // root's, mode 0700 (mkdtemp)
    const StepSockets where{{{spool.path(), true}}, {"n1"}};
    const auto ask = [&] {
        auto asked = leftover::steps::ask_local_steps(where, soon(), k2205Client);
        REQUIRE(asked.ok());
        REQUIRE(asked->unanswered.size() == 1);
        return asked->unanswered.front();
    };
    leftover::test::BlockedListener blocked(spool.file("n1_41.0"));
    // Nothing tells: the socket file is no help (slurmstepd makes it as root).
    CHECK(ask().job_uid == std::nullopt);
    SUBCASE("another step of job 41 answers") {
        FakeStepd other_job(spool.file("n1_40.0"), 41240, kStateRunning);
        CHECK(ask().job_uid == std::nullopt);  // another job's answer tells nothing of job 41
        FakeStepd extern_step(spool.file("n1_41.4294967292"), 41241, kStateRunning);
        const auto told = ask();
        CHECK(told.job_uid == 41241u);
        CHECK(told.job_uid_from == "its step 41.extern answered");
    }
    SUBCASE("job 41's batch script, chowned to its user") {
        const std::string job_dir = spool.file("job00041");
        REQUIRE(::mkdir(job_dir.c_str(), 0750) == 0);
        REQUIRE(::chmod(job_dir.c_str(), 0750) == 0);
        const std::string script = job_dir + "/slurm_script";
        make_regular_file(script);
        CHECK(ask().job_uid == std::nullopt);  // still root's: not chowned yet
        REQUIRE(::chown(script.c_str(), 41241, 0) == 0);
        auto told = ask();
        CHECK(told.job_uid == 41241u);
        CHECK(told.job_uid_from == "its batch script " + script);
        // A directory others could write to, or a symlink for the script, tells nothing.
        REQUIRE(::chmod(job_dir.c_str(), 0770) == 0);
        CHECK(ask().job_uid == std::nullopt);
        REQUIRE(::chmod(job_dir.c_str(), 0750) == 0);
        REQUIRE(::chown(job_dir.c_str(), 41241, 0) == 0);
        CHECK(ask().job_uid == std::nullopt);
        REQUIRE(::chown(job_dir.c_str(), 0, 0) == 0);
        REQUIRE(::rename(script.c_str(), (job_dir + "/real").c_str()) == 0);
        REQUIRE(::symlink("real", script.c_str()) == 0);
        CHECK(ask().job_uid == std::nullopt);
        // Another job's script tells nothing of job 41.
        REQUIRE(::mkdir(spool.file("job00040").c_str(), 0750) == 0);
        make_regular_file(spool.file("job00040/slurm_script"));
        REQUIRE(::chown(spool.file("job00040/slurm_script").c_str(), 41240, 0) == 0);
        CHECK(ask().job_uid == std::nullopt);
    }
}

TEST_CASE("local steps: a short reply is a lookup error naming the socket") {
    TempDir spool;
    FakeStepd step(spool.file("n1_21.0"), 0x01020304, kStateRunning, Behaviour::short_uid_reply);

    auto result = read_local_steps(spool.path(), "n1", soon(), k2205Client);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().kind == ErrorKind::lookup);
    CHECK(result.error().message.find(spool.file("n1_21.0")) != std::string::npos);
    CHECK(result.error().message.find("short read") != std::string::npos);
}

TEST_CASE("local steps: a connection closed before the handshake reply is a lookup error") {
    TempDir spool;
    FakeStepd step(spool.file("n1_22.0"), 1, kStateRunning, Behaviour::close_at_once);

    auto result = read_local_steps(spool.path(), "n1", soon(), k2205Client);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().kind == ErrorKind::lookup);
    CHECK(result.error().message.find(spool.file("n1_22.0")) != std::string::npos);
}

namespace {

// A slurmstepd whose step ends under a client's question, as req.c's
// _msg_socket_readable() ends it: the listening socket is closed with the client's
// connection still waiting in its backlog (which resets it), then unlinked.
class EndingListener {
public:
    explicit EndingListener(const std::string& path) : path_(path), listener_(leftover::test::bind_unix(path)) {
        REQUIRE(::listen(listener_.get(), 4) == 0);
        thread_ = std::thread([this] {
            pollfd pfd{listener_.get(), POLLIN, 0};
            // A connection waits in the backlog; give the client its moment to send.
            if (::poll(&pfd, 1, 5000) == 1) ::poll(nullptr, 0, 50);
            listener_.reset();
            ::unlink(path_.c_str());
        });
    }
    ~EndingListener() { thread_.join(); }
    EndingListener(const EndingListener&) = delete;
    EndingListener& operator=(const EndingListener&) = delete;

private:
    std::string path_;
    UniqueFd listener_;
    std::thread thread_;
};

}  // namespace

TEST_CASE("local steps: a step ending under the question (handshake reset, then nobody listens) is a dead step") {
    TempDir spool;
    EndingListener ending(spool.file("n1_23.4294967292"));
    FakeStepd live(spool.file("n1_24.0"), 900, kStateRunning);

    auto result = read_local_steps(spool.path(), "n1", soon(), k2205Client);
    REQUIRE_MESSAGE(result.ok(), (result.ok() ? "" : result.error().message));
    REQUIRE(result->dead.size() == 1);
    CHECK(result->dead[0].job_id == 23);
    CHECK(result->dead[0].step_id == kExternStep);
    REQUIRE(result->live.size() == 1);
    CHECK(result->live[0].job_id == 24);
}

namespace {

// A step socket whose listener is acted on in the gap between the client's connect and
// its first send, through the seam (local_steps.hpp's StepSocketCalls) given to the read.
class GapListener : public StepSocketCalls {
public:
    enum class Act { close_listener, close_and_unlink, drop_connection };
    GapListener(const std::string& path, Act act) : path_(path), act_(act), listener_(bind_unix(path)) {
        REQUIRE(::listen(listener_.get(), 4) == 0);
    }
    GapListener(const GapListener&) = delete;
    GapListener& operator=(const GapListener&) = delete;
    int gaps() const { return gaps_; }

    int connect(int fd, const sockaddr_un& address) override {
        const int rc = StepSocketCalls::connect(fd, address);
        if (rc == 0 && path_ == address.sun_path) act();
        return rc;
    }

private:
    void act() {
        ++gaps_;
        if (act_ == Act::drop_connection) {
            UniqueFd accepted(::accept(listener_.get(), nullptr, nullptr));  // still listening
            return;
        }
        listener_.reset();  // Linux resets the connection waiting in the backlog
        if (act_ == Act::close_and_unlink) ::unlink(path_.c_str());
    }
    std::string path_;
    Act act_;
    UniqueFd listener_;
    int gaps_ = 0;
};

}  // namespace

TEST_CASE("local steps: a step ending between connect and handshake (EPIPE sending the version) is a dead step") {
    for (const auto act : {GapListener::Act::close_listener, GapListener::Act::close_and_unlink}) {
        CAPTURE(static_cast<int>(act));
        TempDir spool;
        FakeStepd live(spool.file("n1_26.0"), 900, kStateRunning);
        GapListener ending(spool.file("n1_27.4294967291"), act);

        auto result = read_local_steps(spool.path(), "n1", soon(), k2205Client, ending);
        REQUIRE_MESSAGE(result.ok(), (result.ok() ? "" : result.error().message));
        CHECK(ending.gaps() == 1);
        REQUIRE(result->dead.size() == 1);
        CHECK(result->dead[0].job_id == 27);
        REQUIRE(result->live.size() == 1);
        CHECK(result->live[0].job_id == 26);
    }
}

TEST_CASE("local steps: a stepd that drops a connection before the handshake but still listens stays a lookup error") {
    TempDir spool;
    GapListener dropping(spool.file("n1_28.0"), GapListener::Act::drop_connection);

    auto result = read_local_steps(spool.path(), "n1", soon(), k2205Client, dropping);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().kind == ErrorKind::lookup);
    CHECK(result.error().message ==
          "slurmstepd socket " + spool.file("n1_28.0") + ": sending the protocol version: Broken pipe");
    CHECK(dropping.gaps() == 2);  // asked twice: the second connect was taken again
}

TEST_CASE("local steps: a stepd that drops the handshake but still listens stays a lookup error") {
    TempDir spool;
    FakeStepd step(spool.file("n1_25.0"), 1, kStateRunning, Behaviour::close_at_once);

    auto result = read_local_steps(spool.path(), "n1", soon(), k2205Client);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().kind == ErrorKind::lookup);
    CHECK(result.error().message.find(spool.file("n1_25.0")) != std::string::npos);
    CHECK(step.connections() >= 1);
}

TEST_CASE("local steps: a refused handshake or an impossible state is a lookup error") {
    SUBCASE("handshake answered with SLURM_ERROR") {
        TempDir spool;
        FakeStepd step(spool.file("n1_23.0"), 1, kStateRunning, Behaviour::refuse_version);
        auto result = read_local_steps(spool.path(), "n1", soon(), k2205Client);
        REQUIRE_FALSE(result.ok());
        CHECK(result.error().kind == ErrorKind::lookup);
        CHECK(result.error().message.find("refused") != std::string::npos);
    }
    SUBCASE("state outside slurmstepd_state_t") {
        TempDir spool;
        FakeStepd step(spool.file("n1_24.0"), 1, 7);
        auto result = read_local_steps(spool.path(), "n1", soon(), k2205Client);
        REQUIRE_FALSE(result.ok());
        CHECK(result.error().kind == ErrorKind::lookup);
        CHECK(result.error().message.find("state 7") != std::string::npos);
    }
}

TEST_CASE("local steps: one unanswerable step fails the whole lookup") {
    TempDir spool;
    FakeStepd good(spool.file("n1_30.0"), 10, kStateRunning);
    FakeStepd bad(spool.file("n1_31.0"), 11, kStateRunning, Behaviour::close_at_once);

    auto result = read_local_steps(spool.path(), "n1", soon(), k2205Client);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().message.find(spool.file("n1_31.0")) != std::string::npos);
}

TEST_CASE("local steps: every release in the table: the build's handshake and ENDING as that release numbers it") {
    // A stepd of each release, asked by a client of the same release.
    for (const StepdProtocol& row : leftover::steps::kStepdProtocols) {
        CAPTURE(row.major);
        CAPTURE(row.minor);
        const bool cancelled_inserted = row.version >= k2311ProtocolVersion;
        TempDir spool;
        FakeStepd ending(spool.file("n1_50.0"), 2001, cancelled_inserted ? kStateEnding2311 : kStateEnding,
                         Behaviour::answer, row.version, row.oldest_stepd);
        FakeStepd running(spool.file("n1_51.0"), 2002, kStateRunning, Behaviour::answer, row.version, row.oldest_stepd);
        auto result = read_local_steps(spool.path(), "n1", soon(), row);
        REQUIRE_MESSAGE(result.ok(), (result.ok() ? "" : result.error().message));
        REQUIRE(result->live.size() == 2);
        CHECK(result->live[0].state == StepdState::ending);
        CHECK(result->live[0].stepd_version == row.version);
        CHECK(result->live[1].state == StepdState::running);
        CHECK(ending.client_version() == row.version);
        // Every release tells its stepd's pid.
        CHECK(result->live[0].stepd_pid == std::optional<pid_t>{::getpid()});
        // 25.11 and later also tell the job's SLUID; older stepds are never asked.
        const auto requests = ending.requests();
        const bool asked_sluid = std::count(requests.begin(), requests.end(), kRequestSluid) == 1;
        CHECK(asked_sluid == (row.version >= k2511ProtocolVersion));
        CHECK(result->live[0].sluid.has_value() == (row.version >= k2511ProtocolVersion));
        if (result->live[0].sluid) CHECK(*result->live[0].sluid == 0x0123456789abcdefULL);
    }
}

TEST_CASE("local steps: from 23.11 on, state 3 is CANCELLED (live) and 4 is ENDING") {
    TempDir spool;
    FakeStepd cancelled(spool.file("n1_60.0"), 3001, kStateCancelled2311, Behaviour::answer, k2411ProtocolVersion,
                        k2302ProtocolVersion);
    FakeStepd ending(spool.file("n1_61.0"), 3002, kStateEnding2311, Behaviour::answer, k2411ProtocolVersion,
                     k2302ProtocolVersion);
    auto result = read_local_steps(spool.path(), "n1", soon(), k2411Client);
    REQUIRE_MESSAGE(result.ok(), (result.ok() ? "" : result.error().message));
    REQUIRE(result->live.size() == 2);
    CHECK(result->live[0].state == StepdState::cancelled);
    CHECK(result->live[0].raw_state == 3);
    CHECK(result->live[1].state == StepdState::ending);
    CHECK(result->live[1].raw_state == 4);
}

TEST_CASE("local steps: upgrade window: a 24.11 build reads a still-running 23.02 stepd by 23.02's numbering") {
    TempDir spool;
    // Started by the old slurmd: ENDING is 3 there; a new 24.11 stepd beside it says 4.
    FakeStepd old_ending(spool.file("n1_70.0"), 4001, kStateEnding, Behaviour::answer, k2302ProtocolVersion,
                         kMinProtocolVersion);
    FakeStepd new_ending(spool.file("n1_71.0"), 4002, kStateEnding2311, Behaviour::answer, k2411ProtocolVersion,
                         k2302ProtocolVersion);
    FakeStepd mid_cancelled(spool.file("n1_72.0"), 4003, kStateCancelled2311, Behaviour::answer, k2311ProtocolVersion,
                            k2302ProtocolVersion);
    auto result = read_local_steps(spool.path(), "n1", soon(), k2411Client);
    REQUIRE_MESSAGE(result.ok(), (result.ok() ? "" : result.error().message));
    REQUIRE(result->live.size() == 3);
    CHECK(result->live[0].state == StepdState::ending);
    CHECK(result->live[0].stepd_version == k2302ProtocolVersion);
    CHECK(result->live[1].state == StepdState::ending);
    CHECK(result->live[2].state == StepdState::cancelled);
    // Every stepd was greeted with the build's version.
    CHECK(old_ending.client_version() == k2411ProtocolVersion);
}

TEST_CASE("local steps: a stepd release the build does not read, or a state its release lacks, is a lookup error") {
    SUBCASE("a newer stepd than the build: its numbering is unknown") {
        TempDir spool;
        FakeStepd step(spool.file("n1_80.0"), 1, kStateRunning, Behaviour::answer, k2605ProtocolVersion,
                       k2411ProtocolVersion);
        auto result = read_local_steps(spool.path(), "n1", soon(), k2411Client);
        REQUIRE_FALSE(result.ok());
        CHECK(result.error().kind == ErrorKind::lookup);
        CHECK(result.error().message.find("unexpected protocol version reply 11520") != std::string::npos);
    }
    SUBCASE("older than the oldest stepd a 26.05 slurmd runs beside") {
        TempDir spool;
        FakeStepd step(spool.file("n1_81.0"), 1, kStateRunning, Behaviour::answer, k2302ProtocolVersion,
                       kMinProtocolVersion);
        auto result = read_local_steps(spool.path(), "n1", soon(), k2605Client);
        REQUIRE_FALSE(result.ok());
        CHECK(result.error().message.find("unexpected protocol version reply 9984") != std::string::npos);
    }
    SUBCASE("a 24.11 stepd refuses a 22.05 client (its minimum is 23.02)") {
        TempDir spool;
        FakeStepd step(spool.file("n1_82.0"), 1, kStateRunning, Behaviour::answer, k2411ProtocolVersion,
                       k2302ProtocolVersion);
        auto result = read_local_steps(spool.path(), "n1", soon(), k2205Client);
        REQUIRE_FALSE(result.ok());
        CHECK(result.error().message.find("refused the protocol version 9728 of Slurm 22.05") != std::string::npos);
    }
    SUBCASE("state 4 from a 22.05 stepd") {
        TempDir spool;
        FakeStepd step(spool.file("n1_83.0"), 1, 4);
        auto result = read_local_steps(spool.path(), "n1", soon(), k2205Client);
        REQUIRE_FALSE(result.ok());
        CHECK(result.error().message.find("state 4 from a Slurm 22.05 stepd") != std::string::npos);
    }
}

TEST_CASE("fault catalogue: REQUEST_DAEMON_PID names the stepd, on the connection of the other requests") {
    TempDir spool;
    FakeStepd step(spool.file("n1_90.0"), 41001, kStateRunning);
    auto result = read_local_steps(spool.path(), "n1", soon(), k2205Client);
    REQUIRE_MESSAGE(result.ok(), (result.ok() ? "" : result.error().message));
    REQUIRE(result->live.size() == 1);
    CHECK(result->live[0].stepd_pid == std::optional<pid_t>{::getpid()});
    CHECK(step.connections() == 1);
    CHECK(step.requests() == std::vector<std::int32_t>{kRequestStepUid, kRequestState, kRequestDaemonPid});
}

TEST_CASE("fault catalogue: a stepd pid that is not the socket's listener here is not carried") {
    // A stepd in another pid namespace answers its own getpid(), which names some other
    // process (or none) in ours.
    TempDir spool;
    FakeStepd step(spool.file("n1_91.0"), 41001, kStateRunning);
    step.set_daemon_pid(::getpid() + 1);
    auto result = read_local_steps(spool.path(), "n1", soon(), k2205Client);
    REQUIRE_MESSAGE(result.ok(), (result.ok() ? "" : result.error().message));
    REQUIRE(result->live.size() == 1);
    CHECK(result->live[0].uid == 41001);  // still live work
    CHECK_FALSE(result->live[0].stepd_pid.has_value());
}

TEST_CASE("fault catalogue: a garbage or short REQUEST_DAEMON_PID reply is a lookup error naming the socket") {
    SUBCASE("pid 0") {
        TempDir spool;
        FakeStepd step(spool.file("n1_92.0"), 41001, kStateRunning);
        step.set_daemon_pid(0);
        auto result = read_local_steps(spool.path(), "n1", soon(), k2205Client);
        REQUIRE_FALSE(result.ok());
        CHECK(result.error().kind == ErrorKind::lookup);
        CHECK(result.error().message ==
              "slurmstepd socket " + spool.file("n1_92.0") + ": unexpected REQUEST_DAEMON_PID reply: pid 0");
    }
    SUBCASE("pid -1") {
        TempDir spool;
        FakeStepd step(spool.file("n1_93.0"), 41001, kStateRunning);
        step.set_daemon_pid(-1);
        auto result = read_local_steps(spool.path(), "n1", soon(), k2205Client);
        REQUIRE_FALSE(result.ok());
        CHECK(result.error().message.find("unexpected REQUEST_DAEMON_PID reply: pid -1") != std::string::npos);
    }
    SUBCASE("half a pid, then the connection closes") {
        TempDir spool;
        FakeStepd step(spool.file("n1_94.0"), 41001, kStateRunning, Behaviour::short_pid_reply);
        auto result = read_local_steps(spool.path(), "n1", soon(), k2205Client);
        REQUIRE_FALSE(result.ok());
        CHECK(result.error().kind == ErrorKind::lookup);
        CHECK(result.error().message.find(spool.file("n1_94.0")) != std::string::npos);
        CHECK(result.error().message.find("reading the REQUEST_DAEMON_PID reply: short read") != std::string::npos);
    }
}
