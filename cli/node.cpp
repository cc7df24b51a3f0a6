// SPDX-License-Identifier: GPL-2.0-or-later
#include "node.hpp"

#include "errno_text.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <sys/stat.h>

namespace leftover::cli {

Status check_spool_dir(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        return Error::not_a_slurm_node(fmt::format("slurmd's spool directory {} cannot be used: {}; slurmd has "
                                         "not run here, or --node / --spool-dir is wrong",
                                         path, errno_text(errno)));
    if (!S_ISDIR(st.st_mode))
        return Error::not_a_slurm_node(fmt::format("slurmd's spool directory {} is not a directory", path));
    return Ok{};
}

}  // namespace leftover::cli
