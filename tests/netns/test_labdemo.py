"""The embedded default: `rtnetctl lab up` runs a three-station TDMA segment with daemons,
VNICs and a cyclic publisher, and `rtnetctl lab down` removes all of it."""

import json
import os
import socket
import subprocess
import sys

import pytest
from conftest import terminate_when
from pyroute2 import IPRoute
from pyroute2 import netns as pr_netns

from rtnet import netns, paths
from rtnet.app import UdpSocket
from rtnet.labdemo import NRT_SLOT_SIZE, station_ip
from rtnet.stages import STAGES
from rtnet.tdma_stats import TdmaState

pytestmark = pytest.mark.netns


def rtnetctl(*args, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "rtnet.cli", *args], capture_output=True, text=True, timeout=timeout
    )


def test_lab_up_runs_the_demo_and_lab_down_removes_everything():
    r = rtnetctl("-j", "lab", "up", "--name", "ld", "--duration", "2")
    try:
        assert r.returncode == 0, r.stderr
        summary = json.loads(r.stdout)
        assert [s["state"] for s in summary["stations"]] == [
            TdmaState.MASTER,
            TdmaState.BACKUP_STANDBY,
            TdmaState.SYNCED,
        ]
        # each message arrived or was counted expired: its slot missed, the publisher's
        # station dropped it rather than send it late and delay every later one
        assert summary["messages"] >= 1000 and summary["lost"] == 0
        assert summary["messages"] + summary["expired"] == summary["sent"]
        # within the cycle it was sent in; if not, the stages say where the time went
        said = (summary["stages_p50_us"], summary["stations"], summary["vm"])
        assert summary["latency_us"]["p50"] < 1000, said
        assert set(summary["stages_p50_us"]) == set(STAGES)
        assert summary["vnic_ping"] and " 0% packet loss" in summary["vnic_ping"]
        # the stall detector watched the run: what the VM explains is a share of what the
        # stations and the subscriber counted, read from each daemon's miss records
        assert summary["vm"] is not None and set(summary["vm"]["wake_p99_us"]) == {
            str(c) for c in range(os.cpu_count())
        }
        for s in summary["stations"]:
            assert 0 <= s["missed_in_vm_stalls"] <= s["missed_slots"], s
            # the records of the run's misses: one per wake-up that found some
            assert 0 <= s["missed_late_wake"] and 0 <= s["missed_other"], s
            if s["miss_records"]:
                assert 1 <= s["worst_miss"]["slots"] <= s["missed_slots"], s
                assert s["miss_records"] <= s["missed_slots"], s
            else:
                assert s["worst_miss"] is None, s
        assert 0 <= summary["over_a_cycle_in_vm_stalls"] <= summary["over_a_cycle"]
        # an unmodified program (sockperf under rtnet-run) across the segment
        prog = summary["unmodified_program"]
        assert prog["returncode"] == 0 and prog["received"] > 10, prog
        st = json.loads(rtnetctl("-j", "-n", "rtn-ld-s3", "status").stdout)
        assert st["tdma"]["state"] == TdmaState.SYNCED and st["vnic"]["tap_tx"] > 0
        # a plain Linux socket reaches a real-time one across the segment: the stations'
        # Linux fills in its checksums, which a veth leaves to the receiver
        with netns.entered("rtn-ld-s1"):
            linux = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        with linux, UdpSocket(netns="rtn-ld-s3") as rt:
            rt.bind(7400)
            linux.sendto(b"from linux", (station_ip(3), 7400))
            d = rt.recvfrom(timeout=5)
            assert d is not None and d.data == b"from linux", d
        # rtnetd sizes vnic0 for its NRT slot: slot size - 4 (the RTmac header)
        with IPRoute(netns="rtn-ld-s3") as ipr:
            link = ipr.link("get", index=ipr.link_lookup(ifname="vnic0")[0])[0]
        assert link.get_attr("IFLA_MTU") == NRT_SLOT_SIZE - 4
    finally:
        down = rtnetctl("lab", "down", "--name", "ld")
    assert down.returncode == 0, down.stderr
    assert not [n for n in pr_netns.listnetns() if n.startswith("rtn-ld-")]
    assert not [
        f for f in os.listdir(paths.station_dir("rtn-ld-s1")) if not f.endswith(".log")
    ]  # only the daemon's log is kept
    out = subprocess.run(["pgrep", "-f", "rtnet.daemon"], capture_output=True, text=True).stdout
    for pid in out.split():
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            assert b"rtn-ld-" not in f.read()


def test_demo_refuses_bad_arguments_without_leaving_anything():
    r = rtnetctl("lab", "up", "--name", "le", "--stations", "17")
    assert r.returncode == 1
    assert r.stderr.strip() == "rtnetctl: --stations 17: the demo runs 2..16 stations"
    assert not [n for n in pr_netns.listnetns() if n.startswith("rtn-le-")]


def test_lab_up_stopped_with_sigterm_takes_its_lab_down_as_ctrl_c_does():
    """Stopped early, it stops its demo's processes too: the vnic0 ping it started for the
    whole --duration (600 s) had kept it waiting for the rest of its time."""
    rc, err, left = terminate_when(
        [sys.executable, "-m", "rtnet.cli", "lab", "up", "--name", "lt", "--duration", "600"],
        # the live view's heading: the segment is up and running
        lambda line: line.split()[:2] == ["time", "msgs"],
        "rtn-lt-",
        lambda: rtnetctl("lab", "down", "--name", "lt"),
    )
    assert rc == 130, err[-500:]
    assert "rtnetctl: interrupted" in err
    assert left == []
