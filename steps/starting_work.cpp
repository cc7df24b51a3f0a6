// SPDX-License-Identifier: GPL-2.0-or-later
#include "steps/starting_work.hpp"

#include "procfs/proc_read.hpp"
#include "steps/live_work.hpp"
#include "util/errno_text.hpp"
#include "util/unique_fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstdlib>
#include <map>
#include <string_view>
#include <vector>

namespace leftover::steps {
namespace {

struct Daemon {
    pid_t ppid = 0;
    bool stepd = false;  // slurmstepd; else slurmd
    bool young = true;   // started within kSetUpWithin
};

// Setting a step up takes milliseconds, a prolog seconds: a slurmstepd without a socket
// for longer is stuck or foreign (its socket removed, a spool dir nobody named), and
// would hold every sweep of the node to its deadline.
constexpr double kSetUpWithin = 120.0;  // seconds

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

// Every pipe ("pipe:[N]") that one of `slurmds` holds open; an error message when a
// slurmd's fd directory cannot be read. A slurmd that exits meanwhile holds none.
std::optional<std::string> slurmd_pipes(int root, const std::string& proc_root, const std::vector<pid_t>& slurmds,
                                        std::set<std::string>& out) {
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
                if (failed) return;
                if (const int err = read_link(dir.get(), name, link)) {
                    if (!vanished(err))
                        failed = fmt::format("cannot read {}/{}/{}: {}", proc_root, fd_dir, name, errno_text(err));
                    return;  // closed meanwhile
                }
                if (link.starts_with("pipe:[")) out.insert(link);
            });
            if (failed) return failed;
            if (n == 0 || (n < 0 && vanished(-n))) break;
            if (n < 0) return fmt::format("cannot list {}/{}: {}", proc_root, fd_dir, errno_text(-n));
        }
    }
    return std::nullopt;
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
    for (const DeadStep& step : look.dead) steps.insert(describe_step(step.job_id, step.step_id));
    for (const UnansweredStep& step : look.unanswered) steps.insert(describe_step(step.job_id, step.step_id));
}

Result<std::optional<std::string>> work_being_set_up(const std::string& proc_root, const SeenSteps& seen,
                                                     const std::set<std::string>& listed_steps,
                                                     const std::set<pid_t>& not_doubt) {
    std::size_t unplaced_stepds = seen.unplaced_stepds;
    UniqueFd root(::open(proc_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root.valid())
        return Error::lookup(fmt::format("cannot open {}: {}", proc_root, errno_text(errno)), ErrorSource::proc);
    std::map<pid_t, Daemon> daemons;
    std::string buf;
    const auto now = uptime(root.get(), buf);
    std::string my_namespace;  // unread: every daemon counts
    read_link(root.get(), "self/ns/pid", my_namespace);
    const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
    const auto failed = [&](pid_t pid, const char* file, int err) {
        return Error::lookup(fmt::format("cannot read {}/{}/{}: {}", proc_root, pid, file, errno_text(err)),
                             ErrorSource::proc);
    };
    // One listing, root's processes only: the owner without opening the directory.
    const Status listed = for_each_pid(root.get(), proc_root, [&](pid_t pid, const char* name) -> Status {
        struct stat st {};
        if (::fstatat(root.get(), name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (vanished(errno)) return Ok{};
            return failed(pid, "", errno);
        }
        if (st.st_uid != 0 || !S_ISDIR(st.st_mode)) return Ok{};
        UniqueFd dir;
        if (const int err = open_pid_dir(root.get(), pid, dir)) {
            if (vanished(err)) return Ok{};
            return failed(pid, "", err);
        }
        StatFields stat;
        if (const int err = read_stat(dir.get(), pid, stat, buf)) {
            if (vanished(err)) return Ok{};
            return failed(pid, "stat", err);
        }
        if (stat.kernel_thread() || stat.state == 'Z' || stat.state == 'X') return Ok{};
        // An exe link even root cannot read (pid 1's in some containers): the name the
        // kernel took from the executable, as running_slurmds counts it.
        std::string_view program;
        if (const int err = read_link(dir.get(), "exe", buf)) {
            if (vanished(err)) return Ok{};
            program = slurm_program_name(stat.comm);
        } else {
            program = slurm_program_name(exe_program(buf));
        }
        const bool young = !now || ticks <= 0 || *now - static_cast<double>(stat.start_time) / ticks < kSetUpWithin;
        if (program == "slurmstepd" || program == "slurmd") daemons[pid] = {stat.ppid, program == "slurmstepd", young};
        return Ok{};
    });
    LEFTOVER_TRY(listed);

    const auto is = [&](pid_t pid, bool stepd) {
        const auto found = daemons.find(pid);
        return found != daemons.end() && found->second.stepd == stepd;
    };
    // The pipes the slurmds hold, read once a stepd needs them.
    std::optional<std::set<std::string>> slurmds_hold;
    const auto fed_by_slurmd = [&](pid_t stepd) -> Result<std::optional<bool>> {
        std::set<std::string> pipes;
        std::string link;
        if (const int err = stdio_pipes(root.get(), stepd, pipes, link)) {
            if (vanished(err)) return std::optional<bool>();
            return failed(stepd, "fd", err);
        }
        if (pipes.empty()) return std::optional<bool>(false);
        if (!slurmds_hold) {
            std::vector<pid_t> slurmds;
            for (const auto& [pid, daemon] : daemons)
                if (!daemon.stepd) slurmds.push_back(pid);
            slurmds_hold.emplace();
            if (auto msg = slurmd_pipes(root.get(), proc_root, slurmds, *slurmds_hold))
                return Error::lookup(*msg, ErrorSource::proc);
        }
        for (const std::string& pipe : pipes)
            if (slurmds_hold->count(pipe) != 0) return std::optional<bool>(true);
        return std::optional<bool>(false);
    };
    for (const auto& [pid, daemon] : daemons) {
        if (not_doubt.count(pid) != 0 || !daemon.young) continue;
        if (daemon.stepd && (seen.stepds.count(pid) != 0 || is(daemon.ppid, true))) continue;
        if (!daemon.stepd && !is(daemon.ppid, false)) continue;  // a slurmd daemon itself
        const std::string cmdline_path = fmt::format("{}/cmdline", pid);
        if (const int err = read_file(root.get(), cmdline_path.c_str(), buf)) {
            if (vanished(err)) continue;
            return failed(pid, "cmdline", err);
        }
        if (buf.empty()) continue;  // exited meanwhile
        // A daemon of another pid namespace is another host's, as for running_slurmds.
        if (std::string ns; !my_namespace.empty() &&
                            read_link(root.get(), fmt::format("{}/ns/pid", pid).c_str(), ns) == 0 && ns != my_namespace)
            continue;
        if (daemon.stepd) {
            if (has_args(buf, "spank", "epilog")) continue;  // another job ending
            const auto step = titled_step(buf);
            if (step && seen.steps.count(*step) != 0) continue;  // its socket was seen: past its setup
            // This node's only: a socket of its step is in our spool dirs (made since the
            // last look), or a slurmd still feeds it its launch (no socket yet, or just made).
            // Another cluster's, or another node's whose spool dir we do not read, is neither
            // once set up, and never answers here.
            if (!step || listed_steps.count(*step) == 0) {
                auto fed = fed_by_slurmd(pid);
                LEFTOVER_TRY(fed);
                if (!fed.value() || !*fed.value()) continue;  // exited meanwhile, or not this node's
            }
            // One that names a step no look listed is none of the unplaced sockets' stepds.
            if (!step && unplaced_stepds > 0) {
                --unplaced_stepds;
                continue;
            }
            return std::optional<std::string>(fmt::format("slurmstepd pid {} has no step socket yet", pid));
        }
        // Until it execs, a fork of slurmd has slurmd's command line whatever it is for:
        // _forkexec_slurmstepd's child (which forks the stepd's exec), the forks that open
        // a batch job's files, a prolog's, and an epilog's alike. It lasts milliseconds
        // and may be a job's start, so it stays a sign; only one that says epilog is not.
        if (buf.find("epilog") != std::string::npos) continue;  // 26.05's title of an epilog fork
        return std::optional<std::string>(
            fmt::format("slurmd pid {}, a fork of slurmd pid {}, may be starting a step", pid, daemon.ppid));
    }
    return std::optional<std::string>();
}

}  // namespace leftover::steps
