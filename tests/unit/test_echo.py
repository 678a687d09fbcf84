"""The daemon's echo service (rtnetctl ping) on a fake channel memory, without a station.

The service runs on the application channel client (rtnet.app.Channel); the
frames it puts in the TX ring and the replies it pairs are checked byte for
byte here, as a peer station would see them.
"""

import socket
import struct
import threading
import time

import pytest
from fake_channel import STATION_MAC, FakeChannelMemory

from rtnet import config
from rtnet._lowlevel import lib
from rtnet.control_server import RequestError
from rtnet.echo import APP_HDR, ECHO, ECHO_REPLY, ECHO_REQUEST, EchoService

PEER_MAC = bytes.fromhex("025254000009")
OWN_IP = "198.18.0.1"
BROADCAST = b"\xff" * 6


class FakeStation:
    """What EchoService uses of rtnet.station.Station."""

    def __init__(self, mem):
        self.mem = mem
        self.opened = []

    def open_channel(self, ethertype, **kw):
        self.opened.append((ethertype, kw))
        return (7, *self.mem.fds())


@pytest.fixture
def mem():
    m = FakeChannelMemory(depth=8)
    m.shm.ethertype = config.PING_ETHERTYPE
    yield m
    m.close()


@pytest.fixture
def echo(mem):
    svc = EchoService(FakeStation(mem), {OWN_IP})
    yield svc
    svc.close()


def frame(dst, src, seq, tx_ns, payload):
    return (
        dst
        + src
        + struct.pack("!H", config.PING_ETHERTYPE)
        + struct.pack("!IIqq", lib.RTN_APP_MAGIC, seq, 0, tx_ns)
        + payload
    )


def wait_sent(mem, n, timeout=5.0):
    """Until the service has committed ``n`` messages to the TX ring."""
    deadline = time.monotonic() + timeout
    while mem.shm.tx.head < n:
        assert time.monotonic() < deadline, f"{mem.shm.tx.head} of {n} messages sent"
        time.sleep(0.001)


def test_the_service_opens_its_channel_in_slot_0():
    m = FakeChannelMemory()
    st = FakeStation(m)
    svc = EchoService(st, set())
    try:
        assert st.opened == [
            (
                config.PING_ETHERTYPE,
                {"slot": 0, "prio": 15, "cycles": False, "max_size": 1514, "depth": 64},
            )
        ]
        assert svc.cid == 7
    finally:
        svc.close()
        m.close()


def test_a_request_is_answered_to_its_sender_with_its_sequence_number(mem, echo):
    pad = bytes(range(20))
    foreign = ECHO.pack(ECHO_REQUEST, socket.inet_aton("198.18.0.77"), 0, 5) + pad
    mine = ECHO.pack(ECHO_REQUEST, socket.inet_aton(OWN_IP), 0, 9) + pad
    mem.deliver(frame(BROADCAST, PEER_MAC, 76, 4000, foreign), rx_ns=4500)
    mem.deliver(frame(BROADCAST, PEER_MAC, 77, 5000, mine), rx_ns=5500)
    wait_sent(mem, 1)
    reply = mem.sent(0)
    assert reply[:6] == PEER_MAC and reply[6:12] == STATION_MAC
    magic, seq = struct.unpack_from("!II", reply, 14)
    assert (magic, seq) == (lib.RTN_APP_MAGIC_X, 77)
    assert (
        reply[lib.RTN_APP_OVERHEAD :]
        == ECHO.pack(ECHO_REPLY, socket.inet_aton(OWN_IP), 5000, 9) + pad
    )
    # the broadcast for another station's address, delivered first, got no answer
    assert mem.shm.tx.head == 1


def test_a_request_to_this_stations_mac_is_answered_whatever_its_target(mem, echo):
    req = ECHO.pack(ECHO_REQUEST, b"\0" * 4, 0, 3)
    mem.deliver(frame(STATION_MAC, PEER_MAC, 12, 100, req))
    wait_sent(mem, 1)
    assert struct.unpack_from("!I", mem.sent(0), 18)[0] == 12
    assert mem.sent(0)[lib.RTN_APP_OVERHEAD :] == ECHO.pack(ECHO_REPLY, b"\0" * 4, 100, 3)


def test_ping_pairs_the_reply_by_sequence_number(mem, echo):
    events, result = [], {}
    t = threading.Thread(
        target=lambda: result.update(echo.ping("198.18.0.2", 1, 1000, 56, 5000, events.append))
    )
    t.start()
    wait_sent(mem, 1)
    req = mem.sent(0)
    seq = struct.unpack_from("!I", req, 18)[0]
    kind, target, _, ident = ECHO.unpack_from(req, lib.RTN_APP_OVERHEAD)
    # 56 bytes asked for; the headers take more, and the request is as small as they allow
    assert req[:6] == BROADCAST and len(req) == 14 + max(56, APP_HDR + ECHO.size)
    assert (kind, target) == (ECHO_REQUEST, socket.inet_aton("198.18.0.2"))
    # a reply to an earlier request of the same ping is not this one's
    stale = ECHO.pack(ECHO_REPLY, target, 1_000, ident)
    mem.deliver(frame(STATION_MAC, PEER_MAC, seq + 1, 0, stale), rx_ns=900_000)
    good = ECHO.pack(ECHO_REPLY, target, 1_000_000, ident)
    mem.deliver(frame(STATION_MAC, PEER_MAC, seq, 0, good), rx_ns=1_250_000)
    t.join(5)
    assert not t.is_alive()
    assert events == [{"event": "reply", "seq": 1, "from": "02:52:54:00:00:09", "rtt_us": 250.0}]
    assert result["received"] == 1 and result["rtts_us"] == [250.0]


def test_a_full_channel_is_one_error_line(mem, echo):
    for _ in range(mem.depth):
        echo.chan.send("02:52:54:00:00:09", b"x")
    with pytest.raises(RequestError, match="^echo channel full$"):
        echo.ping("02:52:54:00:00:09", 1, 1000, 56, 100, lambda e: None)
