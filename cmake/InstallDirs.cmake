# SPDX-License-Identifier: GPL-2.0-or-later
# The installed layout's directories: GNUInstallDirs', and Slurm's (the top CMakeLists.txt
# installs into them). Included before the folders, which install and compile in paths too.
#
# A directory derived from the install prefix follows the prefix, also when a build
# directory is configured again for another one (GNUInstallDirs' CMAKE_INSTALL_LIBDIR does
# the same): its cache entry is empty by default and the directory is derived at each
# configure, unless it was given (-DLEFTOVER_SLURM_PLUGIN_DIR=...). A default written
# into the cache would stay with the first prefix: the demo's /usr/local build, configured
# again for /usr, packaged the plugin in /usr/local. scripts/check-prefix.sh checks it.
# The other directories here are fixed paths Slurm and systemd read, whatever the prefix.

# A build directory configured while the default was written into the cache holds the
# directory derived then, from the prefix and libdir of that configure (still in the
# cache until GNUInstallDirs updates them): that value is taken for the default it was.
if(NOT LEFTOVER_PLUGIN_DIR_FOLLOWS_PREFIX AND DEFINED _GNUInstallDirs_LAST_CMAKE_INSTALL_PREFIX
    AND DEFINED CACHE{LEFTOVER_SLURM_PLUGIN_DIR} AND DEFINED CACHE{CMAKE_INSTALL_LIBDIR})
  set(_leftover_earlier_libdir "${CMAKE_INSTALL_LIBDIR}")
  if(NOT IS_ABSOLUTE "${_leftover_earlier_libdir}")
    set(_leftover_earlier_libdir "${_GNUInstallDirs_LAST_CMAKE_INSTALL_PREFIX}/${_leftover_earlier_libdir}")
  endif()
  if("$CACHE{LEFTOVER_SLURM_PLUGIN_DIR}" STREQUAL "${_leftover_earlier_libdir}/slurm-wlm")
    set_property(CACHE LEFTOVER_SLURM_PLUGIN_DIR PROPERTY VALUE "")
  endif()
  unset(_leftover_earlier_libdir)
endif()
set(LEFTOVER_PLUGIN_DIR_FOLLOWS_PREFIX ON CACHE INTERNAL "LEFTOVER_SLURM_PLUGIN_DIR is empty unless given")

include(GNUInstallDirs)

# Debian's Slurm plugin directory by default; RPM builds pass -DLEFTOVER_SLURM_PLUGIN_DIR=%{_libdir}/slurm.
set(LEFTOVER_SLURM_PLUGIN_DIR "" CACHE PATH "Slurm's PluginDir (empty: <libdir>/slurm-wlm under the install prefix)")
set(LEFTOVER_SLURM_SYSCONF_DIR "/etc/slurm" CACHE PATH "Slurm's configuration directory")
# The directory in effect: a normal variable of the same name, over the empty cache entry.
if(LEFTOVER_SLURM_PLUGIN_DIR STREQUAL "")
  set(LEFTOVER_SLURM_PLUGIN_DIR "${CMAKE_INSTALL_FULL_LIBDIR}/slurm-wlm")
endif()
message(STATUS "Slurm plugin directory: ${LEFTOVER_SLURM_PLUGIN_DIR}")
