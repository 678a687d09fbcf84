"""RTcfg served by rtnetd in a three-station lab: slots handed out, barriers, a dead station.

Station 1 is the TDMA master and the RTcfg server; stations 2 and 3 start as
TDMA slaves without a slot and get theirs from their stage-1 files.  The
wire is captured and written as pcap for tshark's RTcfg dissector.
"""

import os
import signal
import struct
import subprocess
import threading
import time

import pytest
from conftest import daemon_lab, skip_or_fail, station_toml, wait_for

from rtmac import control
from rtnet import cli, paths
from rtnet.clocks import realtime_minus_monotonic_ns
from rtnet.rtcfg import cli as rtcfg_cli
from rtnet.rtcfg.server import ConnState

pytestmark = pytest.mark.netns

LAB = "rcfg"
PERIOD_MS, HEARTBEAT_MS, THRESHOLD = 200, 500, 2
LOOSE = 3  # bounds on times are this many times what they should be

MASTER = station_toml("rtcfg-server", role="master", cycle_us=1000, offset_us=0)
SLAVE = station_toml("rtcfg-client", role="slave")  # no slot: stage 1 gives it one


@pytest.fixture(scope="module")
def lab():
    yield from daemon_lab(LAB, 3)


def rtcfg(ns, *argv) -> int:
    return rtcfg_cli.main(["-n", ns, "rteth0", *argv])


def in_thread(ns, *argv):
    """A blocking rtcfg command in its own thread; the returned call joins it (exit status)."""
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("rc", rtcfg(ns, *argv)), daemon=True)
    t.start()

    def result(timeout=30.0):
        t.join(timeout)
        assert not t.is_alive(), f"rtcfg {' '.join(argv)} in {ns} did not return"
        return out["rc"]

    return result


def show(ns) -> dict:
    return control.send_request("rteth0", {"cmd": "tdma.show"}, netns=ns)


def rtcfg_status(ns) -> dict:
    return control.send_request("rteth0", {"cmd": "status"}, netns=ns)["status"]["rtcfg"]


def server_state(ns, ip) -> str:
    return next(s["state"] for s in rtcfg_status(ns)["stations"] if s["ip"] == ip)


def write_pcap(path, frames) -> None:
    """Classic pcap (Ethernet), microsecond stamps."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        rt_minus_mono = realtime_minus_monotonic_ns()
        for c in frames:
            ts = c.ts_ns + rt_minus_mono
            f.write(struct.pack("<IIII", ts // 10**9, ts % 10**9 // 1000, len(c.data), len(c.data)))
            f.write(c.data)


def test_rtcfg_configures_two_slaves_and_readmits_a_dead_one(lab, tmp_path):
    from rtnet.wirecap import WireCapture

    s1, s2, s3 = (st.netns for st in lab.stations)
    ip2, ip3 = lab.station(2).ip, lab.station(3).ip
    confs = {}
    for name, text in (("m", MASTER), ("s", SLAVE)):
        confs[name] = tmp_path / f"{name}.toml"
        confs[name].write_text(text)
    stage1 = {}
    for ip, offset in ((ip2, 400), (ip3, 600)):
        stage1[ip] = tmp_path / f"{ip}.stage1"
        stage1[ip].write_text(f"tdma slot 0 {offset}\n")

    with WireCapture(lab.wire_netns, ethertypes={0x9022}) as cap:
        assert cli.main(["up", "-n", s1, "-c", str(confs["m"])]) == 0
        for ns in (s2, s3):
            assert cli.main(["up", "-n", ns, "-c", str(confs["s"])]) == 0
            assert show(ns)["config"]["slots"] == []
        assert (
            rtcfg(s1, "server", "-p", str(PERIOD_MS), "-h", str(HEARTBEAT_MS), "-t", str(THRESHOLD))
            == 0
        )
        for ip in (ip2, ip3):
            assert rtcfg(s1, "add", ip, "-stage1", str(stage1[ip])) == 0

        clients = [in_thread(ns, "client", "-t", "20000") for ns in (s2, s3)]
        assert [c() for c in clients] == [0, 0]
        for ns, offset in ((s2, 400), (s3, 600)):
            slots = show(ns)["config"]["slots"]
            assert [(x["id"], x["offset_us"]) for x in slots] == [(0, offset)]

        waited = in_thread(s1, "wait", "-t", "20000")
        announced = [in_thread(ns, "announce", "-t", "20000") for ns in (s2, s3)]
        assert [a() for a in announced] == [0, 0] and waited() == 0
        readies = [in_thread(ns, "ready", "-t", "20000") for ns in (s1, s2, s3)]
        assert [r() for r in readies] == [0, 0, 0]
        assert {s["state"] for s in rtcfg_status(s1)["stations"]} == {ConnState.READY}

        # station 3's rtnetd dies: the server holds it for dead after heartbeat x threshold
        pid = int(open(paths.pid_file("rteth0", s3)).read())
        os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        wait_for(
            lambda: server_state(s1, ip3) == ConnState.DEAD,
            LOOSE * (HEARTBEAT_MS * THRESHOLD + PERIOD_MS) / 1000,
            "station 3 dead",
            interval=0.05,
        )  # the daemons are other processes: poll their status
        assert time.monotonic() - killed >= HEARTBEAT_MS * (THRESHOLD - 1) / 1000
        assert server_state(s1, ip2) == ConnState.READY

        # restarted as a client it is readmitted
        from rtnet.procs import running

        wait_for(lambda: not running(pid), 10, "the killed daemon gone", interval=0.05)
        assert cli.main(["up", "-n", s3, "-c", str(confs["s"])]) == 0
        assert rtcfg(s3, "client", "-t", "20000") == 0
        assert rtcfg(s3, "announce", "-t", "20000") == 0
        assert rtcfg(s3, "ready", "-t", "20000") == 0
        wait_for(
            lambda: server_state(s1, ip3) == ConnState.READY,
            10,
            "station 3 readmitted",
            interval=0.05,
        )
        for ns in (s1, s2, s3):
            assert cli.main(["down", "-n", ns]) == 0

    pcap = tmp_path / "rtcfg.pcap"
    write_pcap(pcap, cap.frames)
    kinds = subprocess.run(
        ["tshark", "-r", str(pcap), "-T", "fields", "-e", "rtcfg.id"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if kinds.returncode != 0 and "rtcfg.id" in kinds.stderr:
        skip_or_fail("this tshark has no RTcfg dissector")
    assert kinds.returncode == 0, kinds.stderr
    ids = {line for line in kinds.stdout.split() if line}
    assert len(ids) >= 6, f"RTcfg frame kinds seen on the wire: {sorted(ids)}"
    malformed = subprocess.run(
        ["tshark", "-r", str(pcap), "-Y", "_ws.malformed"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert malformed.returncode == 0 and malformed.stdout == "", malformed.stdout[:2000]
