// SPDX-License-Identifier: GPL-2.0-or-later
// A process held by a pidfd: the one way kill/ signals a process. A pid alone may name
// another process by the time a signal goes (the pid is reused once its process is
// reaped); a pidfd names one process for as long as it is open. A signal goes through
// the pin only after /proc/<pid> was read again, right then, and shows the process that
// was decided on (signal_if). The one exception, SIGCONT through the pin that stopped a
// process, is a function of its own (continue_stopped).
#pragma once

#include "errors/result.hpp"
#include "kill/system_calls.hpp"
#include "policy/decision.hpp"
#include "procfs/proc_table.hpp"
#include "util/unique_fd.hpp"

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>

namespace leftover {

// What signal_if found through the pin, and what the signal did.
struct PinSignal {
    enum class Check {
        same,   // /proc/<pid> shows the expected process: the signal was tried
        gone,   // /proc/<pid> cannot be read: no process holds the pid
        other,  // /proc/<pid> shows another process (or one that changed): not signalled
    };
    Check check = Check::gone;
    std::optional<Identity> identity;  // as read through the pin; nullopt when gone
    int error = 0;                     // same: 0 when the signal went, else its errno
    bool sent() const { return check == Check::same && error == 0; }
};

// The process a decision was made on: the same start time, and the decision's uid as all
// four of its uids (a setuid exec since makes it another process for this purpose).
bool is_decided(const Identity& now, const Decision& decided);

class PidRef {
public:
    // Whether what /proc/<pid> shows now is the process the caller means.
    using Expect = std::function<bool(const Identity&)>;

    PidRef() = default;  // holds nothing

    // Pins whatever process holds `pid` now; the errno of pidfd_open when none can be.
    static Result<PidRef, int> pin(SystemCalls& calls, pid_t pid);

    bool valid() const { return fd_.valid(); }
    pid_t pid() const { return pid_; }
    int fd() const { return fd_.get(); }  // to poll many pins at once; never to signal

    // The rule: never signal a pid that was not just checked through its pin. Reads
    // /proc/<pid> again; only if `expect` accepts what it shows, and the pinned process
    // still held the pid after that read (it is not reaped: a zombie still holds its pid,
    // so the read was the pinned process's), is `signal` sent, through the pin.
    PinSignal signal_if(const std::string& proc_root, int signal, const Expect& expect);

    // The deliberate exception: SIGCONT through the pin that stopped the process, with no
    // identity check. The pin names the very process that was stopped, and running again
    // is right for it whatever it has become since (a setuid exec as it stopped, say),
    // while a check would leave it stopped for good. Returns 0 or the errno.
    int continue_stopped();

    // Whether the pinned process has exited (its pidfd polls readable), without waiting.
    bool has_exited() const;

private:
    PidRef(SystemCalls& calls, pid_t pid, UniqueFd fd) : calls_(&calls), pid_(pid), fd_(std::move(fd)) {}

    SystemCalls* calls_ = nullptr;
    pid_t pid_ = 0;
    UniqueFd fd_;
};

}  // namespace leftover
