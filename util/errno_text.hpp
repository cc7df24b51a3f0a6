// SPDX-License-Identifier: GPL-2.0-or-later
// The one way an errno value becomes words in a message.
#pragma once

#include <string>
#include <system_error>

namespace leftover {

// "No such file or directory" for ENOENT: strerror's text, without strerror's shared
// buffer (the plugin runs inside a multithreaded slurmstepd).
inline std::string errno_text(int err) { return std::generic_category().message(err); }

}  // namespace leftover
