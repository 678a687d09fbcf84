"""The redundant lab: two independent wires, every station on both; cutting one
leaves the other working, and down() (or lab down after a crash) leaves nothing."""

import json
import subprocess
import sys

import pytest
from pyroute2 import netns as pr_netns

from rtnet import cli, netns
from rtnet.errors import LabError
from rtnet.lab import Lab, all_labs

pytestmark = pytest.mark.netns


def ping(lab: Lab, src: int, dst_ip: str) -> bool:
    """One kernel ping from station ``src`` (waits at most a second for the reply)."""
    res = subprocess.run(
        netns.command(lab.station(src).netns, ["ping", "-n", "-q", "-c", "1", "-W", "1", dst_ip]),
        capture_output=True,
        text=True,
        timeout=30,
    )
    return res.returncode == 0


def test_two_wires_carry_pings_and_one_cut_wire_leaves_the_other():
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "rtnet.cli",
            "-j",
            "lab",
            "up",
            "--redundant",
            "--bare",
            "--name",
            "lr",
            "--stations",
            "2",
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    lab = Lab("lr", 2, redundant=True)
    try:
        status = json.loads(r.stdout)
        assert [(w["wire"], w["netns"]) for w in status["wires"]] == [
            ("a", "rtn-lr-wire"),
            ("b", "rtn-lr-wireb"),
        ]
        for w in status["wires"]:
            assert [(p["ifname"], p["state"]) for p in w["ports"]] == [("s1", "UP"), ("s2", "UP")]
        for s in status["stations"]:
            links = {link["ifname"]: link for link in s["links"]}
            assert sorted(links) == ["rteth0", "rteth1"]
            mac = f"02:52:54:00:00:{s['index']:02x}"
            assert links["rteth0"]["mac"] == links["rteth1"]["mac"] == mac  # as PRP nodes
            assert links["rteth0"]["addresses"] == [f"198.18.0.{s['index']}/24"]
            assert links["rteth1"]["addresses"] == [f"198.18.1.{s['index']}/24"]
        st2 = lab.station(2)
        assert ping(lab, 1, st2.ip) and ping(lab, 1, st2.ip_b)
        lab.set_wire_port(st2, "a", up=False)  # pull station 2's cable on A
        assert not ping(lab, 1, st2.ip)
        assert ping(lab, 1, st2.ip_b)
        wire_a = lab.status()["wires"][0]
        assert [p["state"] for p in wire_a["ports"]] == ["UP", "DOWN"]
        lab.set_wire_port(st2, "a", up=True)
        assert ping(lab, 1, st2.ip)
        text = subprocess.run(
            [sys.executable, "-m", "rtnet.cli", "lab", "status", "--name", "lr"],
            capture_output=True,
            text=True,
        ).stdout
        assert "  wire A rtn-lr-wire/rtbr0: s1:UP s2:UP" in text
        assert "  wire B rtn-lr-wireb/rtbr0: s1:UP s2:UP" in text
    finally:
        removed = lab.down()
    assert "netns rtn-lr-wireb" in removed
    assert "lr" not in all_labs()
    assert not [n for n in pr_netns.listnetns() if n.startswith("rtn-lr-")]


def test_lab_down_after_a_crash_finds_a_left_over_second_wire():
    pr_netns.create("rtn-lw-wireb")
    assert "lw" in all_labs()
    assert cli.main(["lab", "down", "--name", "lw"]) == 0
    assert "lw" not in all_labs() and not netns.exists("rtn-lw-wireb")


def test_a_plain_lab_has_no_second_wire():
    with Lab("lp", 1) as lab:
        assert [w["wire"] for w in lab.status()["wires"]] == ["a"]
        with pytest.raises(LabError, match="has no wire 'b'"):
            lab.set_wire_port(lab.station(1), "b", up=False)
    assert "lp" not in all_labs()
