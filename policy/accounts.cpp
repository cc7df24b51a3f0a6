// SPDX-License-Identifier: GPL-2.0-or-later
#include "accounts.hpp"

#include <cerrno>
#include <pwd.h>
#include <vector>

namespace leftover {

AccountLookup SystemAccounts::name_of(uid_t uid) const {
    std::vector<char> buffer(16384);
    for (;;) {
        struct passwd entry {};
        struct passwd* result = nullptr;
        const int rc = ::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &result);
        if (rc == ERANGE && buffer.size() < (1u << 20)) {
            buffer.resize(buffer.size() * 2);
            continue;
        }
        if (rc == 0 && result != nullptr) return {AccountLookup::Status::found, result->pw_name, 0};
        // getpwuid_r reports "no such entry" as rc 0 with no result; some NSS modules
        // use ENOENT/ESRCH/EBADF/EPERM for it too, but an error from a directory service
        // that is down must stay distinguishable, so only rc 0 counts as "no account".
        if (rc == 0) return {AccountLookup::Status::no_account, {}, 0};
        return {AccountLookup::Status::failed, {}, rc};
    }
}

}  // namespace leftover
