// SPDX-License-Identifier: GPL-2.0-or-later
#include "kill/executor.hpp"

#include "kill/pid_ref.hpp"
#include "kill/signaller.hpp"

#include <algorithm>
#include <csignal>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>

namespace leftover {
namespace {

using Clock = std::chrono::steady_clock;

bool past(Clock::time_point deadline) { return Clock::now() >= deadline; }

const Decision* decision_for(const Plan& plan, pid_t pid) {
    const auto it = std::lower_bound(plan.decisions.begin(), plan.decisions.end(), pid,
                                     [](const Decision& d, pid_t value) { return d.pid < value; });
    return it != plan.decisions.end() && it->pid == pid ? &*it : nullptr;
}

bool same_process(const Decision& a, const Decision& b) { return a.pid == b.pid && a.start_time == b.start_time; }

// One run of the executor (execute_kills): the rounds, the plans they act on, and the
// processes it holds stopped.
class KillRun {
public:
    KillRun(const Evaluate& evaluate, const KillOptions& options, SystemCalls& calls)
        : evaluate_(evaluate), options_(options), calls_(calls), signaller_(options, calls, report_) {}
    KillRun(const KillRun&) = delete;
    KillRun& operator=(const KillRun&) = delete;
    ~KillRun();

    KillReport run();

private:
    bool first_plan();
    bool has_kills() const;
    void record_dry_run();
    bool term_and_grace();
    void kill_rounds();
    bool kill_round();
    void forget_plan();
    bool replan();
    bool deadline_passed();
    bool stop_targets();
    bool no_job_starting(bool stop = true);
    bool before_signals();
    bool hold_stopped(const std::vector<Decision>& stoppable);
    void stop_unseen(std::set<std::pair<pid_t, std::uint64_t>>& tried);
    bool plan_still_holds(const std::set<uid_t>& swept);
    bool parent_lets_stop(pid_t ppid, const std::set<uid_t>& swept);
    bool ours_to_stop(const Identity& unseen, const std::set<pid_t>& groups);
    void read_groups(const std::vector<Decision>& stoppable, const std::set<uid_t>& swept);
    bool ours_in_group(const GroupMember& member, const std::set<uid_t>& swept) const;
    const char* group_refuses(pid_t pgid) const;
    void continue_released();
    void continue_all(const char* why);
    bool signal_phase(int signal, Watched& watched);
    void signal_round(int signal, std::set<std::pair<pid_t, std::uint64_t>>& sent, std::optional<std::string>& arrived,
                      Watched& watched);
    void finish();

    const Evaluate& evaluate_;
    const KillOptions& options_;
    SystemCalls& calls_;
    KillReport report_;
    Signaller signaller_;
    // The plan acted on: the first one lives in the report (moved there, not copied);
    // each fresh evaluation replaces `fresh_`, and the previous plan is freed before it.
    std::optional<Plan> fresh_;
    const Plan* plan_ = nullptr;
    // Processes this sweep stopped and has not killed or continued yet, as decided then,
    // each with the pin its SIGSTOP went through (and its SIGCONT will); within a stop
    // round also the place made for one about to be stopped, its pin still invalid.
    std::map<pid_t, Stopped> stopped_;
    // The process groups read in this stop phase (read_groups): empty when a group holds
    // only what is this sweep's, else why none of it is stopped.
    std::map<pid_t, std::string> groups_;
};

// Every path out of run() continues what it stopped; an exception thrown through it (a
// log sink that throws, no memory) must not leave a user's process stopped either. A
// stopped process's pin sits in stopped_ from the moment its SIGSTOP went until it runs
// again or is killed, so this needs no record and no observer (they may be what threw),
// no read of /proc and no memory: a SIGCONT through each pin.
KillRun::~KillRun() {
    for (auto& [pid, held] : stopped_) {
        if (!held.pin.valid()) continue;  // a slot whose SIGSTOP did not go
        try {
            held.pin.continue_stopped();
        } catch (...) {  // NOLINT(bugprone-empty-catch): the next process still gets its SIGCONT
        }
    }
}

// Before a new evaluation: the last fresh plan is freed first, and the exits seen are
// the old plan's.
void KillRun::forget_plan() {
    fresh_.reset();
    signaller_.forget_exits();
}

bool KillRun::replan() {
    forget_plan();
    ++report_.evaluations;
    auto plan = evaluate_();
    if (!plan.ok()) {
        report_.error = plan.error();
        return false;
    }
    fresh_ = std::move(plan).value();
    plan_ = &*fresh_;
    return true;
}

// No round starts once the deadline has passed.
bool KillRun::deadline_passed() {
    if (!past(options_.deadline)) return false;
    report_.deadline_reached = true;
    return true;
}

// The last look before a round: no job may be on its way onto the node (its slurmstepd
// not answering yet, so the look could not show its user). While one is, wait; once it
// is gone or answers, a fresh plan (its user may be live now) and, with `stop`, a new
// stop (before_signals looks with nothing stopped yet, and stops nothing). The wait is
// bounded (starting_wait) and ends where the fresh plan's time (replan_time) before the
// deadline begins: a starting job costs a round, never a cut query. true: the round may
// signal. false: an evaluation failed, or the round is skipped with a job starting (or
// the deadline passed); nothing is signalled, and finish() continues what is stopped.
bool KillRun::no_job_starting(bool stop) {
    if (!options_.job_starting) return true;
    const auto replan_by = options_.deadline - options_.replan_time;
    const auto wait_until = std::min(Clock::now() + options_.starting_wait, replan_by);
    std::optional<std::string> last_sign;
    const auto skip = [&](std::string sign) {
        report_.job_starting = std::move(sign);
        report_.deadline_reached = past(options_.deadline);
        return false;
    };
    for (bool waited = false;;) {
        auto starting = options_.job_starting();
        if (!starting.ok()) {
            report_.error = starting.error();
            return false;
        }
        if (!starting.value()) {
            if (!waited) return true;
            if (past(replan_by)) return skip(std::move(*last_sign));
            if (!replan() || (stop && !stop_targets()) || deadline_passed()) return false;
            waited = false;
            continue;
        }
        if (past(wait_until)) return skip(std::move(*starting.value()));
        last_sign = std::move(*starting.value());
        waited = true;
        const auto left = wait_until - Clock::now();
        std::this_thread::sleep_for(std::min<Clock::duration>(std::chrono::milliseconds(5), left));
        // A fresh look at the job state: job_starting judges by the last one, which
        // cannot show a step whose socket appeared since.
        if (!options_.job_state_unchanged) {
            if (!replan()) return false;
            continue;
        }
        if (const auto unchanged = options_.job_state_unchanged(); !unchanged.ok()) {
            report_.error = unchanged.error();
            return false;
        }
    }
}

// Before anything is stopped: a job on its way onto the node is waited out (as before
// each round, no_job_starting) before the node's turn is taken, not while it is held.
// In a burst of job starts every sweep of the node with a stray to kill meets the start;
// holding the turn through that wait made them wait it out one after the other, and the
// last ones' turns did not come by their deadlines. Waiting without the turn, they wait
// side by side, and take turns only to signal. false: nothing is signalled (a job still
// starting, an evaluation failed, the turn missed, nothing left to kill).
bool KillRun::before_signals() {
    if (!no_job_starting(false) || deadline_passed() || !has_kills()) return false;
    if (!options_.take_turn) return true;
    auto turn = options_.take_turn();
    if (!turn.ok()) {
        report_.error = turn.error();
        return false;
    }
    if (!turn.value()) return true;
    // The plan made after the wait is the one that starts the kills (the report's).
    forget_plan();
    return first_plan() && has_kills();
}

// Stops every target of the plan, scans again and stops the targets that are new (a
// child forked before its parent stopped, a process that changed its pid), until a fresh
// plan has no target this phase has not tried to stop, or stop_rounds. A stopped
// process cannot fork or run away, so the round that follows meets every target still.
// false: an evaluation failed or the deadline passed.
bool KillRun::stop_targets() {
    if (options_.stop_rounds <= 0) return true;
    std::set<std::pair<pid_t, std::uint64_t>> tried;  // stopped, or failed to stop: not retried
    groups_.clear();
    for (int round = 0;; ++round) {
        continue_released();
        std::vector<Decision> untried;
        for (Decision& d : plan_->kills())
            if (tried.count({d.pid, d.start_time}) == 0) untried.push_back(std::move(d));
        if (untried.empty()) return true;
        if (round >= options_.stop_rounds) {
            report_.left_running = std::max(report_.left_running, untried.size());
            return true;  // bounded: the round goes ahead with what is stopped
        }
        if (deadline_passed()) return false;
        const std::set<uid_t> swept = plan_->kill_uids();
        std::vector<Decision> stoppable;
        for (Decision& d : untried) {
            tried.insert({d.pid, d.start_time});
            // Held already (stopped in an earlier phase, its signal not gone): stopped, and ours.
            if (const auto it = stopped_.find(d.pid); it != stopped_.end() && same_process(it->second.decision, d))
                continue;
            if (parent_lets_stop(d.ppid, swept)) stoppable.push_back(std::move(d));
        }
        if (stoppable.empty()) return true;  // the round signals them running, as without stopping
        read_groups(stoppable, swept);
        ++report_.stop_rounds;
        const bool escaped = hold_stopped(stoppable);
        if (escaped && !report_.deadline_reached) stop_unseen(tried);
        if (report_.deadline_reached) return false;
        if (!escaped && plan_still_holds(swept)) return true;
        if (!replan()) return false;
    }
}

// Stops each process of `stoppable` and holds it in stopped_ with the pin its SIGSTOP went
// through: its SIGCONT goes through that pin, whatever it has become by then. One that is
// stopped already (its user's stop, a tracer's) is not stopped, so never continued; nor is
// one whose process group, as read through its pin, holds what is not this sweep's. Each one's
// place in stopped_ is made before any SIGSTOP goes, and its pin put there as its stop
// goes: an exception in the round (no memory) finds every stopped process there. true:
// one of them escaped the stop (gone before it, or exited at once after it), and may
// have forked first.
bool KillRun::hold_stopped(const std::vector<Decision>& stoppable) {
    std::vector<PidRef*> pins;
    pins.reserve(stoppable.size());
    for (const Decision& d : stoppable)
        pins.push_back(&stopped_.insert_or_assign(d.pid, Stopped{d, PidRef()}).first->second.pin);
    // One line per SIGSTOP would double every kill's lines: they are intermediate (debug
    // level); the SIGTERM or SIGKILL that follows is the line an admin reads.
    Signaller::Hooks hooks;
    hooks.may_stop = [this](const Identity& now) { return group_refuses(now.pgid); };
    const std::vector<Signaller::Sent> sent = signaller_.signal_all(stoppable, SIGSTOP, pins, true, hooks);
    bool escaped = false;
    for (std::size_t i = 0; i < stoppable.size(); ++i) {
        if (sent[i].outcome == Outcome::signalled && !pins[i]->has_exited()) continue;
        // Not stopped as someone else's stop holds it: it does not run, and is not ours.
        if (sent[i].outcome != Outcome::not_stopped) escaped = true;
        stopped_.erase(stoppable[i].pid);
    }
    return escaped;
}

// The re-scan for children, cheaply: no process of the swept users that the plan lacks
// (an owner-only pass over /proc), and the job state unchanged. Anything else, or an
// error, makes a new evaluation, which also tells what is wrong.
bool KillRun::plan_still_holds(const std::set<uid_t>& swept) {
    if (!options_.job_state_unchanged) return false;
    for (const auto& [pid, owner] : calls_.processes_owned_by(options_.proc_root, swept))
        if (decision_for(*plan_, pid) == nullptr && stopped_.count(pid) == 0) return false;
    const auto unchanged = options_.job_state_unchanged();
    return unchanged.ok() && unchanged.value();
}

// A stop is seen by the parent too: one that waits with WUNTRACED (su, runuser, sudo)
// stops itself when its child stops, and nothing continues it once the child is gone. So
// a process is stopped only when its parent is init, the caller (which waits for no
// stopped child), a target or stopped process of this sweep, a process of a swept user
// (a new one, stopped next), or gone. Any other is signalled running, as without stopping.
bool KillRun::parent_lets_stop(pid_t ppid, const std::set<uid_t>& swept) {
    if (ppid == 1 || ppid == options_.self || stopped_.count(ppid) != 0) return true;
    if (const Decision* parent = decision_for(*plan_, ppid)) return parent->verdict == Verdict::kill;
    const auto owner = calls_.owner_of(options_.proc_root, ppid);
    return !owner || swept.count(*owner) != 0;
}

// A process no evaluation has judged is stopped only as the child of a process this
// sweep stopped or targets, still that process (same start time): what a target forked
// before it stopped. Or, orphaned (its parent init or the caller, where an orphan goes),
// as a member of the process group of such a process (as scanned): a pid hopper's new
// pid, whose parent exited as it forked. Any other new process of a swept user may be
// the first of a job of that user that is just starting (a batch script's children, the
// shepherd srun forks), and a process group holds processes of one session only, never
// one a slurmstepd of a new job made: the evaluation that follows judges it, with the
// job state of then.
bool KillRun::ours_to_stop(const Identity& unseen, const std::set<pid_t>& groups) {
    const auto held_parent = stopped_.find(unseen.ppid);
    const Decision* target = decision_for(*plan_, unseen.ppid);
    std::optional<std::uint64_t> parent_start;
    if (held_parent != stopped_.end())
        parent_start = held_parent->second.decision.start_time;
    else if (target && target->verdict == Verdict::kill)
        parent_start = target->start_time;
    // Never into a group that holds what is not this sweep's, or one not read (read_groups).
    if (group_refuses(unseen.pgid) != nullptr) return false;
    if (parent_start) {
        const auto parent = calls_.read_identity(options_.proc_root, unseen.ppid);
        return parent && parent->start_time == *parent_start;
    }
    const bool orphan = unseen.ppid == 1 || unseen.ppid == options_.self;
    return orphan && unseen.pgid > 0 && groups.count(unseen.pgid) != 0;
}

// A process group is stopped in only when all it holds is this sweep's: when a process
// exits and so leaves a group with no member whose parent is outside it in the same
// session, and a member of that group is stopped, the kernel sends every member SIGHUP
// and SIGCONT (kernel/exit.c, kill_orphaned_pgrp; POSIX). A kill of the sweep's can be
// such an exit (the group's parent, a target), and a process the sweep keeps in such a
// group (a setuid program a target started, root's, another user's) must get no signal
// of it. Reads the members of the groups of `stoppable` not read yet in this phase, in
// one pass over /proc; what cannot be read is not stopped in. A group that is orphaned
// already (no member's parent in the same session and another group: a daemon's, a pid
// hopper's, a setsid'd stray's) cannot be orphaned by an exit, and is stopped in whatever
// it holds. Not closed: a process the sweep keeps that joins a group after this read (a
// member's setuid exec, a setpgid), or a link made after it.
void KillRun::read_groups(const std::vector<Decision>& stoppable, const std::set<uid_t>& swept) {
    std::set<pid_t> unread;
    for (const Decision& d : stoppable)
        if (d.pgid > 0 && groups_.count(d.pgid) == 0) unread.insert(d.pgid);
    if (unread.empty()) return;
    const auto members = calls_.processes_in_groups(options_.proc_root, unread);
    for (const pid_t pgid : unread) groups_[pgid] = members ? "" : "what its process group holds could not be read";
    if (!members) return;
    std::set<pid_t> linked;
    for (const GroupMember& member : *members)
        if (member.linked) linked.insert(member.pgid);
    for (const GroupMember& member : *members) {
        if (linked.count(member.pgid) == 0) continue;  // orphaned already
        std::string& why = groups_[member.pgid];
        if (!why.empty() || ours_in_group(member, swept)) continue;
        why = "its process group holds pid " + std::to_string(member.pid) +
              ", which the sweep keeps: were the group orphaned with a member stopped, the kernel would send it "
              "SIGHUP and SIGCONT";
    }
}

// A member of a group the sweep may stop in: a target of the plan, a process the sweep
// stopped, a zombie, or a process new since the scan of a user being swept (judged next,
// stopped only as ours_to_stop allows). Anything else the plan keeps, or a new process of
// anyone else, is not the sweep's.
bool KillRun::ours_in_group(const GroupMember& member, const std::set<uid_t>& swept) const {
    if (const auto it = stopped_.find(member.pid);
        it != stopped_.end() && it->second.decision.start_time == member.start_time)
        return true;
    if (const Decision* d = decision_for(*plan_, member.pid); d != nullptr && d->start_time == member.start_time)
        return d->verdict == Verdict::kill || d->reason == Reason::zombie;
    return swept.count(member.owner) != 0;
}

// Why nothing is stopped in process group `pgid` (read_groups); nullptr when it may be.
const char* KillRun::group_refuses(pid_t pgid) const {
    const auto it = groups_.find(pgid);
    if (it == groups_.end()) return "its process group is not one read before the stop: what it holds is unknown";
    return it->second.empty() ? nullptr : it->second.c_str();
}

// A target that exited before it stopped may have forked first (a pid hopper does so
// every few ms, faster than a whole evaluation): list its users' processes at once and
// stop those no plan has seen that are this sweep's to stop (ours_to_stop), before they
// move on too. The evaluation that follows decides on them (and continues any it keeps);
// a process a plan keeps is never stopped.
void KillRun::stop_unseen(std::set<std::pair<pid_t, std::uint64_t>>& tried) {
    constexpr int max_passes = 8;
    std::map<uid_t, std::string> users;
    for (const Decision& d : plan_->decisions)
        if (d.verdict == Verdict::kill) users.emplace(d.uid, d.user);
    std::set<uid_t> uids;
    for (const auto& [uid, name] : users) uids.insert(uid);
    // The process groups of this sweep's targets and stopped processes.
    std::set<pid_t> groups;
    for (const Decision& d : plan_->decisions)
        if (d.verdict == Verdict::kill) groups.insert(d.pgid);
    for (const auto& [pid, held] : stopped_) groups.insert(held.decision.pgid);
    for (int pass = 0; pass < max_passes && !past(options_.deadline); ++pass) {
        bool found = false, escaped = false;
        for (const auto& [pid, owner] : calls_.processes_owned_by(options_.proc_root, uids)) {
            if (decision_for(*plan_, pid) != nullptr || stopped_.count(pid) != 0) continue;
            found = true;
            const auto may_stop = [&](const Identity& unseen) { return ours_to_stop(unseen, groups); };
            // Its place first: the pin its SIGSTOP goes through sits where ~KillRun finds it.
            const auto slot = stopped_.try_emplace(pid).first;
            if (signaller_.stop_unseen(pid, owner, users[owner], may_stop, escaped, slot->second)) {
                tried.insert({pid, slot->second.decision.start_time});
                groups.insert(slot->second.decision.pgid);
            } else {
                stopped_.erase(slot);
            }
        }
        if (!found || !escaped) return;
    }
}

// A stopped process that the fresh plan no longer kills (its user got live work, or it
// exec'd a setuid program and has mixed uids now, say) runs again at once. One that is
// gone or a zombie needs nothing.
void KillRun::continue_released() {
    for (auto it = stopped_.begin(); it != stopped_.end();) {
        const Decision* now = decision_for(*plan_, it->first);
        const Decision& was = it->second.decision;
        if (now && same_process(*now, was) && now->verdict == Verdict::kill) {
            ++it;
            continue;
        }
        // Kept, or not in the fresh table as the process that was stopped: continued all the
        // same, through the pin that stopped it (a process that is gone says so). The record
        // says why, when the plan does: it may keep the pid unexamined (no start time), its
        // user having live work now.
        Decision released = was;
        if (now && (same_process(*now, was) || now->start_time == 0)) {
            released.verdict = now->verdict;
            released.reason = now->reason;
            released.detail = now->detail;
        }
        // Past the deadline too.
        if (released.reason != Reason::zombie) signaller_.continue_stopped(it->second.pin, released, false);
        it = stopped_.erase(it);
    }
}

// The sweep ends with processes still stopped (an error, the deadline, a failed kill):
// none of them may stay stopped. Through the pins that stopped them, past the deadline too.
void KillRun::continue_all(const char* why) {
    for (auto it = stopped_.begin(); it != stopped_.end(); it = stopped_.erase(it)) {
        it->second.decision.detail = why;
        signaller_.continue_stopped(it->second.pin, it->second.decision, false);
    }
}

// One signal to the plan's targets, each only right after a look found no job on its way
// onto the node: the look before the round (no_job_starting), then job_starting again
// right before each signal, as the look before the round cannot see a job whose setup
// begins as the signals go out. One found there stops the signals; the rest wait for it
// as before a round, and go on the fresh plan that follows (its user's kept). Each
// process gets the signal once. Those signalled go to `watched`. false: the
// run ends here (an evaluation failed, the deadline passed, the round skipped for a job
// still starting, or no kill left before a SIGKILL).
bool KillRun::signal_phase(int signal, Watched& watched) {
    std::set<std::pair<pid_t, std::uint64_t>> sent;
    for (;;) {
        if (!stop_targets() || !no_job_starting() || deadline_passed()) return false;
        if (signal == SIGKILL && !has_kills()) return false;
        std::optional<std::string> arrived;
        signal_round(signal, sent, arrived, watched);
        if (report_.error) return false;
        if (!arrived) return true;
        report_.paused.push_back(std::move(*arrived));
    }
}

// One list of targets per round, freed as soon as every one is signalled; none of `sent`,
// and none once `arrived` is set (see signal_phase).
void KillRun::signal_round(int signal, std::set<std::pair<pid_t, std::uint64_t>>& sent,
                           std::optional<std::string>& arrived, Watched& watched) {
    // Signalled before a pause and stopped again while the rest waited: it runs on (a
    // SIGTERM handler runs only in a process that runs).
    for (auto it = stopped_.begin(); it != stopped_.end();) {
        if (sent.count({it->first, it->second.decision.start_time}) == 0) {
            ++it;
            continue;
        }
        signaller_.continue_stopped(it->second.pin, it->second.decision, true);
        it = stopped_.erase(it);
    }
    std::vector<Decision> targets;
    for (Decision& d : plan_->kills())
        if (sent.count({d.pid, d.start_time}) == 0) targets.push_back(std::move(d));
    // A stopped target is checked and signalled through the pin that stopped it: one
    // descriptor per target, not two. That pin stays in stopped_ until the target runs
    // again or is killed, so an exception in the round (no memory) leaves it where
    // ~KillRun continues it. The stopped go first: each one's pin becomes a watch as its
    // signal goes, and a short descriptor limit then still has room for the others' pins.
    const auto held_pin = [this](const Decision& d) -> PidRef* {
        const auto it = stopped_.find(d.pid);
        return it != stopped_.end() && it->second.pin.valid() && same_process(it->second.decision, d) ? &it->second.pin
                                                                                                      : nullptr;
    };
    std::stable_partition(targets.begin(), targets.end(), [&](const Decision& d) { return held_pin(d) != nullptr; });
    std::vector<PidRef> made(targets.size());
    std::vector<PidRef*> pins(targets.size());
    for (std::size_t i = 0; i < targets.size(); ++i) {
        PidRef* held = held_pin(targets[i]);
        pins[i] = held != nullptr ? held : &made[i];
    }
    const auto nothing_arrived = [&] {
        if (!options_.job_starting) return true;
        auto starting = options_.job_starting();
        if (!starting.ok()) {
            report_.error = starting.error();
            return false;
        }
        arrived = std::move(starting).value();
        return !arrived;
    };
    Signaller::Hooks hooks;
    hooks.go_on = nothing_arrived;
    hooks.on_sent = [&](std::size_t i, bool was_stopped) {
        sent.insert({targets[i].pid, targets[i].start_time});
        const bool held = pins[i] != &made[i];
        // A stopped process runs its SIGTERM handler only once continued, whoever stopped
        // it (the sweep, or its user: that SIGCONT is part of the kill, as a shell's kill
        // of a stopped job sends it); one that got SIGKILL dies stopped or not.
        if (signal == SIGTERM && (held || was_stopped)) signaller_.continue_stopped(*pins[i], targets[i], true);
        signaller_.watch(watched, std::move(*pins[i]), targets[i].start_time);
        if (held) stopped_.erase(targets[i].pid);
    };
    signaller_.signal_all(targets, signal, pins, false, hooks);
}

// The survivors: the last plan's targets, less those seen to exit since it was made.
void KillRun::finish() {
    const std::string starting =
        report_.job_starting ? "not signalled: a job is starting on this node (" + *report_.job_starting + ")" : "";
    continue_all(report_.error          ? "not killed: the sweep stopped at an error"
                 : report_.job_starting ? starting.c_str()
                                        : "not killed: the sweep ended before its kill");
    if (report_.error) return;
    for (Decision& d : plan_->kills())
        if (signaller_.exited().count(d.pid) == 0) report_.survivors.push_back(std::move(d));
}

// The plan that starts the kills; the report keeps it. false: the evaluation failed.
bool KillRun::first_plan() {
    ++report_.evaluations;
    auto first = evaluate_();
    if (!first.ok()) {
        report_.error = first.error();
        return false;
    }
    report_.first_plan = std::move(first).value();
    plan_ = &report_.first_plan;
    return true;
}

bool KillRun::has_kills() const {
    return std::any_of(plan_->decisions.begin(), plan_->decisions.end(),
                       [](const Decision& d) { return d.verdict == Verdict::kill; });
}

// Nothing is signalled: each target is recorded with the signal it would get first.
void KillRun::record_dry_run() {
    const int first_signal = options_.grace.count() > 0 ? SIGTERM : SIGKILL;
    for (const Decision& d : plan_->kills()) signaller_.note(record_for(d, first_signal, Outcome::dry_run));
    report_.survivors = plan_->kills();
}

// Stop, SIGTERM (and SIGCONT to the stopped), grace, then a fresh plan for SIGKILL.
// false: the run ends here (an evaluation failed, the deadline passed).
bool KillRun::term_and_grace() {
    Watched watched;
    if (!signal_phase(SIGTERM, watched)) return false;
    if (watched.size() != 0 && options_.observer.on_grace_wait)
        options_.observer.on_grace_wait(watched.size(), options_.grace);
    // The grace ends where the fresh plan's time before the deadline begins (as a wait
    // for a starting job does): a late SIGTERM shortens the grace, never the look that
    // decides SIGKILL, which a slurmctld question cut at the deadline would make an error.
    signaller_.wait_and_release(watched,
                                std::min(Clock::now() + options_.grace, options_.deadline - options_.replan_time));
    // Job state and processes are read again right before SIGKILL: a job that
    // started during grace protects its user's processes.
    return !report_.deadline_reached && !deadline_passed() && replan();
}

// SIGKILL rounds, each on the plan the one before left, until the plan kills nothing,
// max_rounds, an error or the deadline.
void KillRun::kill_rounds() {
    while (has_kills()) {
        if (report_.rounds >= options_.max_rounds || deadline_passed()) return;
        ++report_.rounds;
        if (!kill_round()) return;
    }
}

// Stop, SIGKILL, wait for the exits, a fresh plan. false: the run ends here (nothing
// left to kill after the stop, an evaluation failed, the deadline passed).
bool KillRun::kill_round() {
    Watched watched;
    if (!signal_phase(SIGKILL, watched)) return false;
    signaller_.wait_and_release(watched, Clock::now() + options_.settle);
    // A stray that forks keeps making new ones: decide again on a fresh scan.
    return !report_.deadline_reached && !deadline_passed() && replan();
}

KillReport KillRun::run() {
    if (!first_plan()) return std::move(report_);  // a lookup or config error: nothing is killed
    if (options_.dry_run) {
        record_dry_run();
        return std::move(report_);
    }
    if (!has_kills()) return std::move(report_);
    // An evaluation that ran past the deadline starts no round, not even SIGTERM.
    if (!deadline_passed() && before_signals() && (options_.grace.count() <= 0 || term_and_grace())) kill_rounds();
    finish();  // continues what is still stopped, names the survivors
    return std::move(report_);
}

}  // namespace

KillReport execute_kills(const Evaluate& evaluate, const KillOptions& options, SystemCalls& calls) {
    return KillRun(evaluate, options, calls).run();
}

}  // namespace leftover
