"""The default demo lab is a complete RTnet IP segment: every rtnetd has its real-time
address 198.18.0.N and the others in its neighbour table (rtroute -f), so a station's
ping to another's address is ICMP echo on the real-time path, seen on the wire as good
ICMP; and `rtnetctl lab down` leaves no namespace, link or process behind."""

import json
import os
import select
import subprocess
import sys
import time

import pytest
from conftest import require_tool
from pyroute2 import IPRoute
from pyroute2 import netns as pr_netns

from rtnet import netns, procs
from rtnet.lab import RUN_DIR
from rtnet.tdma_stats import TdmaState

pytestmark = pytest.mark.netns

LAB = "li"
N = 3
PING_COUNT = 5


def rtnetctl(*args, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "rtnet.cli", *args], capture_output=True, text=True, timeout=timeout
    )


def ns(i: int) -> str:
    return f"rtn-{LAB}-s{i}"


def icmp_counters(i: int) -> dict:
    r = rtnetctl("-j", "-n", ns(i), "status")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["ipv4"]


@pytest.fixture(scope="module")
def demo():
    rtnetctl("lab", "down", "--name", LAB)  # a left-over of an interrupted run
    r = rtnetctl("-j", "lab", "up", "--name", LAB, "--stations", str(N), "--duration", "1")
    try:
        assert r.returncode == 0, r.stderr
        yield json.loads(r.stdout)
    finally:
        rtnetctl("lab", "down", "--name", LAB)


def start_capture(path: str, count: int) -> subprocess.Popen:
    """tshark on the wire's bridge (promiscuous: the bridge hands it every frame it
    forwards), ICMP and the echo service's EtherType, until ``count`` frames; returns once
    tshark says it is capturing."""
    tshark = require_tool("tshark")
    proc = subprocess.Popen(
        netns.command(
            f"rtn-{LAB}-wire",
            [
                tshark,
                "-i",
                "rtbr0",
                "-f",
                "icmp or ether proto 0x88b6",
                "-c",
                str(count),
                "-w",
                path,
            ],
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 20
    seen = ""
    while "Capturing on" not in seen:
        left = deadline - time.monotonic()
        if left <= 0 or proc.poll() is not None:
            proc.kill()
            pytest.fail(f"tshark did not start capturing: {seen!r}")
        if select.select([proc.stderr], [], [], left)[0]:
            seen += proc.stderr.readline()
    return proc


def test_the_demo_pings_over_icmp_and_every_station_knows_the_others(demo):
    assert [s["state"] for s in demo["stations"]] == [
        TdmaState.MASTER,
        TdmaState.BACKUP_STANDBY,
        TdmaState.SYNCED,
    ]
    assert demo["rt_ping"]["dst"] == f"198.18.0.{N}" and demo["rt_ping"]["received"] == 3
    assert demo["rt_ping"]["answered_by_rt_thread"] == 3
    for i in range(1, N + 1):
        r = rtnetctl("-j", "-n", ns(i), "status")
        ipv4 = json.loads(r.stdout)["ipv4"]
        assert ipv4["address"] == f"198.18.0.{i}"
        assert ipv4["neighbours"] == [
            {"ip": f"198.18.0.{j}", "mac": f"02:52:54:00:00:{j:02x}"}
            for j in range(1, N + 1)
            if j != i
        ]
    # the demo's own pings reached the last station's RT thread as ICMP echo requests
    assert icmp_counters(N)["rx_echo_request"] >= 3


def test_rtnetctl_ping_is_icmp_echo_on_the_real_time_path(demo, tmp_path):
    src, dst = icmp_counters(1), icmp_counters(N)
    pcap = str(tmp_path / "wire.pcapng")
    cap = start_capture(pcap, 2 * PING_COUNT)
    try:
        r = rtnetctl("-n", ns(1), "ping", f"198.18.0.{N}", "-c", str(PING_COUNT), "-i", "50")
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"{PING_COUNT} packets transmitted, {PING_COUNT} received" in r.stdout
        cap.wait(timeout=20)  # it stops by itself at the requests and replies
    finally:
        if cap.poll() is None:
            cap.kill()
            cap.wait()
    src2, dst2 = icmp_counters(1), icmp_counters(N)
    # the target's RT thread took every request and answered each; the source's took the
    # replies; nothing was refused
    assert dst2["rx_echo_request"] - dst["rx_echo_request"] == PING_COUNT
    assert dst2["tx_echo_reply"] - dst["tx_echo_reply"] == PING_COUNT
    assert src2["rx_echo_reply"] - src["rx_echo_reply"] == PING_COUNT
    assert sum(src2["bad"].values()) == sum(src["bad"].values())
    assert sum(dst2["bad"].values()) == sum(dst["bad"].values())
    fields = [
        "eth.type",
        "ip.src",
        "ip.dst",
        "icmp.type",
        "icmp.code",
        "icmp.ident",
        "icmp.seq",
        "ip.checksum.status",
        "icmp.checksum.status",
        "ip.len",
        "ip.ttl",
        "_ws.malformed",
        "_ws.expert.severity",
    ]
    res = subprocess.run(
        [
            "tshark",
            "-r",
            pcap,
            "-o",
            "ip.check_checksum:TRUE",
            "-T",
            "fields",
            "-E",
            "separator=|",
            *sum((["-e", f] for f in fields), []),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    rows = [dict(zip(fields, line.split("|"))) for line in res.stdout.splitlines()]
    assert len(rows) == 2 * PING_COUNT, res.stdout
    requests = [r for r in rows if r["icmp.type"] == "8"]
    replies = [r for r in rows if r["icmp.type"] == "0"]
    assert [(r["ip.src"], r["ip.dst"]) for r in requests] == [
        ("198.18.0.1", f"198.18.0.{N}")
    ] * PING_COUNT
    assert [(r["ip.src"], r["ip.dst"]) for r in replies] == [
        (f"198.18.0.{N}", "198.18.0.1")
    ] * PING_COUNT
    assert sorted(int(r["icmp.seq"]) for r in requests) == list(range(1, PING_COUNT + 1))
    assert sorted(int(r["icmp.seq"]) for r in replies) == list(range(1, PING_COUNT + 1))
    assert len({r["icmp.ident"] for r in rows}) == 1
    for r in rows:
        assert r["eth.type"] == "0x0800" and r["icmp.code"] == "0", r
        assert r["ip.len"] == str(20 + 8 + 56) and r["ip.ttl"] == "64", r
        assert r["ip.checksum.status"] == "1" and r["icmp.checksum.status"] == "1", r  # good
        assert r["_ws.malformed"] == "" and r["_ws.expert.severity"] == "", r


def test_lab_up_on_a_running_lab_is_one_error_and_leaves_it_running(demo):
    spaces = sorted(n for n in pr_netns.listnetns() if n.startswith(f"rtn-{LAB}-"))
    for extra in ([], ["--redundant"]):
        r = rtnetctl("lab", "up", "--name", LAB, *extra)
        assert r.returncode == 1 and r.stdout == ""
        assert (
            r.stderr == f"rtnetctl: lab '{LAB}' already exists (rtnetctl lab down --name "
            f"{LAB} removes it)\n"
        )
    assert sorted(n for n in pr_netns.listnetns() if n.startswith(f"rtn-{LAB}-")) == spaces
    assert icmp_counters(1)["address"] == "198.18.0.1"  # its daemons still answer


def test_lab_down_leaves_no_namespace_link_or_process(demo):
    status = json.loads(rtnetctl("-j", "lab", "status", "--name", LAB).stdout)[0]
    pids = [p["pid"] for p in status["processes"]]
    assert len(pids) == N, status["processes"]  # one rtnetd per station
    with IPRoute() as ipr:
        links_before = {link.get_attr("IFLA_IFNAME") for link in ipr.get_links()}
    down = rtnetctl("lab", "down", "--name", LAB)
    assert down.returncode == 0, down.stderr
    assert not [n for n in pr_netns.listnetns() if n.startswith(f"rtn-{LAB}-")]
    assert not [p for p in pids if procs.running(p)]
    assert not os.path.exists(os.path.join(RUN_DIR, f"lab-{LAB}"))
    with IPRoute() as ipr:  # the lab never had a link here, and has none now
        assert {link.get_attr("IFLA_IFNAME") for link in ipr.get_links()} <= links_before
    for i in range(1, N + 1):
        d = os.path.join(RUN_DIR, ns(i))
        assert not os.path.exists(d) or all(f.endswith(".log") for f in os.listdir(d))
    again = rtnetctl("lab", "down", "--name", LAB)
    assert again.returncode == 0 and "nothing to remove" in again.stdout
