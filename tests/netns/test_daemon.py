"""rtnetd and rtnetctl in a two-station lab: life cycle, control socket, TDMA, ping, capture."""

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import textwrap
import time

import pytest
from conftest import daemon_lab, require_tool, station_toml, wait_for

from rtnet import cli, netns, paths
from rtnet._lowlevel import lib
from rtnet.tdma_stats import TdmaState

pytestmark = pytest.mark.netns

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

MASTER = station_toml("m", role="master", cycle_us=1000, cal_rounds=10, offset_us=0)
SLAVE = station_toml(
    "sl", role="slave", cal_rounds=10, offset_us=400, control={"status_group": "nogroup"}
)


@pytest.fixture(scope="module")
def lab():
    yield from daemon_lab("d1", 2)


@pytest.fixture
def conf(tmp_path):
    def write(name, text):
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return str(path)

    return write


@pytest.fixture
def stations(lab):
    yield lab.stations
    for st in lab.stations:
        assert cli.main(["down", "-n", st.netns]) == 0


def ctl(capsys, *argv):
    capsys.readouterr()
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def raw(ns, payload: bytes, timeout=10.0) -> list:
    """Send raw bytes to a daemon, return the reply lines as parsed JSON."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(timeout)
        s.connect(paths.control_socket("rteth0", ns))
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return [json.loads(line) for line in data.splitlines()]


def status(capsys, ns) -> dict:
    rc, out, err = ctl(capsys, "status", "-n", ns, "-j")
    assert rc == 0, err
    return json.loads(out)


def xdp_programs(ns) -> int:
    with netns.entered(ns):
        return lib.rtn_xdp_attached(b"rteth0")


def wait_state(capsys, ns, want, timeout=15.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        st = status(capsys, ns)
        if st["tdma"] and st["tdma"]["state"] == want:
            return st
        assert time.monotonic() < deadline, f"{ns}: state {st['tdma'] and st['tdma']['state']}"
        time.sleep(0.1)  # the engine runs in another process: poll its state


def wait_dead(pid: int) -> None:
    """Until ``pid`` is gone or a zombie (rtnetctl up started it from this process)."""
    from rtnet.procs import running

    while running(pid):
        time.sleep(0.02)  # SIGKILL is asynchronous; no wait() on a daemonised process


def test_up_status_down(capsys, stations, conf):
    ns = stations[0].netns
    rc, out, err = ctl(capsys, "up", "-n", ns, "-c", conf("m.toml", MASTER))
    assert rc == 0, err
    assert "rtnetd running" in out
    sock, pid = paths.control_socket("rteth0", ns), paths.pid_file("rteth0", ns)
    assert os.stat(sock).st_mode & 0o777 == 0o600
    assert xdp_programs(ns) == 1
    st = status(capsys, ns)
    assert st["discipline"] == "tdma" and st["tdma"]["role"] == "master"
    assert st["daemon"]["pid"] == int(open(pid).read())
    assert st["wakeup"]["summary_us"]["count"] > 0
    rc, out, _ = ctl(capsys, "status", "-n", ns)
    assert rc == 0 and "TDMA master" in out and "wake-up latency" in out
    # where the kernel refused the XDP program its metadata, the text says where stamps come from
    assert ("receive stamps at poll time" in out) == (not st["xsk"]["xdp_stamps"])
    assert "sync error: - (no samples: the master's own clock" in out
    rc, out, err = ctl(capsys, "down", "-n", ns)
    assert rc == 0 and "stopped" in out, err
    assert not os.path.exists(sock) and not os.path.exists(pid)
    assert xdp_programs(ns) == 0
    rc, _, err = ctl(capsys, "status", "-n", ns)
    assert rc == 1 and "no rtnetd running" in err


def test_config_error_starts_nothing(capsys, stations, conf):
    ns = stations[0].netns
    path = conf(
        "bad.toml", station_toml("m", role="master", cycle_us=50, cal_rounds=10, offset_us=0)
    )
    rc, _, err = ctl(capsys, "up", "-n", ns, "-c", path)
    assert rc == 1
    assert err.strip() == (
        f"rtnetctl: {path}: tdma.cycle_us: 50 outside the supported range 100..1000000"
    )
    assert not os.path.exists(paths.pid_file("rteth0", ns))
    assert not os.path.exists(paths.control_socket("rteth0", ns))
    assert xdp_programs(ns) == 0


def test_zero_copy_demanded_where_the_driver_has_none_is_refused_with_one_line(
    capsys, stations, conf
):
    ns = stations[0].netns
    path = conf("zc.toml", MASTER.replace("[station]\n", '[station]\nzerocopy = "on"\n', 1))
    rc, _, err = ctl(capsys, "up", "-n", ns, "-c", path)
    assert rc == 1
    assert len(err.strip().splitlines()) == 1
    assert "rteth0: driver has no AF_XDP zero-copy support" in err
    # nothing left half-configured: no daemon, no control socket, no XDP program
    assert not os.path.exists(paths.pid_file("rteth0", ns))
    assert not os.path.exists(paths.control_socket("rteth0", ns))
    assert xdp_programs(ns) == 0
    # and "off" runs in copy mode, said in the status
    path = conf("copy.toml", MASTER.replace("[station]\n", '[station]\nzerocopy = "off"\n', 1))
    rc, _, err = ctl(capsys, "up", "-n", ns, "-c", path)
    assert rc == 0, err
    try:
        assert status(capsys, ns)["xsk"]["zerocopy"] is False
    finally:
        assert ctl(capsys, "down", "-n", ns)[0] == 0


def test_rtnet_conf_runs_the_same_schedule_as_toml(capsys, stations, conf):
    from rtnet import config

    ns = stations[0].netns
    rc, _, err = ctl(
        capsys,
        "up",
        "-n",
        ns,
        "--no-rtcfg",
        "-c",
        conf(
            "rtnet.conf",
            """\
        IPADDR="198.18.0.1"
        TDMA_MODE="master"
        TDMA_CYCLE="1000"
        TDMA_CAL_ROUNDS="10"
        """,
        ),
    )
    assert rc == 0, err
    toml_cfg = config.parse_toml(MASTER)
    with netns.entered(ns):
        from rtmac import control

        shown = control.send_request("rteth0", {"cmd": "tdma.show"})
    assert shown["config"] == toml_cfg.tdma.to_dict()
    assert shown["state"] == TdmaState.MASTER


def test_master_slave_sync_rtmac_ping_capture(capsys, stations, conf, tmp_path):
    from rtmac import cli as rtmac_cli

    m, s = stations[0].netns, stations[1].netns
    assert ctl(capsys, "up", "-n", m, "-c", conf("m.toml", MASTER))[0] == 0
    assert ctl(capsys, "up", "-n", s, "-c", conf("s.toml", SLAVE))[0] == 0
    st = wait_state(capsys, s, TdmaState.SYNCED)
    assert st["tdma"]["calibration"]["done"] == 10
    # the lab's master runs on this host, so the status shows the sync error against it
    # and the Syncs' one-way delay (the error's cause) once the first samples are in
    deadline = time.monotonic() + 5
    while status(capsys, s)["tdma"]["sync_error"]["summary_us"]["count"] == 0:
        assert time.monotonic() < deadline, "no sync error sample"
        time.sleep(0.05)  # the engine runs in another process: poll its counters
    rc, out, _ = ctl(capsys, "status", "-n", s)
    assert rc == 0 and "sync error: avg" in out and "the Syncs' delay p50" in out, out

    # rtmac slot changes reach the running daemon; a bad one is refused, schedule intact
    with netns.entered(s):
        assert rtmac_cli.main(["tdma", "rteth0", "slot", "1", "600", "-s", "200"]) == 0
        capsys.readouterr()
        assert rtmac_cli.main(["tdma", "rteth0", "slot", "2", "450"]) == 1
        err = capsys.readouterr().err
        assert "overlaps slot 0" in err
        assert rtmac_cli.main(["tdma", "rteth0", "show", "-j"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [(x["id"], x["offset_us"], x["size"]) for x in shown["config"]["slots"]] == [
        (0, 400, 1500),
        (1, 600, 200),
    ]
    assert shown["state"] == TdmaState.SYNCED

    # ping by IP (broadcast, then the learnt MAC) and by MAC, through the slots
    rc, out, err = ctl(capsys, "ping", "-n", m, "198.18.0.2", "-c", "3", "-i", "20")
    assert rc == 0, err
    assert out.count("time=") == 3 and "from 02:52:54:00:00:02" in out
    assert "worst case rtt" in out
    rc, out, _ = ctl(capsys, "ping", "-n", s, stations[0].mac, "-c", "2", "-i", "20", "-j")
    res = json.loads(out)
    assert rc == 0 and res["received"] == 2
    assert 0 < res["worst_us"] < 1_000_000
    rc, out, _ = ctl(capsys, "ping", "-n", m, "198.18.0.77", "-c", "1", "-t", "100")
    assert rc == 1 and "0 received" in out

    # capture: the RT path's frames as pcapng
    pcap = tmp_path / "c.pcapng"
    rc, out, err = ctl(capsys, "capture", "-n", s, "-w", str(pcap), "-c", "10", "-t", "5")
    assert rc == 0 and out.startswith("10 frames"), err
    from scapy.utils import rdpcap

    frames = rdpcap(str(pcap))
    assert len(frames) == 10
    types = {int.from_bytes(bytes(f)[12:14], "big") for f in frames}
    assert 0x9021 in types
    tshark = (
        subprocess.run(["tshark", "-r", str(pcap)], capture_output=True, text=True)
        if os.path.exists("/usr/bin/tshark")
        else None
    )
    if tshark is not None:
        assert tshark.returncode == 0 and "TDMA" in tshark.stdout


CAPTURE_FIELDS = (
    "frame.time_epoch",
    "frame.packet_flags_direction",
    "eth.type",
    "tdma.id",
    "tdma.sync.xmit_stamp",
    "tdma.sync.sched_xmit",
    "frame.comment",
    "_ws.malformed",
    "_ws.expert.severity",
)
OUTBOUND, INBOUND = "0x00000002", "0x00000001"
PI_WARN = 0x00600000  # Wireshark's expert severities: comment < chat < note < warn < error


def decoded(tmp_path, name: str, reply: dict) -> list[dict]:
    """The capture reply's pcapng, as tshark's dissectors (RTmac/TDMA included) read it."""
    import base64

    path = tmp_path / name
    path.write_bytes(base64.b64decode(reply["pcapng_b64"]))
    res = subprocess.run(
        [
            "tshark",
            "-r",
            str(path),
            "-T",
            "fields",
            "-E",
            "aggregator=,",
            *[a for f in CAPTURE_FIELDS for a in ("-e", f)],
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    return [dict(zip(CAPTURE_FIELDS, line.split("\t"))) for line in res.stdout.splitlines()]


def test_capture_inside_the_stack_should_see_sync_and_application_frames_both_ways(
    capsys, stations, conf, tmp_path
):
    import threading

    from rtnet import stationctl

    require_tool("tshark")
    m, s = stations[0].netns, stations[1].netns
    assert ctl(capsys, "up", "-n", m, "-c", conf("m.toml", MASTER))[0] == 0
    assert ctl(capsys, "up", "-n", s, "-c", conf("s.toml", SLAVE))[0] == 0
    wait_state(capsys, s, TdmaState.SYNCED)
    before = {ns: status(capsys, ns)["capture"]["frames"] for ns in (m, s)}
    replies = {}

    def capture(ns):
        replies[ns] = stationctl.request(
            "rteth0", {"cmd": "capture", "count": 10_000, "duration_ms": 2000}, netns=ns, timeout=20
        )

    threads = [threading.Thread(target=capture, args=(ns,)) for ns in (m, s)]
    for th in threads:
        th.start()
    # both rings are on once their counters move (the master's Sync goes out every cycle)
    for ns in (m, s):  # the capture starts in the daemon's process
        wait_for(
            lambda ns=ns: status(capsys, ns)["capture"]["frames"] != before[ns],
            5,
            f"the capture in {ns} to start",
            interval=0.01,
        )
    rc, out, err = ctl(capsys, "ping", "-n", m, stations[1].mac, "-c", "3", "-i", "20")
    assert rc == 0 and out.count("time=") == 3, err
    for th in threads:
        th.join(30)
    now = time.time()
    for ns, sent_sync in ((m, True), (s, False)):
        reply = replies[ns]
        assert reply["dropped"] == 0 and reply["frames"] > 100
        rows = decoded(tmp_path, f"{ns}.pcapng", reply)
        assert len(rows) == reply["frames"]
        # nothing malformed, no dissector warning (the packet comment is an expert comment)
        assert all(r["_ws.malformed"] == "" for r in rows)
        assert all(
            int(sev) < PI_WARN for r in rows for sev in r["_ws.expert.severity"].split(",") if sev
        )
        assert all(abs(float(r["frame.time_epoch"]) - now) < 60 for r in rows)
        syncs = [r for r in rows if r["eth.type"] == "0x9021" and r["tdma.id"] == "0x0000"]
        echo = {(r["frame.packet_flags_direction"]) for r in rows if r["eth.type"] == "0x88b6"}
        assert len(syncs) > 100
        assert echo == {OUTBOUND, INBOUND}  # request and reply, one each way
        want = OUTBOUND if sent_sync else INBOUND
        assert {r["frame.packet_flags_direction"] for r in syncs} == {want}
        for r in syncs:
            if sent_sync:
                # the stack's own stamps are the Sync's: hand-over = its transmission stamp,
                # scheduled time = its scheduled transmission time
                assert r["frame.comment"] == (
                    f"rtnet tx handover={r['tdma.sync.xmit_stamp']} "
                    f"sched={r['tdma.sync.sched_xmit']}"
                )
            else:
                assert r["frame.comment"].startswith("rtnet rx xdp=")
    st = status(capsys, m)
    assert st["capture"]["drops"] == 0


def test_capture_into_a_tiny_ring_should_count_drops_and_leave_tdma_alone(
    capsys, stations, conf, tmp_path
):
    m, s = stations[0].netns, stations[1].netns
    assert ctl(capsys, "up", "-n", m, "-c", conf("m.toml", MASTER))[0] == 0
    assert ctl(capsys, "up", "-n", s, "-c", conf("s.toml", SLAVE))[0] == 0
    wait_state(capsys, s, TdmaState.SYNCED)
    path = tmp_path / "tiny.pcapng"
    # a Sync every millisecond, the ring emptied every few: two entries cannot keep up
    rc, out, err = ctl(
        capsys, "capture", "-n", m, "-w", str(path), "-c", "10000", "-t", "0.5", "-B", "2", "-j"
    )
    assert rc == 0, err
    res = json.loads(out)
    assert res["dropped"] > 0 and 0 < res["frames"] <= 10000
    assert status(capsys, m)["capture"]["drops"] == res["dropped"]
    from scapy.utils import rdpcap

    assert len(rdpcap(str(path))) == res["frames"]
    assert status(capsys, s)["tdma"]["state"] == TdmaState.SYNCED


def _as_nobody(ns, request: dict) -> str:
    """Fork, drop to uid/gid 65534 (nobody/nogroup), connect and return the reply or error."""
    path = paths.control_socket("rteth0", ns)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: only plain system calls until _exit
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(10)
            try:
                s.connect(path)
            except PermissionError:
                os.write(w, b"PermissionError")
                os._exit(0)
            s.sendall(json.dumps(request).encode() + b"\n")
            os.write(w, s.makefile("rb").readline().strip())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        out = f.read().decode()
    os.waitpid(pid, 0)
    return out


def test_control_socket_checks_the_peer(capsys, stations, conf):
    m, s = stations[0].netns, stations[1].netns
    assert ctl(capsys, "up", "-n", m, "-c", conf("m.toml", MASTER))[0] == 0
    assert ctl(capsys, "up", "-n", s, "-c", conf("s.toml", SLAVE))[0] == 0
    # 0600: nobody cannot even connect
    assert _as_nobody(m, {"cmd": "status"}) == "PermissionError"
    # status_group: reading works, changing is refused
    sock = os.stat(paths.control_socket("rteth0", s))
    assert sock.st_mode & 0o777 == 0o660 and sock.st_gid == 65534
    reply = json.loads(_as_nobody(s, {"cmd": "status"}))
    assert reply["ok"] and reply["status"]["tdma"]["role"] == "slave"
    reply = json.loads(_as_nobody(s, {"cmd": "tdma.slot", "id": 1, "offset_us": 600}))
    assert reply == {"ok": False, "error": reply["error"]} and "permission denied" in reply["error"]
    with netns.entered(s):
        from rtmac import control

        assert [
            x["id"] for x in control.send_request("rteth0", {"cmd": "tdma.show"})["config"]["slots"]
        ] == [0]


def test_bad_requests_get_one_line_errors(capsys, stations, conf):
    ns = stations[0].netns
    assert ctl(capsys, "up", "-n", ns, "-c", conf("m.toml", MASTER))[0] == 0
    daemons_own = [(c["id"], c["ethertype"]) for c in status(capsys, ns)["channels"]]
    cases = [
        b"garbage\n",
        b"\xff\xfe\n",
        b"[1, 2]\n",
        b'{"cmd": "reboot"}\n',
        b'{"nocmd": 1}\n',
        b'{"cmd": "tdma.slot", "id": "x", "offset_us": 5}\n',
        b'{"cmd": "tdma.slot", "id": 1}\n',
        b'{"cmd": "tdma.master", "cycle_us": "fast"}\n',
        b'{"cmd": "ping", "dst": 5}\n',
        b'{"cmd": "capture", "count": -1}\n',
        b'{"cmd": "channel.open", "ethertype": 2048}\n',
        b'{"cmd": "channel.open", "udp_port": 5000, "share": 4}\n',
        b'{"cmd": "channel.open", "udp_port": 5000, "share": true}\n',
        # a lifetime: whole microseconds, 0 (never) up to 10 s
        b'{"cmd": "channel.open", "ethertype": 34997, "lifetime_us": -1}\n',
        b'{"cmd": "channel.open", "ethertype": 34997, "lifetime_us": 10000001}\n',
        b'{"cmd": "channel.open", "ethertype": 34997, "lifetime_us": 1.5}\n',
        b'{"cmd": "channel.open", "ethertype": 34997, "lifetime_us": "1ms"}\n',
        b'{"cmd": "channel.open", "udp_port": 5000, "lifetime_us": true}\n',
        b'{"cmd": "status", "dev": "eth7"}\n',
        b'{"cmd": "tdma.misses", "from": -1}\n',
        b'{"cmd": "tdma.misses", "from": 18446744073709551616}\n',
        b'{"cmd": "tdma.misses", "from": "0"}\n',
    ]
    for payload in cases:
        replies = raw(ns, payload)
        assert len(replies) == 1 and replies[0]["ok"] is False, payload
        assert isinstance(replies[0]["error"], str) and "\n" not in replies[0]["error"]
    # oversized, with and without a newline: one error, then the connection ends
    for payload in (b"{" + b" " * 70000 + b"}\n", b"x" * 200_000):
        replies = raw(ns, payload)
        assert len(replies) == 1 and "longer than 65536" in replies[0]["error"]
    # several requests on one connection are answered in order
    replies = raw(ns, b'{"cmd": "tdma.show"}\nnope\n{"cmd": "status"}\n')
    assert [r["ok"] for r in replies] == [True, False, True]
    # the RT thread's miss records: a list and where the next read starts
    got = raw(ns, b'{"cmd": "tdma.misses", "from": 0}\n')[0]
    assert got["ok"] and isinstance(got["misses"], list) and got["next"] >= len(got["misses"])
    st = status(capsys, ns)
    assert st["tdma"]["state"] == TdmaState.MASTER
    # none of the refused opens left a channel behind
    assert [(c["id"], c["ethertype"]) for c in st["channels"]] == daemons_own


def test_second_daemon_refused_and_sigkill_recovery(capsys, stations, conf):
    ns = stations[0].netns
    path = conf("m.toml", MASTER)
    assert ctl(capsys, "up", "-n", ns, "-c", path)[0] == 0
    pid = int(open(paths.pid_file("rteth0", ns)).read())
    rc, _, err = ctl(capsys, "up", "-n", ns, "-c", path)
    assert rc == 1 and "already running" in err
    # straight past rtnetctl's check: the daemon itself refuses and leaves the first alone
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rtnet.netns",
            ns,
            "--",
            sys.executable,
            "-m",
            "rtnet.daemon",
            "-c",
            path,
        ],
        capture_output=True,
        text=True,
        timeout=20,
        cwd=REPO,
    )
    assert proc.returncode == 1 and f"already running (pid {pid}" in proc.stderr
    assert status(capsys, ns)["daemon"]["pid"] == pid

    os.kill(pid, signal.SIGKILL)
    wait_dead(pid)
    assert os.path.exists(paths.pid_file("rteth0", ns))
    assert os.path.exists(paths.control_socket("rteth0", ns))
    assert xdp_programs(ns) == 1
    rc, out, err = ctl(capsys, "up", "-n", ns, "-c", path)
    assert rc == 0, err
    new = status(capsys, ns)
    assert new["daemon"]["pid"] != pid and new["tdma"]["state"] == TdmaState.MASTER
    assert xdp_programs(ns) == 1
    log = open(os.path.join(os.path.dirname(paths.pid_file("rteth0", ns)), "rteth0.log")).read()
    assert "removed 1 XDP program" in log


def test_down_after_sigkill_cleans_leftovers(capsys, stations, conf):
    ns = stations[0].netns
    assert ctl(capsys, "up", "-n", ns, "-c", conf("m.toml", MASTER))[0] == 0
    pid = int(open(paths.pid_file("rteth0", ns)).read())
    os.kill(pid, signal.SIGKILL)
    wait_dead(pid)
    rc, out, _ = ctl(capsys, "down", "-n", ns)
    assert rc == 0 and "XDP program" in out and "PID file" in out
    assert xdp_programs(ns) == 0 and not os.path.exists(paths.pid_file("rteth0", ns))


def test_channel_open_hands_over_fds_and_reclaims(capsys, stations, conf):
    ns = stations[0].netns
    path = conf("c.toml", MASTER + "\n[[channel]]\nethertype = 0x88B5\nlifetime_us = 3000\n")
    assert ctl(capsys, "up", "-n", ns, "-c", path)[0] == 0
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(paths.control_socket("rteth0", ns))
        s.sendall(
            json.dumps({"cmd": "channel.open", "ethertype": 0x88B5, "depth": 16}).encode() + b"\n"
        )
        msg, fds, _, _ = socket.recv_fds(s, 4096, 2)
        reply = json.loads(msg)
        assert reply["ok"] and len(fds) == 2
        assert os.fstat(fds[0]).st_size == reply["shm_size"]
        assert struct.unpack_from("<I", os.pread(fds[0], 4, 0))[0] == 0x52544E43  # "RTNC"
        for fd in fds:
            os.close(fd)
        chans = status(capsys, ns)["channels"]
        # the daemon's own: the echo service, rtping's IPv4 and rtroute solicit's ARP
        # channels; then the client's
        assert [c["ethertype"] for c in chans] == [0x88B6, 0x0800, 0x0806, 0x88B5]
        # a request that gives no lifetime gets its [[channel]]'s
        assert [c["lifetime_us"] for c in chans] == [0, 0, 0, 3000]
    # the daemon notices EOF on its own thread
    wait_for(
        lambda: len(status(capsys, ns)["channels"]) == 3,
        5,
        "the channel to be reclaimed after the client left",
        interval=0.05,
    )


CHILD_APP = """
import sys, time
from rtnet.app import Channel
ch = Channel.open(netns=sys.argv[1], ethertype=0x88B5, depth=16)
print("open", flush=True)
time.sleep(300)
"""


def test_app_channels_through_two_daemons_and_reclaim_when_the_app_dies(capsys, stations, conf):
    from rtnet.app import Channel

    m_ns, s_ns = stations[0].netns, stations[1].netns
    chan = "\n[[channel]]\nethertype = 0x88B5\n"
    assert ctl(capsys, "up", "-n", m_ns, "-c", conf("m.toml", MASTER + chan))[0] == 0
    assert ctl(capsys, "up", "-n", s_ns, "-c", conf("s.toml", SLAVE + chan))[0] == 0
    wait_state(capsys, s_ns, TdmaState.SYNCED)
    # an application on each station: a message from the slave to the master, with
    # its scheduled, transmit and receive times (global time, sched <= tx <= rx)
    with (
        Channel.open(netns=m_ns, ethertype=0x88B5) as rx,
        Channel.open(netns=s_ns, ethertype=0x88B5) as tx,
    ):
        sched = tx.global_now()
        seq = tx.send(stations[0].mac, b"hello through the slots", sched_ns=sched)
        msg = rx.recv(timeout=5)
        assert msg is not None and msg.seq == seq
        assert msg.payload.startswith(b"hello through the slots")
        assert msg.sched_ns == sched and sched <= msg.tx_ns
        assert msg.rx_ns - msg.tx_ns < 2_000_000  # one veth hop (and the sync error)
    # an application that dies: its channel is reclaimed, the daemon keeps running
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD_APP, m_ns], stdout=subprocess.PIPE, text=True, cwd=REPO
    )
    try:
        assert child.stdout.readline().strip() == "open"
        assert [c["ethertype"] for c in status(capsys, m_ns)["channels"]].count(0x88B5) == 1
    finally:
        child.kill()
        child.wait()
    # the daemon notices the closed connection on its own thread
    wait_for(
        lambda: not [c["ethertype"] for c in status(capsys, m_ns)["channels"]].count(0x88B5),
        5,
        "the channel to be reclaimed after the app died",
        interval=0.05,
    )
    assert status(capsys, m_ns)["tdma"]["state"] == TdmaState.MASTER
