# SPDX-License-Identifier: GPL-2.0-or-later
# Warnings, sanitizers and hardening as small INTERFACE targets that every target links.
add_library(leftover_warnings INTERFACE)
target_compile_options(leftover_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
  -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough)
if(LEFTOVER_WERROR)
  target_compile_options(leftover_warnings INTERFACE -Werror)
endif()

add_library(leftover_sanitizers INTERFACE)
if(LEFTOVER_FUZZ)
  # The libraries the fuzz targets link get libFuzzer's coverage hooks without its main();
  # the targets themselves add -fsanitize=fuzzer (tests/fuzz/CMakeLists.txt).
  target_compile_options(leftover_sanitizers INTERFACE
    -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(leftover_sanitizers INTERFACE -fsanitize=address,undefined)
elseif(LEFTOVER_SANITIZE)
  # A sanitized build runs the tests and never ships: -Og (after the build type's -O2)
  # compiles it about three times faster than -O2 and keeps its stack traces readable;
  # -g1 keeps the line tables a report needs and compiles a third faster than -g.
  target_compile_options(leftover_sanitizers INTERFACE
    -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all -Og -g1)
  target_link_options(leftover_sanitizers INTERFACE -fsanitize=address,undefined)
endif()

# Hardening for code that runs as root inside slurmstepd: bounds-checked libc calls where
# the size is known (_FORTIFY_SOURCE, which only works with optimisation), bounds- and
# precondition-checked standard containers (_GLIBCXX_ASSERTIONS: operator[], front() on an
# empty vector... abort instead of reading past the end), stack canaries, stack probes so a
# large frame or alloca cannot jump the guard page into another mapping
# (-fstack-clash-protection), control-flow protection (-fcf-protection: endbr64 landing pads
# and the IBT/SHSTK property on every object), a read-only GOT resolved at load
# (relro + now) and no executable stack. scripts/check-hardening.sh checks them, in the
# binaries where a binary can show them, else in the compile commands.
# Under the sanitizers fortify stays off: ASan intercepts the same calls and the _chk
# variants hide the accesses from it. A _FORTIFY_SOURCE the build's own flags already set
# (a distribution's %optflags, dpkg-buildflags) wins over ours.
add_library(leftover_hardening INTERFACE)
if(NOT LEFTOVER_SANITIZE AND NOT LEFTOVER_FUZZ AND NOT CMAKE_CXX_FLAGS MATCHES "_FORTIFY_SOURCE")
  target_compile_definitions(leftover_hardening INTERFACE
    $<$<CONFIG:Release,RelWithDebInfo,MinSizeRel>:_FORTIFY_SOURCE=2>)
endif()
target_compile_definitions(leftover_hardening INTERFACE _GLIBCXX_ASSERTIONS)
target_compile_options(leftover_hardening INTERFACE -fstack-protector-strong)
# Both in g++ and clang++ for x86-64 (g++ 12, clang++ 14 and later); not every target
# has them (-fcf-protection is x86 only), so each only where the compiler takes it.
include(CheckCXXCompilerFlag)
foreach(flag -fstack-clash-protection -fcf-protection)
  string(MAKE_C_IDENTIFIER "LEFTOVER_CXX_HAS${flag}" has_flag)
  check_cxx_compiler_flag(${flag} ${has_flag})
  if(${has_flag})
    target_compile_options(leftover_hardening INTERFACE ${flag})
  endif()
endforeach()
target_link_options(leftover_hardening INTERFACE
  LINKER:-z,relro LINKER:-z,now LINKER:-z,noexecstack)
