"""Shared test fixtures.

Tests that need root, network namespaces, AF_XDP or TAP are marked ``netns``.
Locally they skip when the machine cannot run them; with CI=true they fail
instead, so a green CI run means they really ran.
"""

import json
import os
import shutil
import time

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


def wait_for(cond, timeout: float, what: str = "condition", *, interval: float = 0.02):
    """Poll ``cond()`` (a state another thread or process makes true, which no event tells
    us of) until it returns something true, and return that.  It is called at once, then
    every ``interval`` seconds; the last call is at the deadline, ``timeout`` seconds on.
    If it is still false then, the test fails with AssertionError ("timed out waiting for
    ``what``"), which a caller may catch."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(min(interval, left))


def settle(count, done, *, quiet_s: float = 0.5, timeout: float, interval: float = 0.01) -> None:
    """Poll until ``done()``, or until ``count()`` has not moved for ``quiet_s`` seconds, or
    ``timeout`` seconds have passed; it never fails.  For counts that may legitimately stop
    short (a message lost on both wires never comes, and no event says so): the caller
    asserts on the count afterwards."""
    deadline, last, since = time.monotonic() + timeout, None, time.monotonic()
    while not done() and time.monotonic() < deadline:
        now = count()
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return
        time.sleep(interval)


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)  # a TOML basic string for the names used here
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(map(_toml_value, v)) + "]"
    raise TypeError(f"no TOML for {v!r}")


def station_toml(
    name: str,
    *,
    ip: str | None = None,
    ethertypes=None,
    role: str | None = None,
    cycle_us: int | None = None,
    cal_rounds: int | None = None,
    offset_us: int | None = None,
    **tables: dict,
) -> str:
    """The text of a lab station's rtnet.toml: ``[station]`` with its name (and ``ip``,
    ``ethertypes`` if given), ``[rt] allow_fallback = true`` (a lab runs without a
    real-time kernel), then each further table of ``tables`` (``link={...}``,
    ``nomac={}``, ``control={...}``) and, for a ``role``, ``[tdma]`` with ``cycle_us``
    and ``cal_rounds`` if given and slot 0 at ``offset_us`` if given.  Keys left None
    are left out, so the station's defaults apply."""
    out = ["[station]", f"name = {_toml_value(name)}"]
    for key, value in (("ip", ip), ("ethertypes", ethertypes)):
        if value is not None:
            out.append(f"{key} = {_toml_value(value)}")
    out += ["[rt]", "allow_fallback = true"]
    for table, keys in tables.items():
        out.append(f"[{table}]")
        out += [f"{k} = {_toml_value(v)}" for k, v in keys.items()]
    if role is not None:
        out += ["[tdma]", f"role = {_toml_value(role)}"]
        for key, value in (("cycle_us", cycle_us), ("cal_rounds", cal_rounds)):
            if value is not None:
                out.append(f"{key} = {value}")
        if offset_us is not None:
            out += ["[[tdma.slot]]", "id = 0", f"offset_us = {offset_us}"]
    else:
        assert cycle_us is None and cal_rounds is None and offset_us is None, "TDMA needs a role"
    return "\n".join(out) + "\n"


def tdma_ipv4_pair(name: str, cycle_us: int = 1000):
    """A daemon lab of a TDMA master (slot 0 at 0 us) and a slave (slot 0 at 400 us), each
    with its real-time IPv4 address and a route to the other: yields the lab once the slave
    is synchronised.  A generator for module fixtures, as daemon_lab."""
    import tempfile

    from rtnet import cli, rtroute
    from rtnet.stationctl import request
    from rtnet.tdma_stats import TdmaState

    d = tempfile.mkdtemp(prefix=f"rtn-{name}-conf-")
    try:
        for lab in daemon_lab(name, 2):
            for st, role, offset in ((lab.station(1), "master", 0), (lab.station(2), "slave", 400)):
                path = os.path.join(d, f"{st.index}.toml")
                with open(path, "w") as f:
                    f.write(
                        station_toml(
                            f"{name}{st.index}",
                            ip=st.ip,
                            role=role,
                            cycle_us=cycle_us if role == "master" else None,
                            cal_rounds=10,
                            offset_us=offset,
                        )
                    )
                assert cli.main(["up", "-n", st.netns, "-c", path]) == 0
            wait_for(
                lambda: (
                    request("rteth0", {"cmd": "status"}, netns=lab.station(2).netns)["status"][
                        "tdma"
                    ]["state"]
                    == TdmaState.SYNCED
                ),
                20,
                "the slave to synchronise",
                interval=0.05,
            )
            for a, b in ((lab.station(1), lab.station(2)), (lab.station(2), lab.station(1))):
                assert rtroute.main(["-n", a.netns, "add", b.ip, b.mac, "dev", "rteth0"]) == 0
            yield lab
    finally:
        shutil.rmtree(d, ignore_errors=True)


def terminate_when(argv, ready, prefix: str, take_down, *, timeout: float = 120.0):
    """Run ``argv``; once a line it prints makes ``ready(line)`` true, send it SIGTERM and
    wait up to ``timeout`` s.  Returns (exit status, stderr, the namespaces named
    ``prefix``... it left).  What it left is taken down (``take_down()``) before this
    returns, so a failing command leaves nothing; the caller asserts."""
    import subprocess

    from pyroute2 import netns as pr_netns

    def ours():
        return [n for n in pr_netns.listnetns() if n.startswith(prefix)]

    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stdout:
            if ready(line):
                break
        else:
            pytest.fail(f"{argv[2]} ended before it was ready: {proc.stderr.read()[-500:]}")
        assert ours(), f"no {prefix}* namespace while it runs"
        proc.terminate()
        rc = proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        left = ours()
        if left:
            take_down()
    return rc, proc.stderr.read(), left
