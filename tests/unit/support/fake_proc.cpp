// SPDX-License-Identifier: GPL-2.0-or-later
#include "support/fake_proc.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace leftover::test {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const std::string& what) {
    throw std::system_error(errno, std::generic_category(), "fake_proc: " + what);
}

// status escapes what would break its line format; stat does not.
std::string escape_name(const std::string& comm) {
    std::string out;
    for (const char c : comm) {
        if (c == '\n')
            out += "\\n";
        else if (c == '\\')
            out += "\\\\";
        else
            out += c;
    }
    return out;
}

std::string join(const std::vector<gid_t>& ids, const char* separator) {
    std::string out;
    for (const gid_t id : ids) out += fmt::format("{}{}", id, separator);
    return out;
}

std::string status_text(const FakeProcess& p) {
    const auto caps = fmt::format("{:016x}", p.cap_eff);
    return fmt::format(
        "Name:\t{}\nUmask:\t0022\nState:\t{} (fake)\nTgid:\t{}\nNgid:\t0\nPid:\t{}\nPPid:\t{}\n"
        "TracerPid:\t0\nUid:\t{}\t{}\t{}\t{}\nGid:\t{}\nFDSize:\t64\nGroups:\t{}\nNStgid:\t{}\n"
        "NSpid:\t{}\nThreads:\t{}\nCapInh:\t0000000000000000\nCapPrm:\t{}\nCapEff:\t{}\n"
        "CapBnd:\t000001ffffffffff\nCapAmb:\t0000000000000000\nNoNewPrivs:\t0\n",
        escape_name(p.comm), p.state, p.pid, p.pid, p.ppid, p.uids.real, p.uids.effective, p.uids.saved,
        p.uids.filesystem, join(p.gids, "\t"), join(p.groups, " "), p.pid, p.pid, p.threads, caps, caps);
}

std::string escape_mount_field(const std::string& path) {
    std::string out;
    for (const char c : path) {
        if (c == ' ' || c == '\t' || c == '\n' || c == '\\')
            out += fmt::format("\\{:03o}", static_cast<unsigned char>(c));
        else
            out += c;
    }
    return out;
}

}  // namespace

FakeProc::FakeProc() {
    std::string pattern = (fs::temp_directory_path() / "leftover-fake-proc-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) fail("mkdtemp " + pattern);
    root_ = fs::canonical(pattern).string();

    add_process({.pid = 1,
                 .ppid = 0,
                 .uids = {},
                 .comm = "systemd",
                 .start_time = 1,
                 .cgroup = "0::/init.scope\n",
                 .exe = "/usr/lib/systemd/systemd",
                 .gids = {0, 0, 0, 0}});
    add_process({.pid = 2,
                 .ppid = 0,
                 .uids = {},
                 .comm = "kthreadd",
                 .start_time = 1,
                 .flags = pf_kthread | 0x40,
                 .cgroup = "0::/\n",
                 .exe = "",
                 .gids = {0, 0, 0, 0}});
    add_process({.pid = caller_pid,
                 .uids = {},
                 .comm = "slurmd",
                 .start_time = 50,
                 .cgroup = "0::/system.slice/slurmd.service\n",
                 .exe = "/usr/sbin/slurmd",
                 .gids = {0, 0, 0, 0},
                 .cap_eff = all_caps});
    set_self(caller_pid);
    set_proc_mount("rw");
    set_pid_ns(1, "pid:[4026531836]");
    set_pid_ns(caller_pid, "pid:[4026531836]");
}

FakeProc::~FakeProc() {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
}

ScanOptions FakeProc::options() const {
    ScanOptions options;
    options.proc_root = root_;
    options.caller_pid = caller_pid;
    return options;
}

std::string FakeProc::path(const std::string& relative) const { return root_ + "/" + relative; }

void FakeProc::write_file(const std::string& relative, const std::string& content) {
    std::ofstream out(path(relative), std::ios::binary | std::ios::trunc);
    out << content;
    if (!out.flush()) fail("write " + path(relative));
}

void FakeProc::remove(const std::string& relative) {
    std::error_code error;
    fs::remove_all(path(relative), error);
    if (error) throw std::system_error(error, "fake_proc: remove " + path(relative));
}

void FakeProc::symlink(const std::string& target, const std::string& relative) {
    std::error_code ignored;
    fs::remove(path(relative), ignored);
    if (::symlink(target.c_str(), path(relative).c_str()) != 0) fail("symlink " + path(relative));
}

std::string FakeProc::stat_line(const FakeProcess& p) {
    // Fields 3-22 as the test sets them, then the 30 remaining fields of a real line.
    return fmt::format(
        "{} ({}) {} {} {} {} 0 -1 {} 100 0 0 0 0 0 0 0 20 0 1 0 {} "
        "3133440 359 18446744073709551615 93959592099840 93959592119721 "
        "140732758930064 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 93959592135728 "
        "93959592137344 93960378707968 140732758936006 140732758936026 "
        "140732758936026 140732758937579 0\n",
        p.pid, p.comm, p.state, p.ppid, p.pid, p.pid, p.flags, p.start_time);
}

FakeProc& FakeProc::add_process(const FakeProcess& p) {
    const auto dir = std::to_string(p.pid);
    std::error_code error;
    fs::create_directories(path(dir + "/ns"), error);
    if (error) throw std::system_error(error, "fake_proc: mkdir " + path(dir));
    write_file(dir + "/stat", stat_line(p));
    write_file(dir + "/status", status_text(p));
    write_file(dir + "/cgroup", p.cgroup);
    if (p.exe.empty())
        remove(dir + "/exe");
    else
        symlink(p.exe, dir + "/exe");
    const uid_t owner = p.owner.value_or(p.uids.effective);
    if (::chown(path(dir).c_str(), owner, static_cast<gid_t>(-1)) != 0)
        fail(fmt::format("chown {} to uid {} (needs root)", path(dir), owner));
    return *this;
}

void FakeProc::set_self(pid_t pid) { symlink(std::to_string(pid), "self"); }

void FakeProc::set_proc_mount(const std::string& super_options) {
    // A few unrelated mounts around the one that matters, as on a real system.
    write_file(fmt::format("{}/mountinfo", caller_pid),
               fmt::format("21 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
                           "22 21 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
                           "40 21 0:21 / {} rw,nosuid,nodev,noexec,relatime shared:13 - proc proc {}\n"
                           "41 21 0:35 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n",
                           escape_mount_field(root_), super_options));
}

void FakeProc::set_pid_ns(pid_t pid, const std::string& ns) { symlink(ns, fmt::format("{}/ns/pid", pid)); }

}  // namespace leftover::test
