// SPDX-License-Identifier: GPL-2.0-or-later
#include "drain/reason.hpp"

#include "util/escape.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace leftover::drain {
namespace {

// Appends `text` escaped, byte by byte, while it fits within `limit` bytes in all.
bool append_within(std::string& out, std::string_view text, std::size_t limit) {
    for (const char c : text) {
        const std::string piece = escape_for_log(std::string_view(&c, 1));
        if (out.size() + piece.size() > limit) return false;
        out += piece;
    }
    return true;
}

// A user name in a reason: letters, digits and . _ - @ $ (account, machine and domain
// names) stay, every other byte becomes \xNN, so that no name reads as a second user
// (", "), a key=value pair or the " [user@time]" that `scontrol show node` appends.
bool plain_in_name(unsigned char byte) {
    return (byte >= 'a' && byte <= 'z') || (byte >= 'A' && byte <= 'Z') || (byte >= '0' && byte <= '9') ||
           std::string_view("._-@$").find(static_cast<char>(byte)) != std::string_view::npos;
}

// Appends the name escaped, byte by byte, while it fits within `limit` bytes in all.
bool append_name_within(std::string& out, std::string_view name, std::size_t limit) {
    for (const char c : name) {
        const auto byte = static_cast<unsigned char>(c);
        const std::string piece = plain_in_name(byte) ? std::string(1, c) : fmt::format("\\x{:02x}", byte);
        if (out.size() + piece.size() > limit) return false;
        out += piece;
    }
    return true;
}

}  // namespace

std::string bounded_reason(std::string_view text) {
    std::string one_line(text);
    std::replace(one_line.begin(), one_line.end(), '\n', ' ');
    std::string out;
    if (append_within(out, one_line, kMaxDrainReason)) return out;
    out.clear();
    append_within(out, one_line, kMaxDrainReason - 3);
    return out + "...";
}

std::string survivors_reason(const std::vector<Survivor>& survivors) {
    // (text, whether it is a name): a name is escaped as one, an unnamed uid is "uid N".
    using User = std::pair<std::string, bool>;
    std::map<User, std::size_t> per_user;
    std::set<char> states;
    for (const Survivor& s : survivors) {
        ++per_user[s.user.empty() ? User{fmt::format("uid {}", s.uid), false} : User{s.user, true}];
        states.insert(s.state);
    }
    const auto append_user = [](std::string& out, const User& user, std::size_t limit) {
        return user.second ? append_name_within(out, user.first, limit) : append_within(out, user.first, limit);
    };
    std::vector<std::pair<User, std::size_t>> users(per_user.begin(), per_user.end());
    std::stable_sort(users.begin(), users.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string state_text;
    for (const char state : states) {
        if (!state_text.empty()) state_text += ',';
        state_text += escape_for_log(std::string_view(&state, 1));
    }
    const std::size_t n = survivors.size();
    const std::string head = fmt::format("leftover: {} process{} of ", n, n == 1 ? "" : "es");
    const std::string tail = fmt::format(" survived SIGKILL ({})", state_text);
    // Room for the names: what head and tail leave, less the widest "+N more" we might need.
    const std::string widest_more = fmt::format(" +{} more", users.size());
    const std::size_t room = kMaxDrainReason - head.size() - tail.size();
    std::string names;
    std::size_t shown = 0;
    for (const auto& [user, count] : users) {
        std::string next = names;
        if (shown > 0) next += ", ";
        const bool last = shown + 1 == users.size();
        const std::size_t limit = last ? room : room - widest_more.size();
        if (!append_user(next, user, limit)) break;
        names = std::move(next);
        ++shown;
    }
    if (shown == 0 && !users.empty()) {  // the first name alone is too long: its start
        names.clear();
        const bool only = users.size() == 1;
        append_user(names, users.front().first, (only ? room : room - widest_more.size()) - 3);
        names += "...";
        shown = 1;
    }
    if (shown < users.size()) names += fmt::format(" +{} more", users.size() - shown);
    return head + names + tail;
}

}  // namespace leftover::drain
