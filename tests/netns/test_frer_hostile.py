"""Hostile IEEE 802.1CB input at a live two-port station, from outside.

A genuine redundant stream runs from station 1 to station 2 (NoMAC, both with two
ports).  Meanwhile raw sockets on the wires' bridge ports facing station 2 forge R-TAG
frames: the genuine stream's identity from another sender, with sequence numbers that
jump and wrap and repeat; tags cut short; a tag in a tag; a tag on an EtherType nobody
receives; and a stream of a stranger on wire B only.  Station 2 must count them, keep
the stream running, never deliver a genuine message twice, and not crash.  A station
whose second port's wire is down at the start runs on the first and counts the second
again once it is mended.
"""

import contextlib
import socket
import struct
import threading

import pytest
from conftest import settle, wait_for
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from rtmac.testing.scapy_rtag import RTag
from rtnet import netns
from rtnet.app import Channel
from rtnet.errors import RtnetError
from rtnet.lab import STATION_IF_B, Lab
from rtnet.station import RtSettings, Station

pytestmark = pytest.mark.netns

ET = 0x88B6
OTHER_ET = 0x88B7  # not one of the stations' EtherTypes
N = 1500
FORGED = struct.pack(">I", 0xDEAD0000)
STRANGER = "02:99:99:99:99:01"


def open_station(ls):
    return Station(
        ls.ifname,
        netns=ls.netns,
        mac=ls.mac,
        ethertypes=[ET],
        rt=RtSettings(priority=80),
        redundant_dev=STATION_IF_B,
    )


def hostile_frames(dst: str, genuine: str) -> tuple[list[bytes], list[bytes]]:
    """(frames for both wires, frames for wire B only) aimed at ``dst``."""
    head = Ether(dst=dst, src=genuine)
    pad = bytes(40)
    both = [
        bytes(head / RTag(seq=s, type=ET) / Raw(FORGED + pad))
        # the genuine stream's identity: far ahead, a wrap, a replay
        for s in (40000, 40001, 65535, 0, 1, 20000, 20000, 20000)
    ]
    raw_head = bytes(head)[:12]
    both += [
        raw_head + b"\xf1\xc1\x00\x00\x00\x05",  # no encapsulated EtherType
        raw_head + b"\xf1\xc1\x00",  # cut inside the tag
        bytes(head / RTag(seq=5, type=0xF1C1) / RTag(seq=6, type=ET) / Raw(FORGED + pad)),
        bytes(head / RTag(seq=5, type=OTHER_ET) / Raw(pad)),
    ]
    only_b = [
        bytes(Ether(dst=dst, src=STRANGER) / RTag(seq=k, type=ET) / Raw(FORGED + pad))
        for k in range(50)
    ]
    return both, only_b


def forge(lab, port: str, frames_by_wire: dict, rounds: int, stop: threading.Event):
    """Send the frames on each wire's bridge port ``port`` ``rounds`` times (or until
    ``stop``), from the wire namespaces."""
    socks = {}
    try:
        for wire in frames_by_wire:
            with netns.entered(lab.wire(wire)):
                s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
            s.bind((port, 0))
            socks[wire] = s
        for _ in range(rounds):
            if stop.is_set():
                return
            for wire, frames in frames_by_wire.items():
                for f in frames:
                    socks[wire].send(f)
    finally:
        for s in socks.values():
            s.close()


@pytest.fixture
def pair():
    with Lab("fh", 2, redundant=True) as lab, contextlib.ExitStack() as stack:
        tx = stack.enter_context(open_station(lab.station(1)))
        rx = stack.enter_context(open_station(lab.station(2)))
        for st in (tx, rx):
            st.attach_nomac()
            st.start()
        yield lab, tx, rx


def send_stream(tx, rx, dst: str, n: int, during=None) -> list[int]:
    """``n`` numbered messages on a redundant channel of ``tx``; the numbers of genuine
    messages ``rx``'s application got, in arrival order (forged ones are left out)."""
    tx_id, memfd, kickfd = tx.open_channel(ET, redundant=True, cycles=False)
    out = Channel.attach(memfd, kickfd)
    _cid, memfd, kickfd = rx.open_channel(ET)
    inp = Channel.attach(memfd, kickfd)
    got, forged, done = [], [], threading.Event()

    def reader():
        while not done.is_set():
            msg = inp.recv(timeout=0.05)
            if msg is not None:
                (forged if msg.payload[:4] == FORGED else got).append(
                    struct.unpack(">I", msg.payload[:4])[0]
                )

    t = threading.Thread(target=reader)
    t.start()
    try:
        for i in range(n):
            if during and i == n // 4:
                during()
            out.send(dst, struct.pack(">I", i) + bytes(40))
            if i % 50 == 49:  # the channel's ring holds a few hundred: let it drain
                wait_for(
                    lambda i=i: tx.channel_stats(tx_id)["tx_msgs"] >= i + 1,
                    10,
                    "the sender's channel",
                )
        wait_for(lambda: tx.channel_stats(tx_id)["tx_msgs"] == n, 10, "the last message")
        settle(lambda: len(got), lambda: got[-1:] == [n - 1], timeout=10.0)
    finally:
        done.set()
        t.join()
        out.close()
        inp.close()
    return got


def stream_of(station, src, ethertype=ET):
    return [
        s
        for s in station.stats()["frer"]["streams"]
        if s["src"] == src and s["ethertype"] == ethertype
    ]


def test_forged_tags_are_counted_and_never_deliver_a_genuine_message_twice(pair):
    lab, tx, rx = pair
    s1, s2 = lab.station(1), lab.station(2)
    both, only_b = hostile_frames(s2.mac, s1.mac)
    stop, threads = threading.Event(), []

    def start_forging():
        t = threading.Thread(
            target=forge, args=(lab, s2.wire_port, {"a": both, "b": both + only_b}, 40, stop)
        )
        t.start()
        threads.append(t)

    before = rx.stats()
    try:
        got = send_stream(tx, rx, s2.mac, N, during=start_forging)
    finally:
        stop.set()
        for t in threads:
            t.join()
    after = rx.stats()
    # 802.1CB cannot tell the forger's copies of the genuine identity from the sender's:
    # every forged number here lies outside the history (the genuine stream is past 300
    # when the forging starts), so each is rogue and discarded, and the genuine stream
    # arrives whole, each message once, in order
    assert got == list(range(N)), (len(got), len(set(got)), after["frer"])
    [genuine] = stream_of(rx, s1.mac)
    assert genuine["total"]["rogue"] >= 8
    # the stranger's stream on wire B only: followed, with nothing on port A
    [stranger] = stream_of(rx, STRANGER)
    assert stranger["port"][0]["passed"] + stranger["port"][0]["discarded"] == 0
    assert stranger["port"][1]["passed"] >= 50
    # tags cut short, a tag in a tag and a tag on an EtherType the station does not take
    # made no stream (its XDP program leaves them to the kernel); the station runs on
    assert {(s["src"], s["ethertype"]) for s in after["frer"]["streams"]} == {
        (s1.mac, ET),
        (STRANGER, ET),
    }, after["frer"]["streams"]
    assert after["loops"] > before["loops"]


def test_a_second_port_down_at_start_runs_on_the_first_and_counts_again_when_mended():
    with Lab("fd", 2, redundant=True) as lab, contextlib.ExitStack() as stack:
        s1, s2 = lab.station(1), lab.station(2)
        lab.set_wire_port(s2, "b", up=False)
        tx = stack.enter_context(open_station(s1))
        rx = stack.enter_context(open_station(s2))
        for st in (tx, rx):
            st.attach_nomac()
            st.start()
        got = send_stream(tx, rx, s2.mac, 300)
        [st] = stream_of(rx, s1.mac)
        assert got == list(range(300))
        assert st["port"][1]["passed"] + st["port"][1]["discarded"] == 0
        lab.set_wire_port(s2, "b", up=True)
        got = send_stream(tx, rx, s2.mac, 300)
        [st2] = stream_of(rx, s1.mac)
        assert got == list(range(300))
        assert st2["port"][1]["passed"] + st2["port"][1]["discarded"] >= 290


def test_a_missing_second_port_is_one_clear_error():
    with Lab("fm", 1) as lab:
        ls = lab.station(1)
        with pytest.raises(RtnetError) as err:
            Station(
                ls.ifname,
                netns=ls.netns,
                mac=ls.mac,
                ethertypes=[ET],
                rt=RtSettings(priority=80),
                redundant_dev="rteth9",
            )
        assert "rteth9: no such interface" in str(err.value)
