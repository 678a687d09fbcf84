"""A benchmark stopped with SIGTERM (timeout, a CI runner, kill) takes its lab down, as on
Ctrl-C: `vnic bench` is stopped once its lab is up, and leaves no namespace behind."""

import os
import sys

import pytest
from conftest import require_tool, terminate_when
from pyroute2 import netns as pr_netns

from rtnet.lab import Lab

pytestmark = pytest.mark.netns

LAB = "vt"


def test_vnic_bench_stopped_with_sigterm_takes_its_lab_down(tmp_path):
    require_tool("iperf3")
    assert not [n for n in pr_netns.listnetns() if n.startswith(f"rtn-{LAB}-")], "a lab is up"
    argv = [sys.executable, "-m", "vnic.cli", "bench", "--lab", LAB, "--seconds", "5"]
    argv += ["--json", str(tmp_path / "v.json"), "--png", str(tmp_path / "v.png")]
    rc, err, left = terminate_when(
        argv,
        # the first measurement's line: the lab is built and iperf3 runs in it
        lambda line: line.startswith("kernel") and "iperf3" in line,
        f"rtn-{LAB}-",
        Lab(LAB, 2).down,
    )
    assert rc == 130, err[-500:]
    assert f"vnic: bench interrupted; lab {LAB} taken down" in err
    assert left == []
    assert not os.path.exists(tmp_path / "v.json")  # nothing half-measured is written
