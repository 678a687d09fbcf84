"""tools/bench_sockperf.py on a small scale (root, a lab it makes): one run, one second per
measurement, kernel UDP and the NoMAC real-time path through rtnet-run, idle.  The run's
JSON has both columns with sockperf's figures, and sockperf's datagrams went through the
stack: the server station's UDP counter (rtnetctl status, ipv4.rx_udp) rose by at least
what sockperf's server says it received, and the client station's by at least the answers
sockperf's ping-pong counted.  No timing is asserted."""

import json
import os
import subprocess
import sys

import pytest
from conftest import require_tool

pytestmark = pytest.mark.netns

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_sockperf_goes_through_the_stack_and_the_json_has_the_columns(tmp_path):
    for tool in ("sockperf", "iperf3", "stdbuf", "rtnet-run", "cc"):
        require_tool(tool)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tools.bench_sockperf",
            "--runs",
            "1",
            "--seconds",
            "1",
            "--columns",
            "kernel,nomac",
            "--no-flood",
            "--out-dir",
            str(tmp_path),
            "--series",
            "t",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
    )
    out, _ = proc.communicate(timeout=240)
    assert proc.returncode == 0, out[-3000:]
    man = json.loads((tmp_path / "bench_sockperf" / "t" / "manifest.json").read_text())
    assert [r["status"] for r in man["runs"]] == ["ok"]
    res = json.loads(
        (tmp_path / "bench_sockperf" / "t" / "run-1" / "bench_sockperf.json").read_text()
    )
    assert set(res["columns"]) == {"kernel", "nomac"}
    s1, s2 = "rtn-spk-s1", "rtn-spk-s2"
    for col in ("kernel", "nomac"):
        idle = res["columns"][col]["idle"]
        pp = idle["pp"]
        assert pp["received"] > 0 and 0 < pp["p50"] <= pp["p99"] <= pp["p99.9"] <= pp["max"]
        for size in (64, 1024):
            tp = idle[f"tp{size}"]
            assert tp["sent"] > 0 and tp["msgs_per_s"] > 0 and tp["mbps"] > 0
        # what the server station's sockets got in the measurement windows covers every
        # datagram sockperf's server says it received (warm-ups included)
        key = "rx_udp" if col == "nomac" else "udp_in"
        # (a throughput attempt the interposer refused with ENOBUFS counts: it sent too)
        windows = [idle["pp"]["counters"]]
        for size in (64, 1024):
            windows += [idle[f"tp{size}"]["counters"], *idle[f"tp{size}"]["refused_counters"]]
        got = sum(w[s2][key] for w in windows)
        assert idle["server_received_total"] > 0
        assert got >= idle["server_received_total"], (col, got, idle["server_received_total"])
        # and the client station's, every answer sockperf's ping-pong counted
        assert pp["counters"][s1][key] >= pp["received"]
    # the real-time column really was the stack's: its RT threads sent and received them
    c = res["columns"]["nomac"]["idle"]["pp"]["counters"]
    assert c[s1]["nomac_tx"] >= res["columns"]["nomac"]["idle"]["pp"]["sent"]
    assert c[s2]["app_notifies"] > 0
    # the report's pieces: the targets' inputs and the baselines' check
    assert "nomac_over_kernel_p50" in res["derived"]
    assert "baseline_gap" in res["derived"]
    assert res["extra"]["posix_rt"]["samples"] > 0
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert "rtn-spk-" not in listed
    assert "Targets" in out
