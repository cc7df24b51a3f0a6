// SPDX-License-Identifier: GPL-2.0-or-later
// Before trusting a /proc root, make sure it shows every process of the caller's
// pid namespace. A /proc of another namespace, or one mounted with hidepid=, would
// give a plausible but partial table; the sweep must then decide nothing at all.
#include "errors/error.hpp"
#include "procfs/proc_read.hpp"
#include "procfs/proc_table.hpp"
#include "util/errno_text.hpp"

#include <linux/magic.h>
#include <sys/vfs.h>

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

namespace leftover {

namespace {

constexpr unsigned cap_sys_ptrace = 19;

Status check_self(int root, const ScanOptions& options) {
    std::string link;
    if (const int err = read_link(root, "self", link))
        return Error::lookup(fmt::format("cannot resolve {}/self: {}", options.proc_root, errno_text(err)),
                             ErrorSource::proc);
    if (parse_pid(link) != options.caller_pid)
        return Error::lookup(fmt::format("{}/self names pid '{}' but the caller is pid {}: "
                                         "this /proc belongs to another pid namespace",
                                         options.proc_root, link, options.caller_pid),
                             ErrorSource::proc);
    return Ok{};
}

struct HidePid {
    std::string mode;          // the hidepid= value
    std::optional<gid_t> gid;  // gid= : members see everything
};

// hidepid= in the proc super options, unless it is off. subset=pid hides only the
// non-process entries and needs no exemption.
std::optional<HidePid> hidepid_of(std::string_view options) {
    HidePid hide;
    while (!options.empty()) {
        const auto comma = options.find(',');
        const auto option = options.substr(0, comma);
        options = comma == std::string_view::npos ? std::string_view{} : options.substr(comma + 1);
        if (option.starts_with("hidepid=")) hide.mode = option.substr(8);
        if (option.starts_with("gid=")) {
            const auto ids = parse_ids(option.substr(4));
            if (ids && ids->size() == 1) hide.gid = ids->front();
        }
    }
    if (hide.mode.empty() || hide.mode == "0" || hide.mode == "off") return std::nullopt;
    return hide;  // 1, 2, noaccess, invisible, ptraceable, or unknown: all hide something
}

// The kernel lets a caller see hidden processes when it is in the gid= group
// (fsgid or supplementary) or may ptrace them; we accept ptrace only as root with
// CAP_SYS_PTRACE, which may ptrace everything.
bool exempt(std::string_view status, const HidePid& hide) {
    const auto uid_line = status_value(status, "Uid");
    const auto cap_line = status_value(status, "CapEff");
    if (uid_line && cap_line) {
        const std::optional<Uids> uids = parse_uids(*uid_line);
        const auto caps = parse_hex(*cap_line);
        if (uids.has_value() && caps.has_value()) {
            const Uids& u = *uids;
            if (u == Uids{0, 0, 0, 0} && ((*caps >> cap_sys_ptrace) & 1) != 0) return true;
        }
    }
    if (!hide.gid) return false;
    const auto gid_line = status_value(status, "Gid");
    const auto gids = gid_line ? parse_ids(*gid_line) : std::nullopt;
    const auto group_line = status_value(status, "Groups");
    const auto groups = group_line ? parse_ids(*group_line) : std::nullopt;
    return (gids && gids->size() == 4 && (*gids)[3] == *hide.gid) ||
           (groups && std::ranges::count(*groups, *hide.gid) > 0);
}

Status check_hidepid(int root, const ScanOptions& options) {
    struct statfs fs {};
    if (::fstatfs(root, &fs) != 0)
        return Error::lookup(fmt::format("cannot statfs {}: {}", options.proc_root, errno_text(errno)),
                             ErrorSource::proc);
    const bool procfs = fs.f_type == PROC_SUPER_MAGIC;
    std::string text;
    const int err = read_file(root, "self/mountinfo", text);
    if (err == ENOENT && !procfs) return Ok{};  // a fake tree that models no mounts
    if (err)
        return Error::lookup(fmt::format("cannot read {}/self/mountinfo: {}", options.proc_root, errno_text(err)),
                             ErrorSource::proc);

    char* resolved = ::realpath(options.proc_root.c_str(), nullptr);
    if (!resolved)
        return Error::lookup(fmt::format("cannot resolve {}: {}", options.proc_root, errno_text(errno)),
                             ErrorSource::proc);
    const std::string mount_point = resolved;
    std::free(resolved);  // NOLINT(cppcoreguidelines-no-malloc): realpath allocates with malloc

    const auto mount = find_mount(text, mount_point);
    if (!mount || mount->fstype != "proc") {
        if (!procfs) return Ok{};
        return Error::lookup(fmt::format("{} is a procfs but {}/self/mountinfo has no proc mount on {}: "
                                         "cannot tell whether hidepid= hides processes",
                                         options.proc_root, options.proc_root, mount_point),
                             ErrorSource::proc);
    }
    const auto hide = hidepid_of(mount->super_options);
    if (!hide) return Ok{};
    if (const int status_err = read_file(root, "self/status", text))
        return Error::lookup(fmt::format("cannot read {}/self/status: {}", options.proc_root, errno_text(status_err)),
                             ErrorSource::proc);
    if (exempt(text, *hide)) return Ok{};
    return Error::lookup(
        fmt::format("{} is mounted with hidepid={}: the caller may not see every process (it needs to be root with "
                    "CAP_SYS_PTRACE{})",
                    options.proc_root, hide->mode,
                    hide->gid ? fmt::format(" or in group {}", *hide->gid) : std::string()),
        ErrorSource::proc);
}

bool is_slurm_daemon(std::string_view program) {
    program = slurm_program_name(program);
    return program == "slurmd" || program == "slurmstepd";
}

// The daemon's pid must still name a Slurm daemon here: a pid file can be stale, and a
// pid from another pid namespace names some other process (or none) in this one.
Status check_slurm_daemon(int root, const ScanOptions& options, pid_t daemon) {
    std::string link;
    const auto path = fmt::format("{}/exe", daemon);
    if (const int err = read_link(root, path.c_str(), link)) {
        if (vanished(err))
            return Error::lookup(fmt::format("Slurm daemon pid {} is not in {}: it has exited, or the pid is from "
                                             "another pid namespace",
                                             daemon, options.proc_root),
                                 ErrorSource::proc);
        return Error::lookup(fmt::format("cannot read {}/{} of Slurm daemon pid {}: {}", options.proc_root, path,
                                         daemon, errno_text(err)),
                             ErrorSource::proc);
    }
    if (!is_slurm_daemon(exe_program(link)))
        return Error::lookup(fmt::format("pid {} in {} runs {}, not slurmd or slurmstepd: a stale pid file, or a pid "
                                         "from another pid namespace",
                                         daemon, options.proc_root, link),
                             ErrorSource::proc);
    return Ok{};
}

Status check_pid_namespace(int root, const ScanOptions& options) {
    if (!options.slurm_daemon_pid) return Ok{};
    const pid_t daemon = *options.slurm_daemon_pid;
    if (auto status = check_slurm_daemon(root, options, daemon); !status) return status;
    std::string mine, theirs;
    if (const int err = read_link(root, "self/ns/pid", mine))
        return Error::lookup(fmt::format("cannot read {}/self/ns/pid: {}", options.proc_root, errno_text(err)),
                             ErrorSource::proc);
    const auto path = fmt::format("{}/ns/pid", daemon);
    if (const int err = read_link(root, path.c_str(), theirs))
        return Error::lookup(fmt::format("cannot read the pid namespace of Slurm daemon pid {} ({}/{}): {}", daemon,
                                         options.proc_root, path, errno_text(err)),
                             ErrorSource::proc);
    if (mine != theirs)
        return Error::lookup(fmt::format("the caller runs in pid namespace {} but Slurm daemon pid {} in {}: "
                                         "its processes are not all visible here",
                                         mine, daemon, theirs),
                             ErrorSource::proc);
    return Ok{};
}

}  // namespace

Status check_view(int root, const ScanOptions& options) {
    for (auto check : {check_self, check_hidepid, check_pid_namespace})
        if (auto status = check(root, options); !status) return status;
    return Ok{};
}

}  // namespace leftover
