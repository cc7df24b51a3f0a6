// SPDX-License-Identifier: GPL-2.0-or-later
#include "steps/stepd_protocol.hpp"

#include <fmt/format.h>
#include <slurm/slurm_version.h>

namespace leftover::steps {
namespace {

constexpr int kBuildMajor = SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER);
constexpr int kBuildMinor = SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER);
constexpr int kBuildRow = stepd_protocol_index(kBuildMajor, kBuildMinor);
static_assert(kBuildRow >= 0,
              "this Slurm release is not in steps/stepd_protocol.hpp: re-check the step-socket protocol "
              "(slurm_protocol_common.h, stepd_api.h/.c, slurmstepd/req.c) for it and add a row");

// The first release whose stepds number CANCELLED 3 and ENDING 4 (commit 4fd6728be9).
constexpr std::int32_t kCancelledInserted = protocol_version(40);  // 23.11

}  // namespace

const StepdProtocol& build_stepd_protocol() { return kStepdProtocols[kBuildRow]; }

std::optional<StepdState> decode_stepd_state(std::int32_t stepd_version, std::int32_t raw) {
    switch (raw) {
        case 0: return StepdState::not_running;
        case 1: return StepdState::starting;
        case 2: return StepdState::running;
        case 3: return stepd_version < kCancelledInserted ? StepdState::ending : StepdState::cancelled;
        case 4:
            if (stepd_version >= kCancelledInserted) return StepdState::ending;
            return std::nullopt;
        default: return std::nullopt;
    }
}

std::string sluid_name(std::uint64_t sluid) {
    constexpr char digits[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    std::string name(14, 's');
    // 13 digits of 5 bits hold 65: the first carries only the top 4 bits.
    for (int i = 0; i < 13; ++i) name[static_cast<std::size_t>(13 - i)] = digits[(sluid >> (5 * i)) & 0x1f];
    return name;
}

const char* to_string(StepdState state) {
    switch (state) {
        case StepdState::not_running: return "not_running";
        case StepdState::starting: return "starting";
        case StepdState::running: return "running";
        case StepdState::cancelled: return "cancelled";
        case StepdState::ending: return "ending";
    }
    return "?";
}

std::optional<std::string> stepd_version_error(const StepdProtocol& client, std::int32_t reply) {
    if (reply < 0)
        return fmt::format("slurmstepd refused the protocol version {} of Slurm {} (replied {})", client.version,
                           describe_protocol_version(client.version), reply);
    if (reply < client.oldest_stepd || reply > client.version)
        return fmt::format("unexpected protocol version reply {} (expected {} to {})", reply, client.oldest_stepd,
                           client.version);
    return std::nullopt;
}

std::optional<std::string> step_uid_error(std::uint32_t reply) {
    if (reply == static_cast<std::uint32_t>(-1)) return "unexpected REQUEST_STEP_UID reply: uid -1";
    return std::nullopt;
}

std::optional<std::string> stepd_state_error(std::int32_t stepd_version, std::int32_t reply) {
    if (decode_stepd_state(stepd_version, reply)) return std::nullopt;
    return fmt::format("unexpected REQUEST_STATE reply: state {} from a Slurm {} stepd", reply,
                       describe_protocol_version(stepd_version));
}

std::string describe_protocol_version(std::int32_t version) {
    for (const StepdProtocol& row : kStepdProtocols)
        if (row.version == version) return fmt::format("{}.{:02}", row.major, row.minor);
    return fmt::format("protocol {}", version);
}

std::string build_banner() {
    return fmt::format("leftover {} built for Slurm {}.{:02}.{}", LEFTOVER_VERSION,
                       SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER), SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER),
                       SLURM_VERSION_MICRO(SLURM_VERSION_NUMBER));
}

}  // namespace leftover::steps
