// leftover_bench: the measuring half of bench/run (bench/bench.py drives it).
//
//   leftover_bench spawn UID COUNT
//       Forks COUNT idle children (as UID, dumpable, parent-death SIGKILL), prints
//       "ready <pid> <pid> ...", reaps them as they die, and kills them all and exits
//       when its standard input closes (or all of them are gone).
//   leftover_bench scan UID USER REPS [leftover-only]
//       Per repetition, interleaved: leftover's scan + decide (a fresh Evaluation, as
//       the plugin builds one per sweep), the two floors (getdents + one fstatat per
//       pid; getdents + one read of status per pid) and `pgrep -U USER` (spawned).
//       Prints one JSON object with every sample in milliseconds.
//   leftover_bench costs UID REPS
//       Where scan + decide spends its time: each /proc pass alone (over the pids
//       whose /proc/<pid> belongs to UID), scan_processes alone (without cgroups, as
//       Evaluation scans; and with read_job_cgroups, as with a live job), the whole evaluation.
//   leftover_bench sweep UID USER METHOD EXPECT
//       METHOD: leftover (run_sweep, grace 0, scope job_user), pkill, killall.
//       Pins every process of UID with a pidfd first (untimed), then times from the
//       start until every one of them has exited. Prints JSON with the time and the
//       process's peak RSS before and after.
//   leftover_bench deep UID COUNT DEPTH REPS
//       In a pid namespace of its own (run it under unshare --pid --fork --mount-proc):
//       COUNT processes of UID, a chain DEPTH deep with a fan of the rest under its
//       bottom. Times REPS evaluations (all strays) against the floors, then one full
//       sweep (grace 0) with the sweep's own deadline, then, on a new tree each, the
//       floors for killing them all: kill(-1) as the user, and pkill. Prints JSON.
//   leftover_bench live UID COUNT REPS
//       Also in a pid namespace of its own: COUNT processes of UID, whose user has a
//       live step (job state says so), plus 10 strays of UID + 1. Times REPS evaluations
//       against the getdents + fstatat floor. Prints JSON.
#include "accounts/accounts.hpp"
#include "policy/evaluation.hpp"
#include "policy/exemptions.hpp"
#include "procfs/proc_read.hpp"
#include "procfs/proc_table.hpp"
#include "sweep/run_sweep.hpp"
#include "util/errno_text.hpp"
#include "util/unique_fd.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "leftover_bench: %s: %s\n", what.c_str(), leftover::errno_text(errno).c_str());
    std::exit(2);
}

// Peak RSS of this process image (VmHWM). Not getrusage's ru_maxrss: that one keeps
// the peak of the image exec replaced (the driver's python, forked).
long maxrss_kb() {
    FILE* f = std::fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long kb = -1;
    while (std::fgets(line, sizeof line, f))
        if (std::strncmp(line, "VmHWM:", 6) == 0) kb = std::strtol(line + 6, nullptr, 10);
    std::fclose(f);
    return kb;
}

std::string json_list(const std::vector<double>& values) {
    std::string out = "[";
    for (std::size_t i = 0; i < values.size(); ++i) out += fmt::format("{}{:.4f}", i ? ", " : "", values[i]);
    return out + "]";
}

// ---- spawn -----------------------------------------------------------------------

int spawn(uid_t uid, long count) {
    gid_t gid = 0;
    if (uid != 0) {
        const passwd* pw = ::getpwuid(uid);
        if (!pw) die(fmt::format("no account with uid {}", uid));
        gid = pw->pw_gid;
    }
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &chld, nullptr) != 0) die("sigprocmask");
    const leftover::UniqueFd sfd(::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!sfd.valid()) die("signalfd");
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the driver died: so do we (and then our children)
    const pid_t parent = ::getpid();
    std::vector<pid_t> children;
    children.reserve(static_cast<std::size_t>(count));
    auto kill_all = [&] {
        for (const pid_t pid : children) ::kill(pid, SIGKILL);
        while (::waitpid(-1, nullptr, 0) > 0 || errno == EINTR) {}
    };
    // Each child writes one byte here once it is set up (uid, dumpable, death signal):
    // "ready" must not be printed while a child still runs as root.
    int setup_fds[2];
    if (::pipe2(setup_fds, O_CLOEXEC) != 0) die("pipe2");
    leftover::UniqueFd setup_read(setup_fds[0]), setup_write(setup_fds[1]);
    for (long i = 0; i < count; ++i) {
        const pid_t pid = ::fork();
        if (pid < 0) {
            const int err = errno;
            kill_all();
            errno = err;
            die(fmt::format("fork #{}", i));
        }
        if (pid == 0) {
            ::close(0);
            ::close(1);
            ::prctl(PR_SET_NAME, uid ? "lo-bench-stray" : "lo-bench-root");
            if (uid != 0) {
                if (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0) ::_exit(3);
                // A uid change makes a process non-dumpable, and /proc/<pid> of a
                // non-dumpable process belongs to root. A real stray exec'd its program
                // as the user and is dumpable: be like it.
                ::prctl(PR_SET_DUMPABLE, 1);
            }
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // cleared by the uid change: set it after
            if (::getppid() != parent) ::_exit(0);
            const char byte = 1;
            if (::write(setup_write.get(), &byte, 1) != 1) ::_exit(4);
            setup_write.reset();
            setup_read.reset();
            sigset_t none;
            sigemptyset(&none);
            sigprocmask(SIG_SETMASK, &none, nullptr);
            for (;;) ::pause();
        }
        children.push_back(pid);
    }
    setup_write.reset();
    for (long done = 0; done < count;) {
        char buf[4096];
        const ssize_t n = ::read(setup_read.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {  // every child is gone or failed before writing
            kill_all();
            std::fprintf(stderr, "leftover_bench: only %ld of %ld children were set up\n", done, count);
            return 1;
        }
        done += n;
    }
    setup_read.reset();
    std::string ready = "ready";
    for (const pid_t pid : children) ready += fmt::format(" {}", pid);
    ready += "\n";
    if (::write(1, ready.data(), ready.size()) < 0) {
        kill_all();
        return 1;
    }
    long alive = count;
    pollfd fds[2] = {{0, POLLIN, 0}, {sfd.get(), POLLIN, 0}};
    while (alive > 0) {
        if (::poll(fds, 2, -1) < 0 && errno != EINTR) break;
        if (fds[1].revents) {
            signalfd_siginfo info{};
            while (::read(sfd.get(), &info, sizeof info) > 0) {}
            while (::waitpid(-1, nullptr, WNOHANG) > 0) --alive;
        }
        if (fds[0].revents) {
            char buf[64];
            const ssize_t n = ::read(0, buf, sizeof buf);
            if (n <= 0) break;  // the driver is done (or gone): end everything
        }
    }
    kill_all();
    return 0;
}

// ---- floors and pgrep ------------------------------------------------------------

int open_proc() { return ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC); }

// Calls fn(root_fd, name) for every numeric entry of /proc.
template <class Fn>
std::size_t for_each_pid(int root, Fn&& fn) {
    alignas(8) char buf[32768];
    std::size_t seen = 0;
    ::lseek(root, 0, SEEK_SET);
    for (;;) {
        const long n = ::syscall(SYS_getdents64, root, buf, sizeof buf);
        if (n <= 0) break;
        for (long offset = 0; offset < n;) {
            unsigned short reclen = 0;
            std::memcpy(&reclen, buf + offset + offsetof(struct dirent64, d_reclen), sizeof reclen);
            const char* name = buf + offset + offsetof(struct dirent64, d_name);
            offset += reclen;
            if (name[0] < '1' || name[0] > '9') continue;
            fn(root, name);
            ++seen;
        }
    }
    return seen;
}

// Busy floor: a bare pass over /proc, getdents and one fstatat per pid.
std::size_t floor_stat() {
    const leftover::UniqueFd root(open_proc());
    std::size_t dirs = 0;
    for_each_pid(root.get(), [&](int dir, const char* name) {
        struct stat st {};
        if (::fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) ++dirs;
    });
    return dirs;
}

// Dirty floor: getdents and one read of /proc/<pid>/status per pid (the least that
// tells all four uids).
std::size_t floor_status() {
    const leftover::UniqueFd root(open_proc());
    std::size_t read_ok = 0;
    char path[64];
    char buf[4096];
    for_each_pid(root.get(), [&](int dir, const char* name) {
        std::snprintf(path, sizeof path, "%s/status", name);
        const leftover::UniqueFd fd(::openat(dir, path, O_RDONLY | O_CLOEXEC));
        if (fd.valid() && ::read(fd.get(), buf, sizeof buf) > 0) ++read_ok;
    });
    return read_ok;
}

int run_quiet(const std::vector<std::string>& argv) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = 0;
    if (::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ) != 0) die("posix_spawn " + argv[0]);
    posix_spawn_file_actions_destroy(&actions);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) die("waitpid");
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// ---- leftover --------------------------------------------------------------------

// The default config, except that uid_max reaches the test user when its uid is above
// the default (bench.py --stray-uid, to stay out of other test clusters' reach).
leftover::Config bench_config(uid_t uid) {
    leftover::Config config;
    config.uid_max = std::max(config.uid_max, uid);
    return config;
}

leftover::Exemptions load_exemptions(uid_t uid) {
    auto exemptions = leftover::Exemptions::load(bench_config(uid), {});
    if (!exemptions.ok()) {
        std::fprintf(stderr, "leftover_bench: exemptions: %s\n", exemptions.error().message.c_str());
        std::exit(2);
    }
    return std::move(exemptions).value();
}

// One scan + decide as at a step end: a fresh Evaluation, empty job state.
std::size_t leftover_scan_decide(const leftover::Exemptions& exemptions, uid_t uid) {
    leftover::SystemAccounts accounts;
    leftover::EvaluationContext context;
    context.self = ::getpid();
    context.event = leftover::Event{leftover::Scope::job_user, uid};
    leftover::Evaluation evaluation(
        exemptions, accounts, [] { return leftover::Result<leftover::LiveWork>(leftover::LiveWork{}); }, {}, context);
    auto plan = evaluation();
    if (!plan.ok()) {
        std::fprintf(stderr, "leftover_bench: evaluation: %s\n", plan.error().message.c_str());
        std::exit(2);
    }
    return plan->kills().size();
}

int scan(uid_t uid, const std::string& user, int reps, bool leftover_only) {
    const auto exemptions = load_exemptions(uid);
    std::vector<double> leftover_ms, stat_ms, status_ms, pgrep_ms;
    std::size_t kills = 0, dirs = 0;
    const long hwm_before = maxrss_kb();
    // Warm-up: first touches of /proc dentries and of the account database.
    kills = leftover_scan_decide(exemptions, uid);
    floor_stat();
    floor_status();
    // The order turns every repetition, so that no method always runs right after pgrep
    // (which leaves many /proc dentries behind) or always first.
    const auto timed = [](std::vector<double>& into, auto&& body) {
        const auto t = Clock::now();
        body();
        into.push_back(ms_since(t));
    };
    for (int i = 0; i < reps; ++i) {
        for (int k = 0; k < 4; ++k) {
            if (leftover_only && (i + k) % 4 != 0) continue;
            switch ((i + k) % 4) {
                case 0: timed(leftover_ms, [&] { kills = leftover_scan_decide(exemptions, uid); }); break;
                case 1: timed(stat_ms, [&] { dirs = floor_stat(); }); break;
                case 2: timed(status_ms, [&] { floor_status(); }); break;
                default: timed(pgrep_ms, [&] { run_quiet({"/usr/bin/pgrep", "-U", user}); }); break;
            }
        }
    }
    std::printf(
        "{\"processes\": %zu, \"kills\": %zu, \"leftover\": %s, \"floor_stat\": %s, \"floor_status\": %s, "
        "\"pgrep\": %s, \"hwm_before_kb\": %ld, \"hwm_after_kb\": %ld}\n",
        dirs, kills, json_list(leftover_ms).c_str(), json_list(stat_ms).c_str(), json_list(status_ms).c_str(),
        json_list(pgrep_ms).c_str(), hwm_before, maxrss_kb());
    return 0;
}

// Where the time of one evaluation goes: each /proc pass on its own, then the scan
// alone and scan + decide, every figure the median of REPS.
int costs(uid_t uid, int reps) {
    const auto exemptions = load_exemptions(uid);
    std::vector<std::string> user_pids;  // pids of processes whose /proc/<pid> uid is uid
    {
        const leftover::UniqueFd root(open_proc());
        for_each_pid(root.get(), [&](int dir, const char* name) {
            struct stat st {};
            if (::fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_uid == uid) user_pids.emplace_back(name);
        });
    }
    auto median_of = [&](auto&& body) {
        std::vector<double> v;
        for (int i = 0; i < reps; ++i) {
            const auto t = Clock::now();
            body();
            v.push_back(ms_since(t));
        }
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    // Reads `file` of every user pid, through a pid directory fd when file is not empty.
    auto pass = [&](const char* file, bool via_dir) {
        const leftover::UniqueFd root(open_proc());
        char path[64];
        char buf[8192];
        const auto read_all = [&](int dir, const char* name, int flags) {
            const leftover::UniqueFd fd(::openat(dir, name, O_RDONLY | O_CLOEXEC | flags));
            if (!fd.valid()) return;
            while (::read(fd.get(), buf, sizeof buf) > 0) {}
        };
        for (const auto& pid : user_pids) {
            if (via_dir) {
                const leftover::UniqueFd dir(
                    ::openat(root.get(), pid.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
                if (dir.valid() && *file) read_all(dir.get(), file, O_NOFOLLOW);
            } else {
                std::snprintf(path, sizeof path, "%s/%s", pid.c_str(), file);
                read_all(root.get(), path, 0);
            }
        }
    };
    leftover::ScanOptions scan_options;
    scan_options.caller_pid = ::getpid();
    scan_options.wants_detail = [&](uid_t owner) { return !exemptions.by_uid(owner).is_protected(); };
    scan_options.read_cgroup = false;  // as Evaluation scans (cgroups: read_job_cgroups, below)
    std::printf("{\"user_processes\": %zu", user_pids.size());
    std::printf(", \"list getdents+fstatat\": %.3f", median_of([] { floor_stat(); }));
    std::printf(", \"open+close pid dir\": %.3f", median_of([&] { pass("", true); }));
    std::printf(", \"status via path\": %.3f", median_of([&] { pass("status", false); }));
    std::printf(", \"dir+stat\": %.3f", median_of([&] { pass("stat", true); }));
    std::printf(", \"dir+status\": %.3f", median_of([&] { pass("status", true); }));
    std::printf(", \"dir+cgroup\": %.3f", median_of([&] { pass("cgroup", true); }));
    std::printf(", \"scan_processes\": %.3f", median_of([&] { (void)leftover::scan_processes(scan_options); }));
    // The scan as Evaluation makes it when the job state shows a live job on the node.
    std::printf(", \"scan_processes + read_job_cgroups\": %.3f", median_of([&] {
                    if (auto table = leftover::scan_processes(scan_options); table.ok()) {
                        std::set<pid_t> all;  // the worst case: every process a kill candidate
                        for (const auto& p : table->processes) all.insert(p.pid);
                        (void)leftover::read_job_cgroups("/proc", *table, all);
                    }
                }));
    leftover::ScanOptions list_only = scan_options;
    list_only.wants_detail = [](uid_t) { return false; };
    std::printf(", \"scan_processes, no detail\": %.3f", median_of([&] { (void)leftover::scan_processes(list_only); }));
    std::printf(", \"check_view\": %.3f", median_of([&] {
                    const leftover::UniqueFd root(open_proc());
                    (void)leftover::check_view(root.get(), scan_options);
                }));
    std::printf(", \"read_ancestry(self)\": %.3f",
                median_of([&] { (void)leftover::read_ancestry("/proc", ::getpid()); }));
    std::printf(", \"account lookup\": %.3f", median_of([&] { (void)leftover::SystemAccounts{}.name_of(uid); }));
    {
        auto table = leftover::scan_processes(scan_options);
        // Every uid the range rules leave unprotected classified by name, as the
        // evaluation does for the uids it would kill.
        std::set<uid_t> unprotected;
        for (const auto& p : table->processes)
            if (p.detailed && p.uids.all_equal() && !exemptions.by_uid(p.uids.real).is_protected())
                unprotected.insert(p.uids.real);
        const auto answers = leftover::SystemAccounts{}.look_up(unprotected, exemptions.listed_names(),
                                                                std::chrono::steady_clock::time_point::max());
        std::map<uid_t, leftover::Exemption> by_name;
        for (const uid_t u : unprotected) by_name.emplace(u, exemptions.classify(u, answers));
        const auto by_uid = leftover::table_exemptions(*table, exemptions, by_name);
        const leftover::LiveWork live;
        std::printf(
            ", \"decide\": %.3f", median_of([&] {
                (void)leftover::decide(leftover::DecisionInput{
                    *table, by_uid, live, leftover::Event{leftover::Scope::job_user, uid}, ::getpid(), {}, {}, {}});
            }));
    }
    std::printf(", \"scan + decide (Evaluation)\": %.3f}\n", median_of([&] { leftover_scan_decide(exemptions, uid); }));
    return 0;
}

class NullSink final : public leftover::sweep::LogSink {
public:
    void write(leftover::LogLevel, const std::string& text) override { bytes += text.size(); }
    std::size_t bytes = 0;
};

// The sweep's log as the deep bench reads it: every action line counted by its first
// word (SIGSTOP, SIGKILL, ...) with the time of the first and the last, and every other
// line (grace wait, warnings, what was left at the deadline, the summary) kept with its
// time, in ms since `start`.
class TimedSink final : public leftover::sweep::LogSink {
public:
    explicit TimedSink(Clock::time_point start) : start_(start) {}
    void write(leftover::LogLevel, const std::string& text) override {
        const double at = std::chrono::duration<double, std::milli>(Clock::now() - start_).count();
        const std::string word = text.substr(0, text.find(' '));
        if (word.starts_with("SIG") || word == "would" || word == "not") {
            auto& kind = actions_[word];
            if (kind.count++ == 0) kind.first = at;
            kind.last = at;
            return;
        }
        lines_.emplace_back(at, text);
    }
    std::string json() const {
        std::string out = "{\"actions\": {";
        bool first = true;
        for (const auto& [word, kind] : actions_) {
            out += fmt::format("{}\"{}\": {{\"count\": {}, \"first_ms\": {:.1f}, \"last_ms\": {:.1f}}}",
                               first ? "" : ", ", word, kind.count, kind.first, kind.last);
            first = false;
        }
        out += "}, \"lines\": [";
        first = true;
        for (const auto& [at, text] : lines_) {
            out += fmt::format("{}[{:.1f}, \"{}\"]", first ? "" : ", ", at, json_escape(text));
            first = false;
        }
        return out + "]}";
    }

private:
    static std::string json_escape(const std::string& text) {
        std::string out;
        for (const char c : text) {
            if (c == '"' || c == '\\')
                out += {'\\', c};
            else if (static_cast<unsigned char>(c) < 0x20)
                out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
            else
                out += c;
        }
        return out;
    }
    struct Kind {
        std::size_t count = 0;
        double first = 0, last = 0;
    };
    Clock::time_point start_;
    std::map<std::string, Kind> actions_;
    std::vector<std::pair<double, std::string>> lines_;
};

// Pins every live process whose real uid is uid.
std::vector<leftover::UniqueFd> pin_user(uid_t uid) {
    std::vector<leftover::UniqueFd> pidfds;
    const leftover::UniqueFd root(open_proc());
    char path[64];
    char buf[4096];
    for_each_pid(root.get(), [&](int dir, const char* name) {
        std::snprintf(path, sizeof path, "%s/status", name);
        const leftover::UniqueFd fd(::openat(dir, path, O_RDONLY | O_CLOEXEC));
        if (!fd.valid()) return;
        const ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
        if (n <= 0) return;
        buf[n] = '\0';
        const char* state = std::strstr(buf, "\nState:");
        const char* line = std::strstr(buf, "\nUid:");
        if (!line || !state) return;
        const char code = state[7 + std::strspn(state + 7, " \t")];
        if (code == 'Z' || code == 'X') return;
        if (std::strtoul(line + 5, nullptr, 10) != uid) return;
        leftover::UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, std::atoi(name), 0)));
        if (pidfd.valid()) pidfds.push_back(std::move(pidfd));
    });
    return pidfds;
}

// Waits until every pinned process has exited, then releases the pins; false after 60 s.
bool wait_exited(std::vector<leftover::UniqueFd>& pidfds) {
    std::vector<pollfd> fds;
    for (const auto& pidfd : pidfds) fds.push_back({pidfd.get(), POLLIN, 0});
    const auto until = Clock::now() + std::chrono::seconds(60);
    while (!fds.empty() && Clock::now() < until) {
        if (::poll(fds.data(), fds.size(), 1000) < 0 && errno != EINTR) die("poll");
        std::erase_if(fds, [](const pollfd& f) { return f.revents != 0; });
    }
    pidfds.clear();
    return fds.empty();
}

int sweep(uid_t uid, const std::string& user, const std::string& method, std::size_t expect) {
    namespace fs = std::filesystem;
    // The plugin's inputs, prepared before the clock starts (the plugin reads them in
    // task_exit): a root-owned config, an empty spool dir (no live steps).
    const fs::path dir = fs::temp_directory_path() / fmt::format("leftover-bench-{}", ::getpid());
    fs::create_directories(dir / "spool");
    const fs::path conf = dir / "leftover.conf";
    if (FILE* f = std::fopen(conf.c_str(), "w")) {
        // The strays' uid only: a sweep of this machine touches nobody else's processes.
        std::fputs(fmt::format("scope: job_user\ngrace: 0\nslurm_timeout: 30\nuid_min: {}\nuid_max: {}\n"
                               "sweep_on_controller_host: true\n",  // this machine's test clusters run slurmctld
                               uid, uid)
                       .c_str(),
                   f);
        std::fclose(f);
    }
    ::chmod(conf.c_str(), 0644);
    leftover::sweep::ConfigAndExemptions prepared;
    if (method == "leftover") prepared = leftover::sweep::load_config_and_exemptions(conf, true, {});

    auto pidfds = pin_user(uid);
    if (pidfds.size() != expect) {
        std::fprintf(stderr, "leftover_bench: found %zu processes of uid %u, expected %zu\n", pidfds.size(), uid,
                     expect);
        fs::remove_all(dir);
        return 2;
    }
    const long rss_before = maxrss_kb();
    std::size_t killed = 0;
    int rounds = 0;
    std::size_t evaluations = 0;
    const auto start = Clock::now();
    if (method == "leftover") {
        leftover::sweep::SweepRequest request;
        request.trigger.label = "bench sweep";
        request.trigger.uid = uid;
        request.trigger.job_id = 1;
        request.trigger.job_ending = true;
        request.node.spool_dir = dir / "spool";
        request.node.node_name = "bench";
        request.node.prolog_contain = true;
        request.self = ::getpid();
        request.started = start;
        NullSink sink;
        leftover::sweep::Logger log(sink);
        const auto report = leftover::sweep::run_sweep(prepared, request, nullptr, leftover::SystemAccounts{}, log);
        if (report.error) std::fprintf(stderr, "leftover_bench: sweep error: %s\n", report.error->message.c_str());
        std::vector<pid_t> signalled;  // distinct pids: a slow exit can be signalled again next round
        for (const auto& action : report.actions)
            if (action.outcome == leftover::Outcome::signalled) signalled.push_back(action.pid);
        std::sort(signalled.begin(), signalled.end());
        killed = static_cast<std::size_t>(std::unique(signalled.begin(), signalled.end()) - signalled.begin());
        rounds = report.rounds;
        evaluations = report.evaluations;
    } else if (method == "pkill") {
        run_quiet({"/usr/bin/pkill", "-KILL", "-U", user});
    } else if (method == "killall") {
        run_quiet({"/usr/bin/killall", "-9", "-u", user});
    } else {
        std::fprintf(stderr, "leftover_bench: unknown method %s\n", method.c_str());
        return 2;
    }
    const double signalled_ms = ms_since(start);
    const bool all_gone = wait_exited(pidfds);
    const double total_ms = ms_since(start);
    fs::remove_all(dir);
    std::printf(
        "{\"method\": \"%s\", \"ms\": %.4f, \"returned_ms\": %.4f, \"all_gone\": %s, \"killed\": %zu, "
        "\"rounds\": %d, \"evaluations\": %zu, \"maxrss_before_kb\": %ld, \"maxrss_kb\": %ld}\n",
        method.c_str(), total_ms, signalled_ms, all_gone ? "true" : "false", killed, rounds, evaluations, rss_before,
        maxrss_kb());
    return all_gone ? 0 : 1;
}

// ---- deep chains and live users, in a pid namespace of the bench's own ------------

// Every uid has an account "bench<uid>": no accounts are created on the machine.
class BenchAccounts final : public leftover::AccountDatabase {
public:
    leftover::AccountAnswers look_up(const std::set<uid_t>& uids, const std::set<std::string>& names,
                                     std::chrono::steady_clock::time_point) const override {
        leftover::AccountAnswers answers;
        for (const uid_t uid : uids)
            answers.names.emplace(
                uid, leftover::AccountLookup{leftover::LookupStatus::found, fmt::format("bench{}", uid), 0, {}});
        for (const std::string& name : names)
            answers.uids.emplace(name, leftover::UidLookup{leftover::LookupStatus::no_account, 0, 0, {}});
        return answers;
    }
};

// One level of a chain: set up, then fork the next level (which execs this program
// again, so every level starts from a fresh image) or, at the bottom, the fan. A chain
// of plain forks would be unrealistically slow to fork and to kill: every fork level
// makes the kernel's anon_vma chains of the copied memory one longer.
[[noreturn]] void tree_level(long level, long depth, long count, int setup_fd) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::prctl(PR_SET_NAME, "lo-bench-deep");
    const char byte = 1;
    if (::write(setup_fd, &byte, 1) != 1) ::_exit(4);
    if (level + 1 < std::min(depth, count)) {
        const pid_t child = ::fork();
        if (child < 0) ::_exit(5);
        if (child == 0) {
            const auto arg = [](long value) { return std::to_string(value); };
            const std::string args[] = {"leftover_bench", "tree-level", arg(level + 1),
                                        arg(depth),       arg(count),   arg(setup_fd)};
            char* argv[] = {const_cast<char*>(args[0].c_str()),
                            const_cast<char*>(args[1].c_str()),
                            const_cast<char*>(args[2].c_str()),
                            const_cast<char*>(args[3].c_str()),
                            const_cast<char*>(args[4].c_str()),
                            const_cast<char*>(args[5].c_str()),
                            nullptr};
            ::execv("/proc/self/exe", argv);
            ::_exit(6);
        }
    } else {
        for (long i = std::min(depth, count); i < count; ++i) {
            const pid_t child = ::fork();
            if (child < 0) ::_exit(5);
            if (child == 0) {
                ::prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (::write(setup_fd, &byte, 1) != 1) ::_exit(4);
                for (;;) ::pause();
            }
        }
    }
    for (;;) ::pause();
}

// Starts a tree of `count` idle processes of uid: a chain `depth` deep, the rest a fan
// under its bottom. Each dies with its parent; returns when all are set up. The first
// fork uses up pid 2, which the scan would take for kthreadd in a fresh namespace.
void spawn_tree(uid_t uid, long count, long depth) {
    if (const pid_t burn = ::fork(); burn == 0) {
        for (;;) ::pause();
    }
    int setup[2];
    if (::pipe(setup) != 0) die("pipe");  // the write end is inherited across every exec
    ::fcntl(setup[0], F_SETFD, FD_CLOEXEC);
    const pid_t top = ::fork();
    if (top < 0) die("fork");
    if (top == 0) {
        ::close(setup[0]);
        if (::setgroups(0, nullptr) != 0 || ::setgid(uid) != 0 || ::setuid(uid) != 0) ::_exit(3);
        ::prctl(PR_SET_DUMPABLE, 1);  // like a program exec'd by the user
        tree_level(0, depth, count, setup[1]);
    }
    ::close(setup[1]);
    for (long done = 0; done < count;) {
        char buf[4096];
        const ssize_t n = ::read(setup[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            std::fprintf(stderr, "leftover_bench: only %ld of %ld processes were set up\n", done, count);
            std::exit(1);
        }
        done += n;
    }
    ::close(setup[0]);
}

struct Timed {
    std::vector<double> ms;
    std::size_t kills = 0;
    std::string error;
};

// REPS evaluations as at a node-wide sweep, with the given job state.
Timed time_evaluations(uid_t uid, int reps, const leftover::LiveWork& live) {
    auto config = bench_config(uid + 1);
    auto exemptions = leftover::Exemptions::load(config, {});
    if (!exemptions.ok()) die("exemptions");
    BenchAccounts accounts;
    Timed out;
    for (int i = 0; i < reps; ++i) {
        leftover::EvaluationContext context;
        context.self = ::getpid();
        context.deadline = Clock::now() + std::chrono::seconds(3);  // grace 0 + slurm_timeout 2 + 1 s
        const auto start = Clock::now();
        leftover::Evaluation evaluation(
            exemptions.value(), accounts, [&] { return leftover::Result<leftover::LiveWork>(live); }, {}, context);
        auto plan = evaluation();
        out.ms.push_back(ms_since(start));
        if (!plan.ok()) {
            out.error = plan.error().message;
            break;
        }
        out.kills = plan->kills().size();
    }
    return out;
}

std::vector<double> time_floor(int reps, std::size_t (*floor)()) {
    std::vector<double> ms;
    for (int i = 0; i < reps; ++i) {
        const auto start = Clock::now();
        floor();
        ms.push_back(ms_since(start));
    }
    return ms;
}

// The floors for killing a user's every process, each on a tree of its own, from the
// start until every process has exited: one kill(-1, SIGKILL) from a child that has
// taken the uid (the kernel signals every process the uid may signal, atomically
// against forks), and `pkill -KILL -U uid`. The bench, pid 1 here, reaps what the
// last tree left first: a tree of 40,000 leaves as many zombies.
struct KillFloor {
    double ms = 0;
    bool all_gone = false;
};
KillFloor time_kill_floor(uid_t uid, long count, long depth, bool kill_all) {
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {}
    spawn_tree(uid, count, depth);
    auto pidfds = pin_user(uid);
    const auto start = Clock::now();
    if (kill_all) {
        const pid_t child = ::fork();
        if (child < 0) die("fork");
        if (child == 0) {
            if (::setgroups(0, nullptr) != 0 || ::setgid(uid) != 0 || ::setuid(uid) != 0) ::_exit(3);
            ::_exit(::kill(-1, SIGKILL) == 0 ? 0 : 4);
        }
        int status = 0;
        while (::waitpid(child, &status, 0) < 0)
            if (errno != EINTR) die("waitpid");
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) die("kill(-1) as the user failed");
    } else {
        run_quiet({"/usr/bin/pkill", "-KILL", "-U", std::to_string(uid)});
    }
    KillFloor floor;
    floor.all_gone = wait_exited(pidfds);
    floor.ms = ms_since(start);
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {}
    return floor;
}

int deep(uid_t uid, long count, long depth, int reps) {
    if (::getpid() != 1) {
        std::fprintf(stderr, "leftover_bench deep: run it under unshare --pid --fork --mount-proc\n");
        return 2;
    }
    auto spawn_start = Clock::now();
    spawn_tree(uid, count, depth);
    const double spawn_ms = ms_since(spawn_start);
    const auto evaluations = time_evaluations(uid, reps, {});
    const auto floor_stat_ms = time_floor(reps, floor_stat);
    const auto floor_status_ms = time_floor(reps, floor_status);

    // One sweep as the plugin runs it: grace 0, one deadline (2 + 1 s with grace 0).
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / fmt::format("leftover-bench-deep-{}", ::getppid());
    fs::create_directories(dir / "spool");
    const fs::path conf = dir / "leftover.conf";
    if (FILE* f = std::fopen(conf.c_str(), "w")) {
        std::fputs(fmt::format("grace: 0\nuid_max: {}\n", uid + 1).c_str(), f);
        std::fclose(f);
    }
    ::chmod(conf.c_str(), 0644);
    const auto prepared = leftover::sweep::load_config_and_exemptions(conf, true, {});
    // The executor pins every target with a pidfd: room for all of them, as slurmd's
    // unit gives slurmstepd (LimitNOFILE=131072 in Slurm's slurmd.service); root may raise
    // the hard limit, else the soft one goes up to it. The bench pins none (it would need
    // as many again): it polls for survivors after the sweep returns.
    rlimit files{};
    if (::getrlimit(RLIMIT_NOFILE, &files) == 0) {
        const rlimit slurmd_unit{131072, std::max<rlim_t>(files.rlim_max, 131072)};
        if (files.rlim_cur < slurmd_unit.rlim_cur && ::setrlimit(RLIMIT_NOFILE, &slurmd_unit) != 0) {
            files.rlim_cur = files.rlim_max;
            ::setrlimit(RLIMIT_NOFILE, &files);
        }
    }
    ::getrlimit(RLIMIT_NOFILE, &files);
    leftover::sweep::SweepRequest request;
    request.trigger.label = "bench deep sweep";
    request.node.spool_dir = dir / "spool";
    request.node.node_name = "bench";
    request.node.prolog_contain = true;
    request.self = ::getpid();
    request.started = Clock::now();
    TimedSink sink(request.started);
    leftover::sweep::Logger log(sink);
    const auto report = leftover::sweep::run_sweep(prepared, request, nullptr, BenchAccounts{}, log);
    const double returned_ms = ms_since(request.started);
    // The sweep's one deadline: grace 0 + slurm_timeout 2 + 1 s (run_sweep.cpp).
    constexpr double deadline_ms = 3000;
    bool all_gone = false;
    while (!(all_gone = pin_user(uid).empty()) && ms_since(request.started) < 60000) ::usleep(10000);
    const double sweep_ms = ms_since(request.started);
    fs::remove_all(dir);
    const KillFloor kill_all = time_kill_floor(uid, count, depth, true);
    const KillFloor pkill = time_kill_floor(uid, count, depth, false);
    std::printf(
        "{\"processes\": %ld, \"depth\": %ld, \"spawn_ms\": %.1f, \"evaluation\": %s, \"kills\": %zu, "
        "\"evaluation_error\": \"%s\", \"floor_stat\": %s, \"floor_status\": %s, \"sweep_ms\": %.4f, "
        "\"sweep_returned_ms\": %.4f, \"sweep_error\": \"%s\", \"deadline_reached\": %s, \"rounds\": %d, "
        "\"all_gone\": %s, \"deadline_ms\": %.0f, \"past_deadline_ms\": %.1f, \"evaluations\": %zu, "
        "\"survivors\": %zu, \"nofile\": %llu, \"kill_all_ms\": %.1f, \"kill_all_gone\": %s, "
        "\"pkill_ms\": %.1f, \"pkill_gone\": %s, \"log\": %s}\n",
        count, depth, spawn_ms, json_list(evaluations.ms).c_str(), evaluations.kills, evaluations.error.c_str(),
        json_list(floor_stat_ms).c_str(), json_list(floor_status_ms).c_str(), sweep_ms, returned_ms,
        report.error ? report.error->message.c_str() : "", report.deadline_reached ? "true" : "false", report.rounds,
        all_gone ? "true" : "false", deadline_ms, returned_ms - deadline_ms, report.evaluations,
        report.survivors.size(), static_cast<unsigned long long>(files.rlim_cur), kill_all.ms,
        kill_all.all_gone ? "true" : "false", pkill.ms, pkill.all_gone ? "true" : "false", sink.json().c_str());
    return all_gone ? 0 : 1;
}

int live(uid_t uid, long count, int reps) {
    if (::getpid() != 1) {
        std::fprintf(stderr, "leftover_bench live: run it under unshare --pid --fork --mount-proc\n");
        return 2;
    }
    spawn_tree(uid, count, 1);
    spawn_tree(uid + 1, 10, 1);
    leftover::LiveWork work;
    work.uids = {uid};
    work.job_ids = {1};
    const auto evaluations = time_evaluations(uid, reps, work);
    const auto floor_stat_ms = time_floor(reps, floor_stat);
    std::printf(
        "{\"processes\": %ld, \"strays\": 10, \"evaluation\": %s, \"kills\": %zu, \"evaluation_error\": \"%s\", "
        "\"floor_stat\": %s}\n",
        count, json_list(evaluations.ms).c_str(), evaluations.kills, evaluations.error.c_str(),
        json_list(floor_stat_ms).c_str());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (args.size() == 3 && args[0] == "spawn")
        return spawn(static_cast<uid_t>(std::stoul(args[1])), std::stol(args[2]));
    if ((args.size() == 4 || (args.size() == 5 && args[4] == "leftover-only")) && args[0] == "scan")
        return scan(static_cast<uid_t>(std::stoul(args[1])), args[2], std::stoi(args[3]), args.size() == 5);
    if (args.size() == 3 && args[0] == "costs")
        return costs(static_cast<uid_t>(std::stoul(args[1])), std::stoi(args[2]));
    if (args.size() == 5 && args[0] == "sweep")
        return sweep(static_cast<uid_t>(std::stoul(args[1])), args[2], args[3], std::stoul(args[4]));
    if (args.size() == 5 && args[0] == "tree-level")
        tree_level(std::stol(args[1]), std::stol(args[2]), std::stol(args[3]), std::stoi(args[4]));
    if (args.size() == 5 && args[0] == "deep")
        return deep(static_cast<uid_t>(std::stoul(args[1])), std::stol(args[2]), std::stol(args[3]),
                    std::stoi(args[4]));
    if (args.size() == 4 && args[0] == "live")
        return live(static_cast<uid_t>(std::stoul(args[1])), std::stol(args[2]), std::stoi(args[3]));
    std::fprintf(stderr,
                 "usage: leftover_bench deep UID COUNT DEPTH REPS | live UID COUNT REPS | spawn UID COUNT | scan UID "
                 "USER REPS [leftover-only] | costs UID REPS | "
                 "sweep UID USER METHOD EXPECT\n");
    return 2;
}
