// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/decision.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace leftover {
namespace {

const Exemption* exemption_of(const DecisionInput& in, uid_t uid) {
    const auto found = in.exemptions.find(uid);
    return found == in.exemptions.end() ? nullptr : &found->second;
}

// The live job a job cgroup directory belongs to, as the log names it: its id, or the
// SLUID that names the directory on 26.05.
std::optional<std::string> live_job_of_cgroup(const LiveWork& live, const std::string& directory) {
    if (directory.starts_with("job_")) {
        const std::string id = directory.substr(4);
        if (live.job_ids.count(std::stoull(id)) != 0) return id;
        return std::nullopt;
    }
    if (live.job_sluids.count(directory) != 0) return directory;
    return std::nullopt;
}

// The slurmstepd whose step p runs in, if that step is live: its nearest ancestor that
// is a slurmstepd, known by the pid a live step's socket reported (whatever its binary
// is called) or as root running a slurmstepd binary (the scan's stepd_ancestor: it also
// covers steps of a slurmd this evaluation does not ask). The ending step's own stepd
// protects nothing.
std::optional<pid_t> live_stepd_of(const DecisionInput& in, const Process& p) {
    for (const AncestorLink* link = p.parent_chain.get(); link != nullptr; link = link->next.get()) {
        const pid_t ancestor = link->pid;
        if (in.ending_stepds.count(ancestor) != 0) return std::nullopt;
        if (ancestor == p.stepd_ancestor || in.live.stepd_pids.count(ancestor) != 0) return ancestor;
    }
    return std::nullopt;
}

Decision keep(Decision d, Reason reason, std::string detail = {}) {
    d.verdict = Verdict::keep;
    d.reason = reason;
    d.detail = std::move(detail);
    return d;
}

Decision decide_one(const DecisionInput& in, const Process& p) {
    Decision d;
    d.pid = p.pid;
    d.uid = p.detailed ? p.uids.real : p.owner;
    d.comm = p.comm;
    d.start_time = p.start_time;
    d.ppid = p.ppid;
    d.pgid = p.pgid;
    if (const Exemption* e = exemption_of(in, d.uid)) d.user = e->account;

    if (p.pid == 1) return keep(d, Reason::init);
    if (p.pid == in.self) return keep(d, Reason::self);
    if (in.caller_ancestors.count(p.pid) != 0) return keep(d, Reason::caller_ancestor);
    if (in.never_touch.count(p.pid) != 0) return keep(d, Reason::never_touch);
    if (p.kernel_thread) return keep(d, Reason::kernel_thread);
    if (!p.detailed) {
        const Exemption* e = exemption_of(in, p.owner);
        if (e && e->is_protected()) return keep(d, Reason::protected_owner, e->describe());
        // Not read because its user had live work when the scan began (a sweep's
        // evaluation): kept whatever it is, also if that work ended since.
        if (in.live.uids.count(p.owner) != 0) return keep(d, Reason::has_live_job);
        return keep(d, Reason::has_live_job, "not examined: its user had live work when /proc was read");
    }
    if (p.zombie()) return keep(d, Reason::zombie);
    if (!p.uids.all_equal())
        return keep(d, Reason::mixed_uids,
                    fmt::format("uids {}/{}/{}/{}", p.uids.real, p.uids.effective, p.uids.saved, p.uids.filesystem));

    const Exemption* e = exemption_of(in, d.uid);
    // A uid the caller did not classify is treated as unknown: never kill on doubt.
    if (e == nullptr) return keep(d, Reason::protected_account, "protected: not classified");
    if (e->is_protected()) return keep(d, Reason::protected_account, e->describe());

    // Whether it descends from a live slurmstepd is unknown: keep it, judge the rest.
    if (p.ancestry_unreadable)
        return keep(d, Reason::unreadable_ancestry, "parent chain deeper than 512, looping or changing");
    if (const auto stepd = live_stepd_of(in, p))
        return keep(d, Reason::inside_live_step, fmt::format("slurmstepd {}", *stepd));
    if (p.job_cgroup)
        if (auto job = live_job_of_cgroup(in.live, *p.job_cgroup))
            return keep(d, Reason::live_job_cgroup, fmt::format("job {}", *job));
    if (in.live.uids.count(d.uid) != 0) return keep(d, Reason::has_live_job);
    if (in.event.scope == Scope::job_user && in.event.job_uid != d.uid) return keep(d, Reason::out_of_scope);

    d.verdict = Verdict::kill;
    d.reason = Reason::stray;
    d.detail = in.event.scope == Scope::job_user ? "job user without live work" : "no live work on this node";
    return d;
}

}  // namespace

Plan decide(const DecisionInput& input) {
    Plan plan;
    plan.decisions.reserve(input.table.processes.size());
    for (const Process& process : input.table.processes) plan.decisions.push_back(decide_one(input, process));
    return plan;
}

void decide_kills_again(const DecisionInput& input, Plan& plan) {
    for (Decision& d : plan.decisions)
        if (d.verdict == Verdict::kill)
            if (const Process* process = input.table.find(d.pid)) d = decide_one(input, *process);
}

std::vector<Decision> Plan::kills() const {
    std::vector<Decision> out;
    std::copy_if(decisions.begin(), decisions.end(), std::back_inserter(out),
                 [](const Decision& d) { return d.verdict == Verdict::kill; });
    return out;
}

std::set<uid_t> Plan::kill_uids() const {
    std::set<uid_t> out;
    for (const Decision& d : decisions)
        if (d.verdict == Verdict::kill) out.insert(d.uid);
    return out;
}

std::map<Reason, std::size_t> Plan::count_by_reason() const {
    std::map<Reason, std::size_t> out;
    for (const Decision& d : decisions) ++out[d.reason];
    return out;
}

const char* to_string(Verdict verdict) { return verdict == Verdict::kill ? "kill" : "keep"; }

}  // namespace leftover
