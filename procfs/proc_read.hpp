// SPDX-License-Identifier: GPL-2.0-or-later
// Reading /proc, for the scan and everything else that reads a process: dirfd-relative
// reads of /proc files (proc_read.cpp), the parsers for the few formats needed
// (proc_parse.cpp) and the view checks (proc_view.cpp). Parsers take the raw file text
// and never trust it: a process controls its comm, and tests feed them garbage.
#pragma once

#include "errors/result.hpp"
#include "procfs/process.hpp"
#include "util/unique_fd.hpp"

#include <sys/types.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace leftover {

struct ScanOptions;

// The I/O functions return 0 or an errno value, so callers can tell a process that
// went away (vanished) from a real failure without looking at errno later.
inline bool vanished(int err) { return err == ENOENT || err == ESRCH; }

// Opens a directory below dirfd without following a symlink in its last component.
int open_dir(int dirfd, const char* path, UniqueFd& out);
// Reads the whole file into out (reusing its capacity). The last component is
// not followed if it is a symlink.
int read_file(int dirfd, const char* path, std::string& out);
// As read_file, for a file the kernel makes as one record (a process's stat and status):
// a read that comes back short has it all, so the read that would only see its end is
// not made. A fake tree's regular file ends at a short read too.
int read_record_file(int dirfd, const char* path, std::string& out);
int read_link(int dirfd, const char* path, std::string& out);
// A link below a process's open directory (exe, ns/pid): as read_link, except that a
// refusal is believed only from a process still there, to a caller that is root when it
// reads. A refusal from a process that is gone reads as gone (ESRCH): the kernel answers
// EACCES, not ESRCH, for the ns links of a process reaped between their lookup and the
// read. One made while root was lent away (util/privileges.hpp) is read again once root
// is back, waiting at most kRootBackWithin.
int read_pid_link(int pid_dir, const char* path, std::string& out);
inline constexpr std::chrono::milliseconds kRootBackWithin{1000};
// err itself, or ESRCH when err is EACCES and the process whose directory pid_dir is has
// been reaped: a refusal is believed only from a process that is still there.
int gone_if_refused(int pid_dir, int err);

// "1234" -> 1234; anything else (signs, leading zeros, overflow) -> nullopt.
std::optional<pid_t> parse_pid(std::string_view text);

// The next entries of an open directory, one getdents64 batch (32 KiB, about a thousand
// entries) from the descriptor's offset: `each(name)` for every one but "." and "..".
// Returns the number of entries the kernel returned (0 at the end), or -errno. A batch at
// a time, so a caller's deadline or entry limit stops a huge directory midway.
int read_dir_batch(int dirfd, const std::function<void(const char* name)>& each);

// The one way /proc is listed: `visit(pid, name)` for each entry of the /proc open as
// `root` that a pid names (what it is, a process directory or not, is the visitor's to
// check, relative to root), a batch at a time. The visitor checks the caller's deadline;
// an error it returns stops the listing and is returned. A failed getdents64 is a lookup
// error naming `proc_root`.
Status for_each_pid(int root, std::string_view proc_root,
                    const std::function<Status(pid_t pid, const char* name)>& visit);

int open_pid_dir(int root, pid_t pid, UniqueFd& out);

// How many parents an ancestry walk follows (the scan's, and read_ancestry's). Real
// chains are a few levels deep: a deeper one, or a loop, is not believed.
inline constexpr std::size_t max_ancestry_depth = 512;

inline constexpr std::uint64_t pf_exiting = 0x00000004;
inline constexpr std::uint64_t pf_kthread = 0x00200000;

struct StatFields {
    pid_t pid = 0;
    std::string comm;  // raw bytes between the first '(' and the last ')'
    char state = '?';
    pid_t ppid = 0;
    pid_t pgid = 0;                // field 5: the process group
    pid_t session = 0;             // field 6: the session (0 as pgid: none, or released)
    std::uint64_t flags = 0;       // field 9
    std::uint64_t start_time = 0;  // field 22
    // By the flag alone: in a pid namespace of its own, pid 2 and its children are
    // ordinary processes (kthreadd is not visible there), and a usermode helper that
    // kthreadd started and that exec'd is root's process, not a kernel thread.
    bool kernel_thread() const { return (flags & pf_kthread) != 0; }
    // PF_EXITING: the kernel is ending it (do_exit), whatever state it shows meanwhile.
    bool exiting() const { return (flags & pf_exiting) != 0; }
};
std::optional<StatFields> parse_stat(std::string_view text);
// Reads and parses <dir>/stat of the process pid; EBADMSG when it does not parse
// or names another pid.
int read_stat(int dir, pid_t pid, StatFields& out, std::string& buf);

// One process read through one directory fd: owner, stat and, for a root process
// that is not a kernel thread, whether its exe is a slurmstepd.
struct Probe {
    uid_t owner = 0;
    StatFields stat;
    bool slurmstepd = false;
    const char* failed_file = "";  // which read returned the error
};
int probe_process(int root, pid_t pid, Probe& out, std::string& buf);

// Reads the stat and status (and with `cgroup` the cgroup) of p.pid into p, through `dir`,
// the process's open directory, as the scan reads every process it details: if the pid is
// reused meanwhile, the old fd fails instead of mixing two processes. Returns 0, or the
// errno of the read that failed with `file` naming it (vanished(): the process is gone;
// EBADMSG: contents that do not parse). Sets neither owner nor detailed.
int read_detail(int dir, Process& p, bool cgroup, const char*& file, std::string& buf);

// The value of the "Key:" line of a status file (without leading blanks), if present.
std::optional<std::string_view> status_value(std::string_view text, std::string_view key);
// "Uid:" values: real, effective, saved, filesystem.
std::optional<Uids> parse_uids(std::string_view value);
// Blank-separated decimal ids ("Gid:" and "Groups:" values).
std::optional<std::vector<std::uint32_t>> parse_ids(std::string_view value);
std::optional<std::uint64_t> parse_hex(std::string_view value);

// The job id of the first line of a /proc/<pid>/cgroup file that places the process
// in a job_<id> cgroup created by Slurm itself (see the .cpp for the layouts).
std::optional<std::string> slurm_job_cgroup(std::string_view cgroup_file);

// The program an exe link names: its last component, also after the binary was replaced
// on disk ("/usr/sbin/slurmstepd (deleted)" -> "slurmstepd").
std::string_view exe_program(std::string_view link);

// A Slurm program's own name, also as Debian installs it ("slurmstepd-wlm" -> "slurmstepd").
std::string_view slurm_program_name(std::string_view program);

struct Mount {
    std::string fstype;
    std::string super_options;
};
// The mount on top at mount_point (the last mountinfo line for it), if any.
std::optional<Mount> find_mount(std::string_view mountinfo, std::string_view mount_point);

// The checks that the /proc at root shows the caller's whole pid namespace
// (proc_view.cpp): self names the caller, hidepid= hides nothing from it, and the
// Slurm daemon shares its pid namespace.
Result<Ok> check_view(int root, const ScanOptions& options);

}  // namespace leftover
