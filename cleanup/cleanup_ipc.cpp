// SPDX-License-Identifier: GPL-2.0-or-later
#include "cleanup/cleanup_ipc.hpp"

#include "cleanup/cleanup.hpp"
#include "util/errno_text.hpp"
#include "util/whole_number.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <map>
#include <set>
#include <type_traits>

namespace leftover {
namespace {

constexpr ino_t kInitialIpcNamespaceInode = 0xEFFFFFFFU;  // include/linux/proc_ns.h

struct TableColumns {
    const char* file;
    const char* id;
    const char* bytes;  // nullptr: the object holds no bytes worth counting
    ObjectKind kind;
};

TableColumns columns_of(SysvKind kind) {
    switch (kind) {
        case SysvKind::shm: return {"shm", "shmid", "size", ObjectKind::shm_segment};
        case SysvKind::sem: return {"sem", "semid", nullptr, ObjectKind::semaphore};
        case SysvKind::msg: return {"msg", "msqid", "cbytes", ObjectKind::message_queue};
    }
    return {"?", "?", nullptr, ObjectKind::shm_segment};
}

std::vector<std::string_view> words_of(std::string_view line) {
    std::vector<std::string_view> words;
    std::size_t at = 0;
    while (at < line.size()) {
        const auto start = line.find_first_not_of(" \t", at);
        if (start == std::string_view::npos) break;
        const auto end = std::min(line.find_first_of(" \t", start), line.size());
        words.push_back(line.substr(start, end - start));
        at = end;
    }
    return words;
}

}  // namespace

Result<std::vector<SysvObject>> parse_sysvipc(std::string_view text, SysvKind kind, const std::string& origin) {
    const TableColumns columns = columns_of(kind);
    std::vector<SysvObject> objects;
    std::map<std::string_view, std::size_t> index;
    std::size_t line_number = 0;
    for (std::size_t at = 0; at < text.size();) {
        const auto end = std::min(text.find('\n', at), text.size());
        const std::string_view line = text.substr(at, end - at);
        at = end + 1;
        ++line_number;
        const auto words = words_of(line);
        if (line_number == 1) {
            for (std::size_t i = 0; i < words.size(); ++i) index.emplace(words[i], i);
            for (const char* name :
                 {columns.id, "uid", "cuid", columns.bytes, kind == SysvKind::shm ? "nattch" : nullptr})
                if (name != nullptr && index.count(name) == 0)
                    return Error::lookup(fmt::format("{}: no column '{}' in the header", origin, name),
                                         ErrorSource::proc);
            continue;
        }
        if (words.empty()) continue;
        const auto field = [&](const char* name, auto& out) {
            const std::size_t i = index.at(name);
            if (i >= words.size()) return false;
            const auto value = parse_whole<std::remove_reference_t<decltype(out)>>(words[i]);
            if (value) out = *value;
            return value.has_value();
        };
        SysvObject object;
        bool ok = field(columns.id, object.id) && field("uid", object.uid) && field("cuid", object.cuid);
        if (ok && columns.bytes != nullptr) ok = field(columns.bytes, object.bytes);
        if (ok && kind == SysvKind::shm) ok = field("nattch", object.attached);
        if (!ok)
            return Error::lookup(fmt::format("{}:{}: a line that does not parse", origin, line_number),
                                 ErrorSource::proc);
        objects.push_back(object);
    }
    if (line_number == 0)
        return Error::lookup(fmt::format("{}: empty, expected a header line", origin), ErrorSource::proc);
    return objects;
}

Status in_initial_ipc_namespace(const std::string& proc_root, CleanupCalls& calls) {
    EntryStat self;
    EntryStat init;
    const std::string self_path = proc_root + "/self/ns/ipc";
    const std::string init_path = proc_root + "/1/ns/ipc";
    if (const int rc = calls.stat_path(self_path, self); rc < 0)
        return Error::lookup(fmt::format("{}: {}", self_path, errno_text(-rc)), ErrorSource::proc);
    if (const int rc = calls.stat_path(init_path, init); rc < 0) {
        // Where pid 1 cannot be inspected (a sandbox whose init holds more than we do), the
        // kernel's fixed inode of the initial IPC namespace still tells (PROC_IPC_INIT_INO).
        if (rc == -EACCES || rc == -EPERM) {
            if (self.ino == kInitialIpcNamespaceInode) return Ok{};
            return Error::lookup(
                fmt::format(
                    "not in the host IPC namespace ({} is not the initial one, and {} cannot be read: {}): SysV IPC "
                    "left alone",
                    self_path, init_path, errno_text(-rc)),
                ErrorSource::proc);
        }
        return Error::lookup(fmt::format("{}: {}", init_path, errno_text(-rc)), ErrorSource::proc);
    }
    if (self.ino != init.ino || self.dev != init.dev)
        return Error::lookup(fmt::format("not in the host IPC namespace ({} differs from {}): SysV IPC left alone",
                                         self_path, init_path),
                             ErrorSource::proc);
    return Ok{};
}

void clean_up_sysv(const std::set<uid_t>& uids, const CleanupOptions& options, CleanupCalls& calls,
                   CleanupReport& report) {
    if (const Status host = in_initial_ipc_namespace(options.proc_root, calls); !host.ok()) {
        report.errors.push_back(host.error().message);
        return;
    }
    for (const SysvKind kind : {SysvKind::shm, SysvKind::sem, SysvKind::msg}) {
        const TableColumns columns = columns_of(kind);
        const std::string path = options.proc_root + "/sysvipc/" + columns.file;
        int error = 0;
        const auto text = calls.read_file(path, error);
        if (!text) {
            report.errors.push_back(fmt::format("{}: {}", path, errno_text(error)));
            continue;
        }
        auto objects = parse_sysvipc(*text, kind, path);
        if (!objects.ok()) {
            report.errors.push_back(objects.error().message);
            continue;
        }
        for (const SysvObject& found : objects.value()) {
            // The owner only: a creator may have handed the object to another user (IPC_SET),
            // whose work it is now.
            if (uids.count(found.uid) == 0) continue;
            if (kind == SysvKind::shm && found.attached != 0) continue;  // in use: a live process maps it
            if (std::chrono::steady_clock::now() >= options.deadline) {
                report.deadline_reached = true;
                report.errors.push_back(fmt::format("{}: the deadline passed, the rest not searched", path));
                return;
            }
            CleanupRecord record{columns.kind, std::to_string(found.id), found.uid, found.bytes};
            // The id may have been freed and reused since the table was read: ask again, by id.
            SysvStat now;
            if (const int rc = calls.sysv_stat(kind, found.id, now); rc < 0) {
                if (rc == -EINVAL || rc == -EIDRM) continue;  // gone meanwhile
                record.outcome = CleanupOutcome::failed;
                record.error = -rc;
            } else if (now.uid != found.uid || now.cuid != found.cuid) {
                record.outcome = CleanupOutcome::changed;
                record.detail = fmt::format("owner now uid {} (creator {})", now.uid, now.cuid);
            } else if (kind == SysvKind::shm && now.attached != 0) {
                record.outcome = CleanupOutcome::changed;
                record.detail = fmt::format("{} process(es) attached now", now.attached);
            } else if (options.dry_run) {
                record.outcome = CleanupOutcome::would_remove;
            } else if (const int removed = calls.sysv_remove(kind, found.id); removed < 0) {
                if (removed == -EINVAL || removed == -EIDRM) continue;
                record.outcome = CleanupOutcome::failed;
                record.error = -removed;
            }
            report.records.push_back(std::move(record));
        }
    }
}

}  // namespace leftover
