// SPDX-License-Identifier: GPL-2.0-or-later
// The file part of the cleanup: a walk that never follows a symlink and never leaves the
// searched directory's mount, removing by name relative to an open directory after
// checking once more that the name still is the entry that was judged.
#include "cleanup/cleanup.hpp"
#include "util/errno_text.hpp"
#include "util/unique_fd.hpp"

#include <fcntl.h>

#include <fmt/format.h>

#include <cerrno>

namespace leftover {
namespace {

class TreeWalk {
public:
    TreeWalk(ObjectKind kind, const std::set<uid_t>& uids, const CleanupOptions& options, CleanupCalls& calls,
             CleanupReport& report)
        : kind_(kind), uids_(uids), options_(options), calls_(calls), report_(report) {}

    void run(const std::string& dir) {
        const int fd = calls_.open_dir(dir);
        if (fd < 0) {
            EntryStat st;
            const bool symlink = calls_.stat_at(AT_FDCWD, dir, st) == 0 && S_ISLNK(st.mode);
            report_.errors.push_back(fmt::format("{}: {}, not searched", dir, symlink ? "a symlink" : errno_text(-fd)));
            return;
        }
        const UniqueFd root_fd(fd);
        if (const int rc = calls_.stat_at(root_fd.get(), "", root_); rc < 0) {
            report_.errors.push_back(fmt::format("{}: {}, not searched", dir, errno_text(-rc)));
            return;
        }
        if (root_.uid != 0) {
            report_.errors.push_back(fmt::format("{}: owned by uid {}, not root: not searched", dir, root_.uid));
            return;
        }
        clean_dir(root_fd.get(), dir, 0);
    }

private:
    // A directory must be on the searched directory's mount and file system (its device:
    // a btrfs subvolume is another file system under the same mount). A non-directory
    // leads nowhere, so only its mount counts: overlayfs reports the device of the layer
    // that holds a file, not the overlay's. Without a mount id, the device decides.
    bool on_this_mount(const EntryStat& st) const {
        const bool known = root_.mount_id != 0 && st.mount_id != 0;
        if (known && st.mount_id != root_.mount_id) return false;
        return (known && !S_ISDIR(st.mode)) || st.dev == root_.dev;
    }

    // `entry`: one more entry is about to be looked at, and counts against the limit.
    bool stop_here(const std::string& path, bool entry = true) {
        if (stopped_) return true;
        if (calls_.now() >= options_.deadline) {
            report_.deadline_reached = true;
            report_.errors.push_back(fmt::format("{}: the deadline passed, the rest not searched", path));
            stopped_ = true;
        } else if (entry && ++entries_ > options_.max_entries) {
            report_.errors.push_back(
                fmt::format("{}: more than {} entries looked at, the rest not searched", path, options_.max_entries));
            stopped_ = true;
        }
        return stopped_;
    }

    // Whether the directory ended up empty (in a dry run: would end up empty). Read a
    // batch at a time: anyone can fill /tmp, and the deadline and the entry limit must
    // stop the walk inside a huge directory, not after reading all of it.
    bool clean_dir(int dirfd, const std::string& path, int depth) {
        bool empty = true;
        std::vector<std::string> names;
        for (;;) {
            if (stop_here(path, false)) return false;
            names.clear();
            const int read = calls_.read_dir(dirfd, names);
            if (read < 0) {
                report_.errors.push_back(fmt::format("{}: {}", path, errno_text(-read)));
                return false;
            }
            if (read == 0) return empty;
            for (const std::string& name : names) {
                if (stop_here(path)) return false;
                if (!clean_entry(dirfd, name, fmt::format("{}/{}", path, name), depth)) empty = false;
            }
        }
    }

    // Whether the entry is gone (or, in a dry run, would be).
    bool clean_entry(int dirfd, const std::string& name, const std::string& path, int depth) {
        EntryStat st;
        if (const int rc = calls_.stat_at(dirfd, name, st); rc < 0) {
            if (rc == -ENOENT) return true;
            report_.errors.push_back(fmt::format("{}: {}", path, errno_text(-rc)));
            return false;
        }
        if (uids_.count(st.uid) == 0) return false;  // not theirs: stays, and so does its directory
        if (!on_this_mount(st)) {
            report_.errors.push_back(fmt::format("{}: another mount, not crossed", path));
            return false;
        }
        if (!S_ISDIR(st.mode)) return remove(dirfd, name, path, st, kind_);
        if (depth + 1 > options_.max_depth) {
            report_.errors.push_back(fmt::format("{}: deeper than {} levels, not searched", path, options_.max_depth));
            return false;
        }
        const int fd = calls_.open_dir_at(dirfd, name);
        if (fd < 0) {
            if (fd == -ENOENT) return true;
            // ELOOP or ENOTDIR: a symlink or a file was swapped in for the directory.
            changed(path, st, fmt::format("not opened as a directory: {}", errno_text(-fd)));
            return false;
        }
        const UniqueFd sub(fd);
        EntryStat opened;
        if (calls_.stat_at(sub.get(), "", opened) < 0 || opened.ino != st.ino || opened.dev != st.dev ||
            !on_this_mount(opened) || uids_.count(opened.uid) == 0) {
            changed(path, st, "another directory by the time it was opened");
            return false;
        }
        if (!clean_dir(sub.get(), path, depth + 1)) return false;
        return remove(dirfd, name, path, st, ObjectKind::directory);
    }

    bool remove(int dirfd, const std::string& name, const std::string& path, const EntryStat& st, ObjectKind kind) {
        CleanupRecord record{kind, path, st.uid, S_ISREG(st.mode) ? st.size : 0};
        // The name may have been pointed at something else since it was judged.
        EntryStat now;
        if (const int rc = calls_.stat_at(dirfd, name, now); rc < 0) {
            if (rc == -ENOENT) return true;
            record.outcome = CleanupOutcome::failed;
            record.error = -rc;
        } else if (now.ino != st.ino || now.dev != st.dev || (now.mode & S_IFMT) != (st.mode & S_IFMT) ||
                   uids_.count(now.uid) == 0) {
            record.outcome = CleanupOutcome::changed;
            record.detail = "another entry by that name now";
        } else if (options_.dry_run) {
            record.outcome = CleanupOutcome::would_remove;
        } else if (const int unlinked = calls_.unlink_at(dirfd, name, kind == ObjectKind::directory); unlinked < 0) {
            if (unlinked == -ENOENT) return true;
            if (unlinked == -ENOTEMPTY || unlinked == -EEXIST) {
                record.outcome = CleanupOutcome::changed;
                record.detail = "no longer empty";
            } else {
                record.outcome = CleanupOutcome::failed;
                record.error = -unlinked;
            }
        }
        const bool gone = record.outcome == CleanupOutcome::removed || record.outcome == CleanupOutcome::would_remove;
        report_.records.push_back(std::move(record));
        return gone;
    }

    void changed(const std::string& path, const EntryStat& st, std::string detail) {
        CleanupRecord record{ObjectKind::directory, path, st.uid, 0, CleanupOutcome::changed};
        record.detail = std::move(detail);
        report_.records.push_back(std::move(record));
    }

    ObjectKind kind_;
    const std::set<uid_t>& uids_;
    const CleanupOptions& options_;
    CleanupCalls& calls_;
    CleanupReport& report_;
    EntryStat root_;
    std::size_t entries_ = 0;
    bool stopped_ = false;
};

}  // namespace

void clean_up_tree(const std::string& dir, ObjectKind kind, const std::set<uid_t>& uids, const CleanupOptions& options,
                   CleanupCalls& calls, CleanupReport& report) {
    std::string path = dir;
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    TreeWalk(kind, uids, options, calls, report).run(path);
}

}  // namespace leftover
