"""Shared test fixtures.

Tests that need root, network namespaces, AF_XDP or TAP are marked ``netns``.
Locally they skip when the machine cannot run them; with CI=true they fail
instead, so a green CI run means they really ran.
"""
import os
import shutil

import pytest

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def skip_or_fail(reason: str):
    """Skip locally, fail under CI=true: CI must never pass by skipping."""
    if IN_CI:
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)


def _netns_missing() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces, AF_XDP, TAP)"
    if not os.path.exists("/proc/self/ns/net"):
        return "kernel without network namespaces"
    if not os.path.ismount("/sys/fs/bpf"):
        return "bpffs is not mounted at /sys/fs/bpf (run tools/setup-system.sh)"
    return None


def pytest_runtest_setup(item):
    if item.get_closest_marker("netns"):
        reason = _netns_missing()
        if reason:
            skip_or_fail(reason)


def require_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        skip_or_fail(f"{name} is not installed (run tools/setup-system.sh)")
    return path


def daemon_lab(name: str, stations: int):
    """A lab of ``stations`` whose rtnetd run in a run directory of their own
    (RTNET_RUN_DIR, readable by the unprivileged peers the tests use, not under pytest's
    0700 tmp): yields the lab, then stops every station's rtnetd and takes it all down.
    A generator for module fixtures: ``yield from daemon_lab("d1", 2)``."""
    import tempfile

    from rtnet import cli
    from rtnet.lab import Lab
    run = tempfile.mkdtemp(prefix=f"rtn-{name}-run-")
    os.chmod(run, 0o755)
    old = os.environ.get("RTNET_RUN_DIR")
    os.environ["RTNET_RUN_DIR"] = run
    lab = Lab(name, stations)
    lab.down()
    try:
        lab.up()
        yield lab
    finally:
        for st in lab.stations:
            cli.main(["down", "-n", st.netns])
        lab.down()
        shutil.rmtree(run, ignore_errors=True)
        if old is None:
            del os.environ["RTNET_RUN_DIR"]
        else:
            os.environ["RTNET_RUN_DIR"] = old
