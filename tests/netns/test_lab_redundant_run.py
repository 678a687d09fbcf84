"""`rtnetctl lab up --redundant` runs a redundant segment: rtnetd on rteth0 (wire A) and
rteth1 (wire B) of every station, the publisher's stream on a redundant channel (IEEE
802.1CB), wire A taken down and restored during the run; no message is lost or delivered
twice, and `rtnetctl lab down` removes both wires, every station and every daemon."""

import json
import subprocess
import sys

import pytest
from pyroute2 import netns as pr_netns

from rtnet import procs
from rtnet.tdma_stats import TdmaState

pytestmark = pytest.mark.netns

LAB = "lq"
N = 3
DURATION_S = 3
CYCLE_US = 1000


def rtnetctl(*args, timeout=180):
    return subprocess.run(
        [sys.executable, "-m", "rtnet.cli", *args], capture_output=True, text=True, timeout=timeout
    )


def test_a_redundant_segment_loses_nothing_across_wire_a_down_and_up():
    rtnetctl("lab", "down", "--name", LAB)  # a left-over of an interrupted run
    r = rtnetctl(
        "-j",
        "lab",
        "up",
        "--redundant",
        "--name",
        LAB,
        "--stations",
        str(N),
        "--duration",
        str(DURATION_S),
    )
    try:
        try:
            s = json.loads(r.stdout)
        except json.JSONDecodeError:
            s = None
        # on a failure, the stations' misses say whether an RT thread fell behind
        said = (s["stations"], s.get("latency_us"), s.get("vm")) if s else r.stdout[-2000:]
        assert r.returncode == 0, f"{said} {r.stderr}"
        assert s["redundant"] and s["ok"]
        assert [st["state"] for st in s["stations"]] == [
            TdmaState.MASTER,
            TdmaState.BACKUP_STANDBY,
            TdmaState.SYNCED,
        ]
        # one message a cycle for the run (a stalled VM may cost the odd cycle)
        assert s["sent"] >= DURATION_S * 1e6 / CYCLE_US * 0.8, s["sent"]
        # each one arrived, or its station counted it as not sent within its cycle (the
        # publisher's channel gives its messages a cycle's lifetime; the VM's late wake-ups
        # expire some): none went missing on the wires
        assert s["received"] + s["expired"] == s["sent"] and s["lost"] == 0, said
        assert s["duplicates_delivered"] == 0
        down = s["wire_a_down"]
        assert 0 < down["from_s"] < down["to_s"] < DURATION_S + 1
        # while wire A was down the stream kept arriving, over wire B: a message a cycle,
        # leaving out the cycles a VM stall met (the publisher's station may have missed its
        # slot in them and counted their messages expired, whatever the wires did)
        assert down["cycles"] >= (down["to_s"] - down["from_s"]) * 1e6 / CYCLE_US - 2, down
        undisturbed = down["cycles"] - (down["cycles_in_vm_stalls"] or 0)
        assert down["received_meanwhile"] >= undisturbed * 0.8, (down, s.get("vm"))
        a, b = s["wires"]
        assert (a["wire"], b["wire"]) == ("a", "b")
        # every message passed once, from the wire whose copy came first; the other copy
        # was a duplicate and was discarded
        assert a["passed"] + b["passed"] == s["received"]
        assert a["copies"] == a["passed"] + a["duplicates_discarded"]
        assert b["copies"] == b["passed"] + b["duplicates_discarded"]
        # wire B brought (almost) every message that went out; wire A none of those sent
        # while it was down
        on_wire = s["sent"] - s["expired"]
        assert b["copies"] >= on_wire - 5, (b, on_wire)
        assert a["copies"] <= on_wire - down["received_meanwhile"] + 20, (a, down)
        assert a["copies"] >= on_wire * 0.2, a  # and the rest before and after
        assert (
            a["duplicates_discarded"] + b["duplicates_discarded"]
            == a["copies"] + b["copies"] - s["received"]
        )
        assert b["duplicates_discarded"] > 0
        # both wires are whole again, each station on both
        status = json.loads(rtnetctl("-j", "lab", "status", "--name", LAB).stdout)[0]
        assert [(w["wire"], [p["state"] for p in w["ports"]]) for w in status["wires"]] == [
            ("a", ["UP"] * N),
            ("b", ["UP"] * N),
        ]
        for st in status["stations"]:
            links = {link["ifname"]: link for link in st["links"]}
            assert links["rteth0"]["xdp"] and links["rteth1"]["xdp"], links
        pids = [p["pid"] for p in status["processes"]]
        assert len(pids) == N, status["processes"]
    finally:
        removed = rtnetctl("lab", "down", "--name", LAB)
    assert removed.returncode == 0, removed.stderr
    assert f"netns rtn-{LAB}-wireb" in removed.stdout
    assert not [n for n in pr_netns.listnetns() if n.startswith(f"rtn-{LAB}-")]
    assert not [p for p in pids if procs.running(p)]


def test_redundant_with_bad_arguments_builds_nothing():
    r = rtnetctl("lab", "up", "--redundant", "--name", "lx", "--stations", "1")
    assert r.returncode == 1
    assert r.stderr.strip() == "rtnetctl: --stations 1: the demo runs 2..16 stations"
    assert not [n for n in pr_netns.listnetns() if n.startswith("rtn-lx-")]
