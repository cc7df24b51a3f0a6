// SPDX-License-Identifier: GPL-2.0-or-later
#include "node/running_slurmd.hpp"

#include "procfs/proc_read.hpp"
#include "util/errno_text.hpp"
#include "util/unique_fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <string_view>

namespace leftover::node {
namespace {

constexpr std::string_view kOptionsWithArgument = "dfLnN";  // F takes one only when attached

// A long option that takes no argument, also abbreviated as getopt_long allows.
bool long_option_without_argument(std::string_view name) {
    for (std::string_view flag : {"version", "systemd"})
        if (!name.empty() && flag.starts_with(name)) return true;
    return false;
}

std::vector<std::string> split_cmdline(const std::string& text) {
    std::vector<std::string> argv;
    std::size_t start = 0;
    while (start < text.size()) {
        const auto end = text.find('\0', start);
        argv.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
        if (end == std::string::npos) break;
        start = end + 1;
    }
    return argv;
}

}  // namespace

SlurmdOptions parse_slurmd_options(const std::vector<std::string>& argv) {
    SlurmdOptions options;
    for (std::size_t i = 1; i < argv.size(); ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--") break;
        if (arg.starts_with("--")) {
            const std::string_view name = arg.substr(2);
            if (name.find('=') == std::string_view::npos && !long_option_without_argument(name)) ++i;
            continue;
        }
        if (arg.size() < 2 || arg[0] != '-') continue;  // getopt_long permutes non-options aside
        for (std::size_t k = 1; k < arg.size(); ++k) {
            const char option = arg[k];
            if (option == 'Z') options.dynamic = true;
            if (option == 'F') {
                options.dynamic_future = true;
                break;  // an optional argument is the rest of this word
            }
            if (kOptionsWithArgument.find(option) == std::string_view::npos) continue;
            std::string value;
            if (k + 1 < arg.size())
                value = std::string(arg.substr(k + 1));
            else if (i + 1 < argv.size())
                value = argv[++i];
            if (option == 'N') options.node_name = value;
            break;
        }
    }
    return options;
}

std::vector<std::string> add_running_nodes(NodeInfo& node, const std::vector<RunningSlurmd>& running,
                                           const SlurmdNaming& naming) {
    std::vector<std::string> unknown;
    for (const RunningSlurmd& slurmd : running) {
        std::optional<std::string> name = slurmd.options.node_name;
        if (!name && slurmd.pid == node.slurmd_pid) continue;  // our own slurmd: node.node_name
        if (!name && slurmd.options.dynamic_future) {
            unknown.push_back(
                fmt::format("slurmd pid {} runs with -F and no -N: slurmctld names its node, so its step sockets "
                            "cannot be told; start it with -N NAME",
                            slurmd.pid));
            continue;
        }
        if (!name && slurmd.options.dynamic) name = naming.host_name;
        if (!name) name = naming.configured;
        if (!name || name->empty()) {
            unknown.push_back(
                fmt::format("slurmd pid {} runs without -N, and the node slurm.conf gives this host is not known here: "
                            "its node, and so its step sockets, cannot be told",
                            slurmd.pid));
            continue;
        }
        // Also marks a node learned from slurm.conf as running: its spool dir must exist.
        add_host_node(node, {*name, expand_slurmd_path(naming.spool_pattern, *name, naming.short_host), true});
    }
    return unknown;
}

std::optional<std::string> pick_from_running(const std::string& node_name, const std::vector<RunningSlurmd>& running,
                                             const std::optional<std::string>& host_name) {
    for (const RunningSlurmd& slurmd : running) {
        const SlurmdOptions& o = slurmd.options;
        if (o.node_name ? *o.node_name == node_name : o.dynamic && host_name == node_name) return std::nullopt;
    }
    return node_name;
}

namespace {

// A daemon to look for: its program (slurm_program_name) and who may own it.
struct Wanted {
    std::string_view program;
    const std::set<uid_t>* owners;
};

// The Slurm program name of process `pid_name`'s executable into `program`, read by its
// path below the /proc root (no directory opened); 0 or the errno of the read.
int daemon_program_by_path(int root, const char* pid_name, std::string& program) {
    char path[32];
    const int written = std::snprintf(path, sizeof path, "%s/exe", pid_name);
    if (written < 0 || static_cast<std::size_t>(written) >= sizeof path) return ENAMETOOLONG;
    std::string exe;
    if (const int err = read_link(root, path, exe)) return err;
    program = slurm_program_name(exe_program(exe));
    return 0;
}

// Calls `found(program, pid, parent pid, command line)` for every live process under
// proc_root that is one of `wanted`: its /proc directory one of that program's owners
// owns, its executable that program, in the caller's pid namespace. One pass of /proc
// for them all. A process that exits meanwhile is skipped; anything else that cannot be
// read is a lookup error.
template <class Found>
Status scan_daemons(const std::string& proc_root, const std::vector<Wanted>& wanted, Found found) {
    std::set<uid_t> any_owner;
    for (const Wanted& daemon : wanted) any_owner.insert(daemon.owners->begin(), daemon.owners->end());
    UniqueFd root(::open(proc_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root.valid())
        return Error::lookup(fmt::format("cannot open {}: {}", proc_root, errno_text(errno)), ErrorSource::proc);
    std::string my_namespace;
    if (const int err = read_link(root.get(), "self/ns/pid", my_namespace))
        return Error::lookup(fmt::format("cannot read {}/self/ns/pid: {}", proc_root, errno_text(err)),
                             ErrorSource::proc);

    std::string text;
    return for_each_pid(root.get(), proc_root, [&](pid_t pid, const char* name) -> Status {
        // The owner first, without opening the directory: on a node of 40,000 user
        // processes this pass runs at every sweep. Checked again on the open directory.
        // What cannot be read but did not exit is an error: it might be the daemon.
        struct stat listed {};
        if (::fstatat(root.get(), name, &listed, AT_SYMLINK_NOFOLLOW) != 0) {
            if (vanished(errno)) return Ok{};
            return Error::lookup(fmt::format("cannot stat {}/{}: {}", proc_root, pid, errno_text(errno)),
                                 ErrorSource::proc);
        }
        if (any_owner.count(listed.st_uid) == 0) return Ok{};
        // Most of a node's processes are root's (a kernel thread per CPU and more): its
        // executable read by path tells the few that may be a daemon, without opening
        // the directory of each. A kernel thread has none; what cannot be read so is
        // looked at closely below.
        std::string by_path;
        if (const int err = daemon_program_by_path(root.get(), name, by_path); err == 0) {
            const bool wanted_program = std::any_of(wanted.begin(), wanted.end(), [&](const Wanted& w) {
                return w.program == by_path && w.owners->count(listed.st_uid) != 0;
            });
            if (!wanted_program) return Ok{};
        } else if (vanished(err)) {
            return Ok{};
        }
        UniqueFd pid_dir;
        if (const int err = open_pid_dir(root.get(), pid, pid_dir)) {
            if (vanished(err)) return Ok{};
            return Error::lookup(fmt::format("cannot open {}/{}: {}", proc_root, pid, errno_text(err)),
                                 ErrorSource::proc);
        }
        struct stat st {};
        if (::fstat(pid_dir.get(), &st) != 0 || any_owner.count(st.st_uid) == 0) return Ok{};
        const auto failed = [&](const char* file, int err) -> Error {
            return Error::lookup(fmt::format("cannot read {}/{}/{} of a process of uid {}: {}", proc_root, pid, file,
                                             st.st_uid, errno_text(err)),
                                 ErrorSource::proc);
        };
        std::string exe;
        if (const int err = read_pid_link(pid_dir.get(), "exe", exe)) {
            if (vanished(err)) return Ok{};  // exited, or a kernel thread (no exe)
            // Some root processes' exe stays closed even to root (pid 1 in some
            // containers): the name the kernel took from the executable must do there;
            // only the owner (root or Slurm's account) can name such a process.
            StatFields stat;
            if (const int stat_err = read_stat(pid_dir.get(), pid, stat, text)) {
                if (vanished(stat_err)) return Ok{};
                return failed("stat", stat_err);
            }
            exe = stat.comm;
        }
        const std::string_view program = slurm_program_name(exe_program(exe));
        const auto daemon = std::find_if(wanted.begin(), wanted.end(), [&](const Wanted& w) {
            return w.program == program && w.owners->count(st.st_uid) != 0;
        });
        if (daemon == wanted.end()) return Ok{};
        std::string its_namespace;
        if (const int err = read_pid_link(pid_dir.get(), "ns/pid", its_namespace)) {
            if (vanished(err)) return Ok{};
            return failed("ns/pid", err);
        }
        if (its_namespace != my_namespace) return Ok{};
        StatFields stat;
        if (const int err = read_stat(pid_dir.get(), pid, stat, text)) {
            if (vanished(err)) return Ok{};
            return failed("stat", err);
        }
        if (const int err = read_file(pid_dir.get(), "cmdline", text)) {
            if (vanished(err)) return Ok{};
            return failed("cmdline", err);
        }
        if (text.empty()) return Ok{};  // a zombie: the daemon is gone
        // A daemon forks and its child may exec another program (slurmd's child execs
        // slurmstepd): read between the exe and the cmdline, that child's new cmdline
        // would pass for the daemon's. Its exe after the cmdline tells (an exec
        // replaces both at once).
        std::string exe_after;
        if (const int err = read_pid_link(pid_dir.get(), "exe", exe_after); err == 0 && exe_after != exe) return Ok{};
        found(daemon->program, pid, stat.ppid, text);
        return Ok{};
    });
}

}  // namespace

Result<RunningDaemons> running_daemons(const std::string& proc_root, const std::set<uid_t>& slurmctld_owners) {
    static const std::set<uid_t> root{0};
    std::set<uid_t> trusted = slurmctld_owners;
    trusted.insert(0);
    RunningDaemons found;
    std::vector<std::pair<pid_t, pid_t>> parents;  // (pid, parent pid) of each slurmd
    const Status scanned =
        scan_daemons(proc_root, {{"slurmd", &root}, {"slurmctld", &trusted}},
                     [&](std::string_view program, pid_t pid, pid_t ppid, const std::string& cmdline) {
                         if (program == "slurmctld") {
                             found.slurmctlds.push_back(pid);
                             return;
                         }
                         found.slurmds.push_back({pid, parse_slurmd_options(split_cmdline(cmdline))});
                         parents.emplace_back(pid, ppid);
                     });
    LEFTOVER_TRY(scanned);
    // A slurmd's forked child (a prolog, an epilog, a step on its way to exec
    // slurmstepd) is not a daemon of its own, and may have rewritten its command line
    // (26.05): a slurmd whose parent is a slurmd is left out.
    std::set<pid_t> daemons;
    for (const auto& [pid, ppid] : parents) daemons.insert(pid);
    std::set<pid_t> children;
    for (const auto& [pid, ppid] : parents)
        if (daemons.count(ppid) != 0) children.insert(pid);
    std::erase_if(found.slurmds, [&](const RunningSlurmd& slurmd) { return children.count(slurmd.pid) != 0; });
    std::sort(found.slurmds.begin(), found.slurmds.end(), [](const auto& a, const auto& b) { return a.pid < b.pid; });
    std::sort(found.slurmctlds.begin(), found.slurmctlds.end());
    return found;
}

Result<std::vector<RunningSlurmd>> running_slurmds(const std::string& proc_root) {
    auto running = running_daemons(proc_root, {});
    LEFTOVER_TRY(running);
    return std::move(running->slurmds);
}

Result<std::vector<pid_t>> running_slurmctlds(const std::string& proc_root, const std::set<uid_t>& owners) {
    auto running = running_daemons(proc_root, owners);
    LEFTOVER_TRY(running);
    return std::move(running->slurmctlds);
}

}  // namespace leftover::node
