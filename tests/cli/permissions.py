"""Run a command as a user that file permissions stop: the tests of unreadable and read-only files.

CI runs as root, and root reads and writes whatever the permission bits say. Without the two capabilities that let
it (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, dropped from the bounding set with util-linux's ``setpriv``, which every
Debian machine has), root is refused like anyone else; another user needs nothing.
"""

from __future__ import annotations

import os
import shutil

import pytest


def unprivileged() -> list[str]:
    """The prefix that runs a command without root's permission override ([] when not root); skip without setpriv."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without util-linux's setpriv: permission bits cannot be tested")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]
