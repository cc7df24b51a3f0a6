// SPDX-License-Identifier: GPL-2.0-or-later
// The lock file sweeps of one node take turns by: one holder at a time, a waiter that
// gets it once the holder lets go, one that gives up at its deadline, and no lock on a
// file a user could hold. Two FileLocks are two opens of the file, so flock sets them
// against each other as it sets two processes (a lock belongs to an open file).
#include "support/temp_dir.hpp"
#include "util/file_lock.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

using namespace leftover;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

FileLock opened(const std::string& path) {
    auto lock = FileLock::open(path);
    INFO((lock.ok() ? std::string() : lock.error().message));
    REQUIRE(lock.ok());
    return std::move(lock).value();
}

}  // namespace

TEST_CASE("file lock: a second holder waits for the first and takes it once the first lets go") {
    test::TempDir dir;
    const std::string path = dir / "turn.lock";
    FileLock first = opened(path);
    REQUIRE(first.take(Clock::now()).value() == FileLock::Taken::at_once);
    CHECK(first.held());
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0600);
    CHECK(st.st_uid == 0);

    FileLock second = opened(path);
    std::atomic<bool> done{false};
    Clock::time_point taken_at;
    Result<FileLock::Taken> taken = FileLock::Taken::deadline;
    std::thread waiter([&] {
        taken = second.take(Clock::now() + 20s);
        taken_at = Clock::now();
        done = true;
    });
    std::this_thread::sleep_for(300ms);
    CHECK_FALSE(done.load());  // still waiting while the first holds it
    const auto released_at = Clock::now();
    first.release();
    CHECK_FALSE(first.held());
    waiter.join();
    REQUIRE(taken.ok());
    CHECK(taken.value() == FileLock::Taken::after_wait);
    CHECK(taken_at >= released_at);
    CHECK(second.held());
    // Now the first waits for the second, and gets it once the second's file is closed.
    CHECK(first.take(Clock::now() + 50ms).value() == FileLock::Taken::deadline);
    { const FileLock closing = std::move(second); }
    CHECK(first.take(Clock::now()).value() == FileLock::Taken::at_once);
}

TEST_CASE("file lock: a waiter whose deadline passes gives up without the lock and the holder keeps it") {
    test::TempDir dir;
    FileLock holder = opened(dir / "turn.lock");
    REQUIRE(holder.take(Clock::now()).value() == FileLock::Taken::at_once);
    FileLock waiter = opened(dir / "turn.lock");
    const auto started = Clock::now();
    const auto taken = waiter.take(started + 200ms);
    const auto waited = Clock::now() - started;
    REQUIRE(taken.ok());
    CHECK(taken.value() == FileLock::Taken::deadline);
    CHECK(waited >= 200ms);
    CHECK(waited < 5s);
    CHECK_FALSE(waiter.held());
    CHECK(holder.held());
    // A deadline passed already: tried once, no wait.
    CHECK(waiter.take(Clock::now() - 1s).value() == FileLock::Taken::deadline);
}

TEST_CASE("file lock: wait_for says how the lock came, holds it when taken, and refuses a file a user could hold") {
    test::TempDir dir;
    const std::string path = dir / "turn.lock";
    auto free = FileLock::wait_for(path, std::nullopt, Clock::now());
    REQUIRE(free.ok());
    CHECK(free->how == FileLock::Taken::at_once);
    REQUIRE(free->lock);
    CHECK(free->lock->held());

    auto held = FileLock::wait_for(path, std::nullopt, Clock::now() + 100ms);
    REQUIRE(held.ok());
    CHECK(held->how == FileLock::Taken::deadline);
    CHECK_FALSE(held->lock);
    CHECK(held->waited >= 100ms);

    std::thread letting_go([&] {
        std::this_thread::sleep_for(200ms);
        free->lock->release();
    });
    auto after = FileLock::wait_for(path, std::nullopt, Clock::now() + 20s);
    letting_go.join();
    REQUIRE(after.ok());
    CHECK(after->how == FileLock::Taken::after_wait);
    REQUIRE(after->lock);
    CHECK(after->lock->held());

    REQUIRE(::chmod(path.c_str(), 0644) == 0);
    const auto refused = FileLock::wait_for(path, std::nullopt, Clock::now());
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message ==
          "lock file " + path + ": must be a file of uid 0 that only it can open (found uid 0, mode 0644)");
}

TEST_CASE("file lock: a file a user could hold or plant is refused and nothing is locked") {
    test::TempDir dir;
    const std::string path = dir / "turn.lock";
    std::string says;
    SUBCASE("a symbolic link") {
        const std::string target = dir.write("target", "keep\n", 0600);
        REQUIRE(::symlink(target.c_str(), path.c_str()) == 0);
        says = "is a symbolic link";
    }
    SUBCASE("a fifo") {
        REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
        says = "is not a regular file";
    }
    SUBCASE("a directory") {
        REQUIRE(::mkdir(path.c_str(), 0700) == 0);
        says = "cannot open it: Is a directory";
    }
    SUBCASE("another uid's file") {
        dir.write("turn.lock", "", 0600, 41340);
        says = "must be a file of uid 0 that only it can open (found uid 41340, mode 0600)";
    }
    SUBCASE("a file others can open") {
        dir.write("turn.lock", "", 0644);
        says = "must be a file of uid 0 that only it can open (found uid 0, mode 0644)";
    }
    SUBCASE("a directory others can write") {
        REQUIRE(::chmod(dir.path().c_str(), 01777) == 0);
        says = "its directory is writable by group or others (mode 1777)";
    }
    SUBCASE("a directory of another uid") {
        REQUIRE(::chown(dir.path().c_str(), 41340, static_cast<gid_t>(-1)) == 0);
        says = "its directory is owned by uid 41340, not by root";
    }
    SUBCASE("no directory") {
        const auto lock = FileLock::open(dir / "absent/turn.lock");
        REQUIRE_FALSE(lock.ok());
        CHECK(lock.error().message ==
              "lock file " + dir / "absent/turn.lock" + ": cannot open its directory: No such file or directory");
        return;
    }
    const auto lock = FileLock::open(path);
    REQUIRE_FALSE(lock.ok());
    CHECK(lock.error().message == "lock file " + path + ": " + says);
    std::ifstream target(dir / "target");
    if (target) CHECK(std::string(std::istreambuf_iterator<char>(target), {}) == "keep\n");  // never written
}

TEST_CASE("file lock: the directory's other owner is believed and the file stays root's") {
    test::TempDir dir;
    REQUIRE(::chown(dir.path().c_str(), 41340, static_cast<gid_t>(-1)) == 0);  // SlurmdUser's spool dir
    auto lock = FileLock::open(dir / "turn.lock", uid_t{41340});
    REQUIRE(lock.ok());
    CHECK(lock->take(Clock::now()).value() == FileLock::Taken::at_once);
}
