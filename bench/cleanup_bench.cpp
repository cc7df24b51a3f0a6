// leftover_cleanup_bench: the cleanup's file walk (cleanup/cleanup_files.cpp) against
// `find DIR -user UID -delete`, side by side in one run.
//
//   leftover_cleanup_bench UID FILES REPS
//       As root. Makes a root-owned directory under /tmp and, per repetition and per
//       method (alternating which goes first), fills it with FILES files of UID in
//       directories of UID of 100 files each, plus 100 files of root beside them; then
//       times leftover's clean_up_tree, or find (spawned, wall time including its start),
//       until it returns. Checks after each run that every entry of UID is gone and root's
//       files are all there. Prints a table of medians and one JSON line with every sample.
#include "cleanup/cleanup.hpp"
#include "util/errno_text.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "leftover_cleanup_bench: %s: %s\n", what.c_str(), leftover::errno_text(errno).c_str());
    std::exit(2);
}

void make_entry(const std::string& path, uid_t uid, bool directory) {
    if (directory) {
        if (::mkdir(path.c_str(), 0755) != 0) die("mkdir " + path);
    } else {
        const int fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
        if (fd < 0 || ::write(fd, "scratch\n", 8) != 8) die("create " + path);
        ::close(fd);
    }
    if (::chown(path.c_str(), uid, uid) != 0) die("chown " + path);
}

void fill(const std::string& dir, uid_t uid, long files) {
    for (long i = 0; i < 100; ++i) make_entry(fmt::format("{}/root-{}", dir, i), 0, false);
    for (long d = 0; d * 100 < files; ++d) {
        const std::string sub = fmt::format("{}/job-{}", dir, d);
        make_entry(sub, uid, true);
        for (long i = d * 100; i < std::min(files, (d + 1) * 100); ++i)
            make_entry(fmt::format("{}/f-{}", sub, i), uid, false);
    }
}

// What is left: entries of uid, and root's.
std::pair<long, long> left(const std::string& dir, uid_t uid) {
    long users = 0, roots = 0;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
        struct stat st {};
        if (::lstat(entry.path().c_str(), &st) != 0) continue;
        (st.st_uid == uid ? users : roots) += st.st_uid == uid || st.st_uid == 0 ? 1 : 0;
    }
    return {users, roots};
}

double time_leftover(const std::string& dir, uid_t uid) {
    leftover::CleanupOptions options;
    options.deadline = Clock::now() + std::chrono::seconds(60);
    leftover::CleanupReport report;
    const auto start = Clock::now();
    leftover::clean_up_tree(dir, leftover::ObjectKind::file, {uid}, options, leftover::real_cleanup_calls(), report);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (!report.errors.empty()) {
        std::fprintf(stderr, "leftover_cleanup_bench: cleanup: %s\n", report.errors.front().c_str());
        std::exit(2);
    }
    return ms;
}

double time_find(const std::string& dir, uid_t uid) {
    const std::string user = std::to_string(uid);
    std::vector<std::string> args = {"/usr/bin/find", dir, "-user", user, "-delete"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const auto start = Clock::now();
    pid_t pid = 0;
    if (::posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) die("posix_spawn find");
    int status = 0;
    if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) die("find failed");
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

std::string json_list(const std::vector<double>& values) {
    std::string out = "[";
    for (std::size_t i = 0; i < values.size(); ++i) out += fmt::format("{}{:.2f}", i ? ", " : "", values[i]);
    return out + "]";
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: leftover_cleanup_bench UID FILES REPS\n");
        return 2;
    }
    const auto uid = static_cast<uid_t>(std::strtoul(argv[1], nullptr, 10));
    const long files = std::strtol(argv[2], nullptr, 10);
    const int reps = std::atoi(argv[3]);
    if (::geteuid() != 0 || uid == 0 || files <= 0 || reps <= 0) {
        std::fprintf(stderr, "leftover_cleanup_bench: as root, with a uid other than 0\n");
        return 2;
    }
    std::string dir = "/tmp/leftover-cleanup-bench-XXXXXX";
    if (::mkdtemp(dir.data()) == nullptr) die("mkdtemp");
    ::chmod(dir.c_str(), 01777);
    std::vector<double> leftover_ms, find_ms;
    for (int rep = 0; rep < reps; ++rep) {
        for (int turn = 0; turn < 2; ++turn) {
            const bool leftover_turn = (turn == 0) == (rep % 2 == 0);
            fill(dir, uid, files);
            (leftover_turn ? leftover_ms : find_ms)
                .push_back(leftover_turn ? time_leftover(dir, uid) : time_find(dir, uid));
            const auto [users, roots] = left(dir, uid);
            if (users != 0 || roots != 100) {
                std::fprintf(stderr,
                             "leftover_cleanup_bench: %s left %ld of uid %u and %ld of root's (expected 0, 100)\n",
                             leftover_turn ? "leftover" : "find", users, uid, roots);
                return 2;
            }
            std::filesystem::remove_all(dir + "/");  // root's files too, for the next fill
            ::mkdir(dir.c_str(), 01777);
            ::chmod(dir.c_str(), 01777);
        }
    }
    std::filesystem::remove_all(dir);
    const long dirs = (files + 99) / 100;
    std::printf("removing %ld files (+ %ld directories) of uid %u beside 100 of root's, %d runs each, median:\n", files,
                dirs, uid, reps);
    std::printf("  leftover clean_up_tree:        %8.1f ms (%.1f us per entry)\n", median(leftover_ms),
                1000 * median(leftover_ms) / static_cast<double>(files + dirs));
    std::printf("  find DIR -user UID -delete:    %8.1f ms (%.1f us per entry)\n", median(find_ms),
                1000 * median(find_ms) / static_cast<double>(files + dirs));
    std::printf("%s\n", fmt::format(R"({{"files": {}, "dirs": {}, "leftover_ms": {}, "find_ms": {}}})", files, dirs,
                                    json_list(leftover_ms), json_list(find_ms))
                            .c_str());
    return 0;
}
