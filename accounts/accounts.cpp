// SPDX-License-Identifier: GPL-2.0-or-later
#include "accounts/accounts.hpp"

#include "util/errno_text.hpp"

#include <pwd.h>

#include <cerrno>
#include <vector>

namespace leftover {
namespace {

struct PasswdEntry {
    int rc = 0;
    bool found = false;
    std::string name;
    uid_t uid = 0;
};

// One getpwuid_r or getpwnam_r call, its buffer grown on ERANGE.
template <class Call>
PasswdEntry read_passwd(Call&& call) {
    std::vector<char> buffer(16384);
    for (;;) {
        struct passwd entry {};
        struct passwd* result = nullptr;
        const int rc = call(&entry, buffer.data(), buffer.size(), &result);
        if (rc == ERANGE && buffer.size() < (1u << 20)) {
            buffer.resize(buffer.size() * 2);
            continue;
        }
        if (rc != 0 || result == nullptr) return {rc, false, {}, 0};
        return {0, true, result->pw_name, result->pw_uid};
    }
}

// rc 0 with no entry is "no such account". Some NSS modules use ENOENT/ESRCH/EBADF/EPERM
// for it too, but an error from a directory service that is down must stay
// distinguishable, so only rc 0 counts as "no account".
LookupStatus status_of(const PasswdEntry& entry) {
    if (entry.found) return LookupStatus::found;
    return entry.rc == 0 ? LookupStatus::no_account : LookupStatus::failed;
}

}  // namespace

std::string failure_text(int error, const std::string& failure) {
    if (!failure.empty()) return failure;
    return error != 0 ? errno_text(error) : "unknown error";
}

AccountLookup SystemAccounts::name_of(uid_t uid) {
    const PasswdEntry entry = read_passwd([uid](struct passwd* pw, char* buf, std::size_t size, struct passwd** out) {
        return ::getpwuid_r(uid, pw, buf, size, out);
    });
    return {status_of(entry), entry.name, entry.rc, {}};
}

UidLookup SystemAccounts::uid_of(const std::string& name) {
    const PasswdEntry entry = read_passwd([&name](struct passwd* pw, char* buf, std::size_t size, struct passwd** out) {
        return ::getpwnam_r(name.c_str(), pw, buf, size, out);
    });
    return {status_of(entry), entry.uid, entry.rc, {}};
}

AccountAnswers SystemAccounts::look_up(const std::set<uid_t>& uids, const std::set<std::string>& names,
                                       std::chrono::steady_clock::time_point) const {
    AccountAnswers answers;
    for (const uid_t uid : uids) answers.names.emplace(uid, name_of(uid));
    for (const std::string& name : names) answers.uids.emplace(name, uid_of(name));
    return answers;
}

}  // namespace leftover
