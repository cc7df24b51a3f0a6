// SPDX-License-Identifier: GPL-2.0-or-later
// The file walk of the cleanup (cleanup/cleanup_files.cpp) on real trees in a temp
// directory: files of test uids 41601-41609, root's files, symlinks, swaps and mounts.
#include "cleanup/cleanup.hpp"
#include "support/scripted_cleanup_calls.hpp"
#include "support/temp_dir.hpp"

#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <thread>

using namespace leftover;
using namespace leftover::test;
using namespace std::chrono_literals;

namespace {

constexpr uid_t kUser = 41601;
constexpr uid_t kOther = 41602;

// A call that may lose a race on purpose: its result does not matter, only that the walk
// copes. (A (void) cast does not silence warn_unused_result, which fortify turns on.)
void racing(int /*result*/) {}

void make_dir(const std::string& path, uid_t owner, mode_t mode = 0755) {
    REQUIRE(::mkdir(path.c_str(), mode) == 0);
    REQUIRE(::chown(path.c_str(), owner, owner) == 0);
}

void make_file(const std::string& path, uid_t owner, const std::string& content = "x") {
    std::ofstream(path) << content;
    REQUIRE(::chown(path.c_str(), owner, owner) == 0);
}

void make_link(const std::string& target, const std::string& path, uid_t owner) {
    REQUIRE(::symlink(target.c_str(), path.c_str()) == 0);
    REQUIRE(::lchown(path.c_str(), owner, owner) == 0);
}

CleanupReport clean(const std::string& dir, const std::set<uid_t>& uids, CleanupOptions options = {},
                    CleanupCalls& calls = real_cleanup_calls()) {
    CleanupReport report;
    clean_up_tree(dir, ObjectKind::file, uids, options, calls, report);
    return report;
}

std::size_t count(const CleanupReport& report, CleanupOutcome outcome) {
    std::size_t n = 0;
    for (const CleanupRecord& r : report.records) n += r.outcome == outcome ? 1 : 0;
    return n;
}

std::string errors_of(const CleanupReport& report) {
    std::string text;
    for (const std::string& e : report.errors) text += e + "\n";
    return text;
}

// A searched directory (root's, as TempDir makes it) holding a user's tree, with a
// canary outside it that a followed symlink would reach.
struct Scratch {
    TempDir outside;  // the canary's directory, also the user's
    TempDir dir;      // what is searched
    std::string canary;
    Scratch() {
        REQUIRE(::chown(outside.path().c_str(), kUser, kUser) == 0);
        canary = outside / "canary";
        make_file(canary, kUser, "keep me");
    }
};

// Runs `body` in a child with a private mount namespace, so its mounts never show
// elsewhere; the child's exit code (body's return), or nullopt when this machine gives
// no private mount namespace (the test then says so and checks nothing more).
std::optional<int> in_private_mounts(const std::function<int()>& body) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        if (::unshare(CLONE_NEWNS) != 0) ::_exit(77);
        if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) ::_exit(77);
        ::_exit(body());
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    if (WEXITSTATUS(status) == 77) {
        MESSAGE("skipped: no private mount namespace here, or a mount refused");
        return std::nullopt;
    }
    return WEXITSTATUS(status);
}

}  // namespace

TEST_CASE("cleanup files: the user's files, links and emptied directories go, everything else stays") {
    Scratch s;
    make_file(s.dir / "a", kUser, "12345");
    make_dir(s.dir / "d", kUser);
    make_file(s.dir / "d/b", kUser);
    make_file(s.dir / "d/roots", 0);  // root's file in the user's directory
    make_dir(s.dir / "e", kUser);
    make_dir(s.dir / "e/f", kUser);
    make_file(s.dir / "e/f/g", kUser, "abc");
    make_link(s.canary, s.dir / "link", kUser);
    make_link(s.outside.path(), s.dir / "dirlink", kUser);
    make_file(s.dir / "other", kOther);
    make_dir(s.dir / "rootdir", 0);
    make_file(s.dir / "rootdir/inside", kUser);  // in root's directory: not searched

    const CleanupReport report = clean(s.dir.path(), {kUser});
    INFO(errors_of(report));
    CHECK(report.errors.empty());
    CHECK_FALSE(path_exists(s.dir / "a"));
    CHECK_FALSE(path_exists(s.dir / "d/b"));
    CHECK(path_exists(s.dir / "d/roots"));
    CHECK(path_exists(s.dir / "d"));
    CHECK_FALSE(path_exists(s.dir / "e"));
    CHECK_FALSE(path_exists(s.dir / "link"));
    CHECK_FALSE(path_exists(s.dir / "dirlink"));
    CHECK(path_exists(s.canary));
    CHECK(path_exists(s.outside.path()));
    CHECK(path_exists(s.dir / "other"));
    CHECK(path_exists(s.dir / "rootdir/inside"));
    CHECK(count(report, CleanupOutcome::removed) == 7);  // a, d/b, e/f/g, e/f, e, link, dirlink
    CHECK(totals_of(report, false).bytes == 5 + 1 + 3);
}

TEST_CASE("cleanup files: a dry run lists what would go and removes nothing") {
    Scratch s;
    make_dir(s.dir / "d", kUser);
    make_file(s.dir / "d/b", kUser, "12");
    CleanupOptions options;
    options.dry_run = true;
    const CleanupReport report = clean(s.dir.path(), {kUser}, options);
    CHECK(count(report, CleanupOutcome::would_remove) == 2);  // d/b, then d: it would end up empty
    CHECK(count(report, CleanupOutcome::removed) == 0);
    CHECK(path_exists(s.dir / "d/b"));
    CHECK(totals_of(report, true).files == 2);
    CHECK(totals_of(report, true).bytes == 2);
}

TEST_CASE("cleanup files: a searched directory that is a symlink or not root's is left alone") {
    Scratch s;
    make_dir(s.dir / "users", kUser);
    make_file(s.dir / "users/f", kUser);
    make_link(s.outside.path(), s.dir / "link", 0);
    const CleanupReport not_roots = clean(s.dir / "users", {kUser});
    CHECK(path_exists(s.dir / "users/f"));
    REQUIRE(not_roots.errors.size() == 1);
    CHECK(not_roots.errors.front() == s.dir / "users" + ": owned by uid 41601, not root: not searched");
    const CleanupReport link = clean(s.dir / "link", {kUser});
    CHECK(path_exists(s.canary));
    REQUIRE(link.errors.size() == 1);
    CHECK(link.errors.front() == s.dir / "link" + ": a symlink, not searched");
}

TEST_CASE("cleanup files: depth, entry count and the deadline bound the walk, and what is left is reported") {
    Scratch s;
    SUBCASE("depth") {
        make_dir(s.dir / "1", kUser);
        make_dir(s.dir / "1/2", kUser);
        make_dir(s.dir / "1/2/3", kUser);
        make_file(s.dir / "1/2/3/deep", kUser);
        CleanupOptions options;
        options.max_depth = 2;
        const CleanupReport report = clean(s.dir.path(), {kUser}, options);
        CHECK(path_exists(s.dir / "1/2/3/deep"));
        CHECK(path_exists(s.dir / "1"));
        REQUIRE(report.errors.size() == 1);
        CHECK(report.errors.front() == s.dir / "1/2/3" + ": deeper than 2 levels, not searched");
    }
    SUBCASE("entries") {
        for (int i = 0; i < 10; ++i) make_file(s.dir / ("f" + std::to_string(i)), kUser);
        CleanupOptions options;
        options.max_entries = 3;
        const CleanupReport report = clean(s.dir.path(), {kUser}, options);
        CHECK(count(report, CleanupOutcome::removed) == 3);
        CHECK(std::distance(std::filesystem::directory_iterator(s.dir.path()), {}) == 7);
        REQUIRE(report.errors.size() == 1);
        CHECK(report.errors.front() == s.dir.path() + ": more than 3 entries looked at, the rest not searched");
    }
    SUBCASE("deadline") {
        make_file(s.dir / "f", kUser);
        CleanupOptions options;
        options.deadline = std::chrono::steady_clock::now();
        const CleanupReport report = clean(s.dir.path(), {kUser}, options);
        CHECK(path_exists(s.dir / "f"));
        CHECK(report.deadline_reached);
        CHECK(report.records.empty());
    }
}

namespace {

// A read_dir script: the real call, counting in `names_read` the names the kernel hands
// the walk.
auto counting_names(std::size_t& names_read) {
    return [&names_read](int dirfd, std::vector<std::string>& names) {
        const std::size_t before = names.size();
        const int rc = real_cleanup_calls().read_dir(dirfd, names);
        names_read += names.size() - before;
        return rc;
    };
}

// A directory anyone could have filled: `n` empty files of `owner`.
void fill(const std::string& dir, int n, uid_t owner) {
    for (int i = 0; i < n; ++i) {
        const std::string path = dir + "/f" + std::to_string(i);
        const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        REQUIRE(fd >= 0);
        ::close(fd);
        REQUIRE(::chown(path.c_str(), owner, owner) == 0);
    }
}

constexpr int kHuge = 20000;  // about twenty getdents64 buffers

}  // namespace

TEST_CASE("cleanup files: the entry limit stops the walk inside a huge directory, before it is read whole") {
    Scratch s;
    fill(s.dir.path(), kHuge, 0);
    ScriptedCleanupCalls calls;
    std::size_t names_read = 0;
    calls.script.read_dir = counting_names(names_read);
    CleanupOptions options;
    options.max_entries = 100;
    const CleanupReport report = clean(s.dir.path(), {kUser}, options, calls);
    REQUIRE(report.errors.size() == 1);
    CHECK(report.errors.front() == s.dir.path() + ": more than 100 entries looked at, the rest not searched");
    // One buffer (about a thousand names) read, not the twenty thousand of the directory.
    CHECK(names_read > 100);
    CHECK(names_read < kHuge / 4);
}

TEST_CASE("cleanup files: a deadline that passes inside a huge directory stops the walk there and says so") {
    Scratch s;
    fill(s.dir.path(), kHuge, kUser);
    ScriptedCleanupCalls calls;
    std::size_t names_read = 0;
    calls.script.read_dir = counting_names(names_read);
    const auto deadline = std::chrono::steady_clock::now() + 1h;
    // The walk's clock passes the deadline as soon as the first batch is read.
    calls.script.now = [&names_read, deadline] {
        return names_read >= 1 ? deadline : std::chrono::steady_clock::now();
    };
    CleanupOptions options;
    options.deadline = deadline;
    const auto started = std::chrono::steady_clock::now();
    const CleanupReport report = clean(s.dir.path(), {kUser}, options, calls);
    CHECK(std::chrono::steady_clock::now() - started < 30s);  // hang detector only
    CHECK(report.deadline_reached);
    REQUIRE(report.errors.size() == 1);
    CHECK(report.errors.front() == s.dir.path() + ": the deadline passed, the rest not searched");
    CHECK(report.records.empty());
    CHECK(names_read < kHuge / 4);
    CHECK(std::distance(std::filesystem::directory_iterator(s.dir.path()), {}) == kHuge);
}

TEST_CASE("cleanup files: a symlink swapped in for a judged directory is not followed") {
    Scratch s;
    make_dir(s.dir / "d", kUser);
    make_file(s.dir / "d/f", kUser);
    // Swaps a symlink in at the worst moment, through the seam: after the walk judged the
    // directory and before it opens it.
    ScriptedCleanupCalls calls;
    calls.script.open_dir_at = [&](int dirfd, const std::string& name) {
        if (name == "d") {
            std::filesystem::rename(s.dir / "d", s.dir / "moved");
            make_link(s.outside.path(), s.dir / "d", kUser);
        }
        return real_cleanup_calls().open_dir_at(dirfd, name);
    };
    const CleanupReport report = clean(s.dir.path(), {kUser}, {}, calls);
    CHECK(path_exists(s.canary));
    CHECK(path_exists(s.dir / "moved/f"));
    REQUIRE(count(report, CleanupOutcome::changed) == 1);
}

TEST_CASE("cleanup files: an entry replaced between its check and its unlink is not removed") {
    Scratch s;
    make_file(s.dir / "f", kUser);
    bool swapped = false;
    // The last check before the unlink runs in stat_at: swap before the check of "f".
    int stats = 0;
    ScriptedCleanupCalls late;
    late.script.stat_at = [&](int dirfd, const std::string& name, EntryStat& out) {
        if (name == "f" && ++stats == 2) {
            std::filesystem::rename(s.dir / "f", s.dir / "kept");
            make_file(s.dir / "f", 0, "root's now");
            swapped = true;
        }
        return real_cleanup_calls().stat_at(dirfd, name, out);
    };
    const CleanupReport report = clean(s.dir.path(), {kUser}, {}, late);
    REQUIRE(swapped);
    CHECK(path_exists(s.dir / "f"));
    CHECK(count(report, CleanupOutcome::changed) == 1);
    CHECK(count(report, CleanupOutcome::removed) == 0);
}

TEST_CASE("cleanup files: a helper swapping a symlink for a directory in a loop never gets it followed") {
    Scratch s;
    make_file(s.outside / "canary2", kUser);
    std::atomic<bool> stop = false;
    std::atomic<int> swaps = 0;
    // "d" and "s" trade places all the time: one is the user's directory, the other a
    // symlink of the user's to the canary's directory.
    make_dir(s.dir / "d", kUser);
    make_link(s.outside.path(), s.dir / "s", kUser);
    std::thread swapper([&] {
        while (!stop)
            if (::renameat2(AT_FDCWD, (s.dir / "d").c_str(), AT_FDCWD, (s.dir / "s").c_str(), RENAME_EXCHANGE) == 0)
                ++swaps;
    });
    const auto until = std::chrono::steady_clock::now() + 2s;
    int walks = 0;
    while (std::chrono::steady_clock::now() < until) {
        // Refill whichever of the two is the directory now; put back a removed link.
        for (const char* name : {"d", "s"}) {
            const std::string path = s.dir / name;
            struct stat st {};
            if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
                std::ofstream(path + "/f") << "x";
                racing(::chown((path + "/f").c_str(), kUser, kUser));
            }
        }
        clean(s.dir.path(), {kUser});
        ++walks;
        // The swapper may have moved either name meanwhile: put back what is missing.
        if (!path_exists(s.dir / "d") && ::mkdir((s.dir / "d").c_str(), 0755) == 0)
            racing(::chown((s.dir / "d").c_str(), kUser, kUser));
        if (!path_exists(s.dir / "s") && ::symlink(s.outside.path().c_str(), (s.dir / "s").c_str()) == 0)
            racing(::lchown((s.dir / "s").c_str(), kUser, kUser));
        REQUIRE(path_exists(s.canary));
        REQUIRE(path_exists(s.outside / "canary2"));
    }
    stop = true;
    swapper.join();
    MESSAGE(walks << " walks against " << swaps.load() << " swaps");
    CHECK(swaps > 0);
    CHECK(path_exists(s.canary));
    CHECK(path_exists(s.outside / "canary2"));
}

TEST_CASE("cleanup files: a bind mount under the searched directory is not crossed") {
    Scratch s;
    make_dir(s.dir / "mnt", kUser);
    const auto status = in_private_mounts([&] {
        if (::mount(s.outside.path().c_str(), (s.dir / "mnt").c_str(), nullptr, MS_BIND, nullptr) != 0) return 77;
        CleanupReport report;
        clean_up_tree(s.dir.path(), ObjectKind::file, {kUser}, {}, real_cleanup_calls(), report);
        const bool not_crossed =
            report.errors.size() == 1 && report.errors.front() == s.dir / "mnt" + ": another mount, not crossed";
        return path_exists(s.canary) && not_crossed ? 0 : 1;
    });
    if (!status) return;
    CHECK(*status == 0);
    CHECK(path_exists(s.canary));
}

TEST_CASE("cleanup files: on overlayfs a file's layer device is not another mount") {
    // overlayfs reports a file's device as its layer's, a directory's as the overlay's;
    // release roots and containers put /tmp on one. Lower layer on this file system,
    // upper on a tmpfs.
    Scratch s;
    TempDir lower, layers;
    make_file(lower / "old", kUser);
    const auto status = in_private_mounts([&] {
        if (::mount("layers", layers.path().c_str(), "tmpfs", 0, "mode=0755") != 0) return 77;
        if (::mkdir((layers / "upper").c_str(), 0755) != 0 || ::mkdir((layers / "work").c_str(), 0755) != 0) return 77;
        const std::string options =
            "lowerdir=" + lower.path() + ",upperdir=" + (layers / "upper") + ",workdir=" + (layers / "work");
        if (::mount("overlay", s.dir.path().c_str(), "overlay", 0, options.c_str()) != 0) return 77;
        bool made = ::mkdir((s.dir / "sub").c_str(), 0755) == 0 && ::chown((s.dir / "sub").c_str(), kUser, kUser) == 0;
        std::ofstream(s.dir / "sub/f") << "abc";
        made = made && ::chown((s.dir / "sub/f").c_str(), kUser, kUser) == 0;
        made = made && ::symlink("/etc/passwd", (s.dir / "link").c_str()) == 0 &&
               ::lchown((s.dir / "link").c_str(), kUser, kUser) == 0;
        struct stat dir {};
        struct stat file {};
        if (!made || ::stat(s.dir.path().c_str(), &dir) != 0 || ::stat((s.dir / "sub/f").c_str(), &file) != 0) return 1;
        const bool devices_differ = dir.st_dev != file.st_dev;
        CleanupReport report;
        clean_up_tree(s.dir.path(), ObjectKind::file, {kUser}, {}, real_cleanup_calls(), report);
        for (const std::string& e : report.errors) ::fprintf(stderr, "error: %s\n", e.c_str());
        const bool all_gone = report.errors.empty() && !path_exists(s.dir / "old") && !path_exists(s.dir / "sub") &&
                              !path_exists(s.dir / "link") && path_exists("/etc/passwd");
        return all_gone ? (devices_differ ? 0 : 3) : 1;
    });
    if (!status) return;
    if (*status == 3) MESSAGE("this kernel reports the overlay's device for files too");
    CHECK((*status == 0 || *status == 3));
    CHECK(path_exists(lower / "old"));  // the lower layer is never written: a whiteout hides it
}

TEST_CASE("cleanup files: a directory on another device, or an entry of another mount id, is not entered or removed") {
    // Through the seam: a file whose device differs but whose mount id is the searched
    // directory's goes (overlayfs); a directory whose device differs (a btrfs subvolume)
    // and a file of another mount id (a bind-mounted file) stay.
    Scratch s;
    make_file(s.dir / "layer-file", kUser);
    make_dir(s.dir / "subvolume", kUser);
    make_file(s.dir / "subvolume/inside", kUser);
    make_file(s.dir / "bound-file", kUser);
    ScriptedCleanupCalls calls;
    calls.script.stat_at = [](int dirfd, const std::string& name, EntryStat& out) {
        const int rc = real_cleanup_calls().stat_at(dirfd, name, out);
        if (rc == 0 && out.mount_id == 0) out.mount_id = 7;  // a kernel without STATX_MNT_ID: say one
        if (rc == 0 && (name == "layer-file" || name == "subvolume")) out.dev += 1;
        if (rc == 0 && name == "bound-file") out.mount_id += 1;
        return rc;
    };
    const CleanupReport report = clean(s.dir.path(), {kUser}, {}, calls);
    CHECK_FALSE(path_exists(s.dir / "layer-file"));
    CHECK(path_exists(s.dir / "subvolume/inside"));
    CHECK(path_exists(s.dir / "bound-file"));
    INFO(errors_of(report));
    CHECK(report.errors.size() == 2);
    for (const std::string name : {"bound-file", "subvolume"}) {
        const std::string error = s.dir / name + ": another mount, not crossed";
        CHECK(std::find(report.errors.begin(), report.errors.end(), error) != report.errors.end());
    }
}
