// SPDX-License-Identifier: GPL-2.0-or-later
// Reads the process table from a /proc root: the view checks first (proc_view.cpp),
// then one fstatat per process, stat/status/cgroup only for the processes the
// caller wants, and the ancestry of those resolved lazily.
#include "proc_table.hpp"

#include "errno_text.hpp"
#include "proc_read.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <unordered_map>

namespace leftover {

const Process* ProcessTable::find(pid_t pid) const {
    const auto it = std::lower_bound(processes.begin(), processes.end(), pid,
                                     [](const Process& p, pid_t value) { return p.pid < value; });
    return it != processes.end() && it->pid == pid ? &*it : nullptr;
}

namespace {

using namespace procfs;

Process* find_mutable(ProcessTable& table, pid_t pid) { return const_cast<Process*>(std::as_const(table).find(pid)); }

void apply_stat(Process& p, StatFields&& stat) {
    p.ppid = stat.ppid;
    p.state = stat.state;
    p.start_time = stat.start_time;
    p.kernel_thread = stat.kernel_thread();
    p.comm = std::move(stat.comm);
}

// What the ancestry walk needs to know about one process.
struct Node {
    pid_t ppid = 0;
    std::uint64_t start_time = 0;
    bool slurmstepd = false;
};

class Scanner {
public:
    Scanner(int root, const ScanOptions& options) : root_(root), options_(options) {}

    Status list();
    Status load_details();
    Status resolve_ancestry();
    ProcessTable take() { return std::move(table_); }

private:
    Result<bool> load_detail(Process& p);
    Result<const std::optional<Node>*> ancestor(pid_t pid);
    Result<bool> walk(Process& p);
    Result<bool> refresh(pid_t pid, std::uint64_t start_time, pid_t& ppid);
    Error failure(pid_t pid, const char* file, int err) const;

    int root_;
    const ScanOptions& options_;
    ProcessTable table_;
    std::unordered_map<pid_t, std::optional<Node>> ancestors_;  // nullopt: gone
    std::string buf_;                                           // reused for every file read
};

Error Scanner::failure(pid_t pid, const char* file, int err) const {
    const auto what = err == EBADMSG ? std::string("unexpected contents") : errno_text(err);
    const auto path =
        *file ? fmt::format("{}/{}/{}", options_.proc_root, pid, file) : fmt::format("{}/{}", options_.proc_root, pid);
    return Error::lookup(fmt::format("cannot read {}: {}", path, what));
}

Status Scanner::list() {
    // getdents64 records: d_ino, d_off, d_reclen, d_type, d_name (see getdents(2)).
    alignas(8) char buf[32768];
    for (;;) {
        const ssize_t n = ::getdents64(root_, buf, sizeof buf);
        if (n < 0) return Error::lookup(fmt::format("cannot list {}: {}", options_.proc_root, errno_text(errno)));
        if (n == 0) break;
        for (ssize_t offset = 0; offset < n;) {
            unsigned short reclen = 0;
            std::memcpy(&reclen, buf + offset + offsetof(struct dirent64, d_reclen), sizeof reclen);
            const char* name = buf + offset + offsetof(struct dirent64, d_name);
            offset += reclen;
            const auto pid = parse_pid(name);
            if (!pid) continue;
            struct stat st {};
            if (::fstatat(root_, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
                if (vanished(errno)) continue;
                return failure(*pid, "", errno);
            }
            if (!S_ISDIR(st.st_mode)) continue;
            Process& p = table_.processes.emplace_back();
            p.pid = *pid;
            p.owner = st.st_uid;
        }
    }
    auto& all = table_.processes;
    std::sort(all.begin(), all.end(), [](const Process& a, const Process& b) { return a.pid < b.pid; });
    all.erase(std::unique(all.begin(), all.end(), [](const Process& a, const Process& b) { return a.pid == b.pid; }),
              all.end());
    return Ok{};
}

// Reads stat, status and cgroup through one directory fd: if the pid is reused
// meanwhile, the old fd fails instead of mixing two processes. false: p is gone.
Result<bool> Scanner::load_detail(Process& p) {
    UniqueFd dir;
    const char* file = "";
    int err = open_pid_dir(root_, p.pid, dir);
    if (!err) {
        file = "stat";
        StatFields stat;
        err = read_stat(dir.get(), p.pid, stat, buf_);
        if (!err) apply_stat(p, std::move(stat));
    }
    if (!err) {
        file = "status";
        err = read_file(dir.get(), file, buf_);
        const auto value = err ? std::nullopt : status_value(buf_, "Uid");
        const auto uids = value ? parse_uids(*value) : std::nullopt;
        if (!err && !uids) err = EBADMSG;
        if (uids) p.uids = *uids;
    }
    if (!err && options_.read_cgroup) {
        file = "cgroup";
        err = read_file(dir.get(), file, buf_);
        if (!err) p.job_cgroup = slurm_job_cgroup(buf_);
    }
    if (vanished(err)) return false;
    if (err) return failure(p.pid, file, err);
    p.detailed = true;
    return true;
}

Status Scanner::load_details() {
    std::vector<pid_t> gone;
    for (Process& p : table_.processes) {
        if (!options_.wants_detail(p.owner)) continue;
        const auto loaded = load_detail(p);
        if (!loaded) return loaded.error();
        if (!*loaded) gone.push_back(p.pid);
    }
    std::erase_if(table_.processes, [&](const Process& p) { return std::ranges::count(gone, p.pid) > 0; });
    return Ok{};
}

// An ancestor as seen right now, read once and cached. slurmstepd is decided
// here, so only ancestors of detailed processes ever get their exe link read.
Result<const std::optional<Node>*> Scanner::ancestor(pid_t pid) {
    if (const auto it = ancestors_.find(pid); it != ancestors_.end()) return &it->second;
    Process* entry = find_mutable(table_, pid);
    std::optional<Node>& node = ancestors_[pid];
    if (entry && entry->detailed && (entry->owner != 0 || entry->kernel_thread)) {
        node = Node{entry->ppid, entry->start_time, false};  // cannot be a slurmstepd: no I/O
        return &node;
    }
    Probe probe;
    if (const int err = probe_process(root_, pid, probe, buf_)) {
        if (!vanished(err)) return failure(pid, probe.failed_file, err);
        return &node;  // gone
    }
    node = Node{probe.stat.ppid, probe.stat.start_time, probe.slurmstepd};
    // A detailed entry whose pid was reused since is left alone; the walk sees the
    // younger start time and treats the ancestor as gone.
    if (entry && (!entry->detailed || entry->start_time == probe.stat.start_time)) {
        entry->is_slurmstepd = probe.slurmstepd;
        if (!entry->detailed) {
            entry->owner = probe.owner;
            apply_stat(*entry, std::move(probe.stat));
        }
    }
    return &node;
}

// Re-reads the parent of a process whose ancestor went away. false: it is gone too
// (or its pid now belongs to a younger process).
Result<bool> Scanner::refresh(pid_t pid, std::uint64_t start_time, pid_t& ppid) {
    UniqueFd dir;
    StatFields stat;
    int err = open_pid_dir(root_, pid, dir);
    if (!err) err = read_stat(dir.get(), pid, stat, buf_);
    if (vanished(err)) return false;
    if (err) return failure(pid, "stat", err);
    if (stat.start_time != start_time) return false;
    ppid = stat.ppid;
    return true;
}

// Fills p.ancestors (nearest first) and p.stepd_ancestor. false: p is gone.
Result<bool> Scanner::walk(Process& p) {
    // Real chains are a few levels deep; the bounds only stop garbage and pid-reuse
    // loops from hanging the scan.
    constexpr std::size_t max_depth = 512;
    constexpr int max_attempts = 8;
    for (int attempt = 0; attempt < max_attempts; ++attempt) {
        p.ancestors.clear();
        p.stepd_ancestor.reset();
        pid_t child = p.pid, next = p.ppid;
        std::uint64_t child_start = p.start_time;
        bool broken = false;
        while (next > 0) {
            if (next == p.pid || p.ancestors.size() >= max_depth || std::ranges::count(p.ancestors, next) > 0)
                return Error::lookup(
                    fmt::format("the parent chain of pid {} in {} loops or does not end", p.pid, options_.proc_root));
            const auto cached = ancestor(next);
            if (!cached) return cached.error();
            const std::optional<Node>& node = **cached;
            // Gone, or younger than its child: a reused pid. Either way the child's
            // real parent has exited and the child was reparented.
            broken = !node || node->start_time > child_start;
            if (broken) break;
            const Node& found = *node;
            p.ancestors.push_back(next);
            if (found.slurmstepd && !p.stepd_ancestor) p.stepd_ancestor = next;
            child = next;
            child_start = found.start_time;
            next = found.ppid;
        }
        if (!broken) return true;
        // Read the orphaned child's parent again and walk once more.
        pid_t ppid = 0;
        const auto alive = refresh(child, child_start, ppid);
        if (!alive) return alive.error();
        if (child == p.pid) {
            if (!*alive) return false;
            if (ppid == p.ppid) return true;  // the parent really is missing: the chain ends
            p.ppid = ppid;
        } else if (!*alive) {
            ancestors_[child].reset();
        } else {
            if (ppid == ancestors_[child]->ppid) return true;
            ancestors_[child]->ppid = ppid;
            if (Process* entry = find_mutable(table_, child)) entry->ppid = ppid;
        }
    }
    return Error::lookup(
        fmt::format("the parent chain of pid {} in {} kept changing while it was read", p.pid, options_.proc_root));
}

Status Scanner::resolve_ancestry() {
    std::vector<pid_t> gone;
    for (Process& p : table_.processes) {
        if (!p.detailed) continue;
        const auto kept = walk(p);
        if (!kept) return kept.error();
        if (!*kept) gone.push_back(p.pid);
    }
    std::erase_if(table_.processes, [&](const Process& p) { return std::ranges::count(gone, p.pid) > 0; });
    return Ok{};
}

}  // namespace

Result<ProcessTable> scan_processes(const ScanOptions& options) {
    UniqueFd root(::open(options.proc_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (root.get() < 0) return Error::lookup(fmt::format("cannot open {}: {}", options.proc_root, errno_text(errno)));
    if (auto view = check_view(root.get(), options); !view) return view.error();
    Scanner scanner(root.get(), options);
    for (auto step : {&Scanner::list, &Scanner::load_details, &Scanner::resolve_ancestry})
        if (auto status = (scanner.*step)(); !status) return status.error();
    return scanner.take();
}

Status read_job_cgroups(const std::string& proc_root, ProcessTable& table, const std::set<pid_t>& pids) {
    UniqueFd root(::open(proc_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (root.get() < 0) return Error::lookup(fmt::format("cannot open {}: {}", proc_root, errno_text(errno)));
    std::string buf;
    for (const pid_t pid : pids) {
        Process* p = find_mutable(table, pid);
        if (p == nullptr || !p->detailed) continue;
        // No start-time check: if the pid now names another process, the scanned one is
        // gone and the executor's identity check refuses to signal it whatever its cgroup.
        const int err = read_file(root.get(), fmt::format("{}/cgroup", pid).c_str(), buf);
        if (vanished(err)) continue;
        if (err) return Error::lookup(fmt::format("cannot read {}/{}/cgroup: {}", proc_root, pid, errno_text(err)));
        p->job_cgroup = slurm_job_cgroup(buf);
    }
    return Ok{};
}

std::optional<Identity> read_identity(const std::string& proc_root, pid_t pid) {
    UniqueFd root(::open(proc_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    UniqueFd dir;
    std::string buf;
    StatFields stat;
    if (root.get() < 0 || open_pid_dir(root.get(), pid, dir) != 0 || read_stat(dir.get(), pid, stat, buf) != 0 ||
        read_file(dir.get(), "status", buf) != 0)
        return std::nullopt;
    const auto value = status_value(buf, "Uid");
    const auto uids = value ? parse_uids(*value) : std::nullopt;
    if (!uids) return std::nullopt;
    return Identity{stat.start_time, *uids};
}

std::vector<pid_t> read_ancestry(const std::string& proc_root, pid_t pid) {
    // Used to protect the caller's own ancestors: a partial chain (an ancestor
    // exited meanwhile) still protects the part that was read.
    constexpr std::size_t max_depth = 512;
    std::vector<pid_t> chain;
    UniqueFd root(::open(proc_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (root.get() < 0) return chain;
    std::string buf;
    procfs::StatFields stat;
    for (pid_t next = pid; chain.size() < max_depth;) {
        UniqueFd dir;
        if (procfs::open_pid_dir(root.get(), next, dir) != 0 || procfs::read_stat(dir.get(), next, stat, buf) != 0)
            break;
        next = stat.ppid;
        if (next <= 0 || next == pid || std::ranges::count(chain, next) > 0) break;
        chain.push_back(next);
    }
    return chain;
}

}  // namespace leftover
