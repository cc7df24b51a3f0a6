# SPDX-License-Identifier: GPL-2.0-or-later
# leftover_library(<name> SOURCES ... [PUBLIC deps...] [PRIVATE deps...]): one static
# library per folder. Every folder includes the others' headers as "folder/file.hpp"
# from the top of the tree; which folder may include which is ARCHITECTURE.md's table,
# checked by scripts/check-layers.py. Symbols stay hidden: the plugin exports its hooks only.
function(leftover_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;PUBLIC;PRIVATE" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name}
    PUBLIC ${ARG_PUBLIC}
    PRIVATE ${ARG_PRIVATE} leftover_warnings leftover_hardening leftover_sanitizers)
  set_target_properties(${name} PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
endfunction()
