// SPDX-License-Identifier: GPL-2.0-or-later
// What a slurmstepd answers on its step socket, checked as steps/local_steps.cpp checks it,
// in its order: the first byte picks the client's release row, then come the handshake's
// version reply (4 bytes), REQUEST_STEP_UID (4), REQUEST_STATE (4) and, from a 25.11
// stepd, REQUEST_SLUID (8), in host byte order as on the socket. A reply that passes its
// check decodes, and what it decodes to is within the client's release.
#include "fuzz_check.hpp"
#include "steps/stepd_protocol.hpp"

#include <cstring>
#include <iterator>

namespace {

using namespace leftover::steps;

struct Replies {
    const std::uint8_t* data;
    std::size_t size;
    template <class T>
    bool next(T& out) {
        if (size < sizeof(T)) return false;
        std::memcpy(&out, data, sizeof(T));
        data += sizeof(T);
        size -= sizeof(T);
        return true;
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const StepdProtocol& client = kStepdProtocols[data[0] % std::size(kStepdProtocols)];
    Replies replies{data + 1, size - 1};

    std::int32_t version = 0;
    if (!replies.next(version)) return 0;
    (void)describe_protocol_version(version);
    if (stepd_version_error(client, version)) return 0;
    FUZZ_CHECK(version >= client.oldest_stepd && version <= client.version);

    std::uint32_t uid = 0;
    if (!replies.next(uid) || step_uid_error(uid)) return 0;

    std::int32_t raw_state = 0;
    if (!replies.next(raw_state)) return 0;
    const auto state = decode_stepd_state(version, raw_state);
    FUZZ_CHECK(state.has_value() == !stepd_state_error(version, raw_state));
    if (!state) return 0;
    (void)to_string(*state);
    FUZZ_CHECK(*state != StepdState::cancelled || version >= protocol_version(40));

    std::uint64_t sluid = 0;
    if (version >= kFirstWithSluid && replies.next(sluid)) {
        const std::string name = sluid_name(sluid);
        FUZZ_CHECK(name.size() == 14 && name.front() == 's');
    }
    return 0;
}
