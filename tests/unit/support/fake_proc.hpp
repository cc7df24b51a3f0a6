// SPDX-License-Identifier: GPL-2.0-or-later
// A fake /proc tree in a temporary directory, for testing the process scan
// without depending on what runs on the build machine. Removed on destruction.
// Directory owners are set with chown, so tests using other owners need root.
#pragma once

#include "procfs/proc_table.hpp"
#include "procfs/process.hpp"

#include <sys/types.h>

#include <doctest/doctest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace leftover::test {

inline constexpr std::uint64_t pf_kthread = 0x00200000;
inline constexpr std::uint64_t cap_sys_ptrace = std::uint64_t{1} << 19;
inline constexpr std::uint64_t all_caps = 0x000001ffffffffff;

// One process as the files <pid>/{stat,status,cgroup,exe} describe it.
// Fields are in file order so tests can use designated initializers.
struct FakeProcess {
    pid_t pid = 0;
    pid_t ppid = 1;
    Uids uids{1000, 1000, 1000, 1000};
    std::string comm = "sleep";  // written raw into stat, as the kernel does
    char state = 'S';
    std::uint64_t start_time = 1000;
    std::uint64_t flags = 0x00400000;  // PF_RANDOMIZE, as on most user processes
    std::string cgroup = "0::/user.slice/user-1000.slice/session-1.scope\n";
    std::optional<uid_t> owner = std::nullopt;  // of the <pid> directory; default uids.effective
    std::string exe = "/usr/bin/sleep";         // empty: no exe link (kernel thread)
    std::vector<gid_t> gids{1000, 1000, 1000, 1000};
    std::vector<gid_t> groups{};
    std::uint64_t cap_eff = 0;
    int threads = 1;  // the status file's Threads: line
};

// A scan that must succeed, and a process that must be in its table: the test stops here
// with the scan's error or the missing pid otherwise.
inline ProcessTable scan_ok(const ScanOptions& options) {
    auto result = scan_processes(options);
    REQUIRE_MESSAGE(result.ok(), (result.ok() ? std::string() : result.error().message));
    return std::move(result).value();
}

// Parts as /proc writes cmdline and environ: each ended by a NUL.
inline std::string nul_separated(const std::vector<std::string>& parts) {
    std::string text;
    for (const std::string& part : parts) text += part + '\0';
    return text;
}

inline const Process& get(const ProcessTable& table, pid_t pid) {
    const Process* p = table.find(pid);
    REQUIRE_MESSAGE(p != nullptr, "pid " << pid << " missing from the table");
    return *p;
}

class FakeProc {
public:
    static constexpr pid_t caller_pid = 100;

    // Creates pid 1 (systemd), pid 2 (kthreadd) and the caller (pid 100, root with
    // all capabilities) that self names, with a plain proc mount in its mountinfo
    // and every process in the same pid namespace.
    FakeProc();
    ~FakeProc();
    FakeProc(const FakeProc&) = delete;
    FakeProc& operator=(const FakeProc&) = delete;

    const std::string& root() const { return root_; }
    // Options for scanning this tree as the caller.
    ScanOptions options() const;

    // Writes (or rewrites) the process's files.
    FakeProc& add_process(const FakeProcess& process);
    // Points self at pid.
    void set_self(pid_t pid);
    // Writes <caller>/mountinfo with a proc mount on root() with these super options.
    void set_proc_mount(const std::string& super_options);
    // Makes <pid>/ns/pid name this namespace ("pid:[4026531836]").
    void set_pid_ns(pid_t pid, const std::string& ns);

    // Raw access, relative to root().
    std::string path(const std::string& relative) const;
    void write_file(const std::string& relative, const std::string& content);
    void remove(const std::string& relative);
    void symlink(const std::string& target, const std::string& relative);

    static std::string stat_line(const FakeProcess& process);

private:
    std::string root_;
};

}  // namespace leftover::test
