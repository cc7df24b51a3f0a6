// SPDX-License-Identifier: GPL-2.0-or-later
// The slurmstepd socket protocol of each Slurm release leftover builds for, and how a
// stepd's answers are read. Checked in Slurm's source at each release's tag:
// src/common/slurm_protocol_common.h (versions),
// src/common/stepd_api.{c,h} (client, request numbers, slurmstepd_state_t) and
// src/slurmd/slurmstepd/req.c (_handle_accept, _handle_state, _handle_uid, _handle_daemon_pid).
//
// Unchanged from 22.05 to 26.05: the handshake (client sends its version as an int, the
// stepd answers its own version or -1), REQUEST_STATE 5, REQUEST_STEP_UID 20,
// REQUEST_DAEMON_PID 9, 4-byte replies, any number of requests on one connection.
#pragma once

#include <cstdint>
#include <iterator>
#include <optional>
#include <string>

namespace leftover::steps {

constexpr std::int32_t protocol_version(int n) { return n << 8; }  // SLURM_<rel>_PROTOCOL_VERSION

// One Slurm release as far as the step sockets go.
struct StepdProtocol {
    int major = 0;
    int minor = 0;
    std::int32_t version = 0;       // what this release's client sends and its stepd answers
    std::int32_t oldest_stepd = 0;  // SLURM_MIN_PROTOCOL_VERSION: older stepds cannot run beside its slurmd
};

// Every release leftover builds for. A release missing here does not build: re-check the
// files above for it and add a row.
inline constexpr StepdProtocol kStepdProtocols[] = {
    {22, 5, protocol_version(38), protocol_version(36)},  {23, 2, protocol_version(39), protocol_version(37)},
    {23, 11, protocol_version(40), protocol_version(38)}, {24, 5, protocol_version(41), protocol_version(39)},
    {24, 11, protocol_version(42), protocol_version(39)}, {25, 5, protocol_version(43), protocol_version(40)},
    {25, 11, protocol_version(44), protocol_version(41)}, {26, 5, protocol_version(45), protocol_version(42)},
};

// The row's index, -1 when the release has none.
constexpr int stepd_protocol_index(int major, int minor) {
    for (int i = 0; i < static_cast<int>(std::size(kStepdProtocols)); ++i)
        if (kStepdProtocols[i].major == major && kStepdProtocols[i].minor == minor) return i;
    return -1;
}

// The row of the Slurm release this build is for (slurm/slurm_version.h).
const StepdProtocol& build_stepd_protocol();

// REQUEST_SLUID (1, from 25.11: stepd_api.h, req.c _handle_sluid) answers the job's
// 8-byte SLUID; an older stepd drops the connection on it.
constexpr std::int32_t kFirstWithSluid = protocol_version(44);  // 25.11

// A SLUID as Slurm prints it and names 26.05's job cgroups: "s" and 13 digits of
// Crockford's base32, most significant first (src/common/sluid.c, print_sluid).
std::string sluid_name(std::uint64_t sluid);

// What a step is doing, whatever number its stepd uses for it.
enum class StepdState { not_running, starting, running, cancelled, ending };

// slurmstepd_state_t as numbered by a stepd that answered `stepd_version`: 23.11 inserted
// CANCELLED = 3 before ENDING, which moved to 4. Unset: not a state that stepd has.
std::optional<StepdState> decode_stepd_state(std::int32_t stepd_version, std::int32_t raw);

const char* to_string(StepdState state);

// The checks of a stepd's replies, in the order local_steps.cpp asks: the handshake's
// version, REQUEST_STEP_UID, REQUEST_STATE. Pure, so that tests and tests/fuzz feed them
// anything; each returns why the reply cannot be trusted, or nothing.
// A version reply is refused when negative (the stepd refused ours), newer than the client's
// release (its state numbering is unknown) or older than the oldest stepd that release's
// slurmd runs beside.
std::optional<std::string> stepd_version_error(const StepdProtocol& client, std::int32_t reply);
std::optional<std::string> step_uid_error(std::uint32_t reply);
std::optional<std::string> stepd_state_error(std::int32_t stepd_version, std::int32_t reply);

// "22.05" for 38<<8, "24.11" for 42<<8; the raw number for a version no row has.
std::string describe_protocol_version(std::int32_t version);

// "leftover 0.1.0 built for Slurm 22.05.8": the release this build speaks to, for both
// front ends' banners.
std::string build_banner();

}  // namespace leftover::steps
