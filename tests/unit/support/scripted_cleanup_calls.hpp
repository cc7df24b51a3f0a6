// SPDX-License-Identifier: GPL-2.0-or-later
// The tests' one fake of cleanup's CleanupCalls: each call can be scripted (a fault, a
// race, a swap at the worst moment) by setting its std::function in `script`; a call with
// none set is the real one. A script reaches the real call through real_cleanup_calls().
// Every call is counted in `count`, scripted or not.
#pragma once

#include "cleanup/cleanup_calls.hpp"

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace leftover::test {

class ScriptedCleanupCalls : public CleanupCalls {
public:
    struct Script {
        std::function<int(SysvKind kind, int id, SysvStat& out)> sysv_stat;
        std::function<int(SysvKind kind, int id)> sysv_remove;
        std::function<int(const std::string& path)> open_dir;
        std::function<int(int dirfd, const std::string& name)> open_dir_at;
        std::function<int(int dirfd, const std::string& name, EntryStat& out)> stat_at;
        std::function<int(int dirfd, std::vector<std::string>& names)> read_dir;
        std::function<std::chrono::steady_clock::time_point()> now;
        std::function<int(int dirfd, const std::string& name, bool directory)> unlink_at;
        std::function<std::optional<std::string>(const std::string& path, int& error)> read_file;
        std::function<int(const std::string& path, EntryStat& out)> stat_path;
        std::function<bool(const std::string& path)> is_mqueue_fs;
    };
    struct Count {
        int sysv_stat = 0;
        int sysv_remove = 0;
        int open_dir = 0;
        int open_dir_at = 0;
        int stat_at = 0;
        int read_dir = 0;
        int now = 0;
        int unlink_at = 0;
        int read_file = 0;
        int stat_path = 0;
        int is_mqueue_fs = 0;
    };
    Script script;
    Count count;

    int sysv_stat(SysvKind kind, int id, SysvStat& out) override {
        ++count.sysv_stat;
        return script.sysv_stat ? script.sysv_stat(kind, id, out) : CleanupCalls::sysv_stat(kind, id, out);
    }
    int sysv_remove(SysvKind kind, int id) override {
        ++count.sysv_remove;
        return script.sysv_remove ? script.sysv_remove(kind, id) : CleanupCalls::sysv_remove(kind, id);
    }
    int open_dir(const std::string& path) override {
        ++count.open_dir;
        return script.open_dir ? script.open_dir(path) : CleanupCalls::open_dir(path);
    }
    int open_dir_at(int dirfd, const std::string& name) override {
        ++count.open_dir_at;
        return script.open_dir_at ? script.open_dir_at(dirfd, name) : CleanupCalls::open_dir_at(dirfd, name);
    }
    int stat_at(int dirfd, const std::string& name, EntryStat& out) override {
        ++count.stat_at;
        return script.stat_at ? script.stat_at(dirfd, name, out) : CleanupCalls::stat_at(dirfd, name, out);
    }
    int read_dir(int dirfd, std::vector<std::string>& names) override {
        ++count.read_dir;
        return script.read_dir ? script.read_dir(dirfd, names) : CleanupCalls::read_dir(dirfd, names);
    }
    std::chrono::steady_clock::time_point now() override {
        ++count.now;
        return script.now ? script.now() : CleanupCalls::now();
    }
    int unlink_at(int dirfd, const std::string& name, bool directory) override {
        ++count.unlink_at;
        return script.unlink_at ? script.unlink_at(dirfd, name, directory)
                                : CleanupCalls::unlink_at(dirfd, name, directory);
    }
    std::optional<std::string> read_file(const std::string& path, int& error) override {
        ++count.read_file;
        return script.read_file ? script.read_file(path, error) : CleanupCalls::read_file(path, error);
    }
    int stat_path(const std::string& path, EntryStat& out) override {
        ++count.stat_path;
        return script.stat_path ? script.stat_path(path, out) : CleanupCalls::stat_path(path, out);
    }
    bool is_mqueue_fs(const std::string& path) override {
        ++count.is_mqueue_fs;
        return script.is_mqueue_fs ? script.is_mqueue_fs(path) : CleanupCalls::is_mqueue_fs(path);
    }
};

}  // namespace leftover::test
