// SPDX-License-Identifier: GPL-2.0-or-later
#include "kill/pid_ref.hpp"

#include <poll.h>

#include <csignal>

namespace leftover {

bool is_decided(const Identity& now, const Decision& decided) {
    return now.start_time == decided.start_time && now.uids.all_equal() && now.uids.real == decided.uid;
}

Result<PidRef, int> PidRef::pin(SystemCalls& calls, pid_t pid) {
    const int opened = calls.pidfd_open(pid);
    if (opened < 0) return -opened;
    return PidRef(calls, pid, UniqueFd(opened));
}

PinSignal PidRef::signal_if(const std::string& proc_root, int signal, const Expect& expect) {
    PinSignal result;
    result.identity = calls_->read_identity(proc_root, pid_);
    if (!result.identity) return result;
    result.check = expect(*result.identity) ? PinSignal::Check::same : PinSignal::Check::other;
    if (result.check != PinSignal::Check::same) return result;
    // Reaped since the read: the pid may have named another process then, and the signal
    // could not reach the pinned one anyway (it would fail with ESRCH).
    if (const int rc = calls_->pidfd_exists(fd_.get()); rc < 0) {
        result.error = -rc;
        return result;
    }
    result.error = -calls_->pidfd_send_signal(fd_.get(), signal);
    return result;
}

int PidRef::continue_stopped() { return -calls_->pidfd_send_signal(fd_.get(), SIGCONT); }

bool PidRef::has_exited() const {
    pollfd fd{fd_.get(), POLLIN, 0};
    return calls_->poll(&fd, 1, 0) > 0 && fd.revents != 0;
}

}  // namespace leftover
