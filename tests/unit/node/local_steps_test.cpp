// SPDX-License-Identifier: GPL-2.0-or-later
// read_local_steps against fake slurmstepd servers in a temporary spool directory.
//
// The fake speaks the protocol the way slurm-22-05-8-1's src/slurmd/slurmstepd/req.c
// does (_handle_accept / _handle_request / _handle_uid / _handle_state). Its numbers
// are written out here on purpose, independently of local_steps.cpp, so that a wrong
// constant on either side makes these tests fail.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

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
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "local_steps.hpp"
#include "unique_fd.hpp"

namespace {

using leftover::ErrorKind;
using leftover::UniqueFd;
using leftover::node::LocalJobState;
using leftover::node::parse_step_socket_name;
using leftover::node::read_local_steps;
using leftover::node::StepSocketName;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// From slurm-22-05-8-1: src/common/slurm_protocol_common.h, src/common/stepd_api.h.
constexpr std::int32_t k2205ProtocolVersion = 38 << 8;   // SLURM_22_05_PROTOCOL_VERSION
constexpr std::int32_t kMinProtocolVersion = 36 << 8;    // SLURM_MIN_PROTOCOL_VERSION
constexpr std::int32_t kRequestState = 5;                // REQUEST_STATE
constexpr std::int32_t kRequestStepUid = 20;             // REQUEST_STEP_UID
constexpr std::int32_t kStateRunning = 2;                // SLURMSTEPD_STEP_RUNNING
constexpr std::int32_t kStateEnding = 3;                 // SLURMSTEPD_STEP_ENDING
constexpr std::uint32_t kBatchStep = 0xfffffffb;         // SLURM_BATCH_SCRIPT
constexpr std::uint32_t kExternStep = 0xfffffffc;        // SLURM_EXTERN_CONT

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

sockaddr_un unix_address(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    REQUIRE(path.size() < sizeof(addr.sun_path));
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    return addr;
}

UniqueFd bind_unix(const std::string& path) {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    REQUIRE(fd.valid());
    const sockaddr_un addr = unix_address(path);
    REQUIRE(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0);
    return fd;
}

// A socket file nobody listens on: what a crashed slurmstepd leaves behind.
void make_stale_socket(const std::string& path) {
    const UniqueFd fd = bind_unix(path);
    REQUIRE(::listen(fd.get(), 4) == 0);
}

void make_regular_file(const std::string& path) { std::ofstream(path) << "not a socket\n"; }

enum class Behaviour {
    answer,           // like req.c: version handshake, then requests until EOF
    silent,           // accept, never answer
    short_uid_reply,  // handshake, then half a uid reply and close
    close_at_once,    // accept and close without a handshake reply
    refuse_version,   // reply SLURM_ERROR (-1) to the handshake, as _handle_accept's fail path
};

// One fake slurmstepd: a listening unix socket served by a thread.
class FakeStepd {
public:
    FakeStepd(std::string path, std::uint32_t uid, std::int32_t state,
              Behaviour behaviour = Behaviour::answer)
        : path_(std::move(path)), uid_(uid), state_(state), behaviour_(behaviour) {
        int stop_pipe[2];
        REQUIRE(::pipe2(stop_pipe, O_CLOEXEC) == 0);
        stop_read_.reset(stop_pipe[0]);
        stop_write_.reset(stop_pipe[1]);
        listen_fd_ = bind_unix(path_);
        REQUIRE(::listen(listen_fd_.get(), 32) == 0);
        thread_ = std::thread([this] { serve(); });
    }
    ~FakeStepd() {
        stop();
        ::unlink(path_.c_str());
    }
    FakeStepd(const FakeStepd&) = delete;
    FakeStepd& operator=(const FakeStepd&) = delete;

    // Ends the thread and closes every connection it still holds (which also
    // unblocks a client that would wait forever on a silent server).
    void stop() {
        if (!thread_.joinable()) return;
        const char byte = 'x';
        (void)!::write(stop_write_.get(), &byte, 1);
        thread_.join();
    }

    int connections() const { return connections_.load(); }
    std::vector<std::int32_t> requests() const {
        std::lock_guard lock(mutex_);
        return requests_;
    }
    std::int32_t client_version() const { return client_version_.load(); }

private:
    // Waits for fd to be readable; false when told to stop.
    bool wait_readable(int fd) {
        pollfd pfds[2] = {{fd, POLLIN, 0}, {stop_read_.get(), POLLIN, 0}};
        for (;;) {
            const int n = ::poll(pfds, 2, -1);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) return false;
            if (pfds[1].revents) return false;
            return true;
        }
    }
    // Reads exactly one int as req.c's safe_read would; false on EOF, error or stop.
    bool read_int(int fd, std::int32_t& value) {
        std::size_t done = 0;
        auto* p = reinterpret_cast<unsigned char*>(&value);
        while (done < sizeof(value)) {
            if (!wait_readable(fd)) return false;
            const ssize_t n = ::recv(fd, p + done, sizeof(value) - done, MSG_DONTWAIT);
            if (n > 0) {
                done += static_cast<std::size_t>(n);
            } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
                return false;
            }
        }
        return true;
    }
    static bool write_bytes(int fd, const void* data, std::size_t size) {
        return ::send(fd, data, size, MSG_NOSIGNAL) == static_cast<ssize_t>(size);
    }

    // One accepted connection, handled as _handle_accept does.
    void handle(int fd) {
        std::int32_t version = 0;
        if (!read_int(fd, version)) return;
        client_version_ = version;
        if (version < kMinProtocolVersion) {
            const std::int32_t error = -1;
            write_bytes(fd, &error, sizeof(error));
            return;
        }
        if (behaviour_ == Behaviour::refuse_version) {
            const std::int32_t error = -1;
            write_bytes(fd, &error, sizeof(error));
            return;
        }
        const std::int32_t mine = k2205ProtocolVersion;
        if (!write_bytes(fd, &mine, sizeof(mine))) return;
        for (;;) {  // _handle_request until EOF or an error
            std::int32_t request = 0;
            if (!read_int(fd, request)) return;
            {
                std::lock_guard lock(mutex_);
                requests_.push_back(request);
            }
            if (request == kRequestStepUid) {
                if (behaviour_ == Behaviour::short_uid_reply) {
                    write_bytes(fd, &uid_, 2);
                    return;
                }
                if (!write_bytes(fd, &uid_, sizeof(uid_))) return;
            } else if (request == kRequestState) {
                if (!write_bytes(fd, &state_, sizeof(state_))) return;
            } else {
                return;  // "Unrecognized request": req.c drops the connection
            }
        }
    }

    void serve() {
        std::vector<UniqueFd> held;  // silent connections, kept open until stop
        while (wait_readable(listen_fd_.get())) {
            UniqueFd fd(::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
            if (!fd.valid()) continue;
            ++connections_;
            if (behaviour_ == Behaviour::silent) {
                held.push_back(std::move(fd));
                continue;
            }
            if (behaviour_ != Behaviour::close_at_once) handle(fd.get());
        }
    }

    std::string path_;
    std::uint32_t uid_;
    std::int32_t state_;
    Behaviour behaviour_;
    UniqueFd stop_read_, stop_write_;  // a byte here ends serve()
    UniqueFd listen_fd_;
    std::atomic<int> connections_{0};
    std::atomic<std::int32_t> client_version_{0};
    mutable std::mutex mutex_;
    std::vector<std::int32_t> requests_;
    std::thread thread_;
};

Clock::time_point soon() { return Clock::now() + 5s; }

}  // namespace

TEST_CASE("step socket names: <node>_<job>.<step>[.<component>] of this node only") {
    CHECK(parse_step_socket_name("n1_12.0", "n1") == StepSocketName{12, 0, std::nullopt});
    CHECK(parse_step_socket_name("n1_12.4294967292", "n1") ==
          StepSocketName{12, kExternStep, std::nullopt});
    CHECK(parse_step_socket_name("n1_7.3.1", "n1") == StepSocketName{7, 3, 1u});
    CHECK(parse_step_socket_name("n1_4294967295.0", "n1") ==
          StepSocketName{4294967295u, 0, std::nullopt});

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

TEST_CASE("a live step: uid and state over the 22.05 protocol, one connection") {
    TempDir spool;
    FakeStepd step(spool.file("n1_42.0"), 1234, kStateRunning);

    auto result = read_local_steps(spool.path(), "n1", soon());
    REQUIRE_MESSAGE(result.ok(), (result.ok() ? "" : result.error().message));
    REQUIRE(result->live.size() == 1);
    CHECK(result->dead.empty());
    const auto& live = result->live[0];
    CHECK(live.job_id == 42);
    CHECK(live.step_id == 0);
    CHECK_FALSE(live.het_component.has_value());
    CHECK(live.uid == 1234);
    CHECK_FALSE(live.ending);
    CHECK(live.socket_path == spool.file("n1_42.0"));

    CHECK(step.client_version() == k2205ProtocolVersion);
    CHECK(step.connections() == 1);
    const auto requests = step.requests();
    CHECK(requests.size() == 2);
    CHECK(std::count(requests.begin(), requests.end(), kRequestStepUid) == 1);
    CHECK(std::count(requests.begin(), requests.end(), kRequestState) == 1);
}

TEST_CASE("an ending step is flagged ending; batch and extern steps are listed") {
    TempDir spool;
    FakeStepd batch(spool.file("n1_8." + std::to_string(kBatchStep)), 1001, kStateEnding);
    FakeStepd ext(spool.file("n1_8." + std::to_string(kExternStep)), 1001, kStateRunning);

    auto result = read_local_steps(spool.path(), "n1", soon());
    REQUIRE_MESSAGE(result.ok(), (result.ok() ? "" : result.error().message));
    REQUIRE(result->live.size() == 2);
    // sorted by job, step: batch (0xfffffffb) before extern (0xfffffffc)
    CHECK(result->live[0].step_id == kBatchStep);
    CHECK(result->live[0].ending);
    CHECK(result->live[1].step_id == kExternStep);
    CHECK_FALSE(result->live[1].ending);
}

TEST_CASE("a heterogeneous job component socket") {
    TempDir spool;
    FakeStepd step(spool.file("n1_77.2.1"), 500, kStateRunning);

    auto result = read_local_steps(spool.path(), "n1", soon());
    REQUIRE_MESSAGE(result.ok(), (result.ok() ? "" : result.error().message));
    REQUIRE(result->live.size() == 1);
    CHECK(result->live[0].job_id == 77);
    CHECK(result->live[0].step_id == 2);
    REQUIRE(result->live[0].het_component.has_value());
    CHECK(*result->live[0].het_component == 1);
    CHECK(result->live[0].uid == 500);
}

TEST_CASE("other nodes' sockets and non-socket files are ignored") {
    TempDir spool;
    FakeStepd mine(spool.file("n1_5.0"), 600, kStateRunning);
    FakeStepd other(spool.file("n2_6.0"), 700, kStateRunning);
    FakeStepd longer_name(spool.file("n10_7.0"), 800, kStateRunning);
    make_stale_socket(spool.file("n2_9.0"));         // would be dead if it were ours
    make_stale_socket(spool.file("n1_9.0.1.2"));     // not a step socket name
    make_regular_file(spool.file("n1_11.0"));        // right name, not a socket
    REQUIRE(::mkdir(spool.file("n1_12.0").c_str(), 0700) == 0);
    REQUIRE(::symlink(spool.file("n1_5.0").c_str(), spool.file("n1_13.0").c_str()) == 0);
    make_regular_file(spool.file("cred_state"));
    REQUIRE(::mkdir(spool.file("job00005").c_str(), 0700) == 0);

    auto result = read_local_steps(spool.path(), "n1", soon());
    REQUIRE_MESSAGE(result.ok(), (result.ok() ? "" : result.error().message));
    REQUIRE(result->live.size() == 1);
    CHECK(result->live[0].job_id == 5);
    CHECK(result->live[0].uid == 600);
    CHECK(result->dead.empty());
    CHECK(mine.connections() == 1);
    CHECK(other.connections() == 0);
    CHECK(longer_name.connections() == 0);
}

TEST_CASE("a stale socket (nobody listens: ECONNREFUSED) is a dead step") {
    TempDir spool;
    make_stale_socket(spool.file("n1_3.4294967292"));
    FakeStepd live(spool.file("n1_4.0"), 900, kStateRunning);

    auto result = read_local_steps(spool.path(), "n1", soon());
    REQUIRE_MESSAGE(result.ok(), (result.ok() ? "" : result.error().message));
    REQUIRE(result->dead.size() == 1);
    CHECK(result->dead[0].job_id == 3);
    CHECK(result->dead[0].step_id == kExternStep);
    CHECK(result->dead[0].socket_path == spool.file("n1_3.4294967292"));
    REQUIRE(result->live.size() == 1);
    CHECK(result->live[0].job_id == 4);
}

TEST_CASE("an empty spool directory has no steps") {
    TempDir spool;
    auto result = read_local_steps(spool.path(), "n1", soon());
    REQUIRE(result.ok());
    CHECK(result->live.empty());
    CHECK(result->dead.empty());
}

TEST_CASE("a missing or unreadable spool directory is a lookup error, never 'no jobs'") {
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

TEST_CASE("a slurmstepd that accepts but never answers: lookup error at the deadline") {
    TempDir spool;
    FakeStepd step(spool.file("n1_20.0"), 1000, kStateRunning, Behaviour::silent);

    const auto start = Clock::now();
    const auto deadline = start + 300ms;
    auto pending = std::async(std::launch::async,
                              [&] { return read_local_steps(spool.path(), "n1", deadline); });
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

TEST_CASE("a short reply is a lookup error naming the socket") {
    TempDir spool;
    FakeStepd step(spool.file("n1_21.0"), 0x01020304, kStateRunning, Behaviour::short_uid_reply);

    auto result = read_local_steps(spool.path(), "n1", soon());
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().kind == ErrorKind::lookup);
    CHECK(result.error().message.find(spool.file("n1_21.0")) != std::string::npos);
    CHECK(result.error().message.find("short read") != std::string::npos);
}

TEST_CASE("a connection closed before the handshake reply is a lookup error") {
    TempDir spool;
    FakeStepd step(spool.file("n1_22.0"), 1, kStateRunning, Behaviour::close_at_once);

    auto result = read_local_steps(spool.path(), "n1", soon());
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().kind == ErrorKind::lookup);
    CHECK(result.error().message.find(spool.file("n1_22.0")) != std::string::npos);
}

TEST_CASE("a refused handshake or an impossible state is a lookup error") {
    SUBCASE("handshake answered with SLURM_ERROR") {
        TempDir spool;
        FakeStepd step(spool.file("n1_23.0"), 1, kStateRunning, Behaviour::refuse_version);
        auto result = read_local_steps(spool.path(), "n1", soon());
        REQUIRE_FALSE(result.ok());
        CHECK(result.error().kind == ErrorKind::lookup);
        CHECK(result.error().message.find("refused") != std::string::npos);
    }
    SUBCASE("state outside slurmstepd_state_t") {
        TempDir spool;
        FakeStepd step(spool.file("n1_24.0"), 1, 7);
        auto result = read_local_steps(spool.path(), "n1", soon());
        REQUIRE_FALSE(result.ok());
        CHECK(result.error().kind == ErrorKind::lookup);
        CHECK(result.error().message.find("state 7") != std::string::npos);
    }
}

TEST_CASE("one unanswerable step fails the whole lookup") {
    TempDir spool;
    FakeStepd good(spool.file("n1_30.0"), 10, kStateRunning);
    FakeStepd bad(spool.file("n1_31.0"), 11, kStateRunning, Behaviour::close_at_once);

    auto result = read_local_steps(spool.path(), "n1", soon());
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().message.find(spool.file("n1_31.0")) != std::string::npos);
}
