"""VNIC through TDMA slots between two lab stations (root, namespaces, AF_XDP)."""

import contextlib
import hashlib
import os
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest
from conftest import skip_or_fail, wait_for
from pyroute2 import IPRoute
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether

from rtnet import netns
from rtnet._core import lib
from rtnet.errors import ConfigError
from rtnet.lab import STATION_IF_B, Lab
from rtnet.mac import parse_mac
from rtnet.station import UMEM_FRAMES
from rtnet.tdma_stats import TdmaState
from rtnet.wirecap import WireCapture
from vnic.pair import plan, tdma_pair
from vnic.tap import Tap, vnic_mtu_for

pytestmark = pytest.mark.netns

# The engine's slot window is the wire time of one slot-size frame, so a
# frame of exactly size + 14 bytes fits only with zero wake-up lateness;
# 1200 leaves about 24 us of slack at 100 Mbit/s.
MTU = 1200
ETH_RTMAC = 0x9021


@pytest.fixture(scope="module")
def lab():
    with Lab(name="g3", stations=2) as lab:
        yield lab


def ping(lab, src: int, dst_ip: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "rtnet.netns",
            lab.station(src).netns,
            "--",
            "ping",
            "-c",
            "3",
            "-i",
            "0.2",
            "-W",
            "2",
            dst_ip,
        ],
        capture_output=True,
        text=True,
        timeout=20,
    )


def tcp_transfer(lab, payload: bytes) -> str:
    """Send ``payload`` from station 1 to 198.19.0.2; return the receiver's SHA-256."""
    with netns.entered(lab.station(2).netns):
        srv = socket.socket()
    srv.bind(("198.19.0.2", 0))
    srv.listen(1)
    srv.settimeout(20)
    result = {}

    def receive():
        conn, _ = srv.accept()
        conn.settimeout(20)
        h = hashlib.sha256()
        with conn:
            while chunk := conn.recv(65536):
                h.update(chunk)
        result["digest"] = h.hexdigest()

    t = threading.Thread(target=receive)
    t.start()
    with netns.entered(lab.station(1).netns):
        cli = socket.socket()
    with cli:
        cli.settimeout(20)
        cli.connect(("198.19.0.2", srv.getsockname()[1]))
        cli.sendall(payload)
    t.join(30)
    srv.close()
    return result.get("digest")


@contextlib.contextmanager
def udp_flow(lab, rate: str, length: int):
    """An iperf3 UDP flow offering ``rate`` in datagrams of ``length`` bytes from station 1
    to station 2's vnic0 (for up to 30 s), stopped on leaving."""
    from rtnet.benchkit import start_iperf_server

    srv = start_iperf_server(lab, lab.station(2), "198.19.0.2")
    flow = lab.spawn(
        lab.station(1),
        ["iperf3", "-c", "198.19.0.2", "-u", "-b", rate, "-l", str(length), "-t", "30"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield
    finally:
        lab.stop(flow)
        lab.stop(srv)


def inner_frame(outer: bytes) -> bytes:
    """The Linux frame inside a tunnel frame (RTmac header: inner type, version, flags)."""
    return outer[:12] + outer[14:16] + outer[18:]


@pytest.mark.parametrize(
    "mode,offload", [("batched", True), ("per-packet", False), ("batched", False)]
)
def test_ping_and_tcp_checksum(lab, mode, offload):
    payload = os.urandom(3 * 1024 * 1024)
    with tdma_pair(lab, plan(), mode=mode, mtu=MTU, offload=offload) as (stations, _taps):
        r = ping(lab, 1, "198.19.0.2")
        assert r.returncode == 0, r.stdout + r.stderr
        with WireCapture(lab.wire_netns, ethertypes={ETH_RTMAC}) as cap:
            assert tcp_transfer(lab, payload) == hashlib.sha256(payload).hexdigest()
        v1, v2 = stations[0].stats()["vnic"], stations[1].stats()["vnic"]
        assert v1["mode"] == mode
        assert v1["tap_rx_bytes"] >= len(payload)
        # the pump did the TAP work; only the per-packet mode wakes the RT thread, once per read
        assert v1["pump_wakeups"] > 0 and v2["pump_wakeups"] > 0
        if mode == "per-packet":
            assert v1["wakeups"] == v1["tap_reads"] > 0
        else:
            assert v1["wakeups"] == 0
        # copies per byte to the wire: the batched VNIC's TAP read scatters a super-packet
        # straight into the UMEM frames its segments leave from in place (a flow's first
        # packet is gathered and cut once more, to learn the flow's layout); the per-packet
        # mode's frames go through the TDMA queue and a TX frame of the socket.  To Linux
        # only the TAP write's own, from the UMEM frames lent to the pump (decapsulated in
        # place, a merged super-packet gathered by one writev)
        assert round(v1["tx_copy_bytes"] / v1["tap_rx_bytes"]) == (1 if mode == "batched" else 3)
        in_place = stations[0].stats()["xsk"]["tx_in_place"]
        if mode == "batched":  # every frame of the TAP's went out in place
            assert in_place >= v1["tap_rx"] > 0
        else:
            assert in_place == 0
        assert v2["rx_copy_bytes"] == v2["tap_tx_bytes"]
        assert v1["tx_bad"] == 0 and v2["rx_bad"] == 0
        if offload:
            # TSO: Linux handed over super-packets, several wire frames per read
            assert v1["tap_rx"] > v1["tap_reads"] > 0
            # merged writes that would have started just before an RT thread's deadline
            # waited for it (both RT threads post theirs: about 12% of the time is held)
            assert v2["pump_yields"] > 0
        else:
            assert v1["tap_rx"] == v1["tap_reads"] and v2["tap_tx"] == v2["tap_writes"]
        assert v2["tap_tx"] >= v2["tap_writes"] > 0
    # on the wire: ordinary frames of at most the MTU, with complete checksums
    data = [
        inner_frame(c.data)
        for c in cap.frames
        if c.ifname == lab.station(1).wire_port and c.data[14:16] == b"\x08\x00"
    ]
    assert len(data) * (MTU - 52) >= len(payload)
    assert max(len(c.data) for c in cap.frames) <= MTU + 14 + 4
    assert all(lib.rtn_l4_csum_ok(f, len(f)) for f in data if f[23] == 6)


def tap_tx_dropped(ns: str) -> int:
    with IPRoute(netns=ns) as ipr:
        link = ipr.link("get", index=ipr.link_lookup(ifname="vnic0")[0])[0]
        return link.get_attr("IFLA_STATS64")["tx_dropped"]


def rt_slot_window(station, seconds: float) -> tuple[int, int]:
    """(occurrences, missed) of RT slot 0 over ``seconds`` of wall time."""
    before = station.stats()["tdma"]["slots"][0]
    threading.Event().wait(seconds)  # a measurement window, not synchronisation
    after = station.stats()["tdma"]["slots"][0]
    return (after["occurrences"] - before["occurrences"], after["missed"] - before["missed"])


def test_flood_beyond_capacity_is_dropped_at_the_tap(lab):
    with tdma_pair(lab, plan(), mode="batched", mtu=MTU) as (stations, _taps):
        idle_occ, idle_missed = rt_slot_window(stations[0], 1.0)
        sync_before = stations[0].stats()["tdma"]["sync_tx"]
        with netns.entered(lab.station(1).netns):
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        with sock:
            for _ in range(20000):  # 20 MB in a burst against ~45 Mbit/s of slots
                try:
                    sock.sendto(b"x" * 1000, ("198.19.0.2", 9))
                except OSError:
                    pass  # ENOBUFS from a full queue is the drop we want to see
        drops = tap_tx_dropped(lab.station(1).netns) + stations[0].stats()["vnic"]["tx_dropped"]
        assert drops > 0
        # the pump's ring to the wire filled and Linux's packets waited in the TAP instead;
        # while its oldest frame had waited over VNIC_QUEUE_MAX_NS the pump dropped one of
        # the TAP's packets a round (counted), the signal a TCP sender slows down at
        assert stations[0].stats()["vnic"]["ring_full"] > 0
        assert stations[0].stats()["vnic"]["queue_drops"] > 0
        assert stations[0].stats()["tdma"]["sync_tx"] > sync_before  # the cycle went on
        # while the queued frames drain at saturation, the RT slot keeps its timing
        occ, missed = rt_slot_window(stations[0], 1.0)
        assert occ > 0
        # loose: on a stock kernel the flood's softirq work delays the RT thread too, and
        # this VM's wake-ups run later than the 50 us guard in up to ~10% of cycles anyway
        assert missed <= idle_missed + occ // 4


def test_mtu_larger_than_slot_is_refused(lab):
    cfg = plan().master
    assert vnic_mtu_for(cfg, 1) == 1496
    with pytest.raises(ConfigError, match=r"1497.*1500"):
        Tap("vnic0", mac=lab.station(1).mac, mtu=1497, slot_size=1500, netns=lab.station(1).netns)
    with IPRoute(netns=lab.station(1).netns) as ipr:
        assert not ipr.link_lookup(ifname="vnic0")


def raw_send(ns: str, frames) -> None:
    with netns.entered(ns):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    with s:
        s.bind(("rteth0", 0))
        for f in frames:
            s.send(f)


def test_malformed_tunnel_frames_are_counted(lab):
    with tdma_pair(lab, plan(), mode="batched", mtu=MTU) as (stations, _taps):
        dst = parse_mac(lab.station(1).mac)
        src = parse_mac(lab.station(2).mac)
        eth = dst + src + ETH_RTMAC.to_bytes(2, "big")
        bad = [
            eth + b"\x08\x00\x01\x01" + b"\0" * 46,  # RTmac version 1
            eth + b"\x00\x10\x02\x01" + b"\0" * 46,  # inner type 0x0010 is a length
            eth + b"\x08\x00\x02\x01",  # no inner payload
        ]
        before = stations[0].stats()["vnic"]["rx_bad"]
        raw_send(lab.station(2).netns, bad * 10)
        r = ping(lab, 2, "198.19.0.1")  # and the VNIC still works afterwards
        st = stations[0].stats()
        assert st["vnic"]["rx_bad"] - before == 30
        assert st["running"]
        assert r.returncode == 0, r.stdout


def tcp_snmp(ns: str) -> dict:
    """The Tcp counters of /proc/net/snmp in namespace ``ns``."""
    out = subprocess.run(
        ["ip", "netns", "exec", ns, "cat", "/proc/net/snmp"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    names, values = [line.split()[1:] for line in out.splitlines() if line.startswith("Tcp:")]
    return dict(zip(names, map(int, values)))


def test_tcp_from_the_wire_with_a_broken_checksum_is_never_merged_into_a_vouched_write(lab):
    """Tunnel frames forged on the wire: one TCP flow for vnic0 whose every fourth segment
    has a broken checksum.  The VNIC merges a flow's segments into one write whose checksum
    Linux then trusts (CHECKSUM_PARTIAL), so it must sum each segment first: every broken
    one reaches Linux on its own, and Linux counts it and drops it."""
    n, broken = 40, set(range(0, 40, 4))
    with tdma_pair(lab, plan(), mode="batched", mtu=MTU) as (stations, _taps):
        s1, s2 = lab.station(1), lab.station(2)
        outer = parse_mac(s1.mac) + parse_mac(s2.mac) + ETH_RTMAC.to_bytes(2, "big")
        rtmac = b"\x08\x00\x02\x01"  # inner type IPv4, version 2, tunnel

        def tunnel(i: int) -> bytes:
            seg = bytearray(
                bytes(
                    IP(src="198.19.0.2", dst="198.19.0.1")
                    / TCP(sport=40000, dport=9, flags="A", seq=1 + 1000 * i, ack=1)
                    / os.urandom(1000)
                )
            )
            if i in broken:
                seg[-1] ^= 0x01  # the payload, after the checksum was computed
            return outer + rtmac + bytes(seg)

        before, rx0 = tcp_snmp(s1.netns), stations[0].stats()["vnic"]["tap_tx"]
        raw_send(s2.netns, [tunnel(i) for i in range(n)])
        wait_for(
            lambda: stations[0].stats()["vnic"]["tap_tx"] - rx0 >= n,
            10,
            "the forged segments to be written to vnic0",
        )
        after = wait_for(
            lambda: (
                (a := tcp_snmp(s1.netns))["InCsumErrors"] - before["InCsumErrors"] >= len(broken)
                and a
            ),
            10,
            "Linux to count the broken segments",
        )
        assert after["InCsumErrors"] - before["InCsumErrors"] == len(broken)
        assert stations[0].stats()["running"]


def test_forged_segments_with_an_older_timestamp_are_never_merged_behind_newer_ones(lab):
    """Tunnel frames forged on the wire: one TCP flow for vnic0 whose segments carry TCP
    timestamps, pushes among them, and now and then a TSval older than the segment before.
    The pump merges past a PSH and a newer TSval, keeping the first segment's; a merged
    packet must never carry a segment older than its first (PAWS would not see it), and
    what Linux receives on vnic0 is every segment once, in order."""
    n, seg_len = 24, 1000
    tsvals = [1000 + i // 3 for i in range(n)]
    # 7 and 16 stamped before every segment ahead of them; 15 as old as 7, not older
    older = {7: 500, 15: 500, 16: 499}
    for i, stamp in older.items():
        tsvals[i] = stamp
    with tdma_pair(lab, plan(), mode="batched", mtu=MTU) as (stations, _taps):
        s1, s2 = lab.station(1), lab.station(2)
        outer = parse_mac(s1.mac) + parse_mac(s2.mac) + ETH_RTMAC.to_bytes(2, "big")
        rtmac = b"\x08\x00\x02\x01"  # inner type IPv4, version 2, tunnel
        payload = os.urandom(n * seg_len)

        def tunnel(i: int) -> bytes:
            seg = IP(src="198.19.0.2", dst="198.19.0.1") / TCP(
                sport=40001,
                dport=9,
                flags="PA" if i % 4 == 1 else "A",
                seq=1 + seg_len * i,
                ack=1,
                options=[("NOP", None), ("NOP", None), ("Timestamp", (tsvals[i], 77))],
            )
            return outer + rtmac + bytes(seg / payload[i * seg_len : (i + 1) * seg_len])

        with netns.entered(s1.netns):
            tap = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
        with tap:
            tap.bind(("vnic0", 0))
            tap.settimeout(0.2)
            raw_send(s2.netns, [tunnel(i) for i in range(n)])
            got, until = [], time.monotonic() + 10
            while sum(len(p[TCP].payload) for p in got) < len(payload) and (
                time.monotonic() < until
            ):
                try:
                    p = Ether(tap.recv(70000))
                except socket.timeout:
                    continue
                if TCP in p and p[TCP].sport == 40001:
                    got.append(p)
        assert stations[0].stats()["running"]
    # every segment once, in order, whatever the writes were
    assert b"".join(bytes(p[TCP].payload) for p in got) == payload
    firsts = [(p[TCP].seq - 1) // seg_len for p in got]
    spans = [len(p[TCP].payload) // seg_len for p in got]
    for first, span, p in zip(firsts, spans, got):
        members = range(first, first + span)
        # the packet carries its first segment's stamp; no member is older than it
        assert dict(p[TCP].options)["Timestamp"] == (tsvals[first], 77)
        assert all(tsvals[i] >= tsvals[first] for i in members)
    # so a segment older than all ahead of it begins a packet of its own
    assert {7, 16} <= set(firsts)
    # the pump did merge (past pushes and newer stamps), so the rule was exercised
    assert max(spans) > 1


@pytest.mark.parametrize("mode", ["per-packet", "batched"])
def test_tap_deleted_under_running_station(lab, mode):
    with tdma_pair(lab, plan(), mode=mode, mtu=MTU) as (stations, taps):
        cycles = stations[0].stats()["tdma"]["cycles"]
        with IPRoute(netns=lab.station(1).netns) as ipr:
            ipr.link("del", index=taps[0].ifindex)
        # traffic towards the deleted TAP makes the writer fail too
        r = ping(lab, 2, "198.19.0.1")
        assert r.returncode != 0
        st = stations[0].stats()
        assert st["vnic"]["tap_errors"] >= 1
        assert st["running"]
        # the RT path keeps running: the slave still follows the master's cycles
        assert st["tdma"]["cycles"] > cycles
        assert stations[1].stats()["tdma"]["state"] == TdmaState.SYNCED


def test_a_vnic_detached_under_a_flood_and_attached_again_sends_whole_frames(lab):
    """The VNIC's frames leave from UMEM frames the socket lends it, and a slot goes back to
    the pump only once the kernel completed its frame.  A VNIC detached while its ring is
    full and attached again builds its frames in the same UMEM frames: what it sends then
    must be whole frames of its own traffic, with valid checksums."""
    with tdma_pair(lab, plan(), mode="batched", mtu=MTU) as (stations, taps):
        with netns.entered(lab.station(1).netns):
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        with sock:
            for _ in range(5000):  # more than the ring and the window carry at once
                try:
                    sock.sendto(b"x" * 1000, ("198.19.0.2", 9))
                except OSError:
                    pass
            stations[0].detach_vnic()
        before = stations[0].stats()["xsk"]["tx_in_place"]
        assert before > 0
        stations[0].attach_vnic(taps[0].fd, "batched", slot=1)
        payload = os.urandom(512 * 1024)
        with WireCapture(lab.wire_netns, ethertypes={ETH_RTMAC}) as cap:
            assert tcp_transfer(lab, payload) == hashlib.sha256(payload).hexdigest()
        assert stations[0].stats()["xsk"]["tx_in_place"] > before
        v = stations[0].stats()["vnic"]
        assert v["tx_bad"] == 0
    tcp = [
        inner_frame(c.data)
        for c in cap.frames
        if c.ifname == lab.station(1).wire_port and c.data[14:16] == b"\x08\x00"
    ]
    tcp = [f for f in tcp if f[23] == 6]
    assert tcp and all(lib.rtn_l4_csum_ok(f, len(f)) for f in tcp)


SOL_PACKET, PACKET_VNET_HDR = 263, 15
TS_OPTS = [("NOP", None), ("NOP", None), ("Timestamp", (1, 2))]


def vnet_hdr(flags=0, gso_type=0, hdr_len=0, gso_size=0, csum_start=0, csum_offset=0) -> bytes:
    """struct virtio_net_hdr, host order, as a packet socket with PACKET_VNET_HDR takes it."""
    return struct.pack("=BBHHHH", flags, gso_type, hdr_len, gso_size, csum_start, csum_offset)


def test_forged_virtio_headers_sent_into_the_vnic_never_reach_the_wire_malformed(lab):
    """Forged GSO packets, written into vnic0 through a packet socket with PACKET_VNET_HDR:
    each is refused by Linux, or reaches the pump, which cuts it into valid frames or
    counts it (tx_bad).  The station keeps running, a valid 60 KB TSO packet after them is
    cut in 45 whole frames, and every TCP frame on the wire has a valid checksum."""
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    ip = IP(src="198.19.0.1", dst="198.19.0.2")
    mss = MTU - 52
    tcp_max = vnet_hdr(1, lib.RTN_VNET_GSO_TCPV4, 66, mss, 34, 16) + bytes(
        eth / ip / TCP(sport=1, dport=2, options=TS_OPTS) / os.urandom(45 * mss)
    )
    forged = [
        vnet_hdr(1, lib.RTN_VNET_GSO_TCPV4, 42, mss, 34, 6)
        + bytes(eth / ip / UDP() / (b"u" * 5000)),
        vnet_hdr(1, lib.RTN_VNET_GSO_TCPV4, 66, 0, 34, 16)
        + bytes(eth / ip / TCP() / (b"z" * 5000)),
        vnet_hdr(1, 0, 0, 0, 3000, 16) + bytes(eth / ip / TCP() / b"x"),
        vnet_hdr(1, lib.RTN_VNET_GSO_TCPV4, 66, 1000, 34, 16) + bytes(eth / ip)[:40] + bytes(4000),
        vnet_hdr(0, lib.RTN_VNET_GSO_ECN) + bytes(eth / ip / TCP() / b"x"),
        vnet_hdr(1, lib.RTN_VNET_GSO_TCPV4, 54, 1, 34, 16)
        + bytes(eth / ip / TCP() / (b"1" * 3000)),
    ]
    with tdma_pair(lab, plan(), mode="batched", mtu=MTU, offload=True) as (stations, _taps):
        with netns.entered(lab.station(1).netns):
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        with sock, WireCapture(lab.wire_netns, ethertypes={ETH_RTMAC}) as cap:
            sock.setsockopt(SOL_PACKET, PACKET_VNET_HDR, 1)
            sock.bind(("vnic0", 0))
            refused = 0
            before = stations[0].stats()["vnic"]
            for pkt in forged:
                try:
                    sock.send(pkt)
                except OSError:
                    refused += 1  # Linux checked the header itself
            sock.send(tcp_max)  # read after every forged one: the TAP is a queue

            def carried(s):  # the valid packet read, and every frame read sent
                return (
                    s["vnic"]["tap_rx"] - before["tap_rx"] >= 45
                    and s["xsk"]["tx_in_place"] >= s["vnic"]["tap_rx"]
                )

            def wire_tcp():  # the TCP frames the capture has seen leave station 1 so far
                tcp = [
                    inner_frame(c.data)
                    for c in list(cap.frames)
                    if c.ifname == lab.station(1).wire_port and c.data[14:16] == b"\x08\x00"
                ]
                return [f for f in tcp if f[23] == 6]

            def whole_segments(tcp):  # of the valid super-packet: full MSS, source port 1
                return sum(len(f) == 14 + 20 + 32 + mss and f[34:36] == b"\x00\x01" for f in tcp)

            assert wait_for(lambda: carried(stations[0].stats()), 10)
            st = stations[0].stats()
            # the socket counts a frame as sent before the capture has taken it in
            wait_for(lambda: whole_segments(wire_tcp()) >= 45, 10)
        assert refused >= 1 and st["running"]
        assert st["vnic"]["tx_bad"] - before["tx_bad"] <= len(forged) - refused
    tcp = wire_tcp()
    assert all(lib.rtn_l4_csum_ok(f, len(f)) for f in tcp)
    # the valid super-packet, after the forged ones: 45 whole segments of the MSS
    assert whole_segments(tcp) == 45


def set_link(ns: str, ifname: str, state: str) -> None:
    with IPRoute(netns=ns) as ipr:
        ipr.link("set", index=ipr.link_lookup(ifname=ifname)[0], state=state)


@pytest.mark.parametrize("mode", ["batched", "per-packet"])
def test_a_tap_brought_down_and_up_again_carries_traffic_again(lab, mode):
    with tdma_pair(lab, plan(), mode=mode, mtu=MTU) as (stations, _taps):
        assert ping(lab, 1, "198.19.0.2").returncode == 0
        set_link(lab.station(2).netns, "vnic0", "down")
        dropped = stations[1].stats()["vnic"]["rx_dropped"]
        # station 1's echo requests reach station 2, whose TAP refuses them while down
        assert ping(lab, 1, "198.19.0.2").returncode != 0
        st = stations[1].stats()
        assert st["vnic"]["rx_dropped"] > dropped, st["vnic"]
        assert st["running"] and st["tdma"]["state"] == TdmaState.SYNCED
        set_link(lab.station(2).netns, "vnic0", "up")
        # a TAP that is down is not a TAP that is gone: traffic flows again
        assert ping(lab, 1, "198.19.0.2").returncode == 0
        assert stations[1].stats()["vnic"]["tap_errors"] == 0


PTRACE_SEIZE, PTRACE_INTERRUPT, PTRACE_DETACH = 0x4206, 0x4207, 17

# A tracer for one thread (a process cannot trace its own threads): ptrace stops just that
# thread, as a page fault or a stall of its CPU would, until the tracer detaches.  With
# --asleep, only where it waits for its next deadline (poll, ppoll or clock_nanosleep, as
# /proc/TID/syscall names the call it was stopped in): stopped while it runs, it is let go
# and stopped again, so that the hold is a wake-up held back, not a run.
STOPPER = """
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
asleep = "--asleep" in sys.argv
tids = [int(t) for t in sys.argv[1:] if t != "--asleep"]
for tid in tids:
    for attempt in range(1000):
        if libc.ptrace(%d, tid, 0, 0) or libc.ptrace(%d, tid, 0, 0):
            sys.exit("ptrace: " + os.strerror(ctypes.get_errno()))
        os.waitpid(tid, os.__dict__.get("WALL", 0x40000000))
        with open(f"/proc/{tid}/syscall") as f:
            call = f.read().split()[0]
        if not asleep or call in ("7", "271", "230"):
            break
        libc.ptrace(%d, tid, 0, 0)
        time.sleep(0.0002)  # let it run on to its next wait
    else:
        sys.exit("never stopped asleep")
print("stopped", flush=True)
sys.stdin.readline()
for tid in tids:
    libc.ptrace(%d, tid, 0, 0)
print("resumed", flush=True)
""" % (PTRACE_SEIZE, PTRACE_INTERRUPT, PTRACE_DETACH, PTRACE_DETACH)


def threads_named(name: str) -> list[int]:
    """This process's threads called ``name`` (the stations of tdma_pair run in it):
    "rtnet-vnic" the VNIC pumps, "rtnet-rt" the RT threads."""
    tids = []
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/comm") as f:
            if f.read().strip() == name:
                tids.append(int(tid))
    return tids


def test_a_stalled_pump_blocks_neither_the_rt_thread_nor_the_schedule(lab):
    with tdma_pair(lab, plan(), mode="batched", mtu=MTU) as (stations, _taps):
        assert ping(lab, 1, "198.19.0.2").returncode == 0  # the VNIC works
        idle_occ, idle_missed = rt_slot_window(stations[0], 1.0)
        tids = threads_named("rtnet-vnic")
        assert len(tids) == 2, tids  # one per station
        stopper = subprocess.Popen(
            [sys.executable, "-c", STOPPER, *map(str, tids)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert stopper.stdout.readline().strip() == "stopped", stopper.stderr
            before = [st.stats() for st in stations]
            # Linux's traffic waits (nothing moves it to the wire) ...
            assert ping(lab, 1, "198.19.0.2").returncode != 0
            occ, missed = rt_slot_window(stations[0], 1.0)
            after = [st.stats() for st in stations]
            assert after[0]["vnic"]["pump_wakeups"] == before[0]["vnic"]["pump_wakeups"]
            # ... while the RT thread keeps the schedule: Syncs, the RT slot, the slave
            assert after[0]["tdma"]["sync_tx"] > before[0]["tdma"]["sync_tx"]
            assert occ > 0.5 * idle_occ and missed <= idle_missed + occ // 10, (
                occ,
                missed,
                idle_occ,
                idle_missed,
            )
            assert stations[1].stats()["tdma"]["state"] == TdmaState.SYNCED
        finally:
            stopper.stdin.write("\n")
            stopper.stdin.flush()
            assert stopper.stdout.readline().strip() == "resumed"
            stopper.wait(10)
        # the pump goes on where it stopped
        assert ping(lab, 1, "198.19.0.2").returncode == 0


def test_frames_lent_to_a_stalled_pump_are_bounded_and_given_back(lab):
    """Received tunnel frames go to the pump in their UMEM frames, up to a quarter of the
    frames the kernel receives into; beyond that they are copied, so a stalled pump cannot
    starve the RT traffic of receive frames.  Detaching the VNIC gives every lent frame back,
    written to the TAP or not."""
    lend_max = UMEM_FRAMES // 8  # a quarter of the fill ring's half of the UMEM
    with tdma_pair(lab, plan(), mode="batched", mtu=MTU) as (stations, _taps):
        assert ping(lab, 1, "198.19.0.2").returncode == 0
        st = stations[0]
        stopper = subprocess.Popen(
            [sys.executable, "-c", STOPPER, *map(str, threads_named("rtnet-vnic"))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        detacher = None
        try:
            assert stopper.stdout.readline().strip() == "stopped"
            copied0 = st.stats()["vnic"]["rx_copy_bytes"]
            dst, src = parse_mac(lab.station(1).mac), parse_mac(lab.station(2).mac)
            payload = bytes(range(256)) * 2
            tunnel = dst + src + ETH_RTMAC.to_bytes(2, "big") + b"\x08\x00\x02\x01" + payload
            inner_len = 14 + len(payload)
            n = lend_max + 200
            raw_send(lab.station(2).netns, [tunnel] * n)

            def arrived():
                s = st.stats()
                copied = (s["vnic"]["rx_copy_bytes"] - copied0) // inner_len
                return s if s["xsk"]["rx_kept"] + copied >= n else None

            s = wait_for(arrived, 10)
            assert s, st.stats()
            assert s["xsk"]["rx_kept"] == lend_max
            assert s["xsk"]["fill_fail"] == 0 and s["vnic"]["rx_dropped"] == 0
            # the kernel still has frames to receive into: a second burst all arrives, copied
            rx0, copied1 = s["xsk"]["rx_frames"], s["vnic"]["rx_copy_bytes"]
            raw_send(lab.station(2).netns, [tunnel] * 300)

            def second():
                s = st.stats()
                return s if s["xsk"]["rx_frames"] >= rx0 + 300 else None

            s = wait_for(second, 10)
            assert s and s["vnic"]["rx_copy_bytes"] >= copied1 + 300 * inner_len
            assert s["xsk"]["rx_kept"] == lend_max and s["xsk"]["fill_fail"] == 0
            assert stations[1].stats()["tdma"]["state"] == TdmaState.SYNCED
            # detach while the pump is held: it returns once the pump can stop
            detacher = threading.Thread(target=st.detach_vnic)
            detacher.start()
        finally:
            stopper.stdin.write("\n")
            stopper.stdin.flush()
            assert stopper.stdout.readline().strip() == "resumed"
            stopper.wait(10)
            if detacher:
                detacher.join(10)
        assert detacher and not detacher.is_alive()
        s = st.stats()
        assert s["xsk"]["rx_kept"] == 0 and s["xsk"]["fill_fail"] == 0
        assert s["vnic"]["mode"] == "off"


def test_a_slaves_clock_stays_true_while_the_masters_window_is_full(lab):
    """A Sync says when it left.  The master places it, the RT frames and a full window of
    VNIC frames in one wake-up; were they kicked together, the stamp would be read before
    the window's frames were copied and sent (at 1000 Mbit/s, some 70 frames), and every
    slave's clock would run that far behind: -21 us median measured so.  Under a UDP flood
    through the master's window, the slave's sync error stays centred."""
    with tdma_pair(lab, plan(link_rate_mbps=1000), mode="batched") as (stations, _taps):
        master, slave = stations
        # the Syncs' true one-way delay (lab truth) with the window empty, first
        d0 = slave.stats()["tdma"]["sync_delay"]
        assert wait_for(lambda: slave.stats()["tdma"]["sync_delay"].count > d0.count + 2000, 10)
        idle = slave.stats()["tdma"]["sync_delay"].since(d0)
        with udp_flow(lab, "1000M", 1400):
            frames0 = master.stats()["tdma"]["frames_tx"]
            # the flood fills the window: measure once the windows carry it
            assert wait_for(lambda: master.stats()["tdma"]["frames_tx"] > frames0 + 20000, 10)
            t0, s0 = master.stats()["tdma"], slave.stats()["tdma"]
            assert wait_for(
                lambda: slave.stats()["tdma"]["sync_error"].count > s0["sync_error"].count + 2000,
                10,
            )
            t1, s1 = master.stats()["tdma"], slave.stats()["tdma"]
        per_cycle = (t1["frames_tx"] - t0["frames_tx"]) / (t1["cycles"] - t0["cycles"])
        assert per_cycle > 20, per_cycle  # the windows were full, not idle
        err = s1["sync_error"].since(s0["sync_error"])
        delay = s1["sync_delay"].since(s0["sync_delay"])
        # The bug stamped the Sync before the window's frames went: each Sync took that
        # much longer to arrive after its stamp (-21 us of sync error measured so).  The
        # medians are robust to the VM's stalls: under the full window the Syncs arrive no
        # later after their stamps than with it empty ...
        assert delay.percentile_ns(50) - idle.percentile_ns(50) <= 8000, (
            delay.percentile_ns(50),
            idle.percentile_ns(50),
            per_cycle,
        )
        # ... and the error is what RTnet's formula makes of that delay: the calibrated
        # delay less the Syncs' own (its median is not centred when the calibration ran in
        # a noisy spell: +12 us once in CI, the formula holding)
        cal = s1["calibration"]["delay_ns"]
        assert abs(err.percentile_ns(50) - (cal - delay.percentile_ns(50))) <= 10_000, (
            err.percentile_ns(50),
            cal,
            delay.percentile_ns(50),
        )


def test_a_held_rt_thread_leaves_a_record_of_the_slots_it_missed(lab):
    """Every slot occurrence the engine counts missed is in the station's miss records,
    with when the engine found it and how late the wake-up was, and every slot 0
    occurrence that sent has its lateness on record: what a benchmark compares with the
    stall detector's records (vnic bench --witness)."""
    with tdma_pair(lab, plan(), mode=None) as (stations, _taps):
        master = stations[0]
        master.set_probe(0)  # one RT frame in every slot 0 occurrence
        assert wait_for(lambda: master.stats()["tdma"]["slot0_lateness"].count > 0, 10)
        # the counters before and after the record cursors: a miss between the two readings
        # is in the records but not in s0's count (on this VM slots are missed every few
        # hundred cycles without any hold)
        s0_before = master.stats()
        _recs, first = master.slot_misses()
        _lates, first_late = master.slot0_lateness()
        s0 = master.stats()
        stopper = subprocess.Popen(
            [sys.executable, "-c", STOPPER, "--asleep", str(s0["rt"]["tid"])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert stopper.stdout.readline().strip() == "stopped", stopper.stderr
            held_at = time.monotonic_ns()
            threading.Event().wait(0.03)  # the hold itself: 30 cycles the thread cannot run
        finally:
            stopper.stdin.write("\n")
            stopper.stdin.flush()
            assert stopper.stdout.readline().strip() == "resumed"
            stopper.wait(10)
        assert wait_for(
            lambda: master.stats()["tdma"]["missed_slots"] > s0["tdma"]["missed_slots"], 10
        )
        # the RT thread goes on: read the records between two snapshots
        s1 = master.stats()
        recs, _ = master.slot_misses(first)
        lates, _ = master.slot0_lateness(first_late)
        s2 = master.stats()

    def grew(key, *sub):
        """What a count grew by between the records' bounds: at least from after the
        cursor (s0) to before the read (s1), at most from before the cursor to after it."""

        def at(s):
            for k in sub:
                s = s[k]
            return s[key]

        return at(s1) - at(s0), at(s2) - at(s0_before)

    lo, hi = grew("missed_slots", "tdma")
    assert lo <= sum(r.slots for r in recs) <= hi
    lo, hi = grew("missed", "tdma", "slots", 0)
    assert lo <= sum(r.slot0 for r in recs) <= hi
    lo, hi = grew("miss_late_wake")
    guard = plan().master.guard_ns
    assert lo <= sum(r.slots for r in recs if r.woke_late_ns > guard) <= hi
    # every slot 0 occurrence that sent has its lateness on record, in order.  The engine
    # counts an occurrence a moment before the station writes its record, on the RT thread,
    # while a snapshot and a record cursor are taken on this one: the occurrence of the
    # wake-up that runs while s0 and the cursor (or s1 and the read) are taken may be on
    # one side of the pair and not the other.  One each way, for the two pairs
    lo, hi = (
        s["tdma"]["slot0_lateness"].count - s0["tdma"]["slot0_lateness"].count for s in (s1, s2)
    )
    assert lates and lo - 1 <= len(lates) <= hi + 1
    assert all(a[0] <= b[0] for a, b in zip(lates, lates[1:])) and min(ns for _, ns in lates) >= 0
    held = [r for r in recs if r.woke_late_ns >= 20_000_000]
    assert held and all(r.at_ns >= held_at for r in held), recs
    assert sum(r.slots for r in held) >= 20  # the cycles held over, at least


def test_bench_records_the_congestion_control_of_the_stations_namespace(lab):
    """vnic bench records the TCP congestion control its stations' sockets get, read in
    their namespace, not the caller's: one namespace set to another algorithm says so
    while the caller's keeps its own."""
    from vnic.bench import tcp_congestion_control

    ns = lab.station(2).netns
    with open("/proc/sys/net/ipv4/tcp_congestion_control") as f:
        own = f.read().strip()
    with open("/proc/sys/net/ipv4/tcp_allowed_congestion_control") as f:
        other = next(a for a in f.read().split() + ["reno"] if a != own)
    with netns.entered(ns), open("/proc/sys/net/ipv4/tcp_congestion_control", "r+") as f:
        before = f.read().strip()
        f.seek(0)
        f.write(other)
    try:
        assert tcp_congestion_control(ns) == other
        assert tcp_congestion_control(None) == own
        assert tcp_congestion_control("rtn-no-such-namespace") == "?"
    finally:
        with netns.entered(ns), open("/proc/sys/net/ipv4/tcp_congestion_control", "w") as f:
            f.write(before)


def allowed_cpus(path: str) -> set[int]:
    """The CPUs a task may run on, from its status file (Cpus_allowed_list)."""
    with open(path) as f:
        return cpu_list(next(line for line in f if line.startswith("Cpus_allowed_list:")))


def cpu_list(line: str) -> set[int]:
    """The CPUs of a "Cpus_allowed_list:\t0-2,5" line."""
    text = line.split(":")[1]
    cpus = set()
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def test_bench_keeps_the_rt_cpu_for_the_rt_threads_and_starts_iperf3_elsewhere(lab):
    """vnic bench's placement (--rt-cpu auto): both stations' RT threads on the highest CPU,
    the pumps and iperf3 (server and client) on the others, as the kernel says; and the
    pumps, which cannot delay those RT threads, hold none of their TAP writes for them."""
    from rtnet.benchkit import on_cpus, start_iperf_server
    from rtnet.station import RtSettings
    from vnic.bench import cpu_isolation

    rt_cpu, app_cpus = cpu_isolation("auto")
    if rt_cpu is None:
        skip_or_fail("one CPU: nothing to keep apart")
    with tdma_pair(lab, plan(), mode="batched", rt=RtSettings(priority=80, cpu=rt_cpu)) as (
        stations,
        _taps,
    ):
        rts, pumps = threads_named("rtnet-rt"), threads_named("rtnet-vnic")
        assert len(rts) == 2 and len(pumps) == 2, (rts, pumps)
        for tid in rts:
            assert allowed_cpus(f"/proc/self/task/{tid}/status") == {rt_cpu}
        for tid in pumps:
            assert allowed_cpus(f"/proc/self/task/{tid}/status") == set(app_cpus)
        # a pump on other CPUs than the RT threads' holds no merged write for their
        # wake-ups (unpinned, test_ping_and_tcp_checksum: it does)
        payload = os.urandom(3 * 1024 * 1024)
        assert tcp_transfer(lab, payload) == hashlib.sha256(payload).hexdigest()
        v2 = stations[1].stats()["vnic"]
        assert v2["tap_tx"] > v2["tap_writes"] > 0  # merged writes, the ones a hold is for
        assert v2["pump_yields"] == 0
        srv = start_iperf_server(lab, lab.station(2), "198.19.0.2", cpus=app_cpus)
        try:
            assert allowed_cpus(f"/proc/{srv.pid}/status") == set(app_cpus)
            client = subprocess.run(
                on_cpus(
                    netns.command(
                        lab.station(1).netns,
                        ["sh", "-c", "grep Cpus_allowed_list /proc/self/status"],
                    ),
                    app_cpus,
                ),
                capture_output=True,
                text=True,
                timeout=20,
            )
            assert cpu_list(client.stdout) == set(app_cpus), client.stdout
        finally:
            lab.stop(srv)


IDLE_CYCLES = 500


def _left_until_after_the_send(lab, **pair) -> tuple[int, int, int, int]:
    """The slave's deadlines that left tunnel frames in its ring until after the send: over
    IDLE_CYCLES with no flow (Linux's own few packets as vnic0 comes up: neighbour
    discovery), then over 1,000 cycles of a UDP flow through the master's window; with the
    cycles and the Syncs the slave took in the flow's."""
    with tdma_pair(lab, plan(), mode="batched", **pair) as (stations, _taps):
        slave = stations[1]

        def after_cycles(n):
            c0 = slave.stats()["tdma"]["cycles"]
            assert wait_for(lambda: slave.stats()["tdma"]["cycles"] >= c0 + n, 10)
            return slave.stats()

        s0 = slave.stats()
        s1 = after_cycles(IDLE_CYCLES)
        with udp_flow(lab, "50M", 1100):
            rx0 = slave.stats()["vnic"]["tap_tx"]
            assert wait_for(lambda: slave.stats()["vnic"]["tap_tx"] > rx0 + 2000, 10)
            s2 = slave.stats()
            s3 = after_cycles(1000)
    return (
        s1["rx_tunnel_after_send"] - s0["rx_tunnel_after_send"],
        s3["rx_tunnel_after_send"] - s2["rx_tunnel_after_send"],
        s3["tdma"]["cycles"] - s2["tdma"]["cycles"],
        s3["tdma"]["sync_error"].count - s2["tdma"]["sync_error"].count,
    )


def test_a_peers_window_waits_in_the_ring_until_after_the_slots_send(lab):
    """Woken for a slot, a station takes what lies ahead of a peer's window in its ring (the
    Sync, RT frames) before it sends, and leaves the window's tunnel frames until after
    the send: a VNIC flow adds no work between a slot's time and its frame.  Without a flow
    there is next to nothing to leave; under a UDP flow through the master's window the
    slave (which no received frame wakes under bulk traffic) leaves it at many of its
    slots, and still takes and follows every cycle's Sync."""
    idle, left, cycles, syncs = _left_until_after_the_send(lab)
    assert idle <= IDLE_CYCLES // 20, idle  # a deadline in twenty: counted only when frames wait
    # three in four measured here; none when the window's frames are taken first
    assert left >= cycles // 4, (left, cycles)
    assert syncs >= cycles * 9 // 10


def test_with_two_ports_a_peers_window_waits_until_after_the_send_too():
    """The same with two ports (IEEE 802.1CB, R-TAGs on every frame): both wires' frames
    are taken in arrival order up to the first tunnelled one of either, the rest after the
    send, so the duplicate elimination still meets them in the wires' order."""
    with Lab("gr", 2, redundant=True) as rlab:
        idle, left, cycles, syncs = _left_until_after_the_send(rlab, redundant_dev=STATION_IF_B)
    assert idle <= IDLE_CYCLES // 20, idle
    assert left >= cycles // 4, (left, cycles)
    assert syncs >= cycles * 9 // 10
