// SPDX-License-Identifier: GPL-2.0-or-later
// leftover-query: asks slurmctld which jobs are running or suspended on some nodes.
// The plugin runs it as a child process so that a controller that does not answer
// costs a bounded time: libslurm's calls have no deadline of their own.
//
// Its command lines and the lines it answers with: controller/helper_protocol.hpp, which
// both this program and its clients use. Exit 0 after the "end" line; errors on
// stderr, exit 2.
//
// The jobs question: slurmctld's running or suspended jobs on any of the nodes.
// The accounts question: getpwuid_r, getpwnam_r, run here so that a hung directory
// service costs the caller its deadline and no more.
// The drain: asks slurmctld for the node's state, then drains it with the reason unless
// it is drained, draining, down or failing already (controller/drain.hpp: it keeps its
// reason).
extern "C" {
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
}

#include "accounts/accounts.hpp"
#include "controller/drain.hpp"
#include "controller/helper_protocol.hpp"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace {

int usage() {
    (void)std::fputs(
        "usage: leftover-query --node NAME [--node NAME]... [--exclude-job ID]\n"
        "       leftover-query accounts [--uid UID]... [--name NAME]...\n"
        "       leftover-query drain --node NAME --reason TEXT\n",
        stderr);
    return 2;
}

bool on_any_node(const char* nodes, const std::vector<std::string>& wanted) {
    if (nodes == nullptr || *nodes == '\0') return false;
    // auto: hostlist_t is a pointer type up to 23.02 and the struct itself from 23.11 on.
    auto list = slurm_hostlist_create(nodes);
    if (list == nullptr) return false;
    bool found = false;
    for (const std::string& node : wanted) found = found || slurm_hostlist_find(list, node.c_str()) >= 0;
    slurm_hostlist_destroy(list);
    return found;
}

int accounts(int argc, char** argv) {
    for (int i = 2; i < argc; i += 2) {
        const std::string arg = argv[i];
        if (i + 1 >= argc || (arg != "--uid" && arg != "--name")) return usage();
        if (arg == "--uid") {
            char* end = nullptr;
            errno = 0;
            const unsigned long uid = std::strtoul(argv[i + 1], &end, 10);
            if (errno != 0 || end == argv[i + 1] || *end != '\0' || uid > 0xffffffffUL) return usage();
            const auto lookup = leftover::SystemAccounts::name_of(static_cast<uid_t>(uid));
            (void)std::fputs(leftover::controller::uid_answer_line(static_cast<uid_t>(uid), lookup).c_str(), stdout);
        } else {
            const auto lookup = leftover::SystemAccounts::uid_of(argv[i + 1]);
            (void)std::fputs(leftover::controller::name_answer_line(argv[i + 1], lookup).c_str(), stdout);
        }
    }
    (void)std::fputs(leftover::controller::kEndLine, stdout);
    return std::fflush(stdout) == 0 ? 0 : 2;
}

// The node's state in scontrol's words: IDLE+DRAIN, DOWN, MIXED+FAIL...
std::string state_text(std::uint32_t state) {
    static const char* const base_words[] = {"UNKNOWN", "DOWN", "IDLE", "ALLOCATED", "ERROR", "MIXED", "FUTURE"};
    const std::uint32_t base = state & NODE_STATE_BASE;
    std::string text = base < sizeof base_words / sizeof *base_words ? base_words[base] : "UNKNOWN";
    if (state & NODE_STATE_DRAIN) text += "+DRAIN";
    if (state & NODE_STATE_FAIL) text += "+FAIL";
    return text;
}

std::string one_line(const char* text) {
    std::string out = text == nullptr ? "" : text;
    for (char& c : out)
        if (c == '\n') c = ' ';
    return out;
}

int drain(int argc, char** argv) {
    std::string node, reason;
    for (int i = 2; i < argc; i += 2) {
        const std::string arg = argv[i];
        if (i + 1 >= argc || *argv[i + 1] == '\0') return usage();
        if (arg == "--node")
            node = argv[i + 1];
        else if (arg == "--reason")
            reason = argv[i + 1];
        else
            return usage();
    }
    if (node.empty() || reason.empty()) return usage();
    slurm_init(nullptr);
    node_info_msg_t* nodes = nullptr;
    if (slurm_load_node_single(&nodes, node.data(), SHOW_ALL) != SLURM_SUCCESS) {
        (void)std::fprintf(stderr, "slurm_load_node_single %s: %s\n", node.c_str(), slurm_strerror(errno));
        return 2;
    }
    if (nodes == nullptr || nodes->record_count != 1 || nodes->node_array[0].name == nullptr ||
        node != nodes->node_array[0].name) {
        (void)std::fprintf(stderr, "slurmctld knows no node %s\n", node.c_str());
        slurm_free_node_info_msg(nodes);
        return 2;
    }
    const node_info_t& info = nodes->node_array[0];
    const std::uint32_t state = info.node_state;
    const leftover::controller::SeenNodeState seen{(state & NODE_STATE_BASE) == NODE_STATE_DOWN,
                                                   (state & NODE_STATE_DRAIN) != 0, (state & NODE_STATE_FAIL) != 0};
    if (leftover::controller::keeps_its_reason(seen)) {
        std::printf("kept %s %s\nend\n", state_text(state).c_str(), one_line(info.reason).c_str());
        slurm_free_node_info_msg(nodes);
        return std::fflush(stdout) == 0 ? 0 : 2;
    }
    slurm_free_node_info_msg(nodes);
    update_node_msg_t update;
    slurm_init_update_node_msg(&update);
    update.node_names = node.data();
    update.node_state = NODE_STATE_DRAIN;
    update.reason = reason.data();
    // No reason_uid (gone from update_node_msg_t in newer releases): slurmctld records
    // the uid that sent the request (22.05 node_mgr.c, update_node) either way.
    if (slurm_update_node(&update) != SLURM_SUCCESS) {
        (void)std::fprintf(stderr, "slurm_update_node %s: %s\n", node.c_str(), slurm_strerror(errno));
        return 2;
    }
    std::puts("drained\nend");
    slurm_fini();
    return std::fflush(stdout) == 0 ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::string(argv[1]) == "accounts") return accounts(argc, argv);
    if (argc > 1 && std::string(argv[1]) == "drain") return drain(argc, argv);
    std::vector<std::string> nodes;
    std::optional<std::uint32_t> exclude;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--node" && i + 1 < argc && *argv[i + 1] != '\0')
            nodes.emplace_back(argv[++i]);
        else if (arg == "--exclude-job" && i + 1 < argc)
            exclude = static_cast<std::uint32_t>(std::strtoul(argv[++i], nullptr, 10));
        else
            return usage();
    }
    if (nodes.empty()) return usage();

    slurm_init(nullptr);
    job_info_msg_t* jobs = nullptr;
    // SHOW_LOCAL: no federation round trip first.
    // slurm_get_errno() (removed in 24.11) was errno all along.
    if (slurm_load_jobs(0, &jobs, SHOW_ALL | SHOW_LOCAL) != SLURM_SUCCESS) {
        (void)std::fprintf(stderr, "slurm_load_jobs: %s\n", slurm_strerror(errno));
        return 2;
    }
    for (std::uint32_t i = 0; i < jobs->record_count; ++i) {
        const slurm_job_info_t& job = jobs->job_array[i];
        const std::uint32_t state = job.job_state & JOB_STATE_BASE;
        // Completing jobs are ending: like ending steps, they are not live work.
        if (state != JOB_RUNNING && state != JOB_SUSPENDED) continue;
        if (exclude && job.job_id == *exclude) continue;
        if (!on_any_node(job.nodes, nodes)) continue;
        (void)std::fputs(leftover::controller::job_line(job.job_id, job.user_id).c_str(), stdout);
    }
    slurm_free_job_info_msg(jobs);
    (void)std::fputs(leftover::controller::kEndLine, stdout);
    slurm_fini();
    return std::fflush(stdout) == 0 ? 0 : 2;
}
