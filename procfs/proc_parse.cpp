// SPDX-License-Identifier: GPL-2.0-or-later
// The parsers of proc_read.hpp: pure functions over file text, nothing trusted.
#include "procfs/proc_read.hpp"
#include "util/whole_number.hpp"

#include <cstdint>
#include <limits>

namespace leftover {

namespace {

// Splits off the next field ending at one of seps; fields may be empty.
std::string_view next_field(std::string_view& text, std::string_view seps) {
    const auto end = text.find_first_of(seps);
    const auto field = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    return field;
}

}  // namespace

std::optional<pid_t> parse_pid(std::string_view text) {
    if (text.empty() || text.front() == '0') return std::nullopt;
    const auto pid = parse_whole<std::uint32_t>(text);
    if (!pid || *pid > static_cast<std::uint32_t>(std::numeric_limits<pid_t>::max())) return std::nullopt;
    return static_cast<pid_t>(*pid);
}

std::optional<StatFields> parse_stat(std::string_view text) {
    // comm is the only field a process controls and may hold ')' or anything else,
    // but it is at most 16 bytes and the kernel writes it unescaped: the last ')'
    // of the file is always the one that closes it.
    const auto open = text.find('(');
    const auto close = text.rfind(')');
    if (open == std::string_view::npos || close == std::string_view::npos || close < open || open == 0 ||
        text[open - 1] != ' ')
        return std::nullopt;
    StatFields f;
    const auto pid = parse_pid(text.substr(0, open - 1));
    if (!pid) return std::nullopt;
    f.pid = *pid;
    f.comm.assign(text.substr(open + 1, close - open - 1));

    // After ") ": field 3 (state) onwards, one blank between fields.
    std::string_view rest = text.substr(close + 1);
    if (rest.empty() || rest.front() != ' ') return std::nullopt;
    rest.remove_prefix(1);
    constexpr int first = 3, last = 22;
    for (int field = first; field <= last; ++field) {
        if (rest.empty()) return std::nullopt;
        const auto value = next_field(rest, " \n");
        bool ok = true;
        if (field == 3) {
            ok = value.size() == 1;
            f.state = ok ? value[0] : '?';
        } else if (field == 4) {
            const auto ppid = value == "0" ? std::optional<pid_t>{0} : parse_pid(value);
            ok = ppid.has_value();
            f.ppid = ppid.value_or(0);
        } else if (field == 5) {
            // A dead task already released has lost its signal handlers, and do_task_stat
            // (fs/proc/array.c) then writes ppid 0 and pgrp -1: no group. Its state is X,
            // or Z when it was read just before the parent reaped it.
            const bool released = value == "-1" && (f.state == 'X' || f.state == 'Z');
            const auto pgid = (value == "0" || released) ? std::optional<pid_t>{0} : parse_pid(value);
            ok = pgid.has_value();
            f.pgid = pgid.value_or(0);
        } else if (field == 6) {
            // As the group: a released task's session reads -1.
            const bool released = value == "-1" && (f.state == 'X' || f.state == 'Z');
            const auto session = (value == "0" || released) ? std::optional<pid_t>{0} : parse_pid(value);
            ok = session.has_value();
            f.session = session.value_or(0);
        } else if (field == 9) {
            const auto flags = parse_whole<std::uint64_t>(value);
            ok = flags.has_value();
            f.flags = flags.value_or(0);
        } else if (field == 22) {
            const auto start = parse_whole<std::uint64_t>(value);
            ok = start.has_value();
            f.start_time = start.value_or(0);
        }
        if (!ok) return std::nullopt;
    }
    return f;
}

std::optional<std::string_view> status_value(std::string_view text, std::string_view key) {
    // Lines are "Key:\tvalue". Name: comes first and the kernel escapes '\n' in it,
    // so a process cannot forge another line through its comm.
    while (!text.empty()) {
        const auto line = next_field(text, "\n");
        if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == ':') {
            auto value = line.substr(key.size() + 1);
            const auto start = value.find_first_not_of(" \t");
            return start == std::string_view::npos ? std::string_view{} : value.substr(start);
        }
    }
    return std::nullopt;
}

std::optional<std::vector<std::uint32_t>> parse_ids(std::string_view value) {
    std::vector<std::uint32_t> ids;
    while (!value.empty()) {
        const auto field = next_field(value, " \t");
        if (field.empty()) continue;
        const auto id = parse_whole<std::uint32_t>(field);
        if (!id) return std::nullopt;
        ids.push_back(*id);
    }
    return ids;
}

std::optional<Uids> parse_uids(std::string_view value) {
    const auto ids = parse_ids(value);
    if (!ids || ids->size() != 4) return std::nullopt;
    return Uids{(*ids)[0], (*ids)[1], (*ids)[2], (*ids)[3]};
}

std::optional<std::uint64_t> parse_hex(std::string_view value) {
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    return parse_whole<std::uint64_t>(value, 16);
}

std::string_view slurm_program_name(std::string_view program) {
    // Debian installs slurmd-wlm and slurmstepd-wlm behind alternatives symlinks, and an
    // exe link names the real file.
    constexpr std::string_view debian_suffix = "-wlm";
    if (program.ends_with(debian_suffix)) program.remove_suffix(debian_suffix.size());
    return program;
}

std::string_view exe_program(std::string_view link) {
    // After a package upgrade the running binary's link reads "<path> (deleted)".
    constexpr std::string_view deleted = " (deleted)";
    if (link.ends_with(deleted)) link.remove_suffix(deleted.size());
    const auto slash = link.rfind('/');
    return link.substr(slash == std::string_view::npos ? 0 : slash + 1);
}

namespace {

// "job_<id>" as Slurm prints it (%u: no sign, no leading zero).
// "job_<id>" (no leading zero), or a SLUID: "s" and 13 digits of Crockford's base32.
std::optional<std::string> job_component(std::string_view name) {
    if (name.starts_with("job_")) {
        const auto id = name.substr(4);
        if (id.empty() || id.front() == '0' || !parse_whole<std::uint32_t>(id)) return std::nullopt;
        return std::string(name);
    }
    constexpr std::string_view base32 = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    if (name.size() == 14 && name.front() == 's' && name.find_first_not_of(base32, 1) == std::string_view::npos)
        return std::string(name);
    return std::nullopt;
}

bool has_decimal_suffix(std::string_view name, std::string_view prefix) {
    return name.starts_with(prefix) && parse_whole<std::uint32_t>(name.substr(prefix.size()));
}

// Slurm 22.05 creates (src/plugins/cgroup/v1/xcgroup.c, v2/cgroup_v2.c):
//   v1: <prepend>/uid_<uid>/job_<id>/step_<step>/task_<n>, prepend "/slurm"
//       ("/slurm_<nodename>" with multiple slurmd), uid_ and job_ owned by root;
//   v2: /system.slice/slurmstepd.scope/job_<id>/step_<step>/{slurm,user/task_<n>}
//       ("<nodename>_slurmstepd.scope" with multiple slurmd), job_ owned by root;
//       from 25.11 the slice is CgroupSlice (any "<name>.slice"); 26.05 names the job
//       directory by its SLUID unless CgroupJobIdPaths=yes (cgroup_v2.c, print_sluid).
// Below job_ the step (v1) or task (v2) cgroups belong to the user, who may create
// more directories there, and a user's own delegated subtree (user@.service) can
// hold any names at all. So the layout must match from the cgroup root on: the
// first three components decide, a job_ anywhere deeper never counts.
std::optional<std::string> job_of_path(std::string_view path, bool unified) {
    if (!path.starts_with('/')) return std::nullopt;
    path.remove_prefix(1);
    const auto top = next_field(path, "/");
    const auto middle = next_field(path, "/");
    const auto job = next_field(path, "/");
    if (unified) {
        constexpr std::string_view scope = "slurmstepd.scope";
        const bool ours = middle == scope || (middle.size() > scope.size() + 1 && middle.ends_with(scope) &&
                                              middle[middle.size() - scope.size() - 1] == '_');
        if (!top.ends_with(".slice") || top.size() == 6 || !ours) return std::nullopt;
    } else {
        const bool ours = top == "slurm" || (top.size() > 6 && top.starts_with("slurm_"));
        if (!ours || !has_decimal_suffix(middle, "uid_")) return std::nullopt;
    }
    return job_component(job);
}

std::string unescape_mount_field(std::string_view field) {
    // mountinfo writes blank, tab, newline and backslash as \ooo (octal).
    std::string out;
    for (std::size_t i = 0; i < field.size(); ++i) {
        const auto oct = field.substr(i + 1, 3);
        if (field[i] == '\\' && oct.size() == 3 && oct.find_first_not_of("01234567") == std::string_view::npos) {
            out += static_cast<char>(((oct[0] - '0') << 6) | ((oct[1] - '0') << 3) | (oct[2] - '0'));
            i += 3;
        } else {
            out += field[i];
        }
    }
    return out;
}

}  // namespace

std::optional<std::string> slurm_job_cgroup(std::string_view cgroup_file) {
    // Lines are "<hierarchy id>:<controllers>:<path>"; v2 has "0::<path>". The path
    // is last and may itself hold ':'.
    while (!cgroup_file.empty()) {
        std::string_view line = next_field(cgroup_file, "\n");
        const auto hierarchy = next_field(line, ":");
        const auto controllers = next_field(line, ":");
        std::optional<std::string> job;
        if (hierarchy == "0" && controllers.empty())
            job = job_of_path(line, true);
        else if (!controllers.empty())
            job = job_of_path(line, false);
        if (job) return job;
    }
    return std::nullopt;
}

std::optional<Mount> find_mount(std::string_view mountinfo, std::string_view mount_point) {
    // "<id> <parent> <maj:min> <root> <mount point> <options> [optional...] - <fstype>
    //  <source> <super options>"; later lines are mounted on top of earlier ones.
    std::optional<Mount> found;
    while (!mountinfo.empty()) {
        std::string_view line = next_field(mountinfo, "\n");
        std::string_view fields[5];
        for (auto& field : fields) field = next_field(line, " ");
        if (fields[4].empty() || unescape_mount_field(fields[4]) != mount_point) continue;
        // Skip the mount options and the optional fields up to the "-" separator.
        while (!line.empty() && next_field(line, " ") != "-") continue;
        Mount mount;
        mount.fstype = unescape_mount_field(next_field(line, " "));
        next_field(line, " ");  // source
        mount.super_options = unescape_mount_field(next_field(line, " "));
        found = std::move(mount);
    }
    return found;
}

}  // namespace leftover
