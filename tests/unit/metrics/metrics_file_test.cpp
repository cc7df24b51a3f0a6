// SPDX-License-Identifier: GPL-2.0-or-later
// The metrics file on disk: written atomically under a lock beside it, only in a
// directory nobody but root can write, a file that is not ours replaced, and no update
// lost when two processes update at once.
#include "metrics/metrics_file.hpp"
#include "support/temp_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace leftover;
using leftover::test::TempDir;

namespace {

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

EvaluationSample one_step() {
    EvaluationSample sample;
    sample.trigger = MetricsTrigger::step;
    sample.killed_sigterm = 1;
    return sample;
}

Metrics parsed(const std::string& path) {
    const auto metrics = Metrics::parse(read_text(path));
    REQUIRE(metrics.ok());
    return metrics.value();
}

mode_t mode_of(const std::string& path) {
    struct stat st {};
    REQUIRE(::lstat(path.c_str(), &st) == 0);
    return st.st_mode & 07777;
}

}  // namespace

TEST_CASE("metrics file: the first update creates it, readable by all, with its lock root's alone") {
    TempDir dir;
    const std::string path = dir / "leftover.prom";
    const auto first = update_metrics_file(path, one_step());
    REQUIRE(first.ok());
    CHECK(first->replaced_because.empty());
    CHECK(mode_of(path) == 0644);
    CHECK(mode_of(metrics_lock_path(path)) == 0600);
    CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
    CHECK(parsed(path).value("leftover_evaluations_total", "step") == 1);

    REQUIRE(update_metrics_file(path, one_step()).ok());
    const Metrics metrics = parsed(path);
    CHECK(metrics.value("leftover_evaluations_total", "step") == 2);
    CHECK(metrics.value("leftover_processes_killed_total", "SIGTERM") == 2);
}

TEST_CASE("metrics file: a directory that is not root's, or that group or others can write, gets nothing") {
    TempDir dir;
    const std::string mine = dir / "mine";
    REQUIRE(::mkdir(mine.c_str(), 0755) == 0);
    REQUIRE(::chown(mine.c_str(), 41001, static_cast<gid_t>(-1)) == 0);
    auto refused = update_metrics_file(mine + "/leftover.prom", one_step());
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message == "metrics directory " + mine + ": owned by uid 41001; expected uid 0 (root)");
    CHECK_FALSE(std::filesystem::exists(mine + "/leftover.prom.lock"));

    const std::string shared = dir / "shared";
    REQUIRE(::mkdir(shared.c_str(), 0755) == 0);
    REQUIRE(::chmod(shared.c_str(), 01777) == 0);  // like /tmp
    refused = update_metrics_file(shared + "/leftover.prom", one_step());
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message ==
          "metrics directory " + shared + ": mode 1777; it must not be writable by group or others");
    CHECK(std::filesystem::is_empty(shared));

    std::filesystem::create_directory_symlink(dir / "shared", dir / "link");
    refused = update_metrics_file(dir / "link/leftover.prom", one_step());
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message.starts_with("metrics directory " + dir / "link" + ": cannot open"));

    refused = update_metrics_file(dir / "missing/leftover.prom", one_step());
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message.find("No such file or directory") != std::string::npos);
}

TEST_CASE("metrics file: a lock file others could open is refused, and nothing is written") {
    TempDir dir;
    const std::string path = dir / "leftover.prom";
    dir.write("leftover.prom.lock", "", 0644);
    const auto refused = update_metrics_file(path, one_step());
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message.find("that only it can open (found uid 0, mode 0644)") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("metrics file: a corrupt or foreign file is replaced, and says why") {
    TempDir dir;
    const std::string path = dir.write("leftover.prom", "node_load1 0.5\n");
    const auto replaced = update_metrics_file(path, one_step());
    REQUIRE(replaced.ok());
    CHECK(replaced->replaced_because == "line 1: unknown metric 'node_load1'");
    CHECK(parsed(path).value("leftover_evaluations_total", "step") == 1);

    dir.write("leftover.prom", "leftover_evaluations_total{trigger=\"step\"} 4");  // cut off
    CHECK(update_metrics_file(path, one_step())->replaced_because == "the last line is cut off");
    CHECK(parsed(path).value("leftover_evaluations_total", "step") == 1);
}

TEST_CASE("metrics file: a symbolic link in its place is replaced, its target left alone") {
    TempDir dir;
    const std::string target = dir.write("target", "precious\n");
    const std::string path = dir / "leftover.prom";
    std::filesystem::create_symlink(target, path);
    const auto replaced = update_metrics_file(path, one_step());
    REQUIRE(replaced.ok());
    CHECK(replaced->replaced_because == "it is a symbolic link");
    CHECK(read_text(target) == "precious\n");
    CHECK_FALSE(std::filesystem::is_symlink(path));
    CHECK(parsed(path).value("leftover_evaluations_total", "step") == 1);
}

TEST_CASE("metrics file: a lock held longer than the wait skips the update, the file unchanged") {
    TempDir dir;
    const std::string path = dir / "leftover.prom";
    REQUIRE(update_metrics_file(path, one_step()).ok());
    const std::string before = read_text(path);
    // flock locks belong to an open file description: a second open conflicts like another process.
    const int held = ::open(metrics_lock_path(path).c_str(), O_RDWR | O_CLOEXEC);
    REQUIRE(held >= 0);
    REQUIRE(::flock(held, LOCK_EX) == 0);
    const auto skipped = update_metrics_file(path, one_step(), {.lock_wait = std::chrono::milliseconds(50)});
    ::close(held);
    REQUIRE_FALSE(skipped.ok());
    CHECK(skipped.error().message == "metrics lock " + path + ".lock: still held after 50 ms by another update");
    CHECK(read_text(path) == before);
    CHECK(update_metrics_file(path, one_step()).ok());  // free again
}

TEST_CASE("metrics file: a held lock is not waited for past the evaluation's deadline") {
    TempDir dir;
    const std::string path = dir / "leftover.prom";
    REQUIRE(update_metrics_file(path, one_step()).ok());
    const std::string before = read_text(path);
    const int held = ::open(metrics_lock_path(path).c_str(), O_RDWR | O_CLOEXEC);
    REQUIRE(held >= 0);
    REQUIRE(::flock(held, LOCK_EX) == 0);
    MetricsFileOptions options;  // the default wait, a second
    SUBCASE("the deadline already passed: the lock is tried once") {
        options.deadline = std::chrono::steady_clock::now();
    }
    SUBCASE("the deadline comes before the wait would end") {
        options.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
    }
    const auto started = std::chrono::steady_clock::now();
    const auto skipped = update_metrics_file(path, one_step(), options);
    ::close(held);
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(30));  // hang detector only
    REQUIRE_FALSE(skipped.ok());
    CHECK(skipped.error().message ==
          "metrics lock " + path + ".lock: still held by another update at the evaluation's deadline");
    CHECK(read_text(path) == before);
}

TEST_CASE("metrics file: a directory above the metrics directory that others could change gets nothing") {
    TempDir dir;
    const auto refused_for = [&](const std::string& above, const std::string& why) {
        const std::string metrics_dir = above + "/metrics";
        REQUIRE(::mkdir(metrics_dir.c_str(), 0755) == 0);  // root's, 0755: fine in itself
        const auto refused = update_metrics_file(metrics_dir + "/leftover.prom", one_step());
        REQUIRE_FALSE(refused.ok());
        CHECK(refused.error().message == "metrics directory " + metrics_dir + ": directory " + above + " " + why);
        CHECK(std::filesystem::is_empty(metrics_dir));
    };
    SUBCASE("writable by others, not sticky: the metrics directory could be renamed away and replaced") {
        const std::string open = dir / "open";
        REQUIRE(::mkdir(open.c_str(), 0755) == 0);
        REQUIRE(::chmod(open.c_str(), 0777) == 0);
        refused_for(open, "has mode 0777; it must not be writable by group or others");
    }
    SUBCASE("owned by a user") {
        const std::string users = dir / "users";
        REQUIRE(::mkdir(users.c_str(), 0755) == 0);
        REQUIRE(::chown(users.c_str(), 41001, static_cast<gid_t>(-1)) == 0);
        refused_for(users, "is owned by uid 41001; expected uid 0 (root)");
    }
    SUBCASE("sticky and writable by all, like /tmp: accepted") {
        const std::string shared = dir / "shared";
        REQUIRE(::mkdir(shared.c_str(), 0755) == 0);
        REQUIRE(::chmod(shared.c_str(), 01777) == 0);
        const std::string metrics_dir = shared + "/metrics";
        REQUIRE(::mkdir(metrics_dir.c_str(), 0755) == 0);
        CHECK(update_metrics_file(metrics_dir + "/leftover.prom", one_step()).ok());
    }
}

TEST_CASE("metrics file: two processes updating at once lose no update") {
    TempDir dir;
    const std::string path = dir / "leftover.prom";
    constexpr int kProcesses = 4;
    constexpr int kUpdates = 150;
    int start[2];
    REQUIRE(::pipe(start) == 0);  // closed by the parent: every child starts at once
    std::vector<pid_t> children;
    for (int i = 0; i < kProcesses; ++i) {
        const pid_t child = ::fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            ::close(start[1]);
            char byte;
            [[maybe_unused]] const ssize_t started = ::read(start[0], &byte, 1);  // 0 once the parent closes it
            int failed = 0;
            for (int n = 0; n < kUpdates; ++n)
                failed += update_metrics_file(path, one_step(), {.lock_wait = std::chrono::seconds(20)}).ok() ? 0 : 1;
            ::_exit(failed == 0 ? 0 : 1);
        }
        children.push_back(child);
    }
    ::close(start[0]);
    ::close(start[1]);
    for (const pid_t child : children) {
        int status = 0;
        REQUIRE(::waitpid(child, &status, 0) == child);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 0);
    }
    CHECK(parsed(path).value("leftover_evaluations_total", "step") == kProcesses * kUpdates);
    CHECK(parsed(path).value("leftover_processes_killed_total", "SIGTERM") == kProcesses * kUpdates);
}
