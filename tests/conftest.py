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


TDMA_IPV4_STATION = """
[station]
name = "{name}"
ip = "{ip}"
[rt]
allow_fallback = true
[tdma]
role = "{role}"
{cycle}cal_rounds = 10
[[tdma.slot]]
id = 0
offset_us = {offset}
"""


def tdma_ipv4_pair(name: str, cycle_us: int = 1000):
    """A daemon lab of a TDMA master (slot 0 at 0 us) and a slave (slot 0 at 400 us), each
    with its real-time IPv4 address and a route to the other: yields the lab once the slave
    is synchronised.  A generator for module fixtures, as daemon_lab."""
    import tempfile
    import textwrap
    import time

    from rtnet import cli, rtroute
    from rtnet.stationctl import request
    d = tempfile.mkdtemp(prefix=f"rtn-{name}-conf-")
    try:
        for lab in daemon_lab(name, 2):
            for st, role, offset in ((lab.station(1), "master", 0),
                                     (lab.station(2), "slave", 400)):
                path = os.path.join(d, f"{st.index}.toml")
                with open(path, "w") as f:
                    f.write(textwrap.dedent(TDMA_IPV4_STATION.format(
                        name=f"{name}{st.index}", ip=st.ip, role=role, offset=offset,
                        cycle=f"cycle_us = {cycle_us}\n" if role == "master" else "")))
                assert cli.main(["up", "-n", st.netns, "-c", path]) == 0
            deadline = time.monotonic() + 20
            while request("rteth0", {"cmd": "status"}, netns=lab.station(2).netns)[
                    "status"]["tdma"]["state"] != "synchronised":
                assert time.monotonic() < deadline, "the slave did not synchronise"
                time.sleep(0.05)    # polling what another process makes true
            for a, b in ((lab.station(1), lab.station(2)), (lab.station(2), lab.station(1))):
                assert rtroute.main(["-n", a.netns, "add", b.ip, b.mac, "dev", "rteth0"]) == 0
            yield lab
    finally:
        shutil.rmtree(d, ignore_errors=True)
