#!/usr/bin/env python3
"""Seed corpora for the fuzz targets in csrc/fuzz/, written into a directory.

    python3 csrc/fuzz/make_seeds.py csrc/build/fuzz/seeds     (make -C csrc fuzz runs it)

One sub-directory per target, one file per seed.  The frames are built with
the project's scapy layers (rtmac/testing/scapy_layers.py) and scapy's IP/TCP, with every
address given, so the output is the same on every machine and every run.
Each seed is a well-formed case a target must handle (the fuzzer mutates
from there), in the input format its harness documents: harness integers
are little-endian, frames are as on the wire.
"""
from __future__ import annotations

import os
import struct
import sys

from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Raw

from rtmac.testing.scapy_layers import RTmac, TdmaReqCal, TdmaRplCal, TdmaSync, pad_frame, tunnel
from rtmac.testing.scapy_rtag import RTag

MASTER, BACKUP, STATION, SLAVE = ("02:52:54:00:00:01", "02:52:54:00:00:02",
                                  "02:52:54:00:00:02", "02:52:54:00:00:03")
BCAST = "ff:ff:ff:ff:ff:ff"
IP1, IP2 = "198.19.0.1", "198.19.0.2"
MSS = 1448
TS_OPTS = [("NOP", None), ("NOP", None), ("Timestamp", (12345, 678))]
APP_MAGIC = 0x52544E41   # "RTNA", struct rtn_app_hdr (the probes' form)
APP_MAGIC_X = 0x52544E58  # "RTNX", with the sender's stage stamps (rtn_app_hdr.h)
APP_XHDR_LEN = 44
CHAN_TYPES = (0x88B5, 0x88B6)


def u8(v): return struct.pack("<B", v & 0xFF)
def u16(v): return struct.pack("<H", v & 0xFFFF)
def u32(v): return struct.pack("<I", v & 0xFFFFFFFF)
def u64(v): return struct.pack("<Q", v & 0xFFFFFFFFFFFFFFFF)


# ---- frames ---------------------------------------------------------------------

def sync(cycle_no=5, xmit=1_000_000, sched=990_000, src=MASTER) -> bytes:
    return bytes(pad_frame(Ether(dst=BCAST, src=src) / RTmac()
                           / TdmaSync(cycle_no=cycle_no, xmit_stamp=xmit, sched_xmit_stamp=sched)))


def req_cal(dst=MASTER, src=SLAVE, xmit=2_000_000, reply_cycle=7, offset=400_000) -> bytes:
    return bytes(pad_frame(Ether(dst=dst, src=src) / RTmac()
                           / TdmaReqCal(xmit_stamp=xmit, reply_cycle=reply_cycle,
                                        reply_slot_offset=offset)))


def rpl_cal(dst=SLAVE, src=MASTER, req=2_000_000, rx=2_010_000, tx=2_400_000) -> bytes:
    return bytes(pad_frame(Ether(dst=dst, src=src) / RTmac()
                           / TdmaRplCal(request_xmit_stamp=req, reception_stamp=rx, xmit_stamp=tx)))


def tcp4(payload: bytes, seq=1000, flags="A", ip_id=100, sport=40000) -> bytes:
    return bytes(Ether(dst=SLAVE, src=MASTER) / IP(src=IP1, dst=IP2, id=ip_id, flags="DF")
                 / TCP(sport=sport, dport=5001, seq=seq, ack=777, flags=flags, window=501,
                       options=TS_OPTS) / payload)


def tcp6(payload: bytes, seq=1000, flags="A") -> bytes:
    return bytes(Ether(dst=SLAVE, src=MASTER) / IPv6(src="2001:db8::1", dst="2001:db8::2")
                 / TCP(sport=40000, dport=5001, seq=seq, ack=777, flags=flags, window=501,
                       options=TS_OPTS) / payload)


def udp4(payload: bytes) -> bytes:
    return bytes(Ether(dst=SLAVE, src=MASTER) / IP(src=IP1, dst=IP2, id=7)
                 / UDP(sport=5353, dport=5353) / payload)


def arp() -> bytes:
    return bytes(Ether(dst=BCAST, src=MASTER) / ARP(psrc=IP1, pdst=IP2, hwsrc=MASTER))


def tunnelled(inner: bytes, src=MASTER) -> bytes:
    return bytes(tunnel(Ether(inner), src))


def app_frame(ethertype=CHAN_TYPES[0], seq=1, payload=b"hello", dst=BCAST, src=MASTER) -> bytes:
    hdr = struct.pack("!IIqq", APP_MAGIC, seq, 5_000_000, 5_000_100)
    return bytes(Ether(dst=dst, src=src, type=ethertype) / Raw(hdr + payload))


def flow(n: int, last_len: int | None = None, seq=1000, ip_id=100, push_last=True) -> list[bytes]:
    """n segments of one TCP flow: full MSS, the last one last_len bytes (PSH)."""
    out = []
    for i in range(n):
        last = i == n - 1
        size = last_len if last and last_len is not None else MSS
        out.append(tcp4(bytes((seq + i + k) & 0xFF for k in range(size)), seq=seq + i * MSS,
                        flags="PA" if last and push_last else "A", ip_id=ip_id + i))
    return out


def vnet(flags=0, gso_type=0, hdr_len=0, gso_size=0, csum_start=0, csum_offset=0) -> bytes:
    """struct virtio_net_hdr in host (little-endian) byte order, as the TAP gives it."""
    return struct.pack("<BBHHHH", flags, gso_type, hdr_len, gso_size, csum_start, csum_offset)


def super_packet(size: int, v6=False) -> bytes:
    payload = bytes(k & 0xFF for k in range(size))
    frame = tcp6(payload, flags="PA") if v6 else tcp4(payload, flags="PA")
    hdr_len = 14 + (40 if v6 else 20) + 32
    return vnet(1, 4 if v6 else 1, hdr_len, MSS, hdr_len - 32, 16) + frame


# ---- per target -------------------------------------------------------------------

def seeds_tdma_proto() -> dict[str, bytes]:
    s = sync()
    return {
        "sync": s, "sync_unpadded": s[:42], "req_cal": req_cal(), "rpl_cal": rpl_cal(),
        "sync_huge_stamps": sync(0xFFFFFFFF, 2**63 - 1, 2**63 + 5),
        "tunnel": tunnelled(tcp4(b"x" * 20)),
        "nomac": bytes(pad_frame(Ether(dst=BCAST, src=MASTER) / RTmac(type=0) / Raw(b"\0" * 8))),
        "rtmac_v1": s[:16] + b"\x01" + s[17:],
        "tdma_v1": s[:18] + b"\x01\x01" + s[20:],
        "unknown_id": s[:20] + b"\x00\x42" + s[22:],
        "truncated_body": s[:30],
        "reserved_flags": s[:17] + b"\xfe" + s[18:],
        "not_rtmac": arp(),
    }


def seeds_tunnel() -> dict[str, bytes]:
    t = tunnelled(tcp4(b"payload" * 10))
    return {
        "tcp4": t, "udp4": tunnelled(udp4(b"q" * 30)), "tcp6": tunnelled(tcp6(b"six" * 7)),
        "arp": tunnelled(arp()), "reserved_flags": t[:17] + b"\x81" + t[18:],
        "header_only": t[:18], "sync_not_tunnel": sync(), "plain_ip": tcp4(b"linux frame"),
    }


def seeds_vnic_gso() -> dict[str, bytes]:
    station = u16(0x8000)        # the station's limit, RTN_TDMA_FRAME_MAX
    mtu = u16(1514 - 60)          # 60 + sel: 1514 bytes
    udp = udp4(b"u" * 100)
    return {
        "tso4_8k": station + super_packet(8000),
        "tso4_64k": station + super_packet(65000),
        "tso6_6k": station + super_packet(6000, v6=True),
        "tso4_mtu": mtu + super_packet(3000),
        "single": station + vnet() + tcp4(b"one frame"),
        "needs_csum_udp": station + vnet(1, 0, 0, 0, 34, 6) + udp,
        "needs_csum_tcp": station + vnet(1, 0, 0, 0, 34, 16) + tcp4(b"c" * 200),
        "ecn_tso": station + vnet(1, 0x81, 66, MSS, 34, 16) + tcp4(b"e" * 4000, flags="PA"),
        "ip_options": station + vnet(1, 1, 0, 500, 38, 16)
        + bytes(Ether(dst=SLAVE, src=MASTER)
                / IP(src=IP1, dst=IP2, id=9, options=b"\x01\x01\x01\x00")
                / TCP(sport=1, dport=2, seq=3, flags="FPA") / (b"o" * 1800)),
        # a single frame longer than the limit: refused by rtn_gso_begin, not by rtn_gso_next
        "single_too_big": u16(0) + vnet() + tcp4(b"b" * 400),
        "gso_size_zero": station + vnet(0, 1, 66, 0) + tcp4(b"z" * 3000),
    }


def records(frames: list[bytes]) -> bytes:
    return b"".join(u16(len(f)) + f for f in frames)


def seeds_vnic_gro() -> dict[str, bytes]:
    bad = bytearray(flow(1)[0])
    bad[-1] ^= 0xFF          # payload changed: TCP checksum no longer valid
    other = tcp4(b"y" * MSS, seq=5000, ip_id=1, sport=40001)
    return {
        "flow4": records(flow(4, 100)),
        "flow_full_no_push": records(flow(3, push_last=False)),
        "two_flows": records(flow(2, push_last=False) + [other] + flow(2, 10, seq=1000 + 2 * MSS)),
        "bad_checksum": records(flow(2, push_last=False) + [bytes(bad)]),
        "out_of_order": records([flow(3)[0], flow(3)[2], flow(3)[1]]),
        "not_tcp": records([udp4(b"u" * 50), arp()] + flow(2, 5)),
        "pure_ack": records([tcp4(b""), tcp4(b"")]),
        "tcp6": records([tcp6(b"6" * MSS), tcp6(b"6" * 10, seq=1000 + MSS)]),
        "many": records(flow(44, push_last=False)),
    }


def rtagged(frame: bytes, seq: int) -> bytes:
    """``frame`` with an R-TAG of ``seq`` after its MAC addresses."""
    return frame[:12] + b"\xf1\xc1\x00\x00" + struct.pack(">H", seq) + frame[12:]


def rx(frame: bytes | None, ts=0, end=False, port_b=False) -> bytes:
    w = (len(frame) if frame is not None else 0) & 0x7FF
    if frame is None:
        w |= 0x800
    if port_b:  # received on the station's second port
        w |= 0x1000
    if end:
        w |= 0x8000
    return u16(w) + u8(ts) + (frame or b"")


def seeds_station_rx() -> dict[str, bytes]:
    # mode: disc (0 slave, 1 master, 2 NoMAC, 3 none) | 4 VNIC | 8 vnet | probe type << 4
    #       | 0x40 capture | 0x80 taken as before a deadline first
    tcp_in = [tunnelled(f) for f in flow(4, 200)]
    return {
        "slave_sync": u8(0) + rx(sync(1)) + rx(sync(2, 2_000_000, 1_990_000), ts=1)
        + rx(rpl_cal()) + rx(app_frame()),
        "master_req_cal": u8(1) + rx(req_cal(dst=STATION)) + rx(sync(src=BACKUP), end=True)
        + rx(sync(src="02:99:99:99:99:99")),
        "vnic_plain": u8(2 | 4) + b"".join(rx(tunnelled(f)) for f in (arp(), udp4(b"d" * 40))),
        "vnic_gro": u8(0 | 4 | 8) + b"".join(rx(f) for f in tcp_in) + rx(tunnelled(udp4(b"x"))),
        "vnic_gro_nomac": u8(2 | 4 | 8) + b"".join(rx(f) for f in tcp_in),
        "channels": u8(2) + rx(app_frame(CHAN_TYPES[0], 1)) + rx(app_frame(CHAN_TYPES[1], 2))
        + rx(app_frame(CHAN_TYPES[0], 3, b"z" * 1400)) + rx(app_frame(CHAN_TYPES[0], 4))
        + rx(app_frame(CHAN_TYPES[0], 5)) + rx(app_frame(CHAN_TYPES[0], 6)),
        "probe": u8(3 | (1 << 4)) + rx(app_frame(CHAN_TYPES[0], 9), ts=5),
        # IEEE 802.1CB: both copies of tagged Syncs and application frames, a short tag
        "rtag": u8(0) + b"".join(rx(rtagged(sync(n, 1_000_000 * n, 990_000 * n), n)) * 2
                                 for n in (1, 2, 4)) + rx(rtagged(app_frame(), 7)) * 2
        + rx(rtagged(app_frame(), 7)[:19]) + rx(app_frame()),
        "ipv4": u8(0) + rx(rt_udp()) + rx(rt_udp(stamped=False)) + rx(rt_udp(dport=9))
        + rx(rt_echo()) + rx(rt_echo(0)) + rx(rt_udp(b"z" * 1400)),
        "ipv4_nomac": u8(2) + rx(rt_echo()) + rx(rt_udp()),
        # a datagram in three fragments, put together for the UDP sockets (a chain each)
        "ipv4_fragments": u8(2) + b"".join(rx(f) for f in rt_udp_fragments(bytes(3500))),
        # port 0 is no UDP socket's: the EtherType channels have none (a fuzz run found it)
        "udp_port0": u8(2) + rx(rt_udp(dport=0)) + rx(rt_udp(stamped=False, dport=0)),
        # before a deadline: the Sync and an RT frame, not the window's frames behind them
        "deadline": u8(0 | 4 | 0x80) + rx(sync(1)) + rx(app_frame()) + rx(tunnelled(arp()))
        + rx(sync(2, 2_000_000, 1_990_000)),
        "deadline_rtag": u8(0 | 4 | 0x80) + rx(rtagged(sync(1), 1)) + rx(None)
        + rx(rtagged(tunnelled(arp()), 2)) + rx(app_frame()),
        "deadline_limit": u8(0 | 4 | 0x80)
        + b"".join(rx(app_frame(CHAN_TYPES[0], n)) for n in range(10)),
        # two ports: both copies of tagged frames, stamps deciding the wires' order (a tie:
        # the first port's), a tunnelled frame on the second wire first in that order
        "two_ports": u8(0 | 4) + rx(rtagged(sync(1), 1), ts=2) + rx(rtagged(sync(1), 1), ts=1,
                                                                    port_b=True)
        + rx(rtagged(app_frame(), 2), ts=3) + rx(rtagged(app_frame(), 2), ts=3, port_b=True)
        + rx(rtagged(tunnelled(arp()), 3), ts=4) + rx(rtagged(tunnelled(arp()), 3), ts=4,
                                                      port_b=True),
        "two_ports_deadline": u8(0 | 4 | 0x80) + rx(rtagged(sync(1), 1), ts=2)
        + rx(rtagged(tunnelled(arp()), 2), ts=1, port_b=True) + rx(rtagged(app_frame(), 3), ts=3),
        "two_ports_bad_desc": u8(0 | 4 | 0x80) + rx(None) + rx(rtagged(sync(1), 1))
        + rx(rtagged(sync(1), 1), port_b=True) + rx(rtagged(app_frame(), 2), port_b=True),
        "odd": u8(0 | 4) + rx(None) + rx(b"\x01\x02") + rx(arp(), end=True) + rx(sync()[:17])
        + rx(tunnelled(tcp4(b"a"))[:18]) + rx(app_frame(0x0800)),
    }


def seeds_station_chan() -> dict[str, bytes]:
    # mode: 1 NoMAC | 2 TX ring full | 4 VNIC | 8 vnet | 0x10 probe (then a length byte)
    def send(chan, frame):
        return u8(0) + u8(chan) + u16(len(frame) - 14) + u8(len(frame)) + frame
    def poke(chan, where, data): return u8(1) + u8(chan) + u16(where) + u8(len(data)) + data
    def race(chan, where, data): return u8(3) + u8(chan) + u16(where) + u8(len(data)) + data
    def run(us): return u8(4) + u16(us)
    def chan_rx(chan, frame):   # then the application reads that channel
        return u8(5) + u8(chan) + u16(len(frame) - 14) + u8(len(frame)) + frame + u8(chan)
    def cycle(no): return u8(6) + u32(no)
    def tap(pkt): return u8(7) + u16(len(pkt)) + pkt
    drain = u8(2)
    a0, a1 = app_frame(CHAN_TYPES[0], 1, dst=SLAVE), app_frame(CHAN_TYPES[1], 2, dst=SLAVE)
    tx0_len = 1216      # sizeof(struct rtn_chan_shm): where TX message 0 and its len start
    peer = 0x8000 | 392  # a header poke at rtn_chan_shm.udp.peer
    rt_peer = int.from_bytes(bytes(map(int, PEER_IP.split("."))), "big") << 16 | 6000
    return {
        "tdma_slots": u8(0) + send(0, a0) + send(1, a1) + send(2, a0) + run(100) + run(400)
        + run(400) + run(1000) + cycle(3),
        "nomac": u8(1) + send(0, a0) + send(0, a0) + drain + chan_rx(0, a0) + chan_rx(1, a1)
        + run(50),
        "tx_full": u8(2) + send(0, a0) + run(1200) + drain,
        "vnic_tdma": u8(4) + tap(tcp4(b"v" * 300)) + tap(arp()) + run(350) + run(1000),
        "vnic_tso": u8(4 | 8) + tap(super_packet(3000)) + run(350) + run(1000) + run(1000),
        "vnic_nomac_tso": u8(1 | 4 | 8) + tap(super_packet(3000)) + run(10) + run(10),
        "probe": u8(0x10) + u8(40) + run(800) + run(1000),
        "poke_len": u8(1) + send(0, a0) + poke(0, tx0_len, u32(1600)) + drain,
        "race_len": u8(1) + send(0, a0) + race(0, tx0_len, u32(1536)) + send(0, a0) + drain,
        "poke_tail": u8(0) + send(0, a0) + poke(0, 0x8000 | 192, u32(0)) + run(200),
        # the socket's own broadcast and group datagrams loop back to channels 3 and 4
        # (the group's until IP_MULTICAST_LOOP is cleared: rtn_chan_shm.udp.sockopts)
        "loop_back": u8(1) + send(3, own_udp("255.255.255.255")) + drain
        + send(4, own_udp("224.0.0.22")) + poke(4, 0x8000 | 404, u32(4))
        + send(4, own_udp("224.0.0.22")) + drain,
        # channels 3 and 4 share UDP port 5000: unconnected, then 3 connected to the
        # datagrams' source, then 4 connected elsewhere; a broadcast to both
        "shared_port": u8(1) + chan_rx(3, rt_udp()) + poke(3, peer, u64(rt_peer))
        + chan_rx(4, rt_udp()) + poke(4, peer, u64(rt_peer + 1)) + chan_rx(3, rt_udp())
        + chan_rx(3, rt_udp(bcast=True)) + poke(3, peer, u64(0)) + chan_rx(4, rt_udp()),
    }


def seeds_app_chan() -> dict[str, bytes]:
    # size selector (0: exact), header writes before attach, then operations
    def op(kind, args=b""): return u8(kind) + args + u8(1)
    def deliver(frame, more=False):  # the last byte: a chain's piece (RTN_MSG_MORE) or not
        return op(1, u16(len(frame)) + frame + u32(7) + u64(5_000_000) + u64(5_000_100)
                  + u8(2 if more else 0))
    publish = op(2, u32(12) + u64(2_000_000_000) + u64(1_000_000) + u64(1_000) + u64(1_999_999_000))
    send = op(3, u16(100) + u8(1))
    send_at = op(3, u16(10) + u8(0) + u64(123_456_789))
    recv = op(4, u16(2048))
    recv_small = op(4, u16(3))
    info, wait, stats, sub = op(5), op(6), op(7), op(8, u8(4))
    raw = op(9, u16(60) + bytes(60) + u8(1))   # 60 bytes, the channel's EtherType put in
    a = app_frame(dst=SLAVE)
    return {
        "roundtrip": u8(0) + u8(0) + send + send + deliver(a) + recv + recv + stats,
        "cycles": u8(0) + u8(0) + wait + publish + wait + info + publish + info + send,
        "recv_small": u8(0) + u8(0) + deliver(a) + recv_small + deliver(a[:20]) + recv,
        "subscribe": u8(0) + u8(0) + deliver(a) + deliver(a) + deliver(a) + sub + send_at,
        "short_memory": u8(1) + u8(0) + send,
        "bad_magic": u8(0) + u8(1) + u16(0) + u8(3) + b"\0\0\0\0" + send,
        "bad_depth": u8(0) + u8(1) + u16(8) + u8(3) + u32(3) + recv,
        "large_memory": u8(3) + u8(0) + deliver(a) + recv,
        "send_raw": u8(0) + u8(0) + raw + raw + send + stats,
        # a chain of two full pieces and a short last one, read whole; then a broken one
        "chain": u8(0) + u8(0) + deliver(a + bytes(1536 - len(a)), more=True)
        + deliver(bytes(1536), more=True) + deliver(bytes(100)) + op(4, u16(4096))
        + deliver(a, more=True) + deliver(a) + recv + recv,
    }


def seeds_app_reply() -> dict[str, bytes]:
    # how: descriptors (0-5) | part carrying them << 4; descriptor kinds; split into parts
    def reply(text: str, fds=2, part=0, kinds=0, split=0) -> bytes:
        return u8(fds | part << 4) + u8(kinds) + u8(split) + text.encode()
    ok = '{"ok": true, "channel": 3, "shm_size": 25472}\n'
    return {
        "ok": reply(ok), "ok_split": reply(ok, part=2, split=3),
        "refused": reply('{"ok": false, "error": "EtherType 0x0800 cannot carry a channel"}\n',
                         fds=0),
        "escapes": reply('{"ok": false, "error": "a \\"quoted\\" \\u00e9\\n\\\\ tab\\t end"}\n',
                         fds=0),
        "no_fds": reply(ok, fds=0), "three_fds": reply(ok, fds=3),
        "swapped_fds": reply(ok, kinds=0b1110), "small_memory": reply(ok, kinds=0b11),
        "no_newline": reply('{"ok": true, "channel": 1}'),
        "too_long": reply('{"ok": false, "error": "' + "x" * 1100 + '"}\n', fds=0),
        "spaces": reply('{ "ok" :\ttrue , "channel" : -1 }\n'),
        "ok_without_value": reply('{"ok"}\n', fds=1),
    }


def seeds_tdma_sim() -> dict[str, bytes]:
    # header: cycle (100 us * (1 + b % 10)), flags (1 backup, 2/4/8 lazy begin per station,
    # 0x10 drift, 0x20 second slave slot, 0x40 its phasing, 0x80 it is a transmit window right
    # after slot 0), calibration rounds backup | slave << 2 | listen cycles << 4 | 0x40 the
    # primary has a window after its slot 0, guard, clock errors, slot size, start gap (10 us
    # units), seed
    def header(cycle=9, flags=0x01, cal=0x05, guard=9, clk=0, size=40, gap=10, seed=1):
        return bytes([cycle, flags, cal, guard, clk, size, gap, seed])

    def rec(kind, who, step_us, args=b""):
        return u8(kind) + u8(who) + u16(step_us) + args

    def wait(step_us, n=1):   # REC_STALL of no frames: only time passes
        return rec(7, 0, step_us, u8(0) + u8(0)) * n

    def inj_sync(who, dcycle, dxmit, dsched, src=0, step=100):
        return rec(1, who, step, u8(src) + u32(dcycle) + u64(dxmit) + u64(dsched))

    def data(who, slot, prio, length, step=100, expires_us=None):
        # expires_us: the frame expires that long after now (None: never)
        life = u8(0) if expires_us is None else u8(1) + u16(expires_us + 100)
        return rec(4, who, step, u8(slot) + u8(prio) + u16(length) + life)

    return {
        "quiet_backup": header() + wait(5000, 8),
        "quiet_fast": header(cycle=0, flags=0x01 | 0x20 | 0x10, cal=0x3F, guard=0, clk=0x55)
        + wait(500, 8),
        "lazy": header(flags=0x01 | 0x0E) + wait(2000, 20),
        "traffic": header() + wait(15000) + data(2, 0, 3, 200) + data(2, 0, 0, 60)
        + data(1, 0, 31, 1500) + data(0, 1, 5, 100) + wait(2000, 5),
        # a backlog behind a slot, some of it expiring before its turn
        "expiring": header() + wait(15000)
        + b"".join(data(2, 0, 3, 1500, expires_us=k * 300) for k in range(12))
        + wait(2000, 8),
        "failover": header() + wait(15000) + rec(5, 0, 5000) + wait(3000, 3) + rec(5, 0, 5000)
        + wait(3000, 3),
        "stray_sync": header() + wait(15000) + inj_sync(2, 1, 0, 0, src=2)
        + inj_sync(2, 0, 50_000, 0, src=0) + inj_sync(1, 2, 0, 1000, src=1) + wait(3000, 3),
        "calibration": header(cal=0x0F) + wait(3000)
        + rec(2, 0, 100, u8(1) + u64(1_000_000) + u32(3) + u64(200_000))
        + rec(3, 2, 100, u8(0) + u16(0) + u64(10_000) + u64(300_000)) + wait(3000, 5),
        "slot_change": header() + wait(15000) + rec(6, 2, 3000, u16(500) + u8(10) + u8(0))
        + rec(6, 0, 3000, u16(0) + u8(0) + u8(100)) + wait(3000, 4),
        # a calibration request whose reply falls on the primary's window (at 61.04 us:
        # slot 0 at 0, 100 + 14 bytes at 100 Mbit/s, a 50 us guard)
        "req_cal_in_window": header(cal=0x45) + wait(5000, 3)
        + rec(2, 0, 3000, u8(2) + u64(1_000_000) + u32(2) + u64(61_040)) + wait(5000, 3),
        "window": header(flags=0x01 | 0x20 | 0x80, cal=0x45) + wait(5000, 4)
        + data(2, 1, 0, 100) + data(2, 1, 1, 200) + data(2, 1, 2, 300) + data(0, 1, 0, 500)
        + wait(2000, 4),
        "stall": header() + wait(15000) + rec(7, 2, 5000, u8(3) + u8(200)) + wait(3000, 4),
        "raw": header() + wait(15000) + rec(0, 2, 100, u16(60) + sync(3)) + rec(0, 1, 100, u16(18)
                                                                              + sync()[:18]),
    }


def app_frame_x(seq=1, payload=b"hello", hlen=APP_XHDR_LEN, dst=BCAST, src=MASTER) -> bytes:
    hdr = struct.pack("!IIqqHHqq", APP_MAGIC_X, seq, 5_000_000, 5_000_300, hlen, 0, 5_000_050,
                      5_000_250)
    return bytes(Ether(dst=dst, src=src, type=CHAN_TYPES[0])) + hdr + payload


def seeds_app_hdr() -> dict[str, bytes]:
    def inp(frame: bytes, tail: bytes = b"") -> bytes:
        return u16(len(frame)) + frame + (tail or u64(5_000_500) + u64(5_000_600)
                                          + u64(5_000_700) + u64(5_000_800) + u8(0))
    return {
        "extended": inp(app_frame_x()),
        "probe": inp(app_frame()),
        "longer": inp(app_frame_x(hlen=APP_XHDR_LEN + 8, payload=b"\1" * 8 + b"x")),
        "lying": inp(app_frame_x(hlen=0xFFFF)),
        "short": inp(app_frame_x()[:14 + APP_XHDR_LEN - 1]),
        "raw": inp(bytes(Ether(dst=BCAST, src=MASTER, type=CHAN_TYPES[0])) + b"plain"),
        "thresholds": inp(app_frame_x(), u64(1) + u64(2) + u64(3) + u64(4) + u8(1) + u64(1000)
                          + u64(1)),
    }


def seeds_frer() -> dict[str, bytes]:
    def header(hist=6, reset_ms=10, take_no_seq=0): return u16(hist) + u16(reset_ms) + u8(take_no_seq)
    def wire(port, frame, step=10): return u8(port) + u16(step) + u8(len(frame)) + frame
    def tagged(port, seq, step=10, size=46): return u8(2 | port) + u16(step) + u16(seq) + u8(size)
    def untagged(port, step=10): return u8(4 | port) + u16(step) + u8(30)
    def tick(step): return u8(6) + u16(step)

    def rtag_sync(seq, cycle_no):
        return bytes(Ether(dst=BCAST, src=MASTER) / RTag(seq=seq) / RTmac()
                     / TdmaSync(cycle_no=cycle_no, xmit_stamp=1000, sched_xmit_stamp=900))

    both = b"".join(tagged(0, s) + tagged(1, s, 0) for s in range(8))
    return {
        "two_ports": header() + both,
        "wire_frames": header() + b"".join(wire(p, rtag_sync(s, s)) for s in range(4) for p in (0, 1)),
        "loss_reorder": header(8) + b"".join(tagged(0, s) for s in (0, 1, 3, 2, 6, 5, 9)),
        "wrap": header(4) + b"".join(tagged(s & 1, s) for s in (65533, 65534, 65535, 0, 1)),
        "rogue_reset": header(4, 5) + tagged(0, 10) + tagged(0, 5000) + tick(60) + tagged(1, 5000),
        "tagless": header(4, 0, 1) + untagged(0) + tagged(1, 3) + untagged(1),
        "short_tag": header() + wire(0, rtag_sync(1, 1)[:19]) + wire(1, rtag_sync(1, 1)[:13]),
        "clock_back": header(4, 1) + tagged(0, 1) + u8(0x82) + u16(500) + u16(2) + u8(20),
    }


STATION_IP, PEER_IP = "10.0.0.2", "10.0.0.1"   # station_harness.h's STATION_IP


def rt_udp(payload=b"hello", dport=5000, stamped=True, bcast=False) -> bytes:
    """A datagram for the harness's UDP sockets (port 5000, stamped: the RTNX header first;
    bcast: to 255.255.255.255)."""
    if stamped:
        payload = struct.pack("!IIqqHHqq", APP_MAGIC_X, 7, 5_000_000, 5_000_300, APP_XHDR_LEN,
                              0, 5_000_050, 5_000_250) + payload
    dst = ("255.255.255.255", BCAST) if bcast else (STATION_IP, STATION)
    return bytes(Ether(dst=dst[1], src=MASTER) / IP(src=PEER_IP, dst=dst[0]) /
                 UDP(sport=6000, dport=dport) / Raw(payload))


def rt_udp_fragments(payload: bytes, size=1480) -> list[bytes]:
    """rt_udp()'s stamped datagram to port 5000 in fragments of ``size`` data bytes."""
    from scapy.layers.inet import fragment

    whole = Ether(rt_udp(payload))
    return [bytes(Ether(dst=whole.dst, src=whole.src) / f)
            for f in fragment(whole[IP], fragsize=size)]


def own_udp(dst="255.255.255.255", payload=b"own") -> bytes:
    """A datagram the harness's UDP sockets (port 5000, stamped) may send: from the station."""
    payload = struct.pack("!IIqqHHqq", APP_MAGIC_X, 9, 0, 0, APP_XHDR_LEN, 0, 0, 0) + payload
    mac = BCAST if dst == "255.255.255.255" else "01:00:5e:00:00:16"
    return bytes(Ether(dst=mac, src=STATION) / IP(src=STATION_IP, dst=dst) /
                 UDP(sport=5000, dport=5000) / Raw(payload))


def rt_echo(kind=8, data=b"x" * 56) -> bytes:
    return bytes(Ether(dst=STATION, src=MASTER) / IP(src=PEER_IP, dst=STATION_IP) /
                 ICMP(type=kind, id=0x1234, seq=1) / Raw(data))


def seeds_ipv4() -> dict[str, bytes]:
    def inp(frame: bytes) -> bytes:
        return u16(len(frame)) + frame + u16(3) + u64(0x0123456789ABCDEF)
    return {
        "udp": inp(rt_udp(b"d" * 64, stamped=False)),
        "udp_stamped": inp(rt_udp(b"d" * 64)),
        "udp_nocsum": inp(rt_udp(b"d" * 8, stamped=False)[:40] + b"\0\0" + b"d" * 8),
        "echo_request": inp(rt_echo()),
        "echo_reply": inp(rt_echo(0)),
        "options": inp(bytes(Ether() / IP(options=b"\x01\x01\x01\x00") / UDP() / Raw(b"o"))),
        "fragment": inp(bytes(Ether() / IP(flags="MF") / UDP() / Raw(b"f" * 16))),
        "unreachable": inp(bytes(Ether() / IP() / ICMP(type=3, code=3) / Raw(b"u" * 28))),
    }


def seeds_ip_defrag() -> dict[str, bytes]:
    # records: the frame's length, ms since the one before, the frame
    from scapy.layers.inet import fragment

    def rec(frame: bytes, ms=0) -> bytes:
        return u16(len(frame)) + u16(ms) + frame

    def frags(payload: bytes, ip_id=1, src=IP1, size=1480) -> list[bytes]:
        dgram = IP(src=src, dst=IP2, id=ip_id) / UDP(sport=4000, dport=5000) / Raw(payload)
        return [bytes(Ether(src=MASTER, dst=SLAVE) / f) for f in fragment(dgram, fragsize=size)]

    a, b = frags(b"a" * 4000, 7), frags(b"b" * 3000, 7, src="198.19.0.3")
    return {
        "in_order": b"".join(rec(f) for f in a),
        "interleaved": b"".join(rec(x) + rec(y) for x, y in zip(a, b)),
        "out_of_order": rec(a[0]) + rec(a[2]) + rec(a[1]),
        "idle": rec(a[0]) + rec(a[1], ms=300) + rec(a[2]),
        "small_fragments": b"".join(rec(f) for f in frags(bytes(range(200)), 9, size=64)),
    }


def seeds_preload_rules() -> dict[str, bytes]:
    # rtnet-run's rules files, good and bad (the parser names the line of a bad one)
    return {
        "defaults": b"rt udp 198.18.0.1 *\nrt udp * 198.18.0.0/24\nrt packet 0x88b5\n",
        "ports_prio": b"# rtt-responder\nrt udp *:36000 * prio 3 slot 2\nos udp *:53 *\n",
        "lifetime": b"rt udp * 224.0.0.22:4840 lifetime 1000 prio 2\nrt packet 0x88b5 lifetime 0\n",
        "env_style": b"rt udp 198.18.0.2:6000 198.18.0.3:* ; os packet *",
        "bad_port": b"rt udp 198.18.0.1:99999 *\n",
        "bad_word": b"rt udp * *\nrtt udp * *\n",
        "long": b"rt udp " + b"1" * 600 + b" *\n",
        "many": b"os udp * *\n" * 70,
    }


def seeds_preload_frame() -> dict[str, bytes]:
    # a socket selector byte (0 UDP, 1 packet raw, 2 packet dgram), then a received frame
    return {
        "udp": u8(0) + udp4(b"sockperf"),
        "udp_short": u8(0) + udp4(b"x")[:40],
        "packet_raw": u8(1) + app_frame(),
        "packet_dgram_bcast": u8(2) + app_frame(dst=BCAST),
        "packet_tiny": u8(2) + b"\x01" * 13,
    }


TARGETS = {
    "preload_rules": seeds_preload_rules,
    "preload_frame": seeds_preload_frame,
    "tdma_proto": seeds_tdma_proto, "tunnel": seeds_tunnel, "vnic_gso": seeds_vnic_gso,
    "vnic_gro": seeds_vnic_gro, "station_rx": seeds_station_rx,
    "station_chan": seeds_station_chan, "app_chan": seeds_app_chan,
    "app_reply": seeds_app_reply, "tdma_sim": seeds_tdma_sim, "app_hdr": seeds_app_hdr,
    "frer": seeds_frer, "ipv4": seeds_ipv4, "ip_defrag": seeds_ip_defrag,
}


def write_all(out_dir: str) -> int:
    count = 0
    for target, make in TARGETS.items():
        d = os.path.join(out_dir, target)
        os.makedirs(d, exist_ok=True)
        for old in os.listdir(d):
            os.unlink(os.path.join(d, old))
        for name, data in make().items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
            count += 1
    return count


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: make_seeds.py OUTPUT_DIR", file=sys.stderr)
        return 2
    n = write_all(argv[1])
    print(f"make_seeds: {n} seeds for {len(TARGETS)} targets in {argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
