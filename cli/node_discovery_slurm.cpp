// SPDX-License-Identifier: GPL-2.0-or-later
// The node as slurmd sees it, from libslurm (the only file of the command that uses it).
// slurmd (src/slurmd/slurmd/slurmd.c, _read_config in 22.05) takes its NodeName from -N,
// else the NodeName whose NodeHostname is the short host name, else one matching the
// host's aliases, else the node "localhost"; and it expands the first %h of
// SlurmdSpoolDir and SlurmdPidFile to the short host name and the first %n to the node
// name. slurmd's pid comes from that pid file.
#include "cli/node_discovery.hpp"
#include "node/slurm_conf.hpp"

extern "C" {
#include <slurm/slurm.h>
// Exported by libslurm but declared only in Slurm's private read_config.h / xmalloc.h
// (slurm-22-05-8-1); the strings they return are xmalloc'ed and freed with slurm_xfree.
extern slurm_conf_t slurm_conf;
char* slurm_conf_get_nodename(const char* node_hostname);
char* slurm_conf_get_aliased_nodename(void);
void slurm_xfree(void** pointer);
}

#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <optional>
#include <vector>

namespace leftover::cli {
namespace {

// libslurm's default (Debian's build) and slurmd's configless cache, in the order
// libslurm itself tries them after SLURM_CONF.
constexpr const char* kDefaultSlurmConf = "/etc/slurm/slurm.conf";
constexpr const char* kConfiglessSlurmConf = "/run/slurm/conf/slurm.conf";

bool exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

// Found here rather than left to libslurm: given a missing file it waits a minute and
// then exits, and without any it would ask DNS for a configless controller.
Result<std::string> slurm_conf_path() {
    if (const char* env = std::getenv("SLURM_CONF"); env != nullptr && *env != '\0') {
        if (!exists(env))
            return Error::not_a_slurm_node(fmt::format("SLURM_CONF names {}, which does not exist", env),
                                           ErrorSource::other);
        return std::string(env);
    }
    for (const char* path : {kDefaultSlurmConf, kConfiglessSlurmConf})
        if (exists(path)) return std::string(path);
    return Error::not_a_slurm_node(fmt::format("no slurm.conf (SLURM_CONF is not set, and neither {} nor {} "
                                               "exists)",
                                               kDefaultSlurmConf, kConfiglessSlurmConf),
                                   ErrorSource::other);
}

// libslurm calls exit(1) on a slurm.conf it cannot parse, after printing why. Our exit
// status for that is 2 (a lookup error), like every other reason not to sweep.
bool reading_slurm_conf = false;
void exit_status_for_bad_slurm_conf() {
    if (!reading_slurm_conf) return;
    constexpr char message[] = "leftover: slurm.conf could not be read (see above); nothing done\n";
    (void)!::write(STDERR_FILENO, message, sizeof message - 1);
    ::_exit(2);
}

std::optional<std::string> take(char* xmalloced) {
    if (xmalloced == nullptr) return std::nullopt;
    std::string value = xmalloced;
    slurm_xfree(reinterpret_cast<void**>(&xmalloced));
    if (value.empty()) return std::nullopt;
    return value;
}

std::optional<std::string> slurmd_node_name(const std::string& short_host) {
    if (auto name = take(slurm_conf_get_nodename(short_host.c_str()))) return name;
    if (auto name = take(slurm_conf_get_aliased_nodename())) return name;
    return take(slurm_conf_get_nodename("localhost"));
}

}  // namespace

Result<node::NodeInfo> discover_slurm_node(const NodeOverrides& overrides) {
    auto conf_path = slurm_conf_path();
    LEFTOVER_TRY(conf_path);

    static const bool registered = std::atexit(exit_status_for_bad_slurm_conf) == 0;
    (void)registered;
    reading_slurm_conf = true;
    slurm_init(conf_path->c_str());
    reading_slurm_conf = false;

    const std::string short_host = node::short_hostname();
    std::optional<std::string> name = overrides.node_name ? overrides.node_name : slurmd_node_name(short_host);
    if (!name) {
        slurm_fini();
        std::vector<std::string> running_as;
        if (auto running = node::running_slurmds("/proc"); running.ok())
            for (const node::RunningSlurmd& slurmd : running.value())
                if (slurmd.options.node_name) running_as.push_back(*slurmd.options.node_name);
        return Error::not_a_slurm_node(
            fmt::format(
                "no NodeName in {} has NodeHostname {} (this host); give "
                "--node NAME if slurmd runs here with -N{}",
                *conf_path, short_host,
                running_as.empty() ? std::string() : fmt::format(" (it runs as {})", fmt::join(running_as, ", "))),
            ErrorSource::other);
    }
    node::NodeInfo node = node::node_info_from_slurm_conf(*name);
    if (overrides.spool_dir) node.spool_dir = *overrides.spool_dir;
    if (node.slurm_conf.empty()) node.slurm_conf = *conf_path;
    // Every other node this host runs counts too, also beside an explicit --node: the
    // ones slurm.conf puts here, and each running slurmd's -N (which slurm.conf need not
    // name: dynamic nodes, a test node, a typo).
    node::add_configured_host_nodes(node);
    const node::SlurmdNaming names{slurmd_node_name(short_host), node::full_hostname(), node::slurmd_spool_pattern(),
                                   short_host};
    slurm_fini();
    auto running = node::running_slurmds("/proc");
    LEFTOVER_TRY(running);
    LEFTOVER_TRY(add_running_slurmds(node, running.value(), names));

    if (node.spool_dir.empty())
        return Error::not_a_slurm_node(fmt::format("{} sets no SlurmdSpoolDir", *conf_path), ErrorSource::other);
    LEFTOVER_TRY(check_spool_dir(node.spool_dir));
    auto slurmd = read_slurmd_pid(node.slurmd_pid_file);
    LEFTOVER_TRY(slurmd);
    node.slurmd_pid = slurmd.value();
    return node;
}

}  // namespace leftover::cli
