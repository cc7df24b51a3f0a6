# SPDX-License-Identifier: GPL-2.0-or-later
"""The randomized soak (see tests/README.md): run as `python3 -m soak.soak` with tests/ on
PYTHONPATH, as scripts/soak.sh does."""
