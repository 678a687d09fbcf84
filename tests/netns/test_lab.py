"""The lab through rtnetctl: up, status, refusal of a second lab, down, and nothing left."""

import json
import os
import subprocess
import sys

import pytest
from pyroute2 import netns as pr_netns

from rtnet import cli
from rtnet.lab import Lab, all_labs
from rtnet.xsk import RawSocket

pytestmark = pytest.mark.netns


def rtnetctl(*args):
    return subprocess.run(
        [sys.executable, "-m", "rtnet.cli", *args], capture_output=True, text=True
    )


def test_lab_up_status_down_leaves_nothing_behind():
    r = rtnetctl("lab", "up", "--bare", "--name", "lt", "--stations", "3")
    assert r.returncode == 0, r.stderr
    try:
        status = json.loads(rtnetctl("-j", "lab", "status", "--name", "lt").stdout)[0]
        assert status["exists"]
        assert [s["index"] for s in status["stations"]] == [1, 2, 3]
        for s in status["stations"]:
            (link,) = s["links"]
            assert link["ifname"] == "rteth0" and link["state"] == "UP"
            assert link["mac"] == f"02:52:54:00:00:{s['index']:02x}"
            assert link["addresses"] == [f"198.18.0.{s['index']}/24"]
        # a second lab of the same name: one clear line, nothing touched
        again = rtnetctl("lab", "up", "--bare", "--name", "lt")
        assert again.returncode == 1
        assert again.stderr.strip().splitlines() == [
            "rtnetctl: lab 'lt' already exists (rtnetctl lab down --name lt removes it)"
        ]
        assert json.loads(rtnetctl("-j", "lab", "status", "--name", "lt").stdout)[0] == status
        # an XDP program and a process in the lab, to be cleaned by down
        lab = Lab("lt", 3)
        sock = RawSocket("rteth0", netns=lab.station(1).netns)
        proc = lab.spawn(lab.station(2), ["sleep", "300"])
        assert json.loads(rtnetctl("-j", "lab", "status", "--name", "lt").stdout)[0]["stations"][0][
            "links"
        ][0]["xdp"]
    finally:
        down = rtnetctl("lab", "down", "--name", "lt")
    assert down.returncode == 0, down.stderr
    assert proc.wait(timeout=5) is not None
    sock.close()  # its namespace is gone: closing must still be clean
    assert "lt" not in all_labs()
    assert not [n for n in pr_netns.listnetns() if n.startswith("rtn-lt-")]
    assert not os.path.exists(lab.pid_dir)


def test_lab_down_after_a_crash_finds_leftovers_by_name():
    # a process that built half a lab and died: only some namespaces are left
    pr_netns.create("rtn-lc-wire")
    pr_netns.create("rtn-lc-s2")
    assert "lc" in all_labs()
    assert cli.main(["lab", "down", "--name", "lc"]) == 0
    assert "lc" not in all_labs()


def test_bad_lab_arguments_get_one_line_errors(capsys):
    # a number out of range is refused while parsing (usage: 2), a bad name by the lab (1)
    assert cli.main(["lab", "up", "--bare", "--stations", "0", "--name", "lb"]) == 2
    assert cli.main(["lab", "up", "--bare", "--name", "Bad_Name"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "rtnetctl: argument --stations: invalid stations: 0 (allowed: 1..32)",
        "rtnetctl: lab name 'Bad_Name': use 1-10 lower-case letters or digits",
    ]
    assert "lb" not in all_labs()


def test_each_wire_knows_every_station_on_its_port():
    """Static bridge entries (not permanent: those would be the bridge's own), so a station
    that only listens, RFC 2544's receiver, is not flooded to."""
    import socket

    from pyroute2 import IPRoute
    from pyroute2.netlink.rtnl import ndmsg

    with Lab("lf", 2, redundant=True) as lab:
        for wire in ("a", "b"):
            with IPRoute(netns=lab.wire(wire)) as ipr:
                names = {link["index"]: link.get_attr("IFLA_IFNAME") for link in ipr.get_links()}
                entries = {
                    (names[n["ifindex"]], n.get_attr("NDA_LLADDR"))
                    for n in ipr.get_neighbours(family=socket.AF_BRIDGE)
                    if n["state"] & ndmsg.states["noarp"]
                    and not n["state"] & ndmsg.states["permanent"]
                }
            assert entries == {(st.wire_port, st.mac) for st in lab.stations}, wire


def test_the_wire_bridge_hands_no_frame_to_iptables():
    # a cable or a switch runs no iptables: where br_netfilter is in the kernel, the wire
    # namespace's bridge must not call its hooks (they cost the kernel path ~8% per byte)
    with Lab("bf", 2) as lab:
        cmd = ["sh", "-c", "cat /proc/sys/net/bridge/bridge-nf-call-* 2>/dev/null || true"]
        out = subprocess.run(
            ["ip", "netns", "exec", lab.wire_netns, *cmd],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert set(out) <= {"0"}, out
