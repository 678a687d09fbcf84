"""A benchmark stopped with SIGTERM (timeout, a CI runner, kill) takes its lab down, as on
Ctrl-C: `vnic bench` is stopped once its lab is up, and leaves no namespace behind."""

import os
import subprocess
import sys

import pytest
from conftest import require_tool

from rtnet.lab import Lab

pytestmark = pytest.mark.netns

LAB = "vt"


def lab_namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(f"rtn-{LAB}-")]


def test_vnic_bench_stopped_with_sigterm_takes_its_lab_down(tmp_path):
    require_tool("iperf3")
    assert lab_namespaces() == [], "a lab of this name is up already"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vnic.cli",
            "bench",
            "--lab",
            LAB,
            "--seconds",
            "5",
            "--json",
            str(tmp_path / "v.json"),
            "--png",
            str(tmp_path / "v.png"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # the first measurement's line: the lab is built and iperf3 runs in it
        for line in proc.stdout:
            if line.startswith("kernel") and "iperf3" in line:
                break
        else:
            pytest.fail(f"vnic bench ended before measuring: {proc.stderr.read()[-500:]}")
        assert lab_namespaces(), "the lab should be up while the bench measures"
        proc.terminate()
        rc = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        left = lab_namespaces()
        if left:  # what a failing bench left, taken down before the assertions say so
            Lab(LAB, 2).down()
    err = proc.stderr.read()
    assert rc == 130, err[-500:]
    assert f"vnic: bench interrupted; lab {LAB} taken down" in err
    assert left == []
    assert not os.path.exists(tmp_path / "v.json")  # nothing half-measured is written
