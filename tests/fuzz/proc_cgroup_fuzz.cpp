// SPDX-License-Identifier: GPL-2.0-or-later
// /proc/<pid>/cgroup, whose paths below a job's cgroup the job's user names: a job found
// is "job_<id>" or a SLUID, one of the input's path components.
#include "fuzz_check.hpp"
#include "procfs/proc_read.hpp"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto text = leftover::fuzz::as_text(data, size);
    const auto job = leftover::slurm_job_cgroup(text);
    if (!job) return 0;
    const std::string_view name = *job;
    const bool job_id = name.size() > 4 && name.starts_with("job_") && name[4] != '0' &&
                        name.find_first_not_of("0123456789", 4) == std::string_view::npos;
    const bool sluid = name.size() == 14 && name.front() == 's' &&
                       name.find_first_not_of("0123456789ABCDEFGHJKMNPQRSTVWXYZ", 1) == std::string_view::npos;
    FUZZ_CHECK(job_id || sluid);
    FUZZ_CHECK(text.find("/" + *job) != std::string_view::npos);
    return 0;
}
