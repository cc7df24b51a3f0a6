// SPDX-License-Identifier: GPL-2.0-or-later
#include "node_discovery.hpp"

#include "query_controller.hpp"

extern "C" {
#include <slurm/slurm.h>
// Filled in by slurmstepd (slurm_conf_init) in the step and in the job-epilog process;
// slurm.h has the type, only Slurm's private headers declare the variable.
extern slurm_conf_t slurm_conf;
}

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace leftover::spank {
namespace {

std::string short_hostname() {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0) return {};
    std::string host = name;
    return host.substr(0, host.find('.'));
}

// The helper sits next to leftover.so in a build tree; installed, in libexec.
std::string query_helper_path() {
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void*>(&query_helper_path), &info) != 0 && info.dli_fname != nullptr) {
        const auto sibling = std::filesystem::path(info.dli_fname).parent_path() / "leftover-query";
        std::error_code ignored;
        if (std::filesystem::exists(sibling, ignored)) return sibling.string();
    }
    return LEFTOVER_QUERY_PATH;
}

}  // namespace

Result<slurm::NodeInfo> discover_node(spank_t) {
    slurm::NodeInfo node;
    const char* node_name = std::getenv("SLURMD_NODENAME");
    if (node_name == nullptr || *node_name == '\0')
        return Error::lookup("SLURMD_NODENAME is not set: cannot tell which node's steps to ask");
    node.node_name = node_name;
    if (slurm_conf.slurmd_spooldir == nullptr || *slurm_conf.slurmd_spooldir == '\0')
        return Error::lookup("SlurmdSpoolDir is unknown in this process");
    node.spool_dir = slurm::expand_spool_dir(slurm_conf.slurmd_spooldir, node.node_name, short_hostname());
    node.slurm_uids = {static_cast<uid_t>(slurm_conf.slurm_user_id), static_cast<uid_t>(slurm_conf.slurmd_user_id)};
    node.prolog_contain = prolog_contain();
    if (slurm_conf.slurm_conf != nullptr) node.slurm_conf = slurm_conf.slurm_conf;
    return node;
}

bool prolog_contain() { return (slurm_conf.prolog_flags & PROLOG_FLAG_CONTAIN) != 0; }

std::unique_ptr<slurm::Controller> make_controller(const slurm::NodeInfo& node) {
    return std::make_unique<slurm::QueryController>(query_helper_path(), node.slurm_conf);
}

}  // namespace leftover::spank
