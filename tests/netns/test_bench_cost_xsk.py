"""tools/bench_cost.py's AF_XDP stages on a small scale (root, a namespace it makes):
the minimal AF_XDP loop and the station's socket code count the same
instructions per frame on two passes, the XDP program's figures are there, and
the namespace with its veth pair is gone afterwards."""

import json
import os
import subprocess
import sys

import pytest
from conftest import require_tool

pytestmark = pytest.mark.netns

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_socket_stages_repeat_and_clean_up(tmp_path):
    require_tool("valgrind")
    require_tool("clang")
    r = subprocess.run(
        ["make", "-s", "-C", os.path.join(ROOT, "csrc"), "cost"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    out = tmp_path / "cost.json"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tools.bench_cost",
            "--no-build",
            "--stages",
            "anchor,rtn_xsk_send,rtn_xsk_recv",
            "--frames",
            "50",
            "--repeat",
            "2",
            "--xdp-repeat",
            "1000",
            "--out",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    stdout, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 0, stdout[-2000:] + stderr[-2000:]
    res = json.loads(out.read_text())
    assert res["repeat_agrees"] is True
    for name in ("anchor", "rtn_xsk_send", "rtn_xsk_recv"):
        st = res["stages"][name]
        assert st["units"] == 50 and st["ir_per_unit"] > 0
        a, b = st["passes"]
        assert abs(a - b) <= 0.01 * min(a, b)
    # one sendto() per frame sent, by the anchor and by rtn_xsk
    assert res["stages"]["anchor"]["per_unit"]["sendto_kicks"] == 1
    assert res["stages"]["rtn_xsk_send"]["per_unit"]["sendto_kicks"] == 1
    assert res["xdp_prog"]["xlated_insns"] > 0 and res["xdp_prog"]["rt_frame_ns"] > 0
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"rtn-cost-{proc.pid}" not in listed
