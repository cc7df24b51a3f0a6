// SPDX-License-Identifier: GPL-2.0-or-later
// Reads the process table from a /proc root: the view checks first (proc_view.cpp),
// then one fstatat per process, stat/status/cgroup only for the processes the
// caller wants, and the ancestry of those resolved lazily.
#include "procfs/proc_table.hpp"

#include "errors/error.hpp"
#include "procfs/proc_read.hpp"
#include "util/errno_text.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <unordered_map>
#include <unordered_set>

namespace leftover {

const Process* ProcessTable::find(pid_t pid) const {
    const auto it = std::lower_bound(processes.begin(), processes.end(), pid,
                                     [](const Process& p, pid_t value) { return p.pid < value; });
    return it != processes.end() && it->pid == pid ? &*it : nullptr;
}

namespace {

// What the ancestry walk knows about one process: what it read, and once resolved,
// the process's own parent chain (shared by everything below it).
struct AncestryEntry {
    pid_t ppid = 0;
    std::uint64_t start_time = 0;
    bool slurmstepd = false;
    enum class Chain { unresolved, resolved, unreadable } chain = Chain::unresolved;
    std::shared_ptr<const AncestorLink> ancestors;
    std::size_t depth = 0;  // length of ancestors
    std::optional<pid_t> stepd_ancestor;
    int refreshes = 0;
};

// A chain deeper than max_ancestry_depth, or a loop, is not believed: its processes are
// kept as unreadable, the rest of the node is judged as usual.
// Re-reads of one process whose parent went away, before its chain counts as unreadable.
constexpr int max_refreshes = 8;

class Scanner {
public:
    Scanner(int root, const ScanOptions& options) : root_(root), options_(options) {}

    Status list();
    Status load_details();
    Status resolve_ancestry();
    ProcessTable take() { return std::move(table_); }

private:
    Result<bool> load_detail(Process& p);
    Result<std::optional<AncestryEntry>*> ancestor(pid_t pid);
    Result<const AncestryEntry*> resolved(pid_t pid);
    Status resolve_one(std::vector<pid_t>& stack, std::unordered_set<pid_t>& on_stack);
    Result<bool> walk(Process& p);
    Result<bool> refresh(pid_t pid, std::uint64_t start_time, pid_t& ppid);
    Error failure(pid_t pid, const char* file, int err) const;
    // `progress` says how far the scan got, for the log: what it left unread.
    Status check_deadline(std::string_view progress = "while listing it") const;
    // One pass over the listed processes that `wanted` selects, each checked against the
    // deadline first (`done` names the pass for the log); a process `step` finds gone
    // (false) leaves the table.
    template <class Wanted, class Step>
    Status pass(Wanted wanted, std::string_view done, Step step);

    int root_;
    const ScanOptions& options_;
    ProcessTable table_;
    std::unordered_map<pid_t, std::optional<AncestryEntry>> ancestors_;  // nullopt: gone
    std::string buf_;                                                    // reused for every file read
};

Error Scanner::failure(pid_t pid, const char* file, int err) const {
    const auto what = err == EBADMSG ? std::string("unexpected contents") : errno_text(err);
    const auto path =
        *file ? fmt::format("{}/{}/{}", options_.proc_root, pid, file) : fmt::format("{}/{}", options_.proc_root, pid);
    return Error::lookup(fmt::format("cannot read {}: {}", path, what), ErrorSource::proc);
}

Status Scanner::check_deadline(std::string_view progress) const {
    if (std::chrono::steady_clock::now() < options_.deadline) return Ok{};
    return Error::lookup(
        fmt::format("the scan of {} stopped {}: the evaluation's deadline was reached", options_.proc_root, progress),
        ErrorSource::deadline);
}

Status Scanner::list() {
    if (auto in_time = check_deadline(); !in_time) return in_time;
    Status listed = for_each_pid(root_, options_.proc_root, [&](pid_t pid, const char* name) -> Status {
        if (auto in_time = check_deadline(); !in_time) return in_time;
        struct stat st {};
        if (::fstatat(root_, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (vanished(errno)) return Ok{};
            return failure(pid, "", errno);
        }
        if (!S_ISDIR(st.st_mode)) return Ok{};
        Process& p = table_.processes.emplace_back();
        p.pid = pid;
        p.owner = st.st_uid;
        return Ok{};
    });
    if (!listed) return listed;
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
    if (!err) err = read_detail(dir.get(), p, options_.read_cgroup, file, buf_);
    if (vanished(err)) return false;
    if (err) return failure(p.pid, file, err);
    p.detailed = true;
    return true;
}

template <class Wanted, class Step>
Status Scanner::pass(Wanted wanted, std::string_view done, Step step) {
    std::unordered_set<pid_t> gone;
    std::size_t count = 0;
    for (Process& p : table_.processes) {
        if (!wanted(p)) continue;
        LEFTOVER_TRY(
            check_deadline(fmt::format("after {} {} of {} processes listed", done, count, table_.processes.size())));
        ++count;
        const Result<bool> kept = step(p);
        LEFTOVER_TRY(kept);
        if (!*kept) gone.insert(p.pid);
    }
    std::erase_if(table_.processes, [&](const Process& p) { return gone.count(p.pid) != 0; });
    return Ok{};
}

Status Scanner::load_details() {
    return pass([&](const Process& p) { return options_.wants_detail(p.owner); }, "reading",
                [&](Process& p) { return load_detail(p); });
}

// A process as the walk sees it right now, read once and cached. slurmstepd is decided
// here, so only ancestors of detailed processes ever get their exe link read. The table
// entry is never changed (its owner and stat are what the listing and detail pass read,
// and what the decision judges), except to note that it is a slurmstepd.
Result<std::optional<AncestryEntry>*> Scanner::ancestor(pid_t pid) {
    if (const auto it = ancestors_.find(pid); it != ancestors_.end()) return &it->second;
    Process* entry = table_.find(pid);
    std::optional<AncestryEntry>& seen = ancestors_[pid];
    if (entry && entry->detailed && (entry->owner != 0 || entry->kernel_thread)) {
        seen.emplace();  // cannot be a slurmstepd: no I/O
        seen->ppid = entry->ppid;
        seen->start_time = entry->start_time;
        return &seen;
    }
    Probe probe;
    if (const int err = probe_process(root_, pid, probe, buf_)) {
        if (!vanished(err)) return failure(pid, probe.failed_file, err);
        return &seen;  // gone
    }
    seen.emplace();
    seen->ppid = probe.stat.ppid;
    seen->start_time = probe.stat.start_time;
    seen->slurmstepd = probe.slurmstepd;
    // A detailed entry whose pid was reused since is left alone; the walk sees the
    // younger start time and treats the ancestor as gone.
    if (entry && (!entry->detailed || entry->start_time == probe.stat.start_time))
        entry->is_slurmstepd = probe.slurmstepd;
    return &seen;
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

// One step on the top of the stack: resolves it from its parent, or pushes the parent.
// Each entry is resolved once, so a fan under a deep chain costs one step per process.
Status Scanner::resolve_one(std::vector<pid_t>& stack, std::unordered_set<pid_t>& on_stack) {
    const pid_t pid = stack.back();
    const auto pop = [&] {
        stack.pop_back();
        on_stack.erase(pid);
        return Ok{};
    };
    const auto slot = ancestor(pid);
    LEFTOVER_TRY(slot);
    std::optional<AncestryEntry>& seen = **slot;
    if (!seen || seen->chain != AncestryEntry::Chain::unresolved) return pop();
    AncestryEntry& n = *seen;
    if (n.ppid <= 0) {
        n.chain = AncestryEntry::Chain::resolved;
        return pop();
    }
    if (on_stack.count(n.ppid) != 0) {  // a loop: everything on the stack descends from it
        n.chain = AncestryEntry::Chain::unreadable;
        return pop();
    }
    const auto parent_slot = ancestor(n.ppid);
    LEFTOVER_TRY(parent_slot);
    const std::optional<AncestryEntry>& parent = **parent_slot;
    if (parent && parent->chain == AncestryEntry::Chain::unresolved) {
        stack.push_back(n.ppid);
        on_stack.insert(n.ppid);
        return Ok{};
    }
    // Gone, or younger than its child: a reused pid. Either way the child's real parent
    // has exited and the child was reparented: read it again.
    if (!parent || parent->start_time > n.start_time) {
        if (++n.refreshes > max_refreshes) {
            n.chain = AncestryEntry::Chain::unreadable;  // kept changing while it was read
            return pop();
        }
        pid_t ppid = 0;
        const auto alive = refresh(pid, n.start_time, ppid);
        LEFTOVER_TRY(alive);
        if (!*alive) {
            seen.reset();
            return pop();
        }
        if (ppid == n.ppid) n.chain = AncestryEntry::Chain::resolved;  // the parent really is missing: the chain ends
        n.ppid = ppid;
        if (Process* entry = table_.find(pid); entry && entry->detailed && entry->start_time == n.start_time)
            entry->ppid = ppid;
        return n.chain == AncestryEntry::Chain::resolved ? pop() : Ok{};
    }
    if (parent->chain == AncestryEntry::Chain::unreadable || parent->depth + 1 > max_ancestry_depth) {
        n.chain = AncestryEntry::Chain::unreadable;
        return pop();
    }
    n.chain = AncestryEntry::Chain::resolved;
    n.ancestors = std::make_shared<const AncestorLink>(AncestorLink{n.ppid, parent->ancestors});
    n.depth = parent->depth + 1;
    n.stepd_ancestor = parent->slurmstepd ? std::optional<pid_t>(n.ppid) : parent->stepd_ancestor;
    return pop();
}

// The ancestry entry of pid with its chain resolved; nullptr when it is gone.
Result<const AncestryEntry*> Scanner::resolved(pid_t pid) {
    std::vector<pid_t> stack{pid};
    std::unordered_set<pid_t> on_stack{pid};
    while (!stack.empty()) {
        if (auto in_time = check_deadline("in a parent chain"); !in_time) return in_time.error();
        if (auto step = resolve_one(stack, on_stack); !step) return step.error();
    }
    const std::optional<AncestryEntry>& seen = ancestors_[pid];
    return seen ? &*seen : nullptr;
}

// Fills p.parent_chain and p.stepd_ancestor, or marks them unreadable. false: p is gone.
Result<bool> Scanner::walk(Process& p) {
    for (int refreshes = 0; refreshes <= max_refreshes; ++refreshes) {
        if (p.ppid <= 0) return true;
        if (p.ppid == p.pid) break;
        const auto parent = resolved(p.ppid);
        LEFTOVER_TRY(parent);
        const AncestryEntry* found = *parent;
        if (found && found->start_time <= p.start_time) {
            if (found->chain == AncestryEntry::Chain::unreadable || found->depth + 1 > max_ancestry_depth) break;
            p.parent_chain = std::make_shared<const AncestorLink>(AncestorLink{p.ppid, found->ancestors});
            p.stepd_ancestor = found->slurmstepd ? std::optional<pid_t>(p.ppid) : found->stepd_ancestor;
            return true;
        }
        // The parent is gone or younger than p (a reused pid): p was reparented.
        pid_t ppid = 0;
        const auto alive = refresh(p.pid, p.start_time, ppid);
        LEFTOVER_TRY(alive);
        if (!*alive) return false;
        if (ppid == p.ppid) return true;  // the parent really is missing: the chain ends
        p.ppid = ppid;
    }
    p.ancestry_unreadable = true;
    return true;
}

Status Scanner::resolve_ancestry() {
    return pass([](const Process& p) { return p.detailed; }, "the parent chains of",
                [&](Process& p) { return walk(p); });
}

}  // namespace

Result<ProcessTable> scan_processes(const ScanOptions& options) {
    UniqueFd root(::open(options.proc_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (root.get() < 0)
        return Error::lookup(fmt::format("cannot open {}: {}", options.proc_root, errno_text(errno)),
                             ErrorSource::proc);
    if (auto view = check_view(root.get(), options); !view) return view.error();
    Scanner scanner(root.get(), options);
    for (auto step : {&Scanner::list, &Scanner::load_details, &Scanner::resolve_ancestry})
        if (auto status = (scanner.*step)(); !status) return status.error();
    return scanner.take();
}

}  // namespace leftover
