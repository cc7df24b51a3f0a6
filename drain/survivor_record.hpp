// SPDX-License-Identifier: GPL-2.0-or-later
// The processes that outlived leftover's SIGKILL, kept between sweeps with the time each
// was first found alive after it, so that a later sweep can tell whether one is still
// alive UnkillableStepTimeout after its SIGKILL (only then is the node drained). One file
// per node in its SlurmdSpoolDir, root's, written whole and renamed into place.
#pragma once

#include "errors/result.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace leftover::drain {

// One process that outlived a SIGKILL: which process (pid and start time), whose, and
// when it was first found alive after it (CLOCK_BOOTTIME).
struct RecordedSurvivor {
    pid_t pid = 0;
    std::uint64_t start_time = 0;
    uid_t uid = 0;
    std::string user;  // empty when unknown
    std::chrono::milliseconds since{0};
    bool operator==(const RecordedSurvivor&) const = default;
};

// The record's file for `node_name` in `spool_dir`: leftover-survivors-<node> (bytes of
// the name other than letters, digits, '.', '_' and '-' become '_').
std::string survivor_record_path(const std::string& spool_dir, const std::string& node_name);

// Where the record lives and who may own its directory besides root (SlurmdUser).
struct RecordPlace {
    std::string path;
    std::optional<uid_t> dir_owner;
    std::string boot_id;  // the kernel's boot id: a record of another boot counts nothing
};

// The survivors recorded by earlier sweeps of this boot; none without a file. A file in a
// directory that is not root's (or dir_owner's) or is writable by group or others, one
// that is not a root-owned regular file writable by root alone, or one that does not
// parse, is an error: the record is then not believed.
Result<std::vector<RecordedSurvivor>> read_survivor_record(const RecordPlace& place);

// Replaces the record with `survivors` (none: removes the file).
Status write_survivor_record(const RecordPlace& place, const std::vector<RecordedSurvivor>& survivors);

}  // namespace leftover::drain
