# SPDX-License-Identifier: GPL-2.0-or-later
# The Slurm release this build is for, from slurm/slurm_version.h: a plugin only loads
# into the major.minor it was built for. SLURM_VERSION_NUMBER is 0xMMmmuu (0x180b05 is
# 24.11.5). Whether leftover knows the release's step-socket protocol is decided by
# the table in steps/stepd_protocol.hpp, which refuses to compile for any other.
find_path(SLURM_INCLUDE_DIR slurm/slurm_version.h REQUIRED)
file(STRINGS ${SLURM_INCLUDE_DIR}/slurm/slurm_version.h slurm_version_line REGEX "^#define SLURM_VERSION_NUMBER")
if(NOT slurm_version_line MATCHES "0x([0-9a-fA-F][0-9a-fA-F])([0-9a-fA-F][0-9a-fA-F])([0-9a-fA-F][0-9a-fA-F])")
  message(FATAL_ERROR "${SLURM_INCLUDE_DIR}/slurm/slurm_version.h: no SLURM_VERSION_NUMBER 0xMMmmuu")
endif()
math(EXPR slurm_major "0x${CMAKE_MATCH_1}")
math(EXPR slurm_minor "0x${CMAKE_MATCH_2}")
math(EXPR slurm_micro "0x${CMAKE_MATCH_3}")
math(EXPR slurm_next_minor "${slurm_minor} + 1")
foreach(var slurm_minor slurm_next_minor)
  string(LENGTH "${${var}}" digits)
  if(digits EQUAL 1)
    set(${var} "0${${var}}")
  endif()
endforeach()
set(slurm_major_minor "${slurm_major}.${slurm_minor}")
set(slurm_next "${slurm_major}.${slurm_next_minor}")
message(STATUS "Building for Slurm ${slurm_major_minor}.${slurm_micro} (${SLURM_INCLUDE_DIR}/slurm)")
