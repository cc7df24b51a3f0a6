// SPDX-License-Identifier: GPL-2.0-or-later
#include "steps/stepd_protocol.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <slurm/slurm_version.h>

using namespace leftover::steps;

TEST_CASE("stepd protocol table: this build's release has a row, versions ascend, oldest below own") {
    const StepdProtocol& build = build_stepd_protocol();
    CHECK(build.major == SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER));
    CHECK(build.minor == SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER));
    std::int32_t previous = 0;
    for (const StepdProtocol& row : kStepdProtocols) {
        CAPTURE(row.version);
        CHECK(row.version > previous);
        CHECK(row.oldest_stepd < row.version);
        previous = row.version;
    }
    CHECK(stepd_protocol_index(26, 11) == -1);
    CHECK(describe_protocol_version(42 << 8) == "24.11");
    CHECK(describe_protocol_version(46 << 8) == "protocol 11776");
}

TEST_CASE("stepd state numbering: CANCELLED was inserted at 3 in 23.11 and ENDING moved to 4") {
    CHECK(decode_stepd_state(38 << 8, 2) == StepdState::running);
    CHECK(decode_stepd_state(38 << 8, 3) == StepdState::ending);
    CHECK(decode_stepd_state(39 << 8, 3) == StepdState::ending);
    CHECK_FALSE(decode_stepd_state(39 << 8, 4));
    CHECK(decode_stepd_state(40 << 8, 3) == StepdState::cancelled);
    CHECK(decode_stepd_state(40 << 8, 4) == StepdState::ending);
    CHECK(decode_stepd_state(45 << 8, 0) == StepdState::not_running);
    CHECK(decode_stepd_state(45 << 8, 1) == StepdState::starting);
    CHECK_FALSE(decode_stepd_state(45 << 8, 5));
    CHECK_FALSE(decode_stepd_state(45 << 8, -1));
}

TEST_CASE("SLUID names: s and 13 Crockford base32 digits, most significant first") {
    CHECK(sluid_name(0) == "s0000000000000");
    CHECK(sluid_name(1) == "s0000000000001");
    CHECK(sluid_name(31) == "s000000000000Z");
    CHECK(sluid_name(32) == "s0000000000010");
    // The first digit holds only the top 4 bits of 64.
    CHECK(sluid_name(~std::uint64_t{0}) == "sFZZZZZZZZZZZZ");
    CHECK(sluid_name(std::uint64_t{1} << 63) == "s8000000000000");
}

TEST_CASE("stepd reply checks: every release row accepts its own and older stepds, refuses the rest") {
    for (const StepdProtocol& client : kStepdProtocols) {
        CAPTURE(client.version);
        CHECK_FALSE(stepd_version_error(client, client.version));
        CHECK_FALSE(stepd_version_error(client, client.oldest_stepd));
        CHECK(stepd_version_error(client, -1) ==
              fmt::format("slurmstepd refused the protocol version {} of Slurm {}.{:02} (replied -1)", client.version,
                          client.major, client.minor));
        CHECK(stepd_version_error(client, client.version + 1) ==
              fmt::format("unexpected protocol version reply {} (expected {} to {})", client.version + 1,
                          client.oldest_stepd, client.version));
        CHECK(stepd_version_error(client, client.oldest_stepd - 1));
        CHECK(stepd_version_error(client, 0));
    }
    CHECK_FALSE(step_uid_error(0));
    CHECK_FALSE(step_uid_error(41001));
    CHECK(step_uid_error(0xffffffffU) == "unexpected REQUEST_STEP_UID reply: uid -1");
    CHECK_FALSE(stepd_state_error(40 << 8, 4));
    CHECK(stepd_state_error(39 << 8, 4) == "unexpected REQUEST_STATE reply: state 4 from a Slurm 23.02 stepd");
    CHECK(stepd_state_error(46 << 8, 9) == "unexpected REQUEST_STATE reply: state 9 from a Slurm protocol 11776 stepd");
}
