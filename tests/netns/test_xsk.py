"""AF_XDP real-time path between two lab stations (root, namespaces, AF_XDP)."""

import errno
import os
import socket
import struct
import subprocess
import threading
import time

import pytest
from pyroute2 import IPRoute
from pyroute2 import netns as pr_netns

from rtnet import netns
from rtnet._lowlevel import ffi, lib
from rtnet.errors import XskError
from rtnet.lab import Lab
from rtnet.mac import parse_mac
from rtnet.xsk import RawSocket

pytestmark = pytest.mark.netns

EXTRA_RT = 0x88B5  # configured real-time EtherType
NOT_RT = 0x88B6  # never steered: must reach Linux, not the socket
DUMMY_NS = "rtnx-dummy"


@pytest.fixture(scope="module")
def lab():
    with Lab(name="rtnxt", stations=2) as lab:
        yield lab


@pytest.fixture(scope="module")
def dummy_ns():
    """A namespace with an interface whose driver has no native XDP.

    A dummy interface would do, but not every kernel has the dummy driver;
    the bridge driver is always there (the lab needs it) and lacks native XDP.
    """
    if DUMMY_NS in pr_netns.listnetns():
        pr_netns.remove(DUMMY_NS)
    pr_netns.create(DUMMY_NS)
    try:
        with IPRoute(netns=DUMMY_NS) as ipr:
            ipr.link("add", ifname="rtnxbr0", kind="bridge")
            ipr.link("set", index=ipr.link_lookup(ifname="rtnxbr0")[0], state="up")
        yield DUMMY_NS
    finally:
        pr_netns.remove(DUMMY_NS)


MQ_NS = ("rtnx-mq-a", "rtnx-mq-b")


@pytest.fixture
def four_queue_pair():
    """A veth pair with 4 queues each way, one end in each of two namespaces: a frame sent
    from queue N of one end arrives on receive queue N of the other."""
    for ns in MQ_NS:
        if ns in pr_netns.listnetns():
            pr_netns.remove(ns)
        pr_netns.create(ns)
    try:
        with IPRoute(netns=MQ_NS[0]) as ipr:
            ipr.link(
                "add",
                ifname="mqa",
                kind="veth",
                num_rx_queues=4,
                num_tx_queues=4,
                peer={
                    "ifname": "mqb",
                    "num_rx_queues": 4,
                    "num_tx_queues": 4,
                    "net_ns_fd": MQ_NS[1],
                },
            )
            ipr.link("set", index=ipr.link_lookup(ifname="mqa")[0], state="up")
        with IPRoute(netns=MQ_NS[1]) as ipr:
            ipr.link("set", index=ipr.link_lookup(ifname="mqb")[0], state="up")
        yield MQ_NS
    finally:
        for ns in MQ_NS:
            pr_netns.remove(ns)


def test_frames_of_the_stack_on_an_unbound_queue_are_counted_per_queue(four_queue_pair):
    a_ns, b_ns = four_queue_pair
    b = RawSocket("mqb", netns=b_ns, ethertypes=[EXTRA_RT])  # bound to queue 0
    with b:
        macs = {}
        for ns, dev in ((a_ns, "mqa"), (b_ns, "mqb")):
            with IPRoute(netns=ns) as ipr:
                macs[dev] = ipr.link("get", index=ipr.link_lookup(ifname=dev)[0])[0].get_attr(
                    "IFLA_ADDRESS"
                )
        for queue, count in ((2, 7), (0, 5)):
            a = RawSocket("mqa", netns=a_ns, queue=queue, ethertypes=[EXTRA_RT])
            with a:
                for seq in range(count):
                    a.send(frame(macs["mqb"], macs["mqa"], EXTRA_RT, seq))
                    if queue == 2:  # not the stack's: Linux's, on any queue, never counted
                        a.send(frame(macs["mqb"], macs["mqa"], NOT_RT, seq))
        got = []
        while (r := b.recv(timeout=2.0)) is not None:
            got.append(r)
            if len(got) == 5:
                break
        st = b.stats()
        # the 5 from queue 0 reached the socket; the 7 from queue 2 went to Linux, counted
        assert len(got) == 5 and st["rx_frames"] == 5, st
        assert st["xdp_unbound"] == 7, st
        assert st["xdp_unbound_queue"] == {2: 7}, st


def xdp_attached(ns: str, ifname: str) -> int:
    """IFLA_XDP_ATTACHED of the interface (0: no program)."""
    with IPRoute(netns=ns) as ipr:
        link = ipr.link("get", index=ipr.link_lookup(ifname=ifname)[0])[0]
        xdp = link.get_attr("IFLA_XDP")
        return (xdp.get_attr("IFLA_XDP_ATTACHED") or 0) if xdp else 0


def frame(dst, src, ethertype: int, seq: int, size: int = 80) -> bytes:
    hdr = parse_mac(dst) + parse_mac(src) + struct.pack("!HI", ethertype, seq)
    return hdr.ljust(size, bytes([seq & 0xFF]))


def open_pair(lab, **kw):
    s1, s2 = lab.station(1), lab.station(2)
    a = RawSocket(s1.ifname, netns=s1.netns, ethertypes=[EXTRA_RT], **kw)
    try:
        b = RawSocket(s2.ifname, netns=s2.netns, ethertypes=[EXTRA_RT], **kw)
    except BaseException:
        a.close()
        raise
    return a, b


@pytest.mark.parametrize("mode", ["auto", "native"])
def test_rt_frames_arrive_complete_and_in_order(lab, mode):
    s1, s2 = lab.station(1), lab.station(2)
    a, b = open_pair(lab, mode=mode)
    with a, b:
        # a lab port is a veth: auto chooses SKB mode there (rtn_xsk_prog.c), which is no
        # fallback; native is what was asked for
        assert (a.mode, b.mode) == (("skb",) * 2 if mode == "auto" else ("native",) * 2)
        assert a.fallback_reason is None and b.fallback_reason is None
        passed_before = b.stats()["xdp_passed"]
        sent, tx_ts = [], []
        for seq in range(1000):
            f = frame(s2.mac, s1.mac, (0x9021, EXTRA_RT)[seq % 2], seq)
            tx_ts.append(a.send(f))
            sent.append(f)
            if seq % 100 == 0:  # a frame Linux must keep: never seen by the socket
                a.send(frame(s2.mac, s1.mac, NOT_RT, seq))
        got = []
        while len(got) < len(sent):
            r = b.recv(timeout=2.0)
            if r is None:
                break
            got.append(r)
        assert b.recv(timeout=0) is None, "a non-real-time frame reached the socket"
        assert [f for f, _ in got] == sent
        rx_ts = [t for _, t in got]
        assert all(x <= y for x, y in zip(rx_ts, rx_ts[1:]))
        assert all(rx > tx for rx, tx in zip(rx_ts, tx_ts))
        st_a, st_b = a.stats(), b.stats()
        assert st_a["tx_frames"] == 1010 and st_b["rx_frames"] == 1000
        assert st_b["rx_bytes"] == sum(len(f) for f in sent)
        assert st_b["xdp_redirected"] >= 1000
        assert st_b["xdp_passed"] - passed_before >= 10
        assert st_b["invalid_desc"] == 0 and st_b["truncated"] == 0
        # the XDP program's receive stamp reaches the socket in either mode, where the
        # kernel lets the program write metadata; where it does not, no frame carries one
        assert st_b["rx_kernel_ts"] == (1000 if st_b["xdp_stamps"] else 0)


def test_linux_udp_still_works_while_sockets_are_open(lab):
    s1, s2 = lab.station(1), lab.station(2)
    a, b = open_pair(lab)
    with a, b:
        with netns.entered(s2.netns):
            rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        with netns.entered(s1.netns):
            tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        with rx, tx:
            rx.bind((s2.ip, 0))
            rx.settimeout(5.0)
            tx.sendto(b"over the Linux stack", (s2.ip, rx.getsockname()[1]))
            data, peer = rx.recvfrom(100)
        assert data == b"over the Linux stack" and peer[0] == s1.ip
        assert b.recv(timeout=0) is None


def test_stamped_send_writes_now_plus_offset(lab):
    s1, s2 = lab.station(1), lab.station(2)
    a, b = open_pair(lab)
    with a, b:
        add = 123_456_789
        tx = a.send_stamped(frame(s2.mac, s1.mac, 0x9021, 7), stamp_offset=20, stamp_add=add)
        got = b.recv(timeout=2.0)
        assert got is not None
        assert struct.unpack_from("!q", got[0], 20)[0] == tx + add


def test_close_detaches_even_from_another_namespace_and_thread(lab):
    s1 = lab.station(1)
    with netns.entered(s1.netns):
        sock = RawSocket(s1.ifname)  # opened here, closed from the root namespace
    assert xdp_attached(s1.netns, s1.ifname)
    t = threading.Thread(target=sock.close)
    t.start()
    t.join()
    sock.close()  # idempotent
    assert xdp_attached(s1.netns, s1.ifname) == 0
    with pytest.raises(XskError, match="closed"):
        sock.send(b"\0" * 60)


def test_second_socket_on_same_interface_and_queue_is_refused(lab):
    s1 = lab.station(1)
    with RawSocket(s1.ifname, netns=s1.netns) as first:
        with pytest.raises(XskError) as info:
            RawSocket(s1.ifname, netns=s1.netns)
        assert info.value.errno == errno.EBUSY
        assert "already attached" in str(info.value) and "xdp_rtnet" in str(info.value)
        assert first.send(frame("ff:ff:ff:ff:ff:ff", s1.mac, 0x9021, 1)) > 0
    assert xdp_attached(s1.netns, s1.ifname) == 0


def test_unknown_interface(lab):
    with pytest.raises(XskError, match="rteth9: no such interface") as info:
        RawSocket("rteth9", netns=lab.station(1).netns)
    assert info.value.errno == errno.ENODEV


def test_native_mode_without_driver_support_fails_cleanly(dummy_ns):
    with pytest.raises(XskError, match="rtnxbr0: driver has no native XDP support"):
        RawSocket("rtnxbr0", netns=dummy_ns, mode="native")
    assert xdp_attached(dummy_ns, "rtnxbr0") == 0


def test_auto_mode_falls_back_to_skb_and_says_why(dummy_ns, caplog):
    with RawSocket("rtnxbr0", netns=dummy_ns, mode="auto") as sock:
        assert sock.mode == "skb"
        assert "native XDP attach failed" in sock.fallback_reason
        assert sock.stats()["mode"] == "skb"
        assert xdp_attached(dummy_ns, "rtnxbr0")
    assert "SKB mode" in caplog.text
    assert xdp_attached(dummy_ns, "rtnxbr0") == 0


def test_no_xdp_program_left_on_the_stations(lab):
    a, b = open_pair(lab, mode="skb")
    assert a.mode == b.mode == "skb"
    a.close()
    b.close()
    for st in lab.stations:
        assert xdp_attached(st.netns, st.ifname) == 0


def test_pinned_ethertype_map_lives_as_long_as_the_socket(lab):
    s1 = lab.station(1)
    pin_dir = "/sys/fs/bpf/rtnx-test"
    os.makedirs(pin_dir, exist_ok=True)
    try:
        with RawSocket(s1.ifname, netns=s1.netns, pin_dir=pin_dir):
            assert os.listdir(pin_dir) == ["rtn_ethertypes_rteth0"]
        assert os.listdir(pin_dir) == []
    finally:
        os.rmdir(pin_dir)


def test_missing_queue_fails_after_attach_and_releases_the_program(lab):
    s1 = lab.station(1)
    with pytest.raises(XskError, match="rteth0: cannot bind queue 5"):
        RawSocket(s1.ifname, netns=s1.netns, queue=5)  # a lab veth has one queue
    assert xdp_attached(s1.netns, s1.ifname) == 0
    with RawSocket(s1.ifname, netns=s1.netns) as sock:  # nothing left behind to collide with
        assert sock.mode in ("native", "skb")


def test_an_xdp_object_that_is_not_ours_is_refused_in_one_line(lab, tmp_path, monkeypatch):
    # a well-formed XDP program without the stack's constant and maps, then no BPF at all
    src = tmp_path / "other.bpf.c"
    src.write_text(
        "#include <linux/bpf.h>\n#include <bpf/bpf_helpers.h>\n"
        'SEC("xdp") int other(struct xdp_md *ctx) { return XDP_PASS; }\n'
        'char _license[] SEC("license") = "GPL";\n'
    )
    obj = tmp_path / "other.bpf.o"
    arch = f"/usr/include/{os.uname().machine}-linux-gnu"
    subprocess.run(
        ["clang", "-O2", "-g", "-target", "bpf", "-I", arch, "-c", str(src), "-o", str(obj)],
        check=True,
    )
    junk = tmp_path / "junk.bpf.o"
    junk.write_bytes(b"\x7fELF" + bytes(60))
    s1 = lab.station(1)
    for path, words in ((obj, "is not an rtnet XDP object"), (junk, "cannot open XDP object")):
        monkeypatch.setattr("rtnet.xsk.bpf_object_path", lambda p=path: str(p))
        with pytest.raises(XskError) as exc:
            RawSocket(s1.ifname, netns=s1.netns, ethertypes=[EXTRA_RT])
        assert words in str(exc.value) and "\n" not in str(exc.value)
        assert xdp_attached(s1.netns, s1.ifname) == 0  # nothing left on the port


def test_a_frame_that_starts_like_a_stamp_arrives_whole_with_the_programs_own(lab):
    # the first 16 bytes are what the XDP program writes in front of a frame: its magic
    # (little-endian, as it stores it) and a stamp far in the past; the EtherType at bytes
    # 12-13 is the socket's, so the program steers the frame
    forged = bytearray(struct.pack("<QQ", 0x52544E5852584D31, 12345).ljust(80, b"\xab"))
    forged[12:14] = struct.pack("!H", EXTRA_RT)
    a, b = open_pair(lab)
    with a, b:
        frames, poll_ts = ffi.new("struct rtn_xsk_frame[4]"), ffi.new("int64_t *")
        before = time.monotonic_ns()  # CLOCK_MONOTONIC, the stamps' clock
        a.send(bytes(forged))
        deadline = before + 2_000_000_000
        while (n := lib.rtn_xsk_rx_peek(b._live(), frames, 4, poll_ts)) == 0:
            assert time.monotonic_ns() < deadline, "the frame never arrived"
        try:
            assert n == 1
            f = frames[0]
            assert ffi.buffer(f.data, f.len)[:] == bytes(forged)  # nothing cut off it
            if b.stats()["xdp_stamps"]:
                # the stamp is the program's, taken on arrival, not the frame's bytes
                assert f.kernel_ts == 1 and before <= f.rx_ts <= poll_ts[0]
            else:
                assert f.kernel_ts == 0 and f.rx_ts == poll_ts[0]
        finally:
            lib.rtn_xsk_rx_release(b._live())
