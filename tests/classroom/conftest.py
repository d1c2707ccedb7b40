"""The ``bwrap`` marker: a test that grades in the bubblewrap sandbox skips, with the reason, where there is none.

Where ``bwrap`` is not installed (``make test`` installs it as root with apt-get and goes on without it otherwise),
or where it cannot make a sandbox on this machine at all (no user namespaces for a user, a container that refuses
new namespaces), each test marked ``bwrap`` is skipped with a one-line reason, and pytest's summary (``-ra``) lists
them. Whether bubblewrap works is asked once, of a plain ``bwrap`` that has nothing of the grader's command in it: a
sandbox that the grader's own arguments break still fails the tests.
"""

import functools
import shutil
import subprocess

import pytest


@functools.cache
def _why_no_bwrap() -> str | None:
    if shutil.which("bwrap") is None:
        return "needs bubblewrap (bwrap), which is not installed: as root, make grade-deps (or make test) installs it"
    plain = ["bwrap", "--unshare-pid", "--unshare-net", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"]
    done = subprocess.run([*plain, "true"], capture_output=True, text=True, errors="replace")
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return f"needs bubblewrap, which cannot make a sandbox on this machine: {said}"
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("bwrap") and _why_no_bwrap() is not None:
            item.add_marker(pytest.mark.skip(reason=_why_no_bwrap()))
