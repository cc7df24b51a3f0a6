// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/node_discovery.hpp"

#include "util/errno_text.hpp"
#include "util/unique_fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <string_view>

namespace leftover::cli {

Status check_spool_dir(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        return Error::not_a_slurm_node(fmt::format("slurmd's spool directory {} cannot be used: {}; slurmd has "
                                                   "not run here, or --node / --spool-dir is wrong",
                                                   path, errno_text(errno)),
                                       ErrorSource::step_socket);
    if (!S_ISDIR(st.st_mode))
        return Error::not_a_slurm_node(fmt::format("slurmd's spool directory {} is not a directory", path),
                                       ErrorSource::step_socket);
    return Ok{};
}

Status add_running_slurmds(node::NodeInfo& node, const std::vector<node::RunningSlurmd>& running,
                           const node::SlurmdNaming& naming) {
    if (const auto unknown = node::add_running_nodes(node, running, naming); !unknown.empty())
        return Error::lookup(unknown.front(), ErrorSource::other);
    return Ok{};
}

Result<pid_t> read_slurmd_pid(const std::string& pid_file) {
    if (pid_file.empty())
        return Error::lookup("slurm.conf names no SlurmdPidFile: cannot find slurmd", ErrorSource::other);
    const UniqueFd fd(::open(pid_file.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
    if (!fd.valid()) {
        if (errno == ENOENT)
            return Error::lookup(
                fmt::format("slurmd's pid file {} does not exist: slurmd does not run on this node", pid_file),
                ErrorSource::other);
        return Error::lookup(fmt::format("cannot open slurmd's pid file {}: {}", pid_file, errno_text(errno)),
                             ErrorSource::other);
    }
    char buffer[32];  // "<pid>\n", as slurmd's create_pidfile writes it
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0)
        return Error::lookup(fmt::format("cannot read slurmd's pid file {}: {}", pid_file, errno_text(errno)),
                             ErrorSource::other);
    std::string_view text(buffer, static_cast<std::size_t>(n));
    if (text.ends_with('\n')) text.remove_suffix(1);
    pid_t pid = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), pid);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || pid <= 0)
        return Error::lookup(fmt::format("slurmd's pid file {} holds no pid", pid_file), ErrorSource::other);
    return pid;
}

}  // namespace leftover::cli
