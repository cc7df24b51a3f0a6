// SPDX-License-Identifier: GPL-2.0-or-later
#include "steps/starting_work.hpp"

#include "procfs/proc_read.hpp"
#include "steps/live_work.hpp"
#include "util/errno_text.hpp"
#include "util/unique_fd.hpp"
#include "util/whole_number.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <string_view>
#include <vector>

namespace leftover::steps {
namespace {

enum class Program { other, slurmd, slurmstepd };

struct RootProcess {
    pid_t ppid = 0;
    Program program = Program::other;
    bool young = true;             // started within kSetUpWithin
    std::uint64_t start_time = 0;  // clock ticks after boot
};

// Setting a step up takes milliseconds, a prolog seconds: a slurmstepd without a socket
// for longer is stuck or foreign (its socket removed, a spool dir nobody named), and
// would hold every sweep of the node to its deadline.
constexpr double kSetUpWithin = 120.0;  // seconds

// More new ids than this since the last look: a look, not a stat of each.
constexpr pid_t kMaxNewIds = 4096;

// Seconds since boot from <proc_root>/uptime; nullopt when it cannot be read (no age
// limit then).
std::optional<double> uptime(int root, std::string& buf) {
    if (read_file(root, "uptime", buf) != 0) return std::nullopt;
    char* end = nullptr;
    const double seconds = std::strtod(buf.c_str(), &end);
    if (end == buf.c_str() || seconds <= 0) return std::nullopt;
    return seconds;
}

// argv[0], argv[1], ... of a cmdline file.
bool has_args(std::string_view cmdline, std::string_view first, std::string_view second) {
    const auto end0 = cmdline.find('\0');
    if (end0 == std::string_view::npos) return false;
    const std::string_view rest = cmdline.substr(end0 + 1);
    return rest.starts_with(std::string(first) + '\0' + std::string(second));
}

// The step a slurmstepd's title names, "J.S" as describe_step writes it: slurmstepd.c
// _set_job_log_prefix sets "slurmstepd: [J.S]" ("[J.S+C]" for a component of a het step,
// "[J.S stepmgr]" in 26.05) before msg_thr_create makes the step socket. nullopt while
// the command line is still the exec's (no title yet). A het step's components share
// the step's id: the socket of one shows the step's user live all the same.
std::optional<std::string> titled_step(std::string_view cmdline) {
    const std::string_view title = cmdline.substr(0, cmdline.find('\0'));
    const auto open = title.find(": [");
    if (open == std::string_view::npos) return std::nullopt;
    const std::string_view rest = title.substr(open + 3);
    const auto end = rest.find_first_of("]+ ");
    if (end == std::string_view::npos || end == 0) return std::nullopt;
    return std::string(rest.substr(0, end));
}

// The value of `key` in an environ file ("K=V\0K=V\0..."), if set.
std::optional<std::string_view> environ_value(std::string_view environ, std::string_view key) {
    while (!environ.empty()) {
        const auto end = environ.find('\0');
        const std::string_view entry = environ.substr(0, end);
        if (entry.size() > key.size() && entry.starts_with(key) && entry[key.size()] == '=')
            return entry.substr(key.size() + 1);
        if (end == std::string_view::npos) break;
        environ.remove_prefix(end + 1);
    }
    return std::nullopt;
}

// The pipes on a process's stdin and stdout ("pipe:[N]", as /proc/<pid>/fd/<n> reads);
// an error number when a link cannot be read (ESRCH: exited). A missing one is closed.
int stdio_pipes(int root, pid_t pid, std::set<std::string>& out, std::string& buf) {
    for (const int fd : {0, 1}) {
        const int err = read_link(root, fmt::format("{}/fd/{}", pid, fd).c_str(), buf);
        if (err == ENOENT) continue;  // closed (or the process exited: the caller sees it gone)
        if (err != 0) return err;
        if (buf.starts_with("pipe:[")) out.insert(buf);
    }
    return 0;
}

// Which pipe ("pipe:[N]") each process holds, of those that hold any.
using PipeHolders = std::map<std::string, std::set<pid_t>>;

// Every pipe that one of `slurmds` holds open on a descriptor of its own (not its stdin,
// stdout or stderr, which it may share with whoever started it), with who holds it; an
// error message when a slurmd's fd directory cannot be read. A slurmd that exits
// meanwhile holds none. The ends slurmd keeps of a launch's pipes are never its stdio.
std::optional<std::string> slurmd_pipes(int root, const std::string& proc_root, const std::vector<pid_t>& slurmds,
                                        PipeHolders& out) {
    std::string link;
    for (const pid_t slurmd : slurmds) {
        const std::string fd_dir = fmt::format("{}/fd", slurmd);
        UniqueFd dir(::openat(root, fd_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!dir.valid()) {
            if (vanished(errno)) continue;
            return fmt::format("cannot open {}/{}: {}", proc_root, fd_dir, errno_text(errno));
        }
        std::optional<std::string> failed;
        for (;;) {
            const int n = read_dir_batch(dir.get(), [&](const char* name) {
                if (failed || (name[0] >= '0' && name[0] <= '2' && name[1] == '\0')) return;
                if (const int err = read_link(dir.get(), name, link)) {
                    if (!vanished(err))
                        failed = fmt::format("cannot read {}/{}/{}: {}", proc_root, fd_dir, name, errno_text(err));
                    return;  // closed meanwhile
                }
                if (link.starts_with("pipe:[")) out[link].insert(slurmd);
            });
            if (failed) return failed;
            if (n == 0 || (n < 0 && vanished(-n))) break;
            if (n < 0) return fmt::format("cannot list {}/{}: {}", proc_root, fd_dir, errno_text(-n));
        }
    }
    return std::nullopt;
}

Error proc_error(const std::string& proc_root, pid_t pid, const char* file, int err) {
    return Error::lookup(fmt::format("cannot read {}/{}/{}: {}", proc_root, pid, file, errno_text(err)),
                         ErrorSource::proc);
}

// Root's processes under proc_root but kernel threads and zombies, with what the two
// questions of this file need: one listing, the owner without opening the directory.
class RootProcesses {
public:
    static Result<RootProcesses> list(const std::string& proc_root);

    int root() const { return root_.get(); }
    const std::map<pid_t, RootProcess>& all() const { return processes_; }
    bool is(pid_t pid, Program program) const {
        const auto found = processes_.find(pid);
        return found != processes_.end() && found->second.program == program;
    }
    // A slurmd daemon itself, not one of its forks.
    bool slurmd_daemon(pid_t pid) const {
        return is(pid, Program::slurmd) && !is(processes_.at(pid).ppid, Program::slurmd);
    }
    // A process of another pid namespace is another host's, as for running_slurmds.
    bool foreign(pid_t pid, std::string& buf) const {
        return !my_namespace_.empty() && read_link(root(), fmt::format("{}/ns/pid", pid).c_str(), buf) == 0 &&
               buf != my_namespace_;
    }
    // What slurmd's child `pid` runs, by the environment slurmd gave it: a Prolog's job,
    // or nullopt (an Epilog, a health check, a fork that has not exec'd, gone meanwhile).
    // `denied`: the error number when the kernel refuses its environment to the caller
    // (EACCES, EPERM: /proc/<pid>/environ of a process that is not dumpable, as it may be
    // for a moment of its exec, needs CAP_SYS_PTRACE), with nullopt; else 0.
    Result<std::optional<PrologJob>> prolog_of(pid_t pid, std::string& buf, int& denied) const;

private:
    RootProcesses(UniqueFd root, std::string proc_root) : root_(std::move(root)), proc_root_(std::move(proc_root)) {}

    UniqueFd root_;
    std::string proc_root_;
    std::map<pid_t, RootProcess> processes_;
    std::string my_namespace_;  // unread: every process counts
};

Result<RootProcesses> RootProcesses::list(const std::string& proc_root) {
    UniqueFd root(::open(proc_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root.valid())
        return Error::lookup(fmt::format("cannot open {}: {}", proc_root, errno_text(errno)), ErrorSource::proc);
    RootProcesses out(std::move(root), proc_root);
    std::string buf;
    const auto now = uptime(out.root(), buf);
    read_link(out.root(), "self/ns/pid", out.my_namespace_);
    const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
    const Status listed = for_each_pid(out.root(), proc_root, [&](pid_t pid, const char* name) -> Status {
        struct stat st {};
        if (::fstatat(out.root(), name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (vanished(errno)) return Ok{};
            return proc_error(proc_root, pid, "", errno);
        }
        if (st.st_uid != 0 || !S_ISDIR(st.st_mode)) return Ok{};
        UniqueFd dir;
        if (const int err = open_pid_dir(out.root(), pid, dir)) {
            if (vanished(err)) return Ok{};
            return proc_error(proc_root, pid, "", err);
        }
        StatFields stat;
        if (const int err = read_stat(dir.get(), pid, stat, buf)) {
            if (vanished(err)) return Ok{};
            return proc_error(proc_root, pid, "stat", err);
        }
        if (stat.kernel_thread() || stat.state == 'Z' || stat.state == 'X') return Ok{};
        // An exe link even root cannot read (pid 1's in some containers): the name the
        // kernel took from the executable, as running_slurmds counts it.
        std::string_view program;
        if (const int err = read_pid_link(dir.get(), "exe", buf)) {
            if (vanished(err)) return Ok{};
            program = slurm_program_name(stat.comm);
        } else {
            program = slurm_program_name(exe_program(buf));
        }
        RootProcess& process = out.processes_[pid];
        process.ppid = stat.ppid;
        process.program = program == "slurmstepd" ? Program::slurmstepd
                          : program == "slurmd"   ? Program::slurmd
                                                  : Program::other;
        process.start_time = stat.start_time;
        process.young = !now || ticks <= 0 || *now - static_cast<double>(stat.start_time) / ticks < kSetUpWithin;
        return Ok{};
    });
    LEFTOVER_TRY(listed);
    return out;
}

Result<std::optional<PrologJob>> RootProcesses::prolog_of(pid_t pid, std::string& buf, int& denied) const {
    denied = 0;
    if (const int err = read_file(root(), fmt::format("{}/environ", pid).c_str(), buf)) {
        if (vanished(err)) return std::optional<PrologJob>();
        if (err == EACCES || err == EPERM) {
            denied = err;
            return std::optional<PrologJob>();
        }
        return proc_error(proc_root_, pid, "environ", err);
    }
    if (environ_value(buf, "SLURM_SCRIPT_CONTEXT") != "prolog_slurmd") return std::optional<PrologJob>();
    const auto job = environ_value(buf, "SLURM_JOB_ID");
    const auto uid = environ_value(buf, "SLURM_JOB_UID");
    const auto job_id = job ? parse_whole<std::uint32_t>(*job) : std::nullopt;
    const auto job_uid = uid ? parse_whole<std::uint32_t>(*uid) : std::nullopt;
    if (!job_id || !job_uid)
        return Error::lookup(fmt::format("slurmd's child pid {} runs a Prolog whose job or uid does not read from "
                                         "{}/{}/environ",
                                         pid, proc_root_, pid),
                             ErrorSource::proc);
    return std::optional<PrologJob>(PrologJob{pid, *job_id, static_cast<uid_t>(*job_uid)});
}

// The name of what a pid namespace gave out last: <proc_root>/sys/kernel/ns_last_pid.
std::optional<pid_t> last_id(const std::string& proc_root) {
    UniqueFd root(::open(proc_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    std::string buf;
    if (!root.valid() || read_file(root.get(), "sys/kernel/ns_last_pid", buf) != 0) return std::nullopt;
    while (!buf.empty() && buf.back() == '\n') buf.pop_back();
    const auto id = parse_whole<std::uint32_t>(buf);
    if (!id || *id > static_cast<std::uint32_t>(std::numeric_limits<pid_t>::max())) return std::nullopt;
    return static_cast<pid_t>(*id);
}

// Whether every id in (since, now] names no root process: gone already, or another
// owner's (a thread's id names its process's directory, by the process's owner).
bool no_root_process(const std::string& proc_root, pid_t since, pid_t now) {
    if (now < since || now - since > kMaxNewIds) return false;  // wrapped around, or a storm of forks
    if (now == since) return true;
    UniqueFd root(::open(proc_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root.valid()) return false;
    for (pid_t id = since + 1; id <= now; ++id) {
        struct stat st {};
        const std::string name = std::to_string(id);
        if (::fstatat(root.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (vanished(errno)) continue;
            return false;
        }
        if (st.st_uid == 0) return false;
    }
    return true;
}

}  // namespace

void SeenSteps::add(const LocalJobState& look) {
    // An unanswered socket's stepd is placed by its title, which names the socket's step
    // (slurmstepd sets it before it creates the socket): it needs no allowance, and one
    // would excuse another job's stepd that has no title yet (a held socket stood for it).
    unplaced_stepds = 0;
    for (const LocalStep& step : look.live) {
        steps.insert(describe_step(step.job_id, step.step_id));
        if (step.stepd_pid)
            stepds.insert(*step.stepd_pid);
        else
            ++unplaced_stepds;
    }
    for (const DeadStep& step : look.dead) silent.insert(describe_step(step.job_id, step.step_id));
    for (const UnansweredStep& step : look.unanswered) silent.insert(describe_step(step.job_id, step.step_id));
}

Result<std::vector<PrologJob>> jobs_in_prolog(const std::string& proc_root) {
    auto listed = RootProcesses::list(proc_root);
    LEFTOVER_TRY(listed);
    const RootProcesses& root = listed.value();
    std::vector<PrologJob> jobs;
    std::string buf;
    for (const auto& [pid, process] : root.all()) {
        if (!root.slurmd_daemon(process.ppid) || root.foreign(pid, buf)) continue;
        int denied = 0;  // a child whose environment is refused: work_being_set_up's doubt
        auto prolog = root.prolog_of(pid, buf, denied);
        LEFTOVER_TRY(prolog);
        if (*prolog) jobs.push_back(**prolog);
    }
    return jobs;
}

Result<std::optional<std::string>> work_being_set_up(const std::string& proc_root, const SeenSteps& seen,
                                                     const StepLister& list_steps, const std::set<pid_t>& not_doubt) {
    std::size_t unplaced_stepds = seen.unplaced_stepds;
    auto listed = RootProcesses::list(proc_root);
    LEFTOVER_TRY(listed);
    const RootProcesses& root = listed.value();
    std::string buf;
    // The pipes the slurmd processes hold, read once a process needs them.
    std::optional<PipeHolders> slurmds_hold;
    const auto held_by_slurmds = [&]() -> Result<const PipeHolders*> {
        if (!slurmds_hold) {
            std::vector<pid_t> slurmds;
            for (const auto& [pid, process] : root.all())
                if (process.program == Program::slurmd) slurmds.push_back(pid);
            slurmds_hold.emplace();
            if (auto msg = slurmd_pipes(root.root(), proc_root, slurmds, *slurmds_hold))
                return Error::lookup(*msg, ErrorSource::proc);
        }
        return &*slurmds_hold;
    };
    // Whether a slurmd feeds `stepd` its launch on its stdin or stdout; nullopt when it exited.
    const auto fed_by_slurmd = [&](pid_t stepd) -> Result<std::optional<bool>> {
        std::set<std::string> pipes;
        std::string link;
        if (const int err = stdio_pipes(root.root(), stepd, pipes, link)) {
            if (vanished(err)) return std::optional<bool>();
            return proc_error(proc_root, stepd, "fd", err);
        }
        if (pipes.empty()) return std::optional<bool>(false);
        auto held = held_by_slurmds();
        LEFTOVER_TRY(held);
        for (const std::string& pipe : pipes)
            if (held.value()->count(pipe) != 0) return std::optional<bool>(true);
        return std::optional<bool>(false);
    };
    // Whether `orphan`, a slurmd whose parent is none, holds a pipe that an older such
    // slurmd holds: the grandchild of _forkexec_slurmstepd, on its way to exec slurmstepd,
    // holds the ends of the launch pipes whose other ends the slurmd daemon holds (from
    // its fork, on their own numbers, then on its stdin and stdout), and every other pipe
    // of the daemon's until its exec. A daemon's own forks share its pipes too, but their
    // parent is a slurmd: they are no holders here; and the daemon is older than they.
    const auto orphan_fed = [&](pid_t orphan) -> Result<bool> {
        PipeHolders own;
        if (auto msg = slurmd_pipes(root.root(), proc_root, {orphan}, own))
            return Error::lookup(*msg, ErrorSource::proc);
        std::set<std::string> stdio;  // after its dup2s, the launch pipes are on its stdin and stdout
        std::string link;
        if (const int err = stdio_pipes(root.root(), orphan, stdio, link); err != 0 && !vanished(err))
            return proc_error(proc_root, orphan, "fd", err);
        for (const std::string& pipe : stdio) own[pipe].insert(orphan);
        auto held = held_by_slurmds();
        LEFTOVER_TRY(held);
        const std::uint64_t orphan_start = root.all().at(orphan).start_time;
        for (const auto& [pipe, unused] : own) {
            const auto holders = held.value()->find(pipe);
            if (holders == held.value()->end()) continue;
            for (const pid_t holder : holders->second) {
                const RootProcess& daemon = root.all().at(holder);
                if (holder != orphan && !root.is(daemon.ppid, Program::slurmd) && daemon.start_time < orphan_start)
                    return true;
            }
        }
        return false;
    };
    // The step sockets there are, listed once and only after a stepd's pipes were found
    // closed: slurmd closes them once the socket exists.
    std::optional<std::set<std::string>> listed_steps;
    const auto socket_listed = [&](const std::string& step) -> Result<bool> {
        if (!listed_steps) {
            auto steps = list_steps();
            LEFTOVER_TRY(steps);
            listed_steps = std::move(steps.value());
        }
        return listed_steps->count(step) != 0;
    };
    for (const auto& [pid, process] : root.all()) {
        if (not_doubt.count(pid) != 0) continue;
        // slurmd's child running a Prolog: its user is live once a look has found it.
        if (root.slurmd_daemon(process.ppid) && !root.foreign(pid, buf)) {
            int denied = 0;
            auto prolog = root.prolog_of(pid, buf, denied);
            LEFTOVER_TRY(prolog);
            if (*prolog) {
                if (seen.prologs.count(pid) != 0) continue;
                return std::optional<std::string>(
                    fmt::format("slurmd's child pid {} runs the Prolog of job {} for uid {}", pid, (*prolog)->job_id,
                                (*prolog)->uid));
            }
            // Whose job it sets up, if any, cannot be told: a doubt while it is young.
            if (denied != 0 && process.young && seen.prologs.count(pid) == 0)
                return std::optional<std::string>(
                    fmt::format("slurmd's child pid {} may run a Prolog (its environment cannot be read: {})", pid,
                                errno_text(denied)));
        }
        if (process.program == Program::other || !process.young) continue;
        const bool stepd = process.program == Program::slurmstepd;
        if (stepd && (seen.stepds.count(pid) != 0 || root.is(process.ppid, Program::slurmstepd))) continue;
        const bool slurmd_fork = !stepd && root.is(process.ppid, Program::slurmd);
        const std::string cmdline_path = fmt::format("{}/cmdline", pid);
        if (const int err = read_file(root.root(), cmdline_path.c_str(), buf)) {
            if (vanished(err)) continue;
            return proc_error(proc_root, pid, "cmdline", err);
        }
        if (buf.empty()) continue;  // exited meanwhile
        if (std::string ns; root.foreign(pid, ns)) continue;
        if (stepd) {
            if (has_args(buf, "spank", "epilog")) continue;  // another job ending
            const auto step = titled_step(buf);
            if (step && seen.steps.count(*step) != 0) continue;  // its socket was seen: past its setup
            // This node's only: a slurmd still feeds it its launch (no socket yet, or just
            // made), or a socket of its step is in our spool dirs (made since the last look).
            // Another cluster's, or another node's whose spool dir we do not read, is neither
            // once set up, and never answers here.
            auto fed = fed_by_slurmd(pid);
            LEFTOVER_TRY(fed);
            if (!fed.value()) continue;  // exited meanwhile
            if (!*fed.value()) {
                if (!step || seen.silent.count(*step) != 0) continue;  // refused unfed: an ending stepd
                auto ours = socket_listed(*step);
                LEFTOVER_TRY(ours);
                if (!ours.value()) continue;
            }
            // One that names a step no look listed is none of the unplaced sockets' stepds.
            if (!step && unplaced_stepds > 0) {
                --unplaced_stepds;
                continue;
            }
            return std::optional<std::string>(fmt::format("slurmstepd pid {} has no step socket yet", pid));
        }
        if (!slurmd_fork) {  // a slurmd daemon, or a fork of one orphaned on its way to exec slurmstepd
            auto fed = orphan_fed(pid);
            LEFTOVER_TRY(fed);
            if (!fed.value()) continue;
            return std::optional<std::string>(
                fmt::format("slurmd pid {}, a fork of a slurmd whose parent exited, may be starting a step", pid));
        }
        // Until it execs, a fork of slurmd has slurmd's command line whatever it is for:
        // _forkexec_slurmstepd's child (which forks the stepd's exec), the forks that open
        // a batch job's files, a prolog's, and an epilog's alike. It lasts milliseconds
        // and may be a job's start, so it stays a sign; only one that says epilog is not.
        if (buf.find("epilog") != std::string::npos) continue;  // 26.05's title of an epilog fork
        return std::optional<std::string>(
            fmt::format("slurmd pid {}, a fork of slurmd pid {}, may be starting a step", pid, process.ppid));
    }
    return std::optional<std::string>();
}

Result<std::optional<std::string>> StartingLook::operator()(const std::string& proc_root, const SeenSteps& seen,
                                                            const StepLister& list_steps,
                                                            const std::set<pid_t>& not_doubt) {
    const auto now = seen.unplaced_stepds == 0 ? last_id(proc_root) : std::nullopt;
    if (clear_since_ && now && no_root_process(proc_root, *clear_since_, *now)) {
        clear_since_ = now;
        return std::optional<std::string>();
    }
    auto found = work_being_set_up(proc_root, seen, list_steps, not_doubt);
    LEFTOVER_TRY(found);
    clear_since_ = found->has_value() ? std::nullopt : now;
    return found;
}

}  // namespace leftover::steps
