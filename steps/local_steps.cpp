// SPDX-License-Identifier: GPL-2.0-or-later
// Asks each step socket in the spool dirs for its step's owner, state, slurmstepd pid
// and (from 25.11) SLUID, with non-blocking I/O and one deadline. What differs between
// releases (the handshake version, the state numbering, REQUEST_SLUID) is read from
// stepd_protocol.hpp by the version the stepd answers, so a stepd of the previous
// release keeps being understood during an upgrade. Our own implementation, not
// Slurm's code; the protocol as Slurm's source has it, unchanged from 22.05 to 26.05:
//   src/common/stepd_api.c  stepd_connect():  client writes int SLURM_PROTOCOL_VERSION,
//                                             reads back an int: the stepd's version,
//                                             or SLURM_ERROR (-1) when it refuses.
//                           stepd_get_uid():  writes int REQUEST_STEP_UID, reads uid_t.
//                           stepd_state():    writes int REQUEST_STATE, reads a
//                                             slurmstepd_state_t (an int-sized enum).
//                           stepd_daemon_pid(): writes int REQUEST_DAEMON_PID, reads a
//                                             pid_t (unrestricted).
//   src/slurmd/slurmstepd/req.c _handle_accept(): reads the version int, answers
//                                             SLURM_PROTOCOL_VERSION, then loops over
//                                             requests on the same connection until EOF
//                                             or an error (_handle_request), so one
//                                             connection serves every request.
//                           _handle_uid():    writes job->uid as sizeof(uid_t).
//                           _handle_state():  writes job->state as sizeof(slurmstepd_state_t).
//                           _handle_daemon_pid(): writes job->jmgr_pid (the stepd's getpid()).
//   src/common/stepd_api.h: step_msg_t REQUEST_STATE = 5, REQUEST_DAEMON_PID = 9,
//                           REQUEST_STEP_UID = 20.
#include "steps/local_steps.hpp"

#include "errors/error.hpp"
#include "steps/live_work.hpp"
#include "util/errno_text.hpp"
#include "util/poll_timeout.hpp"
#include "util/unique_fd.hpp"
#include "util/whole_number.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <memory>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>

namespace leftover::steps {
namespace {

namespace wire {
constexpr std::int32_t request_state = 5;       // REQUEST_STATE
constexpr std::int32_t request_daemon_pid = 9;  // REQUEST_DAEMON_PID
constexpr std::int32_t request_step_uid = 20;   // REQUEST_STEP_UID
constexpr std::int32_t request_sluid = 1;       // REQUEST_SLUID (25.11+)
}  // namespace wire

// How long a connect is retried while the listen backlog is full.
constexpr std::chrono::milliseconds kBacklogFullRetry{250};

static_assert(sizeof(int) == sizeof(std::int32_t), "the protocol sends C ints");
static_assert(sizeof(uid_t) == sizeof(std::uint32_t), "REQUEST_STEP_UID replies a 4-byte uid_t");
static_assert(sizeof(pid_t) == sizeof(std::int32_t), "REQUEST_DAEMON_PID replies a 4-byte pid_t");

// Waits until fd is ready for events; an error message on timeout or failure.
// Once the deadline passed it still takes whatever is ready right now.
std::optional<std::string> wait_ready(int fd, short events, std::chrono::steady_clock::time_point deadline,
                                      const char* what) {
    for (;;) {
        pollfd pfd{fd, events, 0};
        const int ms = poll_timeout_ms(deadline);
        const int n = ::poll(&pfd, 1, ms);
        if (n < 0) {
            if (errno == EINTR) continue;
            return fmt::format("poll while {}: {}", what, errno_text(errno));
        }
        if (n > 0) return std::nullopt;  // ready, or an error/hangup the next call reports
        if (ms == 0 || std::chrono::steady_clock::now() >= deadline) return fmt::format("timed out {}", what);
    }
}

// `failed_errno`, when given, gets the errno of a failed send (0 otherwise).
std::optional<std::string> send_all(int fd, const void* data, std::size_t size,
                                    std::chrono::steady_clock::time_point deadline, const char* what,
                                    int* failed_errno = nullptr) {
    if (failed_errno) *failed_errno = 0;
    const auto* p = static_cast<const unsigned char*>(data);
    std::size_t done = 0;
    while (done < size) {
        const ssize_t n = ::send(fd, p + done, size - done, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            done += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (auto err = wait_ready(fd, POLLOUT, deadline, what)) return err;
            continue;
        }
        if (n < 0 && failed_errno) *failed_errno = errno;
        return fmt::format("{}: {}", what, n < 0 ? errno_text(errno) : "wrote nothing");
    }
    return std::nullopt;
}

// `failed_errno`, when given, gets the errno of a failed recv (0 otherwise).
std::optional<std::string> recv_all(int fd, void* data, std::size_t size,
                                    std::chrono::steady_clock::time_point deadline, const char* what,
                                    int* failed_errno = nullptr) {
    if (failed_errno) *failed_errno = 0;
    auto* p = static_cast<unsigned char*>(data);
    std::size_t done = 0;
    while (done < size) {
        const ssize_t n = ::recv(fd, p + done, size - done, MSG_DONTWAIT);
        if (n > 0) {
            done += static_cast<std::size_t>(n);
            continue;
        }
        if (n == 0) return fmt::format("{}: short read, connection closed after {} of {} bytes", what, done, size);
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (auto err = wait_ready(fd, POLLIN, deadline, what)) return err;
            continue;
        }
        const int err = errno;
        if (failed_errno) *failed_errno = err;
        return fmt::format("{}: {}", what, errno_text(err));
    }
    return std::nullopt;
}

// One request of the protocol: an int out, a reply of `reply_size` bytes back.
// `failed_errno`, when given, gets the errno of a failed send or recv (0 otherwise).
std::optional<std::string> exchange(int fd, std::int32_t request, void* reply, std::size_t reply_size,
                                    std::chrono::steady_clock::time_point deadline, const char* sending,
                                    const char* reading, int* failed_errno = nullptr) {
    if (failed_errno) *failed_errno = 0;
    if (auto msg = send_all(fd, &request, sizeof(request), deadline, sending, failed_errno)) return msg;
    return recv_all(fd, reply, reply_size, deadline, reading, failed_errno);
}

struct StepAnswer {
    uid_t uid;
    StepdState state;
    std::int32_t raw_state;
    std::int32_t stepd_version;
    std::optional<std::uint64_t> sluid;
    std::optional<pid_t> stepd_pid;
};

// The pid of the process that listens on fd's peer socket, as this pid namespace sees
// it: 0 when that process is in a pid namespace we cannot see.
std::optional<pid_t> listener_pid(int fd) {
    ucred peer{};
    socklen_t len = sizeof(peer);
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0) return std::nullopt;
    return peer.pid;
}

// What asking one step socket found: an answer, the step gone, or an error message.
struct QueryOutcome {
    std::optional<StepAnswer> answer;  // set when the stepd answered
    std::optional<std::string> error;  // set when it could not be asked
    // neither: nobody listens (ECONNREFUSED) or the socket vanished (ENOENT)
};

bool gone_errno(int err) { return err == ECONNREFUSED || err == ENOENT; }

// Connects `fd` to the step socket at path. nullopt once connected; otherwise what asking
// it found: gone (nobody listens, or the socket vanished) or an error.
std::optional<QueryOutcome> connect_step(const std::string& path, std::chrono::steady_clock::time_point deadline,
                                         StepSocketCalls& calls, UniqueFd& fd) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof(addr.sun_path))
        return QueryOutcome{std::nullopt, fmt::format("path longer than {} bytes", sizeof(addr.sun_path) - 1)};
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);

    fd.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) return QueryOutcome{std::nullopt, fmt::format("socket: {}", errno_text(errno))};

    std::optional<std::chrono::steady_clock::time_point> backlog_give_up;
    for (;;) {
        const int rc = calls.connect(fd.get(), addr);
        if (rc == 0) return std::nullopt;
        const int err = -rc;
        if (gone_errno(err)) return QueryOutcome{};
        if (err == EAGAIN) {
            // AF_UNIX: the listen backlog is full. Linux does not complete such a
            // connect asynchronously, so try again, for a short while only: a backlog
            // that stays full is what a client holding connections makes, and waiting
            // the whole deadline for it would starve the rest of the evaluation.
            if (!backlog_give_up)
                backlog_give_up = std::min(deadline, std::chrono::steady_clock::now() + kBacklogFullRetry);
            if (poll_timeout_ms(*backlog_give_up) == 0)
                return QueryOutcome{std::nullopt, "timed out connecting (listen backlog full)"};
            ::poll(nullptr, 0, std::min(poll_timeout_ms(*backlog_give_up), 10));
            continue;
        }
        if (err == EINPROGRESS || err == EINTR) {
            if (auto msg = wait_ready(fd.get(), POLLOUT, deadline, "connecting"))
                return QueryOutcome{std::nullopt, std::move(msg)};
            int so_error = 0;
            socklen_t len = sizeof(so_error);
            if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &len) != 0)
                return QueryOutcome{std::nullopt, fmt::format("getsockopt(SO_ERROR): {}", errno_text(errno))};
            if (so_error == 0) return std::nullopt;
            if (gone_errno(so_error)) return QueryOutcome{};
            return QueryOutcome{std::nullopt, fmt::format("connect: {}", errno_text(so_error))};
        }
        return QueryOutcome{std::nullopt, fmt::format("connect: {}", errno_text(err))};
    }
}

// The handshake, then the step's owner and state, into `out`; an error message when the
// stepd does not answer them as its version says it should.
// `handshake_reset` is set when the stepd reset the connection instead of answering the
// handshake (see query_step): ECONNRESET reading the reply, or EPIPE (or ECONNRESET)
// sending the version when the reset came between our connect and our send.
std::optional<std::string> ask_owner_and_state(int fd, std::chrono::steady_clock::time_point deadline,
                                               const StepdProtocol& protocol, StepAnswer& out, bool& handshake_reset) {
    std::int32_t their_version = 0;
    int failed_errno = 0;
    if (auto msg = exchange(fd, protocol.version, &their_version, sizeof(their_version), deadline,
                            "sending the protocol version", "reading the protocol version reply", &failed_errno)) {
        handshake_reset = failed_errno == ECONNRESET || failed_errno == EPIPE;
        return msg;
    }
    if (auto msg = stepd_version_error(protocol, their_version)) return msg;

    std::uint32_t uid = 0;
    if (auto msg = exchange(fd, wire::request_step_uid, &uid, sizeof(uid), deadline, "sending REQUEST_STEP_UID",
                            "reading the REQUEST_STEP_UID reply"))
        return msg;
    if (auto msg = step_uid_error(uid)) return msg;

    std::int32_t state = 0;
    if (auto msg = exchange(fd, wire::request_state, &state, sizeof(state), deadline, "sending REQUEST_STATE",
                            "reading the REQUEST_STATE reply"))
        return msg;
    if (auto msg = stepd_state_error(their_version, state)) return msg;
    out.uid = static_cast<uid_t>(uid);
    out.state = *decode_stepd_state(their_version, state);
    out.raw_state = state;
    out.stepd_version = their_version;
    return std::nullopt;
}

// The stepd's own pid: its descendants are inside the step whatever their binaries are
// called. Kept only when it names the socket's listener as our pid namespace sees it: a
// stepd of a node in another namespace says a pid that means something else here.
std::optional<std::string> ask_stepd_pid(int fd, std::chrono::steady_clock::time_point deadline, StepAnswer& out) {
    std::int32_t daemon_pid = 0;
    if (auto msg = exchange(fd, wire::request_daemon_pid, &daemon_pid, sizeof(daemon_pid), deadline,
                            "sending REQUEST_DAEMON_PID", "reading the REQUEST_DAEMON_PID reply"))
        return msg;
    if (daemon_pid <= 0) return fmt::format("unexpected REQUEST_DAEMON_PID reply: pid {}", daemon_pid);
    const auto listener = listener_pid(fd);
    if (!listener) return fmt::format("getsockopt(SO_PEERCRED): {}", errno_text(errno));
    if (daemon_pid == *listener) out.stepd_pid = daemon_pid;
    return std::nullopt;
}

// 26.05 names the job's cgroup by its SLUID: asked for where the stepd knows it.
std::optional<std::string> ask_sluid(int fd, std::chrono::steady_clock::time_point deadline, StepAnswer& out) {
    if (out.stepd_version < kFirstWithSluid) return std::nullopt;
    std::uint64_t value = 0;
    if (auto msg = exchange(fd, wire::request_sluid, &value, sizeof(value), deadline, "sending REQUEST_SLUID",
                            "reading the REQUEST_SLUID reply"))
        return msg;
    out.sluid = value;
    return std::nullopt;
}

QueryOutcome query_step_once(const std::string& path, std::chrono::steady_clock::time_point deadline,
                             const StepdProtocol& protocol, StepSocketCalls& calls, bool& handshake_reset) {
    UniqueFd fd;
    if (auto not_connected = connect_step(path, deadline, calls, fd)) return std::move(*not_connected);
    StepAnswer answer{};
    std::optional<std::string> msg = ask_owner_and_state(fd.get(), deadline, protocol, answer, handshake_reset);
    if (!msg) msg = ask_stepd_pid(fd.get(), deadline, answer);
    if (!msg) msg = ask_sluid(fd.get(), deadline, answer);
    if (msg) return {std::nullopt, std::move(msg)};
    // Closing the connection is the EOF that ends req.c's request loop.
    return {answer, std::nullopt};
}

// A reset instead of the handshake reply is what a step that is ending gives: req.c's
// _msg_socket_readable() closes the listening socket once the step's tasks are done
// (then unlinks it), and Linux resets every connection still waiting in its backlog:
// sending the version fails with EPIPE when that came between connect and send,
// reading the reply with ECONNRESET when it came after the send.
// A live stepd never does that (_handle_accept() reads the version first and answers
// even a refusal), but a reset alone does not prove the listener closed, so the socket
// is asked once more: only a connect that nobody takes (ECONNREFUSED) or a socket gone
// (ENOENT) makes the step dead; anything else stays what that second try found.
QueryOutcome query_step(const std::string& path, std::chrono::steady_clock::time_point deadline,
                        const StepdProtocol& protocol, StepSocketCalls& calls) {
    bool handshake_reset = false;
    QueryOutcome first = query_step_once(path, deadline, protocol, calls, handshake_reset);
    if (!handshake_reset) return first;
    bool reset_again = false;
    QueryOutcome second = query_step_once(path, deadline, protocol, calls, reset_again);
    if (second.answer || !second.error) return second;
    return first;
}

struct Candidate {
    StepSocketName name;
    std::string path;
};

// The owner of job `job_id`'s batch script in `spool_dir`, where that tells the job's
// user: slurmstepd makes <spool>/job%05u (mode 0750, root's) and in it slurm_script as
// root, then chowns the script to the job's user (mgr.c _make_batch_dir and
// _make_batch_script, 22.05 to 26.05). nullopt where it does not tell: no script (not
// the job's batch host, or no batch step), one still owned by root or SlurmdUser (not
// chowned yet), or a directory or file that someone else than they could have made.
std::optional<uid_t> batch_script_owner(const std::string& spool_dir, std::uint32_t job_id,
                                        const std::set<uid_t>& spool_owners, std::string& path) {
    const auto trusted_dir = [&](int fd) {
        struct stat st {};
        return ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && spool_owners.count(st.st_uid) != 0 &&
               (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
    };
    const UniqueFd spool(::open(spool_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!spool.valid() || !trusted_dir(spool.get())) return std::nullopt;
    const std::string job_dir = fmt::format("job{:05}", job_id);
    const UniqueFd job(::openat(spool.get(), job_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!job.valid() || !trusted_dir(job.get())) return std::nullopt;
    struct stat script {};
    if (::fstatat(job.get(), "slurm_script", &script, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(script.st_mode) ||
        script.st_uid == 0 || spool_owners.count(script.st_uid) != 0)
        return std::nullopt;
    path = fmt::format("{}{}{}/slurm_script", spool_dir, spool_dir.ends_with('/') ? "" : "/", job_dir);
    return script.st_uid;
}

// Each unanswered socket's job user, where another step of the job answered in this look
// or the job's batch script in any spool dir of this host tells (a job has one user on
// every node).
void tell_job_users(LocalJobState& state, const StepSockets& where) {
    for (UnansweredStep& step : state.unanswered) {
        const auto answered = std::find_if(state.live.begin(), state.live.end(),
                                           [&](const LocalStep& live) { return live.job_id == step.job_id; });
        if (answered != state.live.end()) {
            step.job_uid = answered->uid;
            step.job_uid_from = fmt::format("its step {} answered", describe_step(answered->job_id, answered->step_id));
            continue;
        }
        for (const StepSpoolDir& spool : where.spool_dirs) {
            std::string path;
            if (const auto owner = batch_script_owner(spool.path, step.job_id, where.spool_owners, path)) {
                step.job_uid = owner;
                step.job_uid_from = fmt::format("its batch script {}", path);
                break;
            }
        }
    }
}

}  // namespace

std::optional<NodeStepSocketName> parse_any_step_socket_name(const std::string& file_name) {
    const auto underscore = file_name.rfind('_');
    if (underscore == std::string::npos || underscore == 0) return std::nullopt;
    const std::string_view rest = std::string_view(file_name).substr(underscore + 1);

    const auto dot1 = rest.find('.');
    if (dot1 == std::string_view::npos) return std::nullopt;
    const auto dot2 = rest.find('.', dot1 + 1);
    const auto job = parse_whole<std::uint32_t>(rest.substr(0, dot1));
    const auto step = parse_whole<std::uint32_t>(
        rest.substr(dot1 + 1, dot2 == std::string_view::npos ? std::string_view::npos : dot2 - dot1 - 1));
    if (!job || !step) return std::nullopt;
    StepSocketName name{*job, *step, std::nullopt};
    if (dot2 != std::string_view::npos) {
        const auto component = parse_whole<std::uint32_t>(rest.substr(dot2 + 1));  // rejects a third dot
        if (!component) return std::nullopt;
        name.het_component = *component;
    }
    return NodeStepSocketName{file_name.substr(0, underscore), name};
}

std::optional<StepSocketName> parse_step_socket_name(const std::string& file_name, const std::string& node_name) {
    auto parsed = parse_any_step_socket_name(file_name);
    if (!parsed || parsed->node != node_name) return std::nullopt;
    return parsed->step;
}

int StepSocketCalls::connect(int fd, const sockaddr_un& address) {
    const auto* sa = reinterpret_cast<const sockaddr*>(&address);  // the sockets API takes a sockaddr*
    return ::connect(fd, sa, sizeof(address)) == 0 ? 0 : -errno;
}

StepSocketCalls& real_step_socket_calls() {
    static StepSocketCalls calls;
    return calls;
}

namespace {

// The step sockets of one spool directory. A socket of a node not in `nodes` is a
// lookup error: its slurmd runs steps here that the evaluation would not see.
Status list_step_sockets(const std::string& spool_dir, DIR* dir, const std::vector<std::string>& nodes,
                         std::vector<Candidate>& out) {
    const std::string base = (!spool_dir.empty() && spool_dir.back() == '/') ? spool_dir : spool_dir + "/";
    for (;;) {
        errno = 0;
        const dirent* entry = ::readdir(dir);
        if (!entry) {
            if (errno != 0)
                return Error::lookup(
                    fmt::format("slurmd spool directory {}: readdir: {}", spool_dir, errno_text(errno)),
                    ErrorSource::step_socket);
            return Ok{};
        }
        const std::string file_name = entry->d_name;
        auto name = parse_any_step_socket_name(file_name);
        if (!name) continue;
        std::string path = base + file_name;

        bool is_socket = entry->d_type == DT_SOCK;
        if (entry->d_type == DT_UNKNOWN) {
            struct stat st {};
            if (::fstatat(::dirfd(dir), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
                if (errno != ENOENT)
                    return Error::lookup(fmt::format("slurmstepd socket {}: stat: {}", path, errno_text(errno)),
                                         ErrorSource::step_socket);
                continue;  // vanished between readdir and stat: nothing to ask
            }
            is_socket = S_ISSOCK(st.st_mode);
        }
        if (!is_socket) continue;
        if (std::find(nodes.begin(), nodes.end(), name->node) == nodes.end())
            return Error::lookup(
                fmt::format(
                    "slurmstepd socket {} is of node {}, which is none of the nodes known to run on this host ({}): "
                    "the steps of its slurmd would go unseen (if no slurmd runs here as {}, the socket is stale: "
                    "remove it)",
                    path, name->node, fmt::join(nodes, ", "), name->node),
                ErrorSource::step_socket);
        out.push_back({name->step, std::move(path)});
    }
}

}  // namespace

namespace {

// Every step socket of the spool dirs, sorted, each directory once (see ask_local_steps
// for what is a lookup error).
Result<std::vector<Candidate>> list_candidates(const StepSockets& where) {
    if (where.node_names.empty() ||
        std::find(where.node_names.begin(), where.node_names.end(), std::string()) != where.node_names.end())
        return Error::lookup("slurmstepd sockets: the node name is empty", ErrorSource::step_socket);

    std::vector<Candidate> candidates;
    std::set<std::pair<dev_t, ino_t>> listed;  // two node names, or a symlink, may name one directory
    for (const StepSpoolDir& spool : where.spool_dirs) {
        std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(spool.path.c_str()), &::closedir);
        if (!dir) {
            if (errno == ENOENT && !spool.must_exist) continue;
            return Error::lookup(
                fmt::format("slurmd spool directory {}: cannot list it: {}", spool.path, errno_text(errno)),
                ErrorSource::step_socket);
        }
        struct stat st {};
        if (::fstat(::dirfd(dir.get()), &st) != 0)
            return Error::lookup(fmt::format("slurmd spool directory {}: stat: {}", spool.path, errno_text(errno)),
                                 ErrorSource::step_socket);
        if (!listed.emplace(st.st_dev, st.st_ino).second) continue;
        if (where.spool_owners.count(st.st_uid) == 0)
            return Error::lookup(
                fmt::format(
                    "slurmd spool directory {}: owned by uid {}, not by root or SlurmdUser: its step sockets are not "
                    "believed",
                    spool.path, st.st_uid),
                ErrorSource::step_socket);
        if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
            return Error::lookup(
                fmt::format(
                    "slurmd spool directory {}: writable by {} (mode {:04o}): its step sockets are not believed",
                    spool.path, (st.st_mode & S_IWOTH) != 0 ? "others" : "its group", st.st_mode & 07777),
                ErrorSource::step_socket);
        if (auto listing = list_step_sockets(spool.path, dir.get(), where.node_names, candidates); !listing.ok())
            return listing.error();
    }
    std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
        return std::tuple(a.name.job_id, a.name.step_id, a.name.het_component, a.path) <
               std::tuple(b.name.job_id, b.name.step_id, b.name.het_component, b.path);
    });
    return candidates;
}

}  // namespace

Result<std::vector<StepSocketName>> list_local_steps(const StepSockets& where) {
    auto candidates = list_candidates(where);
    LEFTOVER_TRY(candidates);
    std::vector<StepSocketName> names;
    for (const Candidate& candidate : candidates.value()) names.push_back(candidate.name);
    return names;
}

Result<LocalJobState> ask_local_steps(const StepSockets& where, std::chrono::steady_clock::time_point deadline,
                                      const StepdProtocol& protocol, StepSocketCalls& calls) {
    auto candidates = list_candidates(where);
    LEFTOVER_TRY(candidates);
    LocalJobState state;
    for (auto& candidate : candidates.value()) {
        QueryOutcome outcome = query_step(candidate.path, deadline, protocol, calls);
        if (outcome.error) {
            state.unanswered.push_back(
                {candidate.name.job_id, candidate.name.step_id, std::move(candidate.path), std::move(*outcome.error)});
            continue;
        }
        if (!outcome.answer) {
            state.dead.push_back({candidate.name.job_id, candidate.name.step_id, std::move(candidate.path)});
            continue;
        }
        LocalStep step;
        step.job_id = candidate.name.job_id;
        step.step_id = candidate.name.step_id;
        step.het_component = candidate.name.het_component;
        step.uid = outcome.answer->uid;
        step.state = outcome.answer->state;
        step.raw_state = outcome.answer->raw_state;
        step.stepd_version = outcome.answer->stepd_version;
        step.sluid = outcome.answer->sluid;
        step.stepd_pid = outcome.answer->stepd_pid;
        step.socket_path = std::move(candidate.path);
        state.live.push_back(std::move(step));
    }
    tell_job_users(state, where);
    return state;
}

Result<LocalJobState> read_local_steps(const StepSockets& where, std::chrono::steady_clock::time_point deadline,
                                       const StepdProtocol& protocol, StepSocketCalls& calls) {
    auto state = ask_local_steps(where, deadline, protocol, calls);
    if (state.ok() && !state->unanswered.empty()) {
        const UnansweredStep& first = state->unanswered.front();
        return Error::lookup(fmt::format("slurmstepd socket {}: {}", first.socket_path, first.error),
                             ErrorSource::step_socket);
    }
    return state;
}

Result<LocalJobState> read_local_steps(const std::string& spool_dir, const std::string& node_name,
                                       std::chrono::steady_clock::time_point deadline, const StepdProtocol& protocol,
                                       StepSocketCalls& calls) {
    return read_local_steps(StepSockets{{{spool_dir, true}}, {node_name}}, deadline, protocol, calls);
}

}  // namespace leftover::steps
