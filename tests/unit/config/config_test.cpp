// SPDX-License-Identifier: GPL-2.0-or-later
#include "config/config.hpp"
#include "support/temp_dir.hpp"

#include <unistd.h>

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

using namespace leftover;
using leftover::test::TempDir;

namespace {

// The predecessor's /etc/leftover.conf, verbatim from its README.
const char* kSeedJson = R"({
  "protected_users": [
    "alice",
    "bob"
  ],
  "debuglevel": "info",
  "slew": 10,
  "slew_max": 40
}
)";

std::string error_of(const std::string& text) {
    auto config = parse_config(text, "/etc/leftover.conf");
    REQUIRE_FALSE(config.ok());
    CHECK(config.error().kind == ErrorKind::config);
    return config.error().message;
}

}  // namespace

TEST_CASE("config: the predecessor's JSON loads unchanged with defaults for the rest") {
    TempDir dir;
    auto config = load_config(dir.write("leftover.conf", kSeedJson), true);
    REQUIRE(config.ok());
    CHECK(config->protected_users == std::vector<std::string>{"alice", "bob"});
    CHECK(config->debuglevel == LogLevel::info);
    CHECK(config->slew == 10);
    CHECK(config->slew_max == 40);
    CHECK(config->protected_users_files.empty());
    CHECK(config->uid_min == 1000);
    CHECK(config->uid_max == 60000);
    CHECK(config->scope == Scope::node);
    CHECK(config->dry_run == false);
    CHECK(config->job_source == JobSource::local);
    CHECK(config->slurm_timeout == 2);
    CHECK(config->grace == 5);
    CHECK(config->loaded_from == dir / "leftover.conf");
}

TEST_CASE("config: YAML with every key") {
    auto config = parse_config(R"(
protected_users: [je.kim, s.shin]
protected_users_files:
  - /etc/slurm/localusers.backup
uid_min: 2000
uid_max: 50000
debuglevel: debug
slew: 1.5
slew_max: 3
scope: job_user
dry_run: true
job_source: controller
slurm_timeout: 0.5
grace: 0
)",
                               "test.yaml");
    REQUIRE(config.ok());
    CHECK(config->protected_users == std::vector<std::string>{"je.kim", "s.shin"});
    CHECK(config->protected_users_files == std::vector<std::string>{"/etc/slurm/localusers.backup"});
    CHECK(config->uid_min == 2000);
    CHECK(config->uid_max == 50000);
    CHECK(config->debuglevel == LogLevel::debug);
    CHECK(config->slew == 1.5);
    CHECK(config->slew_max == 3);
    CHECK(config->scope == Scope::job_user);
    CHECK(config->dry_run);
    CHECK(config->job_source == JobSource::controller);
    CHECK(config->slurm_timeout == 0.5);
    CHECK(config->grace == 0);
}

TEST_CASE("config: every key is optional") {
    for (const char* text : {"", "{}", "# only a comment\n"}) {
        auto config = parse_config(text, "x");
        REQUIRE(config.ok());
        CHECK(config->protected_users.empty());
        CHECK(config->uid_min == 1000);
        CHECK_FALSE(config->slew_max.has_value());
        CHECK(config->grace == 5);
    }
}

TEST_CASE("config: a missing file at the default path means all defaults") {
    TempDir dir;
    auto config = load_config(dir / "absent.conf", false);
    REQUIRE(config.ok());
    CHECK(config->loaded_from.empty());
    CHECK(config->uid_min == 1000);
}

TEST_CASE("config: a missing file at a path given explicitly is an error naming it") {
    TempDir dir;
    auto config = load_config(dir / "absent.conf", true);
    REQUIRE_FALSE(config.ok());
    CHECK(config.error().kind == ErrorKind::config);
    CHECK(config.error().message.find(dir / "absent.conf") != std::string::npos);
    CHECK(config.error().message.find("does not exist") != std::string::npos);
}

TEST_CASE("config: an unknown key is an error naming the key and line") {
    const auto message = error_of("{\n  \"protected_user\": [\"alice\"]\n}\n");
    CHECK(message.find("/etc/leftover.conf:2") != std::string::npos);
    CHECK(message.find("unknown key 'protected_user'") != std::string::npos);
    CHECK(message.find("protected_users") != std::string::npos);  // lists the keys it knows
}

TEST_CASE("config: a syntax error names the file and line") {
    const auto message = error_of("{\n  \"slew\": 10,\n  \"debuglevel\": \n  [\n}");
    CHECK(message.find("/etc/leftover.conf:") != std::string::npos);
    CHECK(message.find("syntax error") != std::string::npos);
}

TEST_CASE("config: not a mapping") { CHECK(error_of("[1, 2]").find("expected a mapping") != std::string::npos); }

TEST_CASE("config: a key given twice") {
    CHECK(error_of("slew: 1\nslew: 2\n").find("'slew' appears twice") != std::string::npos);
}

TEST_CASE("config: wrong types name the key and what was expected") {
    struct Case {
        const char* text;
        const char* key;
        const char* expected;
    };
    const Case cases[] = {
        {"protected_users: alice", "protected_users", "a list of account names"},
        {"protected_users: [alice, [bob]]", "protected_users", "non-empty account name"},
        {"protected_users: ['']", "protected_users", "non-empty account name"},
        {"protected_users_files: /etc/x", "protected_users_files", "a list of paths"},
        {"protected_users_files: [relative/path]", "protected_users_files", "an absolute path"},
        {"uid_min: many", "uid_min", "a whole number"},
        {"uid_min: -1", "uid_min", "a whole number"},
        {"uid_min: 1.5", "uid_min", "a whole number"},
        {"uid_max: \"60000\"", "uid_max", "a whole number"},
        {"debuglevel: verbose", "debuglevel", "one of"},
        {"debuglevel: [info]", "debuglevel", "one of"},
        {"slew: -1", "slew", "seconds >= 0"},
        {"slew: ten", "slew", "seconds >= 0"},
        {"slew_max: -5", "slew_max", "seconds >= 0"},
        {"scope: cluster", "scope", "one of job_user node"},
        {"dry_run: yes", "dry_run", "true or false"},
        {"dry_run: \"true\"", "dry_run", "true or false"},
        {"dry_run: 1", "dry_run", "true or false"},
        {"job_source: squeue", "job_source", "one of controller local"},
        {"slurm_timeout: 0", "slurm_timeout", "from 0 to 60"},
        {"slurm_timeout: 61", "slurm_timeout", "from 0 to 60"},
        {"grace: 31", "grace", "from 0 to 30"},
        {"grace: -0.1", "grace", "from 0 to 30"},
        {"grace: 5s", "grace", "from 0 to 30"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.text);
        const auto message = error_of(c.text);
        CHECK(message.find(std::string("key '") + c.key + "'") != std::string::npos);
        CHECK(message.find(c.expected) != std::string::npos);
        CHECK(message.find("/etc/leftover.conf:1") != std::string::npos);
    }
}

TEST_CASE("config: slew_max below slew and uid_max below uid_min are errors") {
    CHECK(error_of("slew: 10\nslew_max: 5\n").find("key 'slew_max': expected a value >= slew") != std::string::npos);
    CHECK(error_of("uid_min: 5000\nuid_max: 4000\n").find("key 'uid_max': expected a value >= uid_min") !=
          std::string::npos);
    auto equal = parse_config("slew: 10\nslew_max: 10\nuid_min: 7\nuid_max: 7\n", "x");
    CHECK(equal.ok());
}

TEST_CASE("config: boundary values are accepted") {
    auto config = parse_config("grace: 30\nslurm_timeout: 60\nuid_min: 0\nuid_max: 4294967294\nslew: 0\n", "x");
    REQUIRE(config.ok());
    CHECK(config->grace == 30);
    CHECK(config->uid_min == 0);
    CHECK(config->uid_max == 4294967294u);
}

TEST_CASE("config: an untrusted config file is a config error") {
    TempDir dir;
    SUBCASE("group-writable") {
        auto config = load_config(dir.write("c", "{}", 0664), true);
        REQUIRE_FALSE(config.ok());
        CHECK(config.error().kind == ErrorKind::config);
        CHECK(config.error().message.find("writable by group or others") != std::string::npos);
    }
    SUBCASE("world-writable") {
        auto config = load_config(dir.write("c", "{}", 0646), true);
        REQUIRE_FALSE(config.ok());
        CHECK(config.error().message.find("mode 0646") != std::string::npos);
    }
    SUBCASE("not owned by root") {
        auto config = load_config(dir.write("c", "{}", 0644, 41001), true);
        REQUIRE_FALSE(config.ok());
        CHECK(config.error().message.find("owned by uid 41001") != std::string::npos);
    }
    SUBCASE("a symlink, even to a trusted file") {
        const auto target = dir.write("real", "{}");
        REQUIRE(::symlink(target.c_str(), (dir / "link").c_str()) == 0);
        auto config = load_config(dir / "link", true);
        REQUIRE_FALSE(config.ok());
        CHECK(config.error().message.find("symbolic link") != std::string::npos);
    }
    SUBCASE("a directory") {
        auto config = load_config(dir.path(), true);
        REQUIRE_FALSE(config.ok());
        CHECK(config.error().message.find("is a directory") != std::string::npos);
    }
    SUBCASE("untrusted at the default path is not 'missing'") {
        auto config = load_config(dir.write("c", "{}", 0666), false);
        CHECK_FALSE(config.ok());
    }
}

TEST_CASE("config: cleanup takes its three words and cleanup_dirs absolute paths, both off by default") {
    CHECK(Config{}.cleanup.empty());
    CHECK(Config{}.cleanup_dirs.empty());
    const auto config = parse_config("cleanup: [ipc, posix_shm, files]\ncleanup_dirs: [/tmp, /var/tmp]\n", "x");
    REQUIRE(config.ok());
    CHECK(config->cleanup == std::set<CleanupKind>{CleanupKind::ipc, CleanupKind::posix_shm, CleanupKind::files});
    CHECK(config->cleanup_dirs == std::vector<std::string>{"/tmp", "/var/tmp"});
    CHECK(error_of("cleanup: [ipc, shm]") ==
          "/etc/leftover.conf:1: key 'cleanup': expected every entry to be one of files ipc posix_shm, got 'shm'");
    CHECK(error_of("cleanup: ipc") == "/etc/leftover.conf:1: key 'cleanup': expected a list of words, got 'ipc'");
    CHECK(error_of("cleanup_dirs: [/tmp, scratch]") ==
          "/etc/leftover.conf:1: key 'cleanup_dirs': expected an absolute path, got 'scratch'");
}

TEST_CASE("config: the shipped config parses and leaves cleanup off") {
    const auto shipped = load_config(std::string(LEFTOVER_SOURCE_DIR) + "/packaging/leftover.conf", true);
    // The checkout may not be root's: parse the text when the trust checks refuse the file.
    std::ifstream in(std::string(LEFTOVER_SOURCE_DIR) + "/packaging/leftover.conf");
    std::ostringstream text;
    text << in.rdbuf();
    const auto config = shipped.ok() ? shipped : parse_config(text.str(), "packaging/leftover.conf");
    REQUIRE(config.ok());
    CHECK(config->cleanup.empty());
    CHECK(config->cleanup_dirs.empty());
}
