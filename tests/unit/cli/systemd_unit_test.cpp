// SPDX-License-Identifier: GPL-2.0-or-later
// The periodic mode's service (systemd/leftover-sweep.service, installed by
// cli/CMakeLists.txt) held to what `leftover sweep` does: it sees and signals every
// process, and writes what the config enables wherever the config names it.
#include <doctest/doctest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace {

std::string unit_text() {
    std::ifstream in(std::string(LEFTOVER_SOURCE_DIR) + "/systemd/leftover-sweep.service");
    REQUIRE(in);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

// With ProtectHome=read-only a cleanup_dirs entry under /home failed to be removed; with
// PrivateTmp= the sweep would clean a private /tmp, with PrivateDevices= a private
// /dev/shm, with PrivateIPC= an empty IPC namespace, with ProtectSystem= no metrics file
// under /var and no survivors' record in SlurmdSpoolDir. Every setting of [Service] must
// be one known to leave all of that alone: a new one is added here when it is known to.
TEST_CASE("fault catalogue: the periodic sweep's systemd unit leaves writable all the config can make it write") {
    const std::set<std::string> harmless = {
        "Type", "ExecStart", "TimeoutStartSec", "Nice", "IOSchedulingClass", "SyslogIdentifier", "NoNewPrivileges"};
    std::istringstream lines(unit_text());
    std::string line;
    std::string section;
    std::string comments;
    std::set<std::string> settings;
    while (std::getline(lines, line)) {
        if (line.starts_with("[")) section = line;
        if (line.starts_with("#")) comments += line + "\n";
        const auto equals = line.find('=');
        if (section == "[Service]" && !line.starts_with("#") && equals != std::string::npos) {
            const std::string key = line.substr(0, equals);
            settings.insert(key);
            CHECK_MESSAGE(harmless.count(key) == 1, key << " may hide or protect what the sweep writes: " << line);
        }
    }
    CHECK(settings.count("ExecStart") == 1);
    // Its comments say what it writes, not that it writes nothing.
    CHECK(comments.find("writes nothing") == std::string::npos);
    for (const std::string written : {"cleanup_dirs", "/dev/shm", "metrics_file", "SlurmdSpoolDir"})
        CHECK_MESSAGE(comments.find(written) != std::string::npos, "the comments do not say it writes " << written);
}
