"""Shared by the guest tier's tests (issue 26): QEMU guests under TCG with real NIC drivers.

Run the tier under the lab lock like tests/netns (flock /tmp/rtnet-lab.lock ...): the
tests do not take it themselves, so a caller that already holds it cannot deadlock.
Fetching QEMU and the kernel (tools/vmtier.py) needs no lock; when it fails, or the cache
is corrupt, the tier skips locally with that one line and fails under CI=true.
"""

import os
import sys

import pytest
from conftest import skip_or_fail

from tools import vmtier

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


@pytest.fixture(scope="session")
def vm_env():
    if os.geteuid() != 0:
        skip_or_fail("the guest tier needs root (QEMU tap devices, a host bridge)")
    try:
        return vmtier.fetch()
    except vmtier.VmTierError as exc:
        skip_or_fail(f"guest tier unavailable: {exc}")


def guest_script(role: str, args: dict) -> str:
    import json
    import shlex

    py = os.path.realpath(sys.executable)
    return (
        f"export PATH={shlex.quote(os.path.dirname(py))}:$PATH\n"
        f"cd {shlex.quote(ROOT)}\n"
        f"{shlex.quote(py)} tests/vm/guest.py {role} {shlex.quote(json.dumps(args))}"
    )
