// SPDX-License-Identifier: GPL-2.0-or-later
// The I/O half of proc_read.hpp: dirfd-relative opens and whole-file reads.
#include "procfs/proc_read.hpp"

#include "util/errno_text.hpp"
#include "util/privileges.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstring>
#include <memory>

namespace leftover {

int open_dir(int dirfd, const char* path, UniqueFd& out) {
    out.reset(::openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    return out.get() >= 0 ? 0 : errno;
}

namespace {

// read_file's and read_record_file's reader; `one_record`: a short read is the end.
int read_whole(int dirfd, const char* path, std::string& out, bool one_record) {
    // /proc files are small, but mountinfo on a container host is not; the cap only
    // stops a hostile fake or a runaway file from eating memory.
    constexpr std::size_t max_size = std::size_t{16} << 20;
    out.clear();
    UniqueFd fd(::openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC));
    if (fd.get() < 0) return errno;
    out.resize(std::max<std::size_t>(out.capacity(), 4096));
    std::size_t used = 0;
    for (;;) {
        if (used == out.size()) {
            if (out.size() >= max_size) return EFBIG;
            out.resize(out.size() * 2);
        }
        const ssize_t n = ::read(fd.get(), out.data() + used, out.size() - used);
        if (n < 0) {
            if (errno == EINTR) continue;
            const int err = errno;
            out.clear();
            return err;
        }
        if (n == 0) break;
        used += static_cast<std::size_t>(n);
        // A record-at-a-time file (mountinfo) may come back short before its end.
        if (one_record && used < out.size()) break;
    }
    out.resize(used);
    return 0;
}

}  // namespace

int read_file(int dirfd, const char* path, std::string& out) { return read_whole(dirfd, path, out, false); }

int read_record_file(int dirfd, const char* path, std::string& out) { return read_whole(dirfd, path, out, true); }

int read_link(int dirfd, const char* path, std::string& out) {
    char buf[PATH_MAX];
    const ssize_t n = ::readlinkat(dirfd, path, buf, sizeof buf);
    if (n < 0) return errno;
    if (static_cast<std::size_t>(n) == sizeof buf) return ENAMETOOLONG;
    out.assign(buf, static_cast<std::size_t>(n));
    return 0;
}

int gone_if_refused(int pid_dir, int err) {
    if (err != EACCES) return err;
    // A lookup in the directory of a reaped process fails with ENOENT or ESRCH; in a live
    // one it succeeds whatever the caller may read.
    if (::faccessat(pid_dir, "stat", F_OK, 0) != 0 && vanished(errno)) return ESRCH;
    return err;
}

int read_pid_link(int pid_dir, const char* path, std::string& out) {
    int err = gone_if_refused(pid_dir, read_link(pid_dir, path, out));
    // Refused by a process still there, to a caller whose real uid is root: Slurm 24.11's
    // slurmstepd may have lent itself to the job's user for a moment (util/privileges.hpp),
    // as CI saw at an extern step's end ("cannot read /proc/<slurmd>/ns/pid ...: Permission
    // denied"). Read once more when root is back; a refusal that stands is the answer.
    if (err == EACCES && ::getuid() == 0 && wait_for_root(std::chrono::steady_clock::now() + kRootBackWithin))
        err = gone_if_refused(pid_dir, read_link(pid_dir, path, out));
    return err;
}

int read_dir_batch(int dirfd, const std::function<void(const char* name)>& each) {
    // On the heap: the cleanup's walk may run on a small thread stack.
    constexpr std::size_t buffer_size = 32768;
    const auto storage = std::make_unique<std::uint64_t[]>(buffer_size / sizeof(std::uint64_t));
    char* const buffer = reinterpret_cast<char*>(storage.get());  // getdents64 fills bytes
    long n = 0;
    do n = ::syscall(SYS_getdents64, dirfd, buffer, buffer_size);
    while (n < 0 && errno == EINTR);
    if (n < 0) return -errno;
    int entries = 0;
    for (long offset = 0; offset < n; ++entries) {
        // getdents64 records: d_ino, d_off, d_reclen, d_type, d_name (see getdents(2)).
        unsigned short reclen = 0;
        std::memcpy(&reclen, buffer + offset + offsetof(struct dirent64, d_reclen), sizeof reclen);
        const char* name = buffer + offset + offsetof(struct dirent64, d_name);
        offset += reclen;
        if (std::strcmp(name, ".") != 0 && std::strcmp(name, "..") != 0) each(name);
    }
    return entries;
}

Status for_each_pid(int root, std::string_view proc_root,
                    const std::function<Status(pid_t pid, const char* name)>& visit) {
    Status visited = Ok{};
    for (;;) {
        const int n = read_dir_batch(root, [&](const char* name) {
            const auto pid = visited ? parse_pid(name) : std::nullopt;
            if (pid) visited = visit(*pid, name);
        });
        if (!visited) return visited;
        if (n < 0)
            return Error::lookup(fmt::format("cannot list {}: {}", proc_root, errno_text(-n)), ErrorSource::proc);
        if (n == 0) return Ok{};
    }
}

int open_pid_dir(int root, pid_t pid, UniqueFd& out) {
    char name[16];
    const auto end = std::to_chars(name, name + sizeof name - 1, pid).ptr;
    *end = '\0';
    return open_dir(root, name, out);
}

int read_stat(int dir, pid_t pid, StatFields& out, std::string& buf) {
    if (const int err = read_record_file(dir, "stat", buf)) return err;
    auto parsed = parse_stat(buf);
    if (!parsed || parsed->pid != pid) return EBADMSG;
    out = std::move(*parsed);
    return 0;
}

int probe_process(int root, pid_t pid, Probe& out, std::string& buf) {
    UniqueFd dir;
    out.failed_file = "";
    if (const int err = open_pid_dir(root, pid, dir)) return err;
    struct stat st {};
    if (::fstat(dir.get(), &st) != 0) return errno;
    out.owner = st.st_uid;
    out.failed_file = "stat";
    if (const int err = read_stat(dir.get(), pid, out.stat, buf)) return err;
    out.slurmstepd = false;
    // slurmd double-forks slurmstepd, so it is never pid 1 of the namespace; and an
    // init may refuse ptrace access to its exe even to root (sandboxes do).
    if (out.owner != 0 || out.stat.kernel_thread() || pid == 1) return 0;
    // Only the binary tells: comm is whatever the process chose to call itself.
    out.failed_file = "exe";
    const int err = read_pid_link(dir.get(), "exe", buf);
    if (err == ENOENT) return 0;  // no exe: a zombie, or exiting right now
    if (err) return err;
    out.slurmstepd = slurm_program_name(exe_program(buf)) == "slurmstepd";
    return 0;
}

namespace {

void apply_stat(Process& p, StatFields&& stat) {
    p.ppid = stat.ppid;
    p.pgid = stat.pgid;
    p.state = stat.state;
    p.start_time = stat.start_time;
    p.kernel_thread = stat.kernel_thread();
    p.exiting = stat.exiting();
    p.comm = std::move(stat.comm);
}

}  // namespace

int read_detail(int dir, Process& p, bool cgroup, const char*& file, std::string& buf) {
    file = "stat";
    StatFields stat;
    if (const int err = read_stat(dir, p.pid, stat, buf)) return err;
    apply_stat(p, std::move(stat));
    file = "status";
    if (const int err = read_record_file(dir, file, buf)) return err;
    const auto value = status_value(buf, "Uid");
    const auto uids = value ? parse_uids(*value) : std::nullopt;
    if (!uids) return EBADMSG;
    p.uids = *uids;
    // A leader whose own thread exited is a zombie while its other threads run.
    if (const auto threads = status_value(buf, "Threads")) {
        const auto count = parse_ids(*threads);
        if (!count || count->size() != 1) return EBADMSG;
        p.threads = count->front();
    }
    if (!cgroup) return 0;
    file = "cgroup";
    if (const int err = read_record_file(dir, file, buf)) return err;
    p.job_cgroup = slurm_job_cgroup(buf);
    return 0;
}

}  // namespace leftover
