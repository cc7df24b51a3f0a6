// SPDX-License-Identifier: GPL-2.0-or-later
// The local job-state source: which job steps are alive on this node, learned
// the way pam_slurm_adopt learns it, from the slurmstepd unix sockets in
// slurmd's spool directory, but without libslurm's blocking calls: every
// connect, read and write is non-blocking and bounded by one deadline.
//
// The wire protocol of each release is in stepd_protocol.hpp; a build refuses a
// release that table does not have.
#pragma once

#include "errors/result.hpp"
#include "steps/stepd_protocol.hpp"

#include <sys/types.h>
#include <sys/un.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace leftover::steps {

// A step whose slurmstepd answered on its socket.
struct LocalStep {
    std::uint32_t job_id = 0;
    std::uint32_t step_id = 0;                   // may be a special id: batch 0xfffffffb, extern 0xfffffffc,
                                                 // interactive 0xfffffffa
    std::optional<std::uint32_t> het_component;  // <job>.<step>.<component> sockets
    uid_t uid = 0;                               // the job owner, as the slurmstepd reports it
    StepdState state = StepdState::running;
    std::int32_t raw_state = 0;          // the number the stepd sent, for log lines
    std::int32_t stepd_version = 0;      // the protocol version the stepd answered with
    std::optional<std::uint64_t> sluid;  // the job's SLUID, from a 25.11+ stepd
    // The slurmstepd's pid (REQUEST_DAEMON_PID), set when it is the process that listens
    // on the socket as this pid namespace sees it; unset for a stepd in another namespace.
    std::optional<pid_t> stepd_pid;
    std::string socket_path;
};

// A step socket nobody listens on any more (connect: ECONNREFUSED), or which
// vanished while we looked (ENOENT): its slurmstepd is gone. Also when the stepd reset
// the handshake and a second connect found it so (the step ending under our question).
struct DeadStep {
    std::uint32_t job_id = 0;
    std::uint32_t step_id = 0;
    std::string socket_path;
};

// A step socket that could not be asked (timed out, refused, short or garbled answer):
// its step may be live. Anyone can fill a stepd's listen backlog, so this can be forced.
struct UnansweredStep {
    std::uint32_t job_id = 0;
    std::uint32_t step_id = 0;
    std::string socket_path;
    std::string error;  // why, without the path
    // The job's user, where the node itself tells it without the stepd (a job has one
    // user): another step of the job that answered, or the job's batch script, which
    // slurmstepd chowns to the job's user. The socket file does not tell: slurmstepd
    // creates it as root (req.c _domain_socket_create only chmods it 0777).
    std::optional<uid_t> job_uid = std::nullopt;
    std::string job_uid_from{};  // how it was told: "its step 9.extern answered", "its batch script <path>"
};

struct LocalJobState {
    std::vector<LocalStep> live;
    std::vector<DeadStep> dead;
    std::vector<UnansweredStep> unanswered;  // only from ask_local_steps
};

// The parts of a step socket's file name "<node>_<job>.<step>[.<component>]".
struct StepSocketName {
    std::uint32_t job_id = 0;
    std::uint32_t step_id = 0;
    std::optional<std::uint32_t> het_component;
    bool operator==(const StepSocketName&) const = default;
};

// A spool directory entry name "<node>_<job>.<step>[.<component>]" split up: the node
// is everything before the last '_' (a NodeName may hold '_', the ids never do).
struct NodeStepSocketName {
    std::string node;
    StepSocketName step;
};

// nullopt unless file_name is a step socket name of some node (decimal 32-bit ids,
// nothing else before or after, a non-empty node name).
std::optional<NodeStepSocketName> parse_any_step_socket_name(const std::string& file_name);

// Parses a spool directory entry name; nullopt unless it is a step socket name
// of node_name.
std::optional<StepSocketName> parse_step_socket_name(const std::string& file_name, const std::string& node_name);

// Where the step sockets of every slurmd on this host are: each spool directory and
// every node name the host runs (node_info.hpp's NodeInfo::step_sockets() builds it).
struct StepSpoolDir {
    std::string path;
    // A spool dir of a node whose slurmd is known to run (slurmd creates it at start):
    // missing, it is a lookup error. A node slurm.conf puts on this host but whose
    // slurmd was not seen may never have run here: missing, it has no steps.
    bool must_exist = true;
};
struct StepSockets {
    std::vector<StepSpoolDir> spool_dirs;
    std::vector<std::string> node_names;
    // Who may own a spool dir: root and SlurmdUser. A socket in a directory anyone else
    // could write to may be a planted one, so such a directory is a lookup error.
    std::set<uid_t> spool_owners{0};
};

// The one seam between the step-socket reader and the kernel, as kill/system_calls.hpp is
// for the executor: tests inject a subclass to act in a gap (end a step between its
// connect and its handshake, as a stepd whose tasks finish right then does).
class StepSocketCalls {
public:
    virtual ~StepSocketCalls() = default;
    // connect(2) of a step socket: 0, or -errno on failure.
    virtual int connect(int fd, const sockaddr_un& address);
};

StepSocketCalls& real_step_socket_calls();

// Lists every spool dir (each directory once, however many paths name it) for the
// step sockets of the known nodes and asks each slurmstepd for the step's uid, state
// and own pid. Entries that are not sockets, or not named like step sockets, are ignored.
//
// Lookup error when a directory cannot be read, is owned by a uid not in
// `spool_owners` or is writable by group or others; when a step socket's node is none of
// `node_names` (a slurmd this host runs that we do not know of: its users' work
// would look like strays); or when any step socket cannot be asked (timeout at the
// deadline, short read, unexpected reply, any error other than "nobody listens"): an
// unanswered step may still be live, so the caller must not decide on a partial picture.
// `protocol`: the client's release (the build's; tests play other rows of the table).
// `calls`: the kernel's (tests inject a gap).
Result<LocalJobState> read_local_steps(const StepSockets& where, std::chrono::steady_clock::time_point deadline,
                                       const StepdProtocol& protocol = build_stepd_protocol(),
                                       StepSocketCalls& calls = real_step_socket_calls());

// The step sockets the spool dirs hold now, asking none of them: the lookup errors of
// read_local_steps but the unanswered sockets.
Result<std::vector<StepSocketName>> list_local_steps(const StepSockets& where);

// As read_local_steps, but a step socket that cannot be asked is listed in `unanswered`
// rather than failing the lookup, with its job's user where the node tells it: the
// caller must then learn whether its job is live some other way (slurmctld), keep that
// user, or fail itself.
Result<LocalJobState> ask_local_steps(const StepSockets& where, std::chrono::steady_clock::time_point deadline,
                                      const StepdProtocol& protocol = build_stepd_protocol(),
                                      StepSocketCalls& calls = real_step_socket_calls());

// One node, one spool dir (which must exist).
Result<LocalJobState> read_local_steps(const std::string& spool_dir, const std::string& node_name,
                                       std::chrono::steady_clock::time_point deadline,
                                       const StepdProtocol& protocol = build_stepd_protocol(),
                                       StepSocketCalls& calls = real_step_socket_calls());

}  // namespace leftover::steps
