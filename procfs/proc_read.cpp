// SPDX-License-Identifier: GPL-2.0-or-later
// The I/O half of proc_read.hpp: dirfd-relative opens and whole-file reads.
#include "procfs/proc_read.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>

namespace leftover::procfs {

int open_dir(int dirfd, const char* path, UniqueFd& out) {
    out.reset(::openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    return out.get() >= 0 ? 0 : errno;
}

int read_file(int dirfd, const char* path, std::string& out) {
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
    }
    out.resize(used);
    return 0;
}

int read_link(int dirfd, const char* path, std::string& out) {
    char buf[PATH_MAX];
    const ssize_t n = ::readlinkat(dirfd, path, buf, sizeof buf);
    if (n < 0) return errno;
    if (static_cast<std::size_t>(n) == sizeof buf) return ENAMETOOLONG;
    out.assign(buf, static_cast<std::size_t>(n));
    return 0;
}

int open_pid_dir(int root, pid_t pid, UniqueFd& out) {
    char name[16];
    const auto end = std::to_chars(name, name + sizeof name - 1, pid).ptr;
    *end = '\0';
    return open_dir(root, name, out);
}

int read_stat(int dir, pid_t pid, StatFields& out, std::string& buf) {
    if (const int err = read_file(dir, "stat", buf)) return err;
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
    const int err = read_link(dir.get(), "exe", buf);
    if (err == ENOENT) return 0;  // no exe: a zombie, or exiting right now
    if (err) return err;
    out.slurmstepd = slurm_program_name(exe_program(buf)) == "slurmstepd";
    return 0;
}

}  // namespace leftover::procfs
