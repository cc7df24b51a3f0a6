// SPDX-License-Identifier: GPL-2.0-or-later
// A fake slurmstepd: a listening unix socket in a spool directory, served by a thread.
// It speaks the protocol the way src/slurmd/slurmstepd/req.c does in every release from
// 22.05 to 26.05 (_handle_accept / _handle_request / _handle_uid / _handle_state /
// _handle_daemon_pid), answering with the version of the release it plays. Its numbers
// are written out here on purpose, independently of stepd_protocol.hpp, so that a wrong
// constant on either side makes the tests fail.
#pragma once

#include "support/unix_sockets.hpp"
#include "util/unique_fd.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace leftover::test {

// From src/common/slurm_protocol_common.h and src/common/stepd_api.h of each release
// (slurm-22-05-8-1 to -26-05-3-1).
constexpr std::int32_t k2205ProtocolVersion = 38 << 8;  // SLURM_22_05_PROTOCOL_VERSION
constexpr std::int32_t k2511ProtocolVersion = 44 << 8;
constexpr std::int32_t kMinProtocolVersion = 36 << 8;  // SLURM_MIN_PROTOCOL_VERSION of 22.05
constexpr std::int32_t kRequestState = 5;              // REQUEST_STATE
constexpr std::int32_t kRequestDaemonPid = 9;          // REQUEST_DAEMON_PID
constexpr std::int32_t kRequestStepUid = 20;           // REQUEST_STEP_UID
constexpr std::int32_t kRequestSluid = 1;              // REQUEST_SLUID, from 25.11

enum class Behaviour {
    answer,           // like req.c: version handshake, then requests until EOF
    silent,           // accept, never answer
    short_uid_reply,  // handshake, then half a uid reply and close
    close_at_once,    // accept and close without a handshake reply
    refuse_version,   // reply SLURM_ERROR (-1) to the handshake, as _handle_accept's fail path
    short_pid_reply,  // answers everything, but only half a pid to REQUEST_DAEMON_PID, then closes
};

// One fake slurmstepd: a listening unix socket served by a thread.
class FakeStepd {
public:
    // `version`: the SLURM_PROTOCOL_VERSION of the release it plays; `oldest_client`:
    // that release's SLURM_MIN_PROTOCOL_VERSION, below which it refuses a client.
    FakeStepd(std::string path, std::uint32_t uid, std::int32_t state, Behaviour behaviour = Behaviour::answer,
              std::int32_t version = k2205ProtocolVersion, std::int32_t oldest_client = kMinProtocolVersion)
        : path_(std::move(path)),
          uid_(uid),
          state_(state),
          behaviour_(behaviour),
          version_(version),
          oldest_client_(oldest_client) {
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

    // What it answers to REQUEST_DAEMON_PID: by default its own pid (the fake runs in
    // this process, which also listens on its socket, as a real stepd does).
    void set_daemon_pid(std::int32_t pid) { daemon_pid_ = pid; }

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
        if (version < oldest_client_) {
            const std::int32_t error = -1;
            write_bytes(fd, &error, sizeof(error));
            return;
        }
        if (behaviour_ == Behaviour::refuse_version) {
            const std::int32_t error = -1;
            write_bytes(fd, &error, sizeof(error));
            return;
        }
        const std::int32_t mine = version_;
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
            } else if (request == kRequestDaemonPid) {
                const std::int32_t pid = daemon_pid_.load();
                if (behaviour_ == Behaviour::short_pid_reply) {
                    write_bytes(fd, &pid, 2);
                    return;
                }
                if (!write_bytes(fd, &pid, sizeof(pid))) return;
            } else if (request == kRequestSluid && version_ >= k2511ProtocolVersion) {
                if (!write_bytes(fd, &sluid_, sizeof(sluid_))) return;
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
    std::int32_t version_;
    std::int32_t oldest_client_;
    std::uint64_t sluid_ = 0x0123456789abcdefULL;
    std::atomic<std::int32_t> daemon_pid_{static_cast<std::int32_t>(::getpid())};
    UniqueFd stop_read_, stop_write_;  // a byte here ends serve()
    UniqueFd listen_fd_;
    std::atomic<int> connections_{0};
    std::atomic<std::int32_t> client_version_{0};
    mutable std::mutex mutex_;
    std::vector<std::int32_t> requests_;
    std::thread thread_;
};

}  // namespace leftover::test
