"""Application API without a station: a fake channel memory and a fake daemon.

The channel memory is built here as the station builds it (struct
rtn_chan_shm in a memfd), so sending, receiving and the control-socket
protocol can be checked byte for byte without root.
"""

import errno
import json
import os
import socket
import struct
import threading
import time

import pytest
from fake_channel import ET, STATION_MAC, FakeChannelMemory

from rtnet._lowlevel import ffi, lib
from rtnet.app import Channel, CyclicTask
from rtnet.app_limits import MAX_PAYLOAD
from rtnet.errors import ChannelError, ChannelFull, ConfigError

DST = "02:52:54:00:00:02"


@pytest.fixture
def mem():
    m = FakeChannelMemory()
    yield m
    m.close()


def test_send_builds_the_frame_in_the_tx_ring(mem):
    with Channel.attach(*mem.fds()) as ch:
        assert ch.station_mac == "02:52:54:00:00:01" and ch.ethertype == ET
        seqs = [ch.send(DST, b"abc", sched_ns=123456789), ch.send(DST, b"", sched_ns=5)]
        assert seqs == [0, 1]
        assert mem.shm.tx.head == 2
        m = mem.tx(0)
        frame = bytes(ffi.buffer(m.frame, m.len))
        assert m.len == lib.RTN_APP_OVERHEAD + 3 == 14 + lib.RTN_APP_XHDR_LEN + 3
        assert frame[:6] == bytes.fromhex("025254000002") and frame[6:12] == STATION_MAC
        magic, seq, sched, tx, hlen, _, handover, pickup = struct.unpack("!IIqqHHqq", frame[14:58])
        assert struct.unpack("!H", frame[12:14])[0] == ET
        assert (magic, seq, sched, tx, hlen, pickup) == (
            lib.RTN_APP_MAGIC_X,
            0,
            123456789,
            0,
            lib.RTN_APP_XHDR_LEN,
            0,
        )
        # the hand-over stamp is the send call's global time (the fake publishes no cycle:
        # CLOCK_MONOTONIC), the same in the header and in the message
        assert 0 < handover <= time.monotonic_ns() and m.handover_ns == handover
        assert frame[58:] == b"abc" and m.seq == 0 and m.sched_ns == 123456789
        assert mem.tx(1).seq == 1 and mem.tx(1).len == lib.RTN_APP_OVERHEAD


def test_full_tx_ring_refuses_and_counts(mem):
    with Channel.attach(*mem.fds()) as ch:
        for _ in range(mem.depth):
            ch.send(DST, b"x")
        with pytest.raises(ChannelFull):
            ch.send(DST, b"x")
        st = ch.stats()
        assert st["tx_sent"] == mem.depth and st["tx_full"] == 1 and st["tx_queued"] == mem.depth
        assert mem.shm.tx.drops == 1
        mem.shm.tx.tail = 1  # the station took one
        assert ch.send(DST, b"y") == mem.depth


def test_too_big_payload_is_refused(mem):
    small = FakeChannelMemory(max_size=100)
    try:
        with Channel.attach(*small.fds()) as ch:
            ch.send(DST, bytes(100 - lib.RTN_APP_OVERHEAD))
            with pytest.raises(ChannelError) as e:
                ch.send(DST, bytes(100 - lib.RTN_APP_OVERHEAD + 1))
            assert e.value.errno == errno.EMSGSIZE
    finally:
        small.close()


def _raw(ethertype=ET, body=b"rtcfg-like body", dst=DST):
    return bytes.fromhex(dst.replace(":", "")) + STATION_MAC + struct.pack("!H", ethertype) + body


def test_send_raw_puts_the_callers_frame_in_the_tx_ring_unchanged(mem):
    frame = _raw(body=bytes(46))  # an RTcfg frame padded to 60 bytes
    with Channel.attach(*mem.fds()) as ch:
        ch.send_raw(frame)
        assert mem.shm.tx.head == 1 and mem.sent(0) == frame
        assert mem.tx(0).seq == 0 and ch.stats()["tx_sent"] == 1


@pytest.mark.parametrize(
    "frame,why",
    [
        (b"", "0 bytes"),
        (_raw()[:13], "13 bytes"),
        (_raw(ethertype=0x9022), "EtherType 0x9022 on a channel of 0x88b5"),
        (_raw(body=bytes(1514 - 14 + 1)), "1515 bytes"),
        (_raw(body=struct.pack("!IIqq", lib.RTN_APP_MAGIC, 1, 0, 0)), "like an application header"),
    ],
)
def test_send_raw_refuses_what_the_channel_cannot_carry(mem, frame, why):
    with Channel.attach(*mem.fds()) as ch:
        with pytest.raises(ChannelError) as e:
            ch.send_raw(frame)
        assert e.value.errno == errno.EINVAL and why in str(e.value)
        assert mem.shm.tx.head == 0 and ch.stats()["tx_sent"] == 0


def test_send_raw_refusals_of_a_full_ring_and_a_closed_station(mem):
    with Channel.attach(*mem.fds()) as ch:
        for _ in range(mem.depth):
            ch.send_raw(_raw())
        with pytest.raises(ChannelFull):
            ch.send_raw(_raw())
        assert ch.stats()["tx_full"] == 1
        mem.shm.alive = 0
        with pytest.raises(ChannelError) as e:
            ch.send_raw(_raw())
        assert e.value.errno == errno.ENOTCONN


def test_a_raw_frame_received_gives_the_bytes_after_the_ethernet_header(mem):
    mem.deliver(_raw(body=b"\x07" + bytes(45), dst="ff:ff:ff:ff:ff:ff"))
    with Channel.attach(*mem.fds()) as ch:
        msg = ch.recv(timeout=0)
        assert msg.payload == b"\x07" + bytes(45) and msg.seq == 0 and msg.tx_ns == 0
        assert msg.dst == "ff:ff:ff:ff:ff:ff" and ch.stats()["rx_bad_hdr"] == 0


def test_recv_parses_what_the_station_wrote(mem):
    frame = (
        STATION_MAC[::-1]
        + bytes.fromhex("025254000009")
        + struct.pack("!H", ET)
        + struct.pack("!IIqq", lib.RTN_APP_MAGIC, 7, 100, 200)
        + b"payload"
    )
    m = mem.rx(0)
    m.len, m.seq, m.sched_ns, m.tx_ns, m.rx_ns = len(frame), 7, 100, 200, 300
    ffi.memmove(m.frame, frame, len(frame))
    with Channel.attach(*mem.fds()) as ch:
        assert ch.recv(timeout=0) is None  # nothing committed yet
        mem.shm.rx.head = 1
        msg = ch.recv(timeout=0)
        assert (msg.src, msg.seq, msg.sched_ns, msg.tx_ns, msg.rx_ns, msg.payload) == (
            "02:52:54:00:00:09",
            7,
            100,
            200,
            300,
            b"payload",
        )
        assert msg.dst == "01:00:00:54:52:02"
        assert mem.shm.rx.tail == 1 and ch.stats()["rx_received"] == 1
        assert ch.recv(timeout=0.01) is None and ch.stats()["rx_waiting"] == 0


def test_reply_goes_to_the_sender_with_its_sequence_number(mem):
    request = (
        STATION_MAC
        + bytes.fromhex("025254000009")
        + struct.pack("!H", ET)
        + struct.pack("!IIqq", lib.RTN_APP_MAGIC, 41, 0, 0)
        + b"question"
    )
    mem.deliver(request)
    with Channel.attach(*mem.fds()) as ch:
        msg = ch.recv(timeout=0)
        assert msg.dst == "02:52:54:00:00:01"
        ch.reply(msg, b"answer")
        frame = mem.sent(0)
        assert frame[:6] == bytes.fromhex("025254000009") and frame[6:12] == STATION_MAC
        assert struct.unpack_from("!II", frame, 14) == (lib.RTN_APP_MAGIC_X, 41)
        assert frame[lib.RTN_APP_OVERHEAD :] == b"answer" and mem.tx(0).seq == 41
        assert ch.send(DST, b"own") == 0  # the channel's numbering did not move
        assert ch.stats()["tx_sent"] == 2


def test_station_gone_gives_enotconn(mem):
    with Channel.attach(*mem.fds()) as ch:
        mem.shm.alive = 0
        for call in (
            lambda: ch.send(DST, b""),
            lambda: ch.recv(timeout=0.5),
            lambda: ch.wait_cycle(timeout=0.5),
        ):
            with pytest.raises(ChannelError) as e:
                call()
            assert e.value.errno == errno.ENOTCONN


def test_cycle_info_and_timeout(mem):
    with Channel.attach(*mem.fds()) as ch:
        assert ch.cycle_info() is None
        assert ch.wait_cycle(timeout=0.01) is None
        s = mem.shm
        s.cycle_no, s.cycle_start_global, s.cycle_start_os = 41, 5_000_100, 5_000_000
        s.clock_offset, s.cycle_ns, s.cycle_seq = 100, 1_000_000, 1
        wi = ch.cycle_info()
        assert (wi.cycle_no, wi.cycle_start_ns, wi.cycle_start_os_ns, wi.cycle_ns) == (
            41,
            5_000_100,
            5_000_000,
            1_000_000,
        )


def test_slave_cycle_length_is_learnt(mem):
    """A slave's station publishes cycle_ns 0: two cycle starts give the length."""
    with Channel.attach(*mem.fds()) as ch:
        s = mem.shm
        s.cycle_no, s.cycle_start_os, s.cycle_seq = 10, 7_000_000, 1
        assert ch.cycle_info().cycle_ns == 0
        s.cycle_no, s.cycle_start_os, s.cycle_seq = 12, 7_000_000 + 2 * 999_999, 2
        assert ch.cycle_info().cycle_ns == 1_000_000


def test_bad_arguments_fail_before_c():
    for kw in (
        {"ethertype": 0x0500},
        {"ethertype": ET, "depth": 3},
        {"ethertype": ET, "prio": 32},
        {"ethertype": ET, "max_size": 20},
        {"ethertype": ET, "lifetime_us": -1},
        {"ethertype": ET, "lifetime_us": 10_000_001},
        {"ethertype": ET, "lifetime_us": 0.5},
        {"ethertype": ET, "lifetime_us": True},
    ):
        with pytest.raises(ConfigError):
            Channel.open("rteth0", **kw)


def test_cyclic_task_checks_its_arguments_before_c(mem):
    """The publisher's payload limit is the channel's, and its destination a MAC."""
    with Channel.attach(*mem.fds()) as ch:
        task = CyclicTask(ch, "02:52:54:00:00:02", payload_size=MAX_PAYLOAD)
        assert bytes(task._pub.dst) == b"\x02\x52\x54\x00\x00\x02"
        with pytest.raises(ConfigError, match=f"0..{MAX_PAYLOAD}"):
            CyclicTask(ch, "02:52:54:00:00:02", payload_size=MAX_PAYLOAD + 1)
        with pytest.raises(ConfigError, match="MAC address"):
            CyclicTask(ch, "02:52:54:00:00", payload_size=8)


def test_attach_refuses_foreign_memory():
    fd = os.memfd_create("not-a-channel")
    os.ftruncate(fd, 1 << 16)
    try:
        with pytest.raises(ChannelError) as e:
            Channel.attach(fd, -1)
        assert e.value.errno == errno.EPROTO and "magic" in str(e.value)
    finally:
        os.close(fd)


# ---- control socket protocol against a fake daemon ------------------------------


class FakeDaemon:
    """Answers one channel.open per connection with ``reply`` (and the fds if ok)."""

    def __init__(self, path, reply, mem=None, split=False):
        self.path, self.reply, self.mem, self.split = path, reply, mem, split
        self.requests = []
        self.closed = threading.Event()
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(path)
        self.srv.listen(1)
        self.t = threading.Thread(target=self._serve, daemon=True)
        self.t.start()

    def _serve(self):
        conn, _ = self.srv.accept()
        with conn:
            self.requests.append(json.loads(conn.makefile().readline()))
            line = (json.dumps(self.reply) + "\n").encode()
            if self.reply.get("ok"):
                memfd, kickfd = self.mem.fds()
                notifyfd = os.eventfd(0, os.EFD_NONBLOCK)
                head, tail = (line[:5], line[5:]) if self.split else (line, b"")
                socket.send_fds(conn, [head], [memfd, kickfd, notifyfd])
                if tail:
                    conn.sendall(tail)
                for fd in (memfd, kickfd, notifyfd):
                    os.close(fd)
            else:
                conn.sendall(line)
            conn.recv(1)  # returns b"" when the client lets go of the channel
            self.closed.set()

    def stop(self):
        self.srv.close()
        self.t.join(timeout=2)


@pytest.fixture
def run_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("RTNET_RUN_DIR", str(tmp_path))
    (tmp_path / "nsx").mkdir()
    return tmp_path / "nsx"


def test_open_over_control_socket(run_dir, mem):
    d = FakeDaemon(
        str(run_dir / "rteth0.ctl"), {"ok": True, "channel": 3, "shm_size": 0}, mem, split=True
    )
    try:
        ch = Channel.open(
            "rteth0", netns="nsx", ethertype=ET, slot=1, prio=4, max_size=200, depth=16
        )
        assert d.requests == [
            {
                "cmd": "channel.open",
                "ethertype": ET,
                "slot": 1,
                "prio": 4,
                "max_size": 200,
                "depth": 16,
            }
        ]
        assert ch.id == 3  # the daemon's number, as its status lists the channel
        ch.send(DST, b"hi")
        assert mem.shm.tx.head == 1
        assert not d.closed.is_set()
        ch.close()
        assert d.closed.wait(2), "closing the channel must close the control connection"
        ch.close()  # idempotent
    finally:
        d.stop()


def test_open_refused_carries_the_daemon_error(run_dir):
    d = FakeDaemon(
        str(run_dir / "rteth0.ctl"), {"ok": False, "error": "all 16 channels are in use"}
    )
    try:
        with pytest.raises(ChannelError) as e:
            Channel.open("rteth0", netns="nsx", ethertype=ET)
        assert "all 16 channels are in use" in str(e.value)
    finally:
        d.stop()


def test_open_without_daemon_names_the_socket(run_dir):
    with pytest.raises(ChannelError) as e:
        Channel.open("rteth0", netns="nsx", ethertype=ET)
    assert str(run_dir / "rteth0.ctl") in str(e.value)


def c_open(netns, **kw):
    o = ffi.new("struct rtn_chan_opts *")
    lib.rtn_chan_opts_init(o)
    o.ethertype = ET
    for k, v in kw.items():
        setattr(o, k, v)
    out = ffi.new("struct rtn_app_chan **")
    rc = lib.rtn_app_open(b"rteth0", netns, o, out)
    return rc, out[0]


def test_c_open_speaks_the_same_protocol(run_dir, mem):
    d = FakeDaemon(
        str(run_dir / "rteth0.ctl"), {"ok": True, "channel": 5, "shm_size": 0}, mem, split=True
    )
    try:
        rc, ch = c_open(b"nsx", depth=32, prio=2)
        assert rc == 0, ffi.string(lib.rtn_last_error())
        st = ffi.new("struct rtn_app_stats *")
        lib.rtn_app_stats(ch, st)
        assert st.channel == 5 and st.ethertype == ET
        assert d.requests[0] == {
            "cmd": "channel.open",
            "ethertype": ET,
            "slot": 0,
            "prio": 2,
            "max_size": 1514,
            "depth": 32,
        }
        lib.rtn_app_close(ch)
        assert d.closed.wait(2)
    finally:
        d.stop()


def test_c_open_asks_for_a_lifetime_in_whole_microseconds(run_dir, mem):
    d = FakeDaemon(
        str(run_dir / "rteth0.ctl"), {"ok": True, "channel": 5, "shm_size": 0}, mem, split=True
    )
    try:
        rc, ch = c_open(b"nsx", lifetime_ns=2_000_000)
        assert rc == 0, ffi.string(lib.rtn_last_error())
        assert d.requests[0]["lifetime_us"] == 2000
        lib.rtn_app_close(ch)
        assert d.closed.wait(2)
    finally:
        d.stop()
    # the protocol cannot carry these: refused before the daemon is asked
    for bad in (-1, 1500, lib.RTN_CHAN_LIFETIME_MAX_NS + 1000):
        rc, _ = c_open(b"nsx", lifetime_ns=bad)
        assert rc == -errno.EINVAL, bad
        assert "lifetime" in ffi.string(lib.rtn_last_error()).decode()
    assert len(d.requests) == 1


def test_c_open_refuses_no_cycles_before_asking_the_daemon(run_dir):
    """no_cycles is an option of the daemon's own channels: the protocol cannot carry it."""
    rc, _ = c_open(b"nsx", no_cycles=1)
    assert rc == -errno.EINVAL
    assert "no_cycles" in ffi.string(lib.rtn_last_error()).decode()


def test_c_open_reports_refusal(run_dir):
    d = FakeDaemon(str(run_dir / "rteth0.ctl"), {"ok": False, "error": 'EtherType "x" bad'})
    try:
        rc, _ = c_open(b"nsx")
        assert rc < 0
        assert 'EtherType "x" bad' in ffi.string(lib.rtn_last_error()).decode()
    finally:
        d.stop()


def test_a_broken_length_or_depth_from_the_shared_page_stays_inside_the_slot(mem):
    """The application reads the station's page: a length beyond the slot, or a depth
    changed after attach, never makes it read outside its own message slot."""
    frame = (
        STATION_MAC
        + STATION_MAC
        + struct.pack("!H", ET)
        + struct.pack("!IIqq", lib.RTN_APP_MAGIC, 1, 0, 0)
        + b"x" * 10
    )
    m = mem.rx(0)
    ffi.memmove(m.frame, frame, len(frame))
    m.len = 0xFFFFFFFF
    with Channel.attach(*mem.fds()) as ch:
        mem.shm.depth = 1 << 30  # rewritten after attach: not used
        mem.shm.rx.head = 1
        msg = ch.recv(timeout=0)
        assert len(msg.payload) == lib.RTN_CHAN_MSG_MAX - 14 - 24
        assert msg.payload.startswith(b"x" * 10)
        assert ch.stats()["depth"] == mem.depth


def test_the_stations_pickup_stamp_is_read_back_once_it_took_the_message(mem):
    """rtn_app_tx_pickup: what the cyclic helper's lead learns from."""
    with Channel.attach(*mem.fds()) as ch:
        c = ch._live()
        out = ffi.new("int64_t *")
        pos = lib.rtn_app_tx_next(c)
        assert lib.rtn_app_tx_pickup(c, pos, out) == -1  # not sent yet
        ch.send(DST, b"abc")
        assert lib.rtn_app_tx_next(c) == pos + 1
        assert lib.rtn_app_tx_pickup(c, pos, out) == 0  # the station has not taken it
        lib.rtn_app_hdr_stamp_pickup(mem.tx(pos).frame, mem.tx(pos).len, 987654321)
        assert lib.rtn_app_tx_pickup(c, pos, out) == 0  # stamped, but not released
        mem.shm.tx.tail = pos + 1
        assert lib.rtn_app_tx_pickup(c, pos, out) == 1 and out[0] == 987654321
        # a message the station released without stamping (a ring it found broken)
        ch.send(DST, b"d")
        mem.shm.tx.tail = pos + 2
        assert lib.rtn_app_tx_pickup(c, pos + 1, out) == -1
        # once its ring slot is reused, a message can no longer be told
        for _ in range(mem.depth):
            ch.send(DST, b"e")
            mem.shm.tx.tail += 1
        assert lib.rtn_app_tx_pickup(c, pos, out) == -1
        # a raw frame carries no stamp; a header the station scribbled over is no stamp either
        p = lib.rtn_app_tx_next(c)
        ch.send_raw(bytes.fromhex("025254000002") + STATION_MAC + struct.pack("!H", ET) + b"x" * 50)
        mem.shm.tx.tail += 1
        assert lib.rtn_app_tx_pickup(c, p, out) == -1
        ch.send(DST, b"f")
        mem.tx(p + 1).frame[38] = 0xFF  # a header length beyond the copy
        mem.shm.tx.tail += 1
        assert lib.rtn_app_tx_pickup(c, p + 1, out) == -1
