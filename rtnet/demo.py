"""The frame demo: lab stations exchange real-time frames over AF_XDP.

Station 1 sends ``count`` numbered frames of a real-time EtherType to every
other station; each receiver checks count, content and order, and the
one-way latency (receive timestamp minus transmit timestamp, both taken in C
on the shared CLOCK_MONOTONIC) is reported.  A kernel ping runs over the same
veths at the same time to show that other traffic still reaches Linux.
"""

import struct
import subprocess

import numpy as np

from .lab import Lab
from .mac import parse_mac
from .xsk import RawSocket

DEMO_ETHERTYPE = 0x88B5  # IEEE local experimental EtherType 1
MAGIC = b"RTNETXDP"


def build_frame(dst: str, src: str, seq: int, size: int = 64) -> bytes:
    hdr = parse_mac(dst) + parse_mac(src) + struct.pack("!H", DEMO_ETHERTYPE)
    body = MAGIC + struct.pack("!I", seq)
    return (hdr + body).ljust(size, bytes([seq & 0xFF]))


def parse_seq(frame: bytes) -> int | None:
    if len(frame) < 26 or frame[14:22] != MAGIC:
        return None
    return struct.unpack("!I", frame[22:26])[0]


def run_frame_demo(name="demo", stations=2, count=1000, keep=False, out=None) -> dict:
    def say(text):
        if out is not None:
            print(text, file=out, flush=True)

    lab = Lab(name, max(2, stations))
    lab.up()
    say(f"lab {lab.name}: {lab.n} stations up on bridge {lab.wire_netns}/rtbr0")
    socks = []
    result = {"ok": False, "count": count, "receivers": []}
    try:
        sender_st = lab.station(1)
        sender = RawSocket(sender_st.ifname, ethertypes=[DEMO_ETHERTYPE], netns=sender_st.netns)
        socks.append(sender)
        receivers = []
        for st in lab.stations[1:]:
            r = RawSocket(st.ifname, ethertypes=[DEMO_ETHERTYPE], netns=st.netns)
            socks.append(r)
            receivers.append((st, r))
        say(
            f"AF_XDP sockets open, XDP mode: {sender.mode}"
            + (f" (fallback: {sender.fallback_reason})" if sender.fallback_reason else "")
        )

        ping = lab.spawn(
            sender_st,
            ["ping", "-q", "-c", "5", "-i", "0.2", "-W", "1", lab.station(2).ip],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        # One frame at a time, so the latency is the path's, not a queue's.
        # Receivers are read in turn: later stations include the earlier reads.
        got = {st.index: ([], []) for st, _ in receivers}
        for seq in range(count):
            frame = build_frame("ff:ff:ff:ff:ff:ff", sender_st.mac, seq)
            tx = sender.send(frame)  # broadcast: every station's socket sees it
            for st, r in receivers:
                seqs, lat = got[st.index]
                while True:
                    item = r.recv(timeout=1.0)
                    if item is None:
                        break
                    data, rx = item
                    s_ = parse_seq(data)
                    if s_ is not None and data == build_frame(
                        "ff:ff:ff:ff:ff:ff", sender_st.mac, s_
                    ):
                        seqs.append(s_)
                        if s_ == seq:
                            lat.append(rx - tx)
                            break
        for st, r in receivers:
            seqs, lat = got[st.index]
            in_order = seqs == list(range(len(seqs)))
            lat_us = np.array(lat, dtype=np.float64) / 1000.0
            rec = {
                "station": st.index,
                "received": len(seqs),
                "in_order": in_order,
                "latency_us": (
                    {
                        k: float(np.percentile(lat_us, q))
                        for k, q in (("min", 0), ("p50", 50), ("p99", 99), ("max", 100))
                    }
                    if len(lat_us)
                    else None
                ),
            }
            result["receivers"].append(rec)
            q = rec["latency_us"]
            say(
                f"station {st.index}: received {len(seqs)}/{count} frames, "
                f"{'in order' if in_order else 'OUT OF ORDER'}"
                + (
                    f", one-way latency us min {q['min']:.1f} p50 {q['p50']:.1f} "
                    f"p99 {q['p99']:.1f} max {q['max']:.1f}"
                    if q
                    else ""
                )
            )
        ping_out = ping.communicate(timeout=10)[0]
        lab.forget(ping)
        ping_ok = ping.returncode == 0
        result["kernel_ping_ok"] = ping_ok
        say(
            f"kernel traffic alongside (ping {lab.station(2).ip}): "
            f"{'ok' if ping_ok else 'FAILED'} - " + ping_out.strip().splitlines()[-2]
            if ping_out.strip()
            else "no output"
        )
        result["xdp_mode"] = sender.mode
        result["ok"] = ping_ok and all(
            r["received"] == count and r["in_order"] for r in result["receivers"]
        )
    finally:
        for s in socks:
            s.close()
        if not keep:
            lab.down()
            say(f"lab {lab.name}: removed")
    return result
