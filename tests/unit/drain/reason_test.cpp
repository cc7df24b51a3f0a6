// SPDX-License-Identifier: GPL-2.0-or-later
// The reason a drained node shows: what an admin reads, bounded, unforgeable by a name.
#include "drain/reason.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace leftover::drain;

TEST_CASE("drain reason: names the count, the user and the state, as an admin reads it") {
    CHECK(survivors_reason({{41002, "bob", 'D'}, {41002, "bob", 'D'}}) ==
          "leftover: 2 processes of bob survived SIGKILL (D)");
    CHECK(survivors_reason({{41002, "bob", 'D'}}) == "leftover: 1 process of bob survived SIGKILL (D)");
    // Users by count, most first; an unnamed uid as "uid N"; every state once.
    CHECK(survivors_reason({{41001, "alice", 'T'}, {41002, "bob", 'D'}, {41002, "bob", 'D'}, {41003, "", 'D'}}) ==
          "leftover: 4 processes of bob, alice, uid 41003 survived SIGKILL (D,T)");
}

TEST_CASE("drain reason: a hostile user name is escaped, never a second line or a quote") {
    const std::string reason = survivors_reason({{41002, "bob\nState=RESUME 'x'\x1b[2J\xff", 'D'}});
    CHECK(reason.find('\n') == std::string::npos);
    CHECK(reason.find('\'') == std::string::npos);
    CHECK(reason.find('\x1b') == std::string::npos);
    for (const char c : reason) CHECK((c >= 0x20 && c < 0x7f));
    CHECK(reason ==
          "leftover: 1 process of bob\\x0aState\\x3dRESUME\\x20\\x27x\\x27\\x1b\\x5b2J\\xff survived SIGKILL (D)");
}

// slurm_update_node carries the reason as one packed string and slurmctld keeps it as sent
// (24.11 node_mgr.c, update_node), so no byte needs escaping on the way. What an admin or a
// script reads must not be forged by a name: `scontrol -o show node` prints
// "Reason=<reason> [<user>@<time>]" among space-separated key=value pairs, a new line for
// each line of the reason (api/node_info.c, slurm_sprint_node_table), the reason lists the
// users with ", ", and bytes that are not UTF-8 trouble terminals and JSON output.
TEST_CASE("drain reason: a name cannot forge a second user, a key=value pair, a quote or who set it") {
    CHECK(survivors_reason({{41002, "bob, alice", 'D'}}) ==
          "leftover: 1 process of bob\\x2c\\x20alice survived SIGKILL (D)");
    CHECK(survivors_reason({{41002, "x State=IDLE", 'D'}}) ==
          "leftover: 1 process of x\\x20State\\x3dIDLE survived SIGKILL (D)");
    CHECK(survivors_reason({{41002, "\"bob\"", 'D'}}) == "leftover: 1 process of \\x22bob\\x22 survived SIGKILL (D)");
    CHECK(survivors_reason({{41002, "b [root@2026-12-03T09:00:00]", 'D'}}) ==
          "leftover: 1 process of b\\x20\\x5broot@2026-12-03T09\\x3a00\\x3a00\\x5d survived SIGKILL (D)");
    CHECK(survivors_reason({{41002, "\xc3\xa9t\xe9", 'D'}}) ==
          "leftover: 1 process of \\xc3\\xa9t\\xe9 survived SIGKILL (D)");
    CHECK(survivors_reason({{41002, "a\\x2c", 'D'}}) == "leftover: 1 process of a\\x5cx2c survived SIGKILL (D)");
    // The usual account names stay as they are, machine and domain accounts too.
    CHECK(survivors_reason({{41002, "lo_drain", 'D'},
                            {41003, "svc-web.01", 'D'},
                            {41004, "HOST$", 'D'},
                            {41005, "ann@ad.example", 'D'}}) ==
          "leftover: 4 processes of HOST$, ann@ad.example, lo_drain, svc-web.01 survived SIGKILL (D)");
}

TEST_CASE("drain reason: the bound fits what Slurm keeps of a reason, escaped names included") {
    // slurmdbd's event table keeps a node's reason as tinytext, 255 bytes (accounting_storage_mysql.c,
    // event_table_fields, 22.05 to 26.05); slurmctld itself sets no limit.
    static_assert(kMaxDrainReason <= 255);
    std::vector<Survivor> hostile;
    for (uid_t uid = 41001; uid < 41040; ++uid)
        hostile.push_back({uid, std::string(40, ',') + std::to_string(uid), 'D'});
    const std::string reason = survivors_reason(hostile);
    CHECK(reason.size() <= kMaxDrainReason);
    CHECK(reason.ends_with(" more survived SIGKILL (D)"));
    CHECK(reason.find(",,") == std::string::npos);
}

TEST_CASE("drain reason: never longer than the bound, however many users or however long a name") {
    std::vector<Survivor> many;
    for (uid_t uid = 41001; uid < 41099; ++uid) many.push_back({uid, "user" + std::to_string(uid), 'D'});
    const std::string crowd = survivors_reason(many);
    CHECK(crowd.size() <= kMaxDrainReason);
    CHECK(crowd.starts_with("leftover: 98 processes of user41001, "));
    CHECK(crowd.find(" more survived SIGKILL (D)") != std::string::npos);

    const std::string long_name = survivors_reason({{41001, std::string(500, '\x01'), 'D'}});
    CHECK(long_name.size() <= kMaxDrainReason);
    CHECK(long_name.starts_with("leftover: 1 process of \\x01\\x01"));
    CHECK(long_name.ends_with("\\x01... survived SIGKILL (D)"));

    const std::string text = bounded_reason(std::string(300, 'x') + "\n");
    CHECK(text.size() == kMaxDrainReason);
    CHECK(text.ends_with("..."));
    CHECK(bounded_reason("leftover: ERROR: 2 stray processes\nof 1 user") ==
          "leftover: ERROR: 2 stray processes of 1 user");
}
