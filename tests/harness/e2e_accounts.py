"""The accounts e2e tests run jobs and plant processes as.

`ensure_test_users()` creates them (with fixed uids, gid == uid) when they are
missing and refuses an existing account whose uid differs.

TEST_UID_MIN..TEST_UID_MAX is the one range of uids the tests' sweeps may
reach: every leftover config they write sets uid_min/uid_max to it
(plugin_support.leftover_conf), so a node-wide sweep on this machine never
touches a user of the machine who has no job on the test cluster.
"""

from __future__ import annotations

import pwd
import subprocess
from typing import Iterable, NamedTuple

from .e2e_processes import HarnessError


class Account(NamedTuple):
    name: str
    uid: int


# The accounts tests may use; uid == primary gid for each.
TEST_USERS = (
    Account("lo_alice", 41001),
    Account("lo_bob", 41002),
    Account("je.kim", 41003),   # a dot in the name
    Account("jeXkim", 41004),   # matches "je.kim" if a dot were a regex
    Account("lo_low", 900),     # below UID_MIN (system range)
    Account("lo_high", 61000),  # above UID_MAX
    Account("alice", 41005),    # protected by the predecessor's config verbatim
    Account("bobby", 41006),    # "bob" is protected; "bobby" must not be
)
USERS = {u.name: u for u in TEST_USERS}

# Every test account but lo_low and lo_high (outside on purpose) has its uid in
# this range; no account has TEST_UID_MAX itself, so a config whose range is
# only TEST_UID_MAX sweeps nobody.
TEST_UID_MIN = 41001
TEST_UID_MAX = 41099
OUTSIDE_TEST_UIDS = ("lo_low", "lo_high")


def ensure_test_users(users: Iterable[Account] = TEST_USERS) -> None:
    """Creates the test accounts if missing; refuses a name with another uid."""
    for user in users:
        try:
            existing = pwd.getpwnam(user.name)
        except KeyError:
            _create_user(user)
            continue
        if existing.pw_uid != user.uid:
            raise HarnessError(
                f"user {user.name} exists with uid {existing.pw_uid}, "
                f"tests need {user.uid}")


def _create_user(user: Account) -> None:
    # The group first, with gid == uid, so useradd never picks another gid.
    if subprocess.run(["getent", "group", str(user.uid)],
                      capture_output=True).returncode != 0:
        subprocess.run(["groupadd", "-g", str(user.uid), user.name],
                       check=True, capture_output=True)
    # --badname: "je.kim" and uids outside UID_MIN..UID_MAX are on purpose.
    subprocess.run(
        ["useradd", "--badname", "-u", str(user.uid), "-g", str(user.uid),
         "-M", "-d", "/tmp", "-s", "/bin/sh", user.name],
        check=True, capture_output=True)

