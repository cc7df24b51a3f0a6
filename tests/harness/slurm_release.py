# SPDX-License-Identifier: GPL-2.0-or-later
"""The Slurm release the tests run against: the host's, or a Debian root's inside
scripts/in-release.sh."""

import re
import subprocess


def slurm_release() -> tuple[int, int]:
    """major.minor of slurmd ("slurm-wlm 24.11.5" -> (24, 11))."""
    out = subprocess.run(["slurmd", "-V"], capture_output=True, text=True, check=True).stdout
    major, minor = re.search(r"(\d+)\.(\d+)\.\d+", out).groups()
    return int(major), int(minor)


RELEASE = slurm_release()
RELEASE_TEXT = f"{RELEASE[0]}.{RELEASE[1]:02}"
