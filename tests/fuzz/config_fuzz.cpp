// SPDX-License-Identifier: GPL-2.0-or-later
// /etc/leftover.conf, JSON or YAML (both through yaml-cpp): parse_config either returns a
// config that keeps every documented bound or a config error that names the file, and
// nothing escapes it (an escaping exception aborts, which libFuzzer reports).
#include "config/config.hpp"
#include "config/config_keys.hpp"
#include "fuzz_check.hpp"

#include <string>
#include <type_traits>
#include <variant>

namespace {

constexpr const char* kOrigin = "/etc/leftover.conf";

void check_bounds(const leftover::Config& config) {
    FUZZ_CHECK(config.uid_min <= config.uid_max);
    FUZZ_CHECK(!config.slew_max || *config.slew_max >= config.slew);
    FUZZ_CHECK(config.loaded_from == kOrigin);
    for (const auto& name : config.protected_users) FUZZ_CHECK(!name.empty());
    for (const auto& path : config.protected_users_files) FUZZ_CHECK(!path.empty() && path.front() == '/');
    for (const auto& path : config.cleanup_dirs) FUZZ_CHECK(!path.empty() && path.front() == '/');
    for (const auto kind : config.cleanup)
        FUZZ_CHECK(kind == leftover::CleanupKind::ipc || kind == leftover::CleanupKind::posix_shm ||
                   kind == leftover::CleanupKind::files);
    for (const leftover::ConfigKey& key : leftover::config_keys()) {
        std::visit(
            [&](auto member) {
                const auto& value = config.*member;
                using Value = std::remove_cvref_t<decltype(value)>;
                if constexpr (std::is_same_v<Value, double>) {
                    FUZZ_CHECK(value >= key.min && value <= key.max && !(key.min_exclusive && value == key.min));
                } else if constexpr (std::is_same_v<Value, std::optional<double>>) {
                    FUZZ_CHECK(!value || (*value >= key.min && *value <= key.max));
                } else if constexpr (std::is_enum_v<Value>) {
                    FUZZ_CHECK(static_cast<std::size_t>(value) < key.words.size());
                }
            },
            key.field);
        (void)leftover::value_text(key, config);  // what `leftover config` prints
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(leftover::fuzz::as_text(data, size));
    const auto config = leftover::parse_config(text, kOrigin);
    if (config.ok()) {
        check_bounds(config.value());
    } else {
        FUZZ_CHECK(config.error().kind == leftover::ErrorKind::config);
        FUZZ_CHECK(config.error().message.starts_with(kOrigin));
    }
    return 0;
}
