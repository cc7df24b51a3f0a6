// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/exemptions.hpp"
#include "support/fake_accounts.hpp"
#include "support/temp_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <doctest/doctest.h>

using namespace leftover;
using leftover::test::classify;
using leftover::test::FakeAccounts;
using leftover::test::TempDir;

namespace {

FakeAccounts site_accounts() {
    FakeAccounts accounts;
    accounts.names = {{1000, "ody"},    {1001, "alice"},  {1002, "bob"},    {1003, "bobby"},
                      {1004, "je.kim"}, {1005, "jeXkim"}, {1006, "s.shin"}, {1007, "nobody2"},
                      {1008, "nobody"}, {1009, "Alice"},  {1010, "j.baek"}};
    return accounts;
}

Exemptions load(const Config& config, std::set<uid_t> slurm_uids = {}) {
    auto exemptions = Exemptions::load(config, std::move(slurm_uids));
    REQUIRE(exemptions.ok());
    return exemptions.value();
}

Error load_error(const Config& config) {
    auto exemptions = Exemptions::load(config, {});
    REQUIRE_FALSE(exemptions.ok());
    return exemptions.error();
}

Config with_file(const std::string& path) {
    Config config;
    config.protected_users_files = {path};
    return config;
}

const char* kLocalUsers = "root\nje.kim\ns.shin\n";

}  // namespace

// The decision matrix of the reviewed epilog fix (shared/seeds/003), re-expressed:
// the file the config names is read; names match exactly; a failed lookup kills nothing.
TEST_CASE("exemptions: listed in the operators' file at the conventional path") {
    TempDir slurm_conf_dir;  // stands in for /etc/slurm
    const auto file = slurm_conf_dir.write("localusers.backup", kLocalUsers);
    const auto exemptions = load(with_file(file));
    const auto e = classify(exemptions, 1004, site_accounts());
    CHECK(e.protection == Protection::protected_users_file);
    CHECK(e.detail == file);
    CHECK(e.describe() == "protected: listed in " + file);
}

TEST_CASE("exemptions: listed in the operators' file at a custom path, and only the configured file counts") {
    TempDir custom;  // stands in for /opt/slurm
    TempDir unused;  // a list at another place that the config does not name
    const auto file = custom.write("localusers.backup", kLocalUsers);
    unused.write("localusers.backup", "alice\n");
    const auto exemptions = load(with_file(file));
    CHECK(classify(exemptions, 1004, site_accounts()).protection == Protection::protected_users_file);
    CHECK_FALSE(classify(exemptions, 1001, site_accounts()).is_protected());
}

TEST_CASE("exemptions: a definite non-match is not protected") {
    TempDir dir;
    const auto exemptions = load(with_file(dir.write("localusers.backup", kLocalUsers)));
    const auto e = classify(exemptions, 1001, site_accounts());
    CHECK(e.protection == Protection::none);
    CHECK(e.account == "alice");
}

TEST_CASE("exemptions: a missing file is a lookup error naming it") {
    TempDir dir;
    const auto error = load_error(with_file(dir / "localusers.backup"));
    CHECK(error.kind == ErrorKind::lookup);
    CHECK(error.message.find(dir / "localusers.backup") != std::string::npos);
    CHECK(error.message.find("does not exist") != std::string::npos);
}

TEST_CASE("exemptions: an unreadable file is a lookup error naming it") {
    TempDir dir;
    SUBCASE("a directory") {
        ::mkdir((dir / "localusers.backup").c_str(), 0755);
        const auto error = load_error(with_file(dir / "localusers.backup"));
        CHECK(error.kind == ErrorKind::lookup);
        CHECK(error.message.find("is a directory") != std::string::npos);
    }
    SUBCASE("a path through a regular file (open fails even for root)") {
        const auto file = dir.write("plain", "x\n");
        const auto error = load_error(with_file(file + "/localusers.backup"));
        CHECK(error.kind == ErrorKind::lookup);
        CHECK(error.message.find("cannot open") != std::string::npos);
    }
    SUBCASE("a fifo") {
        ::mkfifo((dir / "fifo").c_str(), 0644);
        CHECK(load_error(with_file(dir / "fifo")).message.find("not a regular file") != std::string::npos);
    }
}

TEST_CASE("exemptions: an untrusted file is a lookup error, not a licence to kill") {
    TempDir dir;
    SUBCASE("writable by others") {
        const auto error = load_error(with_file(dir.write("localusers.backup", kLocalUsers, 0666)));
        CHECK(error.kind == ErrorKind::lookup);
        CHECK(error.message.find("writable by group or others") != std::string::npos);
    }
    SUBCASE("owned by a user") {
        const auto error = load_error(with_file(dir.write("localusers.backup", kLocalUsers, 0644, 41001)));
        CHECK(error.message.find("owned by uid 41001") != std::string::npos);
    }
    SUBCASE("a symlink") {
        const auto real = dir.write("real", kLocalUsers);
        REQUIRE(::symlink(real.c_str(), (dir / "localusers.backup").c_str()) == 0);
        CHECK(load_error(with_file(dir / "localusers.backup")).message.find("symbolic link") != std::string::npos);
    }
}

TEST_CASE("exemptions: a list holding jeXkim does not protect je.kim (no regex)") {
    TempDir dir;
    const auto exemptions = load(with_file(dir.write("localusers.backup", "root\njeXkim\n")));
    CHECK_FALSE(classify(exemptions, 1004, site_accounts()).is_protected());
    CHECK(classify(exemptions, 1005, site_accounts()).is_protected());
}

TEST_CASE("exemptions: dotted names match exactly, from the file and from protected_users") {
    TempDir dir;
    Config config = with_file(dir.write("ops", "s.shin\n"));
    config.protected_users = {"j.baek"};
    const auto exemptions = load(config);
    CHECK(classify(exemptions, 1006, site_accounts()).protection == Protection::protected_users_file);
    CHECK(classify(exemptions, 1010, site_accounts()).protection == Protection::protected_users);
    CHECK_FALSE(classify(exemptions, 1004, site_accounts()).is_protected());
}

TEST_CASE("exemptions: substring and case look-alikes do not match") {
    Config config;
    config.protected_users = {"bob", "ody", "alice", "nobody2"};
    const auto exemptions = load(config);
    const auto accounts = site_accounts();
    CHECK(classify(exemptions, 1002, accounts).is_protected());        // bob
    CHECK_FALSE(classify(exemptions, 1003, accounts).is_protected());  // bobby
    CHECK(classify(exemptions, 1000, accounts).is_protected());        // ody
    CHECK_FALSE(classify(exemptions, 1008, accounts).is_protected());  // nobody
    CHECK_FALSE(classify(exemptions, 1009, accounts).is_protected());  // Alice
}

TEST_CASE("exemptions: users file format") {
    auto names = parse_users_file("# operators\n\n  je.kim  \n\ts.shin\r\n#root\nroot", "f");
    REQUIRE(names.ok());
    CHECK(names.value() == std::vector<std::string>{"je.kim", "s.shin", "root"});

    auto bad = parse_users_file("je.kim\nbad name\n", "/etc/slurm/localusers.backup");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().kind == ErrorKind::lookup);
    CHECK(bad.error().message == "/etc/slurm/localusers.backup:2: expected one account name per line, got 'bad name'");
}

TEST_CASE("exemptions: uid 0 is protected whatever uid_min says") {
    Config config;
    config.uid_min = 0;
    CHECK(classify(load(config), 0, site_accounts()).protection == Protection::root);
}

TEST_CASE("exemptions: uids at and around uid_min and uid_max") {
    Config config;
    config.uid_min = 1000;
    config.uid_max = 60000;
    FakeAccounts accounts;
    for (uid_t uid : {999u, 1000u, 1001u, 59999u, 60000u, 60001u, 64030u})
        accounts.names.emplace(uid, std::string("u"));
    const auto exemptions = load(config);
    CHECK(classify(exemptions, 999, accounts).protection == Protection::below_uid_min);
    CHECK_FALSE(classify(exemptions, 1000, accounts).is_protected());
    CHECK_FALSE(classify(exemptions, 1001, accounts).is_protected());
    CHECK_FALSE(classify(exemptions, 59999, accounts).is_protected());
    CHECK_FALSE(classify(exemptions, 60000, accounts).is_protected());
    CHECK(classify(exemptions, 60001, accounts).protection == Protection::above_uid_max);
    CHECK(classify(exemptions, 64030, accounts).protection == Protection::above_uid_max);  // Debian's slurm
    CHECK(exemptions.by_uid(999).describe() == "protected: uid below uid_min 1000");
}

TEST_CASE("exemptions: Slurm's own accounts are protected") {
    Config config;
    config.uid_max = 70000;
    const auto exemptions = load(config, {64030});
    CHECK(classify(exemptions, 64030, site_accounts()).protection == Protection::slurm_account);
}

TEST_CASE("exemptions: a uid whose account lookup fails, or that has no account, is kept as unknown") {
    auto accounts = site_accounts();
    accounts.failing = {1001};
    Config config;
    config.protected_users = {"bob"};
    const auto exemptions = load(config);
    const auto failed = classify(exemptions, 1001, accounts);
    CHECK(failed.protection == Protection::unknown_uid);
    CHECK(failed.detail.find("account lookup failed") != std::string::npos);
    const auto none = classify(exemptions, 4242, accounts);
    CHECK(none.protection == Protection::unknown_uid);
    CHECK(none.detail == "no account has this uid");
}

TEST_CASE("fault catalogue: odd account names match exactly, numeric-looking ones as names, never as uids") {
    const std::string longest = "a23456789012345678901234567890_2";  // 32 characters, useradd's limit
    FakeAccounts accounts;
    accounts.names = {{2000, "j.doe-x"}, {2001, "host01$"}, {2002, longest}, {2003, longest + "3"},
                      {2004, "41002"},   {2005, "-"},       {2006, "."},     {41002, "lo_bob"}};
    TempDir dir;
    const auto file = dir.write("operators", "j.doe-x\nhost01$\n" + longest + "\n41002\n");
    const auto listed = parse_users_file("j.doe-x\nhost01$\n" + longest + "\n41002\n", file);
    REQUIRE(listed.ok());
    CHECK(listed.value() == std::vector<std::string>{"j.doe-x", "host01$", longest, "41002"});

    auto yaml = parse_config("protected_users: [\"j.doe-x\", \"host01$\", \"" + longest + "\", \"41002\"]\n", "y");
    REQUIRE(yaml.ok());
    // Unquoted, in YAML or JSON, 41002 is still the text of a name.
    auto unquoted =
        parse_config("{\"protected_users\": [\"j.doe-x\", \"host01$\", \"" + longest + "\", 41002]}\n", "j");
    REQUIRE(unquoted.ok());
    CHECK(unquoted.value().protected_users == yaml.value().protected_users);
    for (const Config& config : {yaml.value(), unquoted.value(), with_file(file)}) {
        const auto exemptions = load(config);
        CHECK(classify(exemptions, 2000, accounts).is_protected());
        CHECK(classify(exemptions, 2001, accounts).is_protected());
        CHECK(classify(exemptions, 2002, accounts).is_protected());
        CHECK_FALSE(classify(exemptions, 2003, accounts).is_protected());   // one character longer
        CHECK(classify(exemptions, 2004, accounts).is_protected());         // the account named 41002
        CHECK_FALSE(classify(exemptions, 41002, accounts).is_protected());  // not the uid 41002
        CHECK_FALSE(classify(exemptions, 2005, accounts).is_protected());
        CHECK_FALSE(classify(exemptions, 2006, accounts).is_protected());
    }
}

TEST_CASE("fault catalogue: an alias protects the uid it resolves to, and says by which name") {
    auto accounts = site_accounts();
    accounts.aliases = {{"alice.admin", 1001}};  // a second passwd entry for alice's uid
    Config config;
    config.protected_users = {"alice.admin"};
    const auto exemptions = load(config);
    const auto e = classify(exemptions, 1001, accounts);
    CHECK(e.protection == Protection::protected_users);
    CHECK(e.account == "alice");
    CHECK(e.describe() == "protected: listed in protected_users as alice.admin");
    CHECK_FALSE(classify(exemptions, 1002, accounts).is_protected());
}

TEST_CASE("fault catalogue: a listed name whose uid cannot be looked up keeps every uid it could be") {
    auto accounts = site_accounts();
    accounts.failing_names = {"s.shin"};
    Config config;
    config.protected_users = {"s.shin"};
    const auto e = classify(load(config), 1002, accounts);
    CHECK(e.protection == Protection::unknown_uid);
    CHECK(e.detail.find("protected user 's.shin' (listed in protected_users)") != std::string::npos);
}

TEST_CASE("fault catalogue: warnings name each listed name without an account, and where it is listed") {
    TempDir dir;
    const auto file = dir.write("localusers", "je.kim\nje.kmi\n");
    auto accounts = site_accounts();
    accounts.failing_names = {"flaky"};
    Config config = with_file(file);
    config.protected_users = {"alice", "alcie", "flaky"};
    const auto warnings = listed_name_warnings(load(config), accounts, std::chrono::steady_clock::now());
    REQUIRE(warnings.size() == 3);
    CHECK(warnings[0] == "protected user 'alcie' (listed in protected_users) has no account: it protects nobody");
    CHECK(warnings[1].starts_with("protected user 'flaky' (listed in protected_users): account lookup failed: "));
    CHECK(warnings[2] == "protected user 'je.kmi' (listed in " + file + ") has no account: it protects nobody");
}
