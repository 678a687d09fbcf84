"""UDP sockets in the application library (csrc/app/rtn_app_udp.c) on a channel's memory
without a station: the frames sendto() leaves in the TX ring (read by scapy) and what
recvfrom() makes of the RX ring."""

import errno

import pytest
from fake_channel import FakeChannelMemory
from scapy.layers.inet import IP, UDP, defragment
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from rtnet import ipv4
from rtnet._lowlevel import ffi, lib
from rtnet.app import Channel, UdpSocket

OWN_IP, PEER_IP, PEER_MAC = "10.0.0.1", "10.0.0.2", "02:00:00:00:00:0b"


@pytest.fixture(params=[False, True], ids=["plain", "stamped"])
def udp(request):
    """Name: udp.  Scope: function.  A UDP socket's memory (port 5000, plain or stamped)
    with a neighbour for PEER_IP, and the socket on it: (memory, socket, stamped)."""
    mem = FakeChannelMemory(depth=8, ethertype=lib.RTN_ETH_P_IPV4)
    mem.shm.udp.ip, mem.shm.udp.port = ipv4.ip_int(OWN_IP), 5000
    mem.shm.udp.flags = lib.RTN_UDP_F_STAMPED if request.param else 0
    e = ffi.new("struct rtn_neigh[1]")
    e[0].ip, e[0].mac = ipv4.ip_int(PEER_IP), bytes.fromhex(PEER_MAC.replace(":", ""))
    lib.rtn_neigh_publish(ffi.addressof(mem.shm.udp.neigh), e, 1)
    sock = UdpSocket(stamped=request.param)
    sock._chan, sock.port = Channel.attach(*mem.fds()), 5000
    yield mem, sock, request.param
    sock.close()
    mem.close()


def checksums_ok(frame: bytes) -> bool:
    p = Ether(frame)
    sent = p[IP].chksum, p[UDP].chksum
    del p[IP].chksum
    del p[UDP].chksum
    q = Ether(bytes(p))
    return sent == (q[IP].chksum, q[UDP].chksum)


def test_sendto_should_leave_a_datagram_scapy_reads_with_good_checksums(udp):
    mem, sock, stamped = udp
    seqs = [sock.sendto(b"data %d" % i, (PEER_IP, 6000)) for i in range(3)]
    assert seqs == [0, 1, 2]
    for i in range(3):
        frame = mem.sent(i)
        p = Ether(frame)
        assert p.dst == PEER_MAC and p[IP].src == OWN_IP and p[IP].dst == PEER_IP
        assert (p[UDP].sport, p[UDP].dport) == (5000, 6000) and checksums_ok(frame)
        data = bytes(p[UDP].payload)
        if stamped:  # the RTNX header first: magic, then seq
            assert data[:4] == b"RTNX" and int.from_bytes(data[4:8], "big") == i
            assert data[lib.RTN_APP_XHDR_LEN :] == b"data %d" % i
        else:
            assert data == b"data %d" % i  # the wire carries the data alone


def test_sendto_without_a_neighbour_should_be_ehostunreach_and_counted(udp):
    mem, sock, _ = udp
    with pytest.raises(OSError) as exc:
        sock.sendto(b"x", ("10.0.0.99", 6000))
    assert exc.value.errno == errno.EHOSTUNREACH
    assert sock.stats()["tx_unreachable"] == 1 and mem.shm.tx.head == 0


def sent_fragments(mem, n: int) -> list:
    frags = [Ether(mem.sent(i)) for i in range(n)]
    for f in frags:  # each fragment's own IPv4 header is sound
        ip = f[IP].copy()
        del ip.chksum
        assert IP(bytes(ip)).chksum == f[IP].chksum
    return frags


def test_a_datagram_larger_than_a_frame_should_leave_in_fragments_of_one_datagram(udp):
    mem, sock, stamped = udp
    data = bytes(range(256)) * 12  # 3,072 bytes: three fragments of a 1514-byte frame
    sock.sendto(data, (PEER_IP, 6000))
    assert mem.shm.tx.head == 3  # committed at once
    frags = sent_fragments(mem, 3)
    # RFC 791: MF on all but the last, offsets in 8-byte units, each going on where
    # the one before ended; DF clear; one identification
    assert [f[IP].flags.MF for f in frags] == [1, 1, 0]
    assert not any(f[IP].flags.DF for f in frags)
    assert len({f[IP].id for f in frags}) == 1
    at = 0
    for f in frags:
        assert f[IP].frag * 8 == at and len(f) <= 1514
        at += f[IP].len - 20
    assert all((f[IP].len - 20) % 8 == 0 for f in frags[:-1])
    # put together by scapy, the datagram is whole, with a good UDP checksum
    (whole,) = defragment([f[IP] for f in frags])
    got = bytes(whole[UDP].payload)
    assert (whole[UDP].sport, whole[UDP].dport, whole[UDP].len) == (5000, 6000, 8 + len(got))
    assert got[lib.RTN_APP_XHDR_LEN :] == data if stamped else got == data
    sent_sum = whole[UDP].chksum
    del whole[UDP].chksum
    assert IP(bytes(whole))[UDP].chksum == sent_sum


def test_a_datagram_needing_more_fragments_than_the_ring_holds_should_be_emsgsize(udp):
    mem, sock, stamped = udp
    head = lib.RTN_APP_XHDR_LEN if stamped else 0
    most = 8 * ((1514 - 34) & ~7) - 8 - head  # eight fragments: the ring's depth
    sock.sendto(bytes(most), (PEER_IP, 6000))
    assert mem.shm.tx.head == 8
    mem.shm.tx.tail = 8  # the station took them
    with pytest.raises(OSError) as exc:
        sock.sendto(bytes(most + 1), (PEER_IP, 6000))
    assert exc.value.errno == errno.EMSGSIZE and f"at most {most} " in str(exc.value)
    # IPv4's own limit, in the library as well as in Python
    assert (
        lib.rtn_app_sendto(
            sock.channel._ch, ipv4.ip_int(PEER_IP), 6000, bytes(65508), 65508, 0, ffi.NULL
        )
        == -errno.EMSGSIZE
    )
    assert mem.shm.tx.head == 8


def test_a_datagram_whose_fragments_do_not_all_fit_the_ring_now_should_wait_whole(udp):
    mem, sock, _ = udp
    for _ in range(6):
        sock.sendto(b"x", (PEER_IP, 6000))
    with pytest.raises(OSError) as exc:  # three fragments, two free slots
        sock.sendto(bytes(3000), (PEER_IP, 6000))
    assert exc.value.errno == errno.ENOBUFS and mem.shm.tx.head == 6


def test_sendto_to_the_broadcast_should_need_no_neighbour(udp):
    mem, sock, _ = udp
    sock.sendto(b"all", ("255.255.255.255", 6000))
    assert Ether(mem.sent(0)).dst == "ff:ff:ff:ff:ff:ff"


def test_recvfrom_should_give_the_data_the_peer_and_the_stamps(udp):
    mem, sock, stamped = udp
    frame = bytearray(
        bytes(
            Ether(src=PEER_MAC, dst="02:52:54:00:00:01")
            / IP(src=PEER_IP, dst=OWN_IP)
            / UDP(sport=6000, dport=5000)
            / Raw(b"RTNX" + bytes(40) + b"hello")
        )
    )
    if stamped:  # a sound RTNX header: length 44 at its offset
        frame[lib.RTN_UDP_HLEN + 24 : lib.RTN_UDP_HLEN + 26] = (44).to_bytes(2, "big")
        frame[lib.RTN_UDP_HLEN + 4 : lib.RTN_UDP_HLEN + 8] = (77).to_bytes(4, "big")
    m = mem.rx(0)
    ffi.memmove(m.frame, bytes(frame), len(frame))
    m.len, m.seq, m.rx_ns, m.tx_ns = len(frame), 77 if stamped else 0, 2000, 1000
    mem.shm.rx.head += 1
    d = sock.recvfrom(timeout=0)
    data, peer, stamps = d
    assert peer == (PEER_IP, 6000) and d.dst == (OWN_IP, 5000)
    assert data == (b"hello" if stamped else b"RTNX" + bytes(40) + b"hello")
    assert (stamps.rx_ns, stamps.tx_ns, stamps.seq) == (2000, 1000, 77 if stamped else 0)
    assert sock.recvfrom(timeout=0) is None


def test_a_lying_datagram_in_the_ring_should_be_counted_not_read_past(udp):
    mem, sock, _ = udp
    frame = bytearray(
        bytes(Ether() / IP(src=PEER_IP, dst=OWN_IP) / UDP(sport=1, dport=5000) / Raw(b"abc"))
    )
    frame[38:40] = (1400).to_bytes(2, "big")  # a UDP length beyond the message
    m = mem.rx(0)
    ffi.memmove(m.frame, bytes(frame), len(frame))
    m.len = len(frame)
    mem.shm.rx.head += 1
    sock.recvfrom(timeout=0)
    assert sock.stats()["rx_bad_hdr"] == 1


def test_an_unbound_socket_should_refuse_to_send():
    s = UdpSocket()
    with pytest.raises(OSError) as exc:
        s.sendto(b"x", (PEER_IP, 1))
    assert exc.value.errno == errno.ENOTCONN
    s.close()
    with pytest.raises(OSError):
        s.bind(5000)


def test_sendto_on_an_ethertype_channel_should_be_einval():
    mem = FakeChannelMemory()
    ch = Channel.attach(*mem.fds())
    assert (
        lib.rtn_app_sendto(ch._ch, ipv4.ip_int(PEER_IP), 1, b"x", 1, 0, ffi.NULL) == -errno.EINVAL
    )
    ch.close()
    mem.close()


def put_chain(mem, frame: bytes, piece: int = lib.RTN_CHAN_MSG_MAX, more_on_last=False) -> None:
    """``frame`` into the RX ring as the station delivers a datagram put together from its
    fragments: pieces of one message each, all but the last flagged RTN_MSG_MORE."""
    pieces = [frame[i : i + piece] for i in range(0, len(frame), piece)]
    for k, p in enumerate(pieces):
        m = mem.rx((mem.shm.rx.head + k) % mem.depth)
        ffi.memmove(m.frame, p, len(p))
        m.len = len(p)
        last = k == len(pieces) - 1
        m.flags = lib.RTN_MSG_MORE if (not last or more_on_last) else 0
    mem.shm.rx.head += len(pieces)


def whole_datagram(payload: bytes, sport: int = 6000) -> bytes:
    return bytes(
        Ether(src=PEER_MAC, dst="02:52:54:00:00:01")
        / IP(src=PEER_IP, dst=OWN_IP)
        / UDP(sport=sport, dport=5000)
        / Raw(payload)
    )


def test_a_datagram_put_together_from_fragments_should_be_read_whole_from_its_chain():
    mem = FakeChannelMemory(depth=8, ethertype=lib.RTN_ETH_P_IPV4)
    mem.shm.udp.ip, mem.shm.udp.port = ipv4.ip_int(OWN_IP), 5000
    sock = UdpSocket()
    sock._chan, sock.port = Channel.attach(*mem.fds()), 5000
    data = bytes(range(251)) * 16  # 4,016 bytes: a chain of three messages
    put_chain(mem, whole_datagram(data))
    put_chain(mem, whole_datagram(b"next", sport=6001))
    d = sock.recvfrom(timeout=0)
    assert d.data == data and d.peer == (PEER_IP, 6000)
    assert mem.shm.rx.tail == 3  # the whole chain taken
    assert sock.recvfrom(timeout=0).data == b"next"
    sock.close()
    mem.close()


@pytest.mark.parametrize(
    "how", ["short piece flagged more", "chain past the ring's head", "last piece flagged more"]
)
def test_a_broken_chain_should_be_counted_and_what_follows_still_read(how):
    mem = FakeChannelMemory(depth=8, ethertype=lib.RTN_ETH_P_IPV4)
    mem.shm.udp.ip, mem.shm.udp.port = ipv4.ip_int(OWN_IP), 5000
    sock = UdpSocket()
    sock._chan, sock.port = Channel.attach(*mem.fds()), 5000
    frame = whole_datagram(bytes(4000))
    if how == "short piece flagged more":
        put_chain(mem, frame, piece=1000)
    elif how == "last piece flagged more":  # runs into the next datagram's message
        put_chain(mem, frame, more_on_last=True)
    if how != "chain past the ring's head":
        put_chain(mem, whole_datagram(b"after", sport=6001))
    got = [sock.recvfrom(timeout=0) for _ in range(4)]
    if how == "chain past the ring's head":
        put_chain(mem, frame[: lib.RTN_CHAN_MSG_MAX], more_on_last=True)
        got = [sock.recvfrom(timeout=0)]
        assert got == [None] and sock.stats()["rx_bad_hdr"] == 1
    else:
        datas = [d.data for d in got if d is not None]
        # a short flagged piece, or a last one flagged, is no datagram's: each broken
        # chain's first message is counted and dropped, and reading goes on
        assert datas[-1:] == [b"after"] and sock.stats()["rx_bad_hdr"] >= 1
    assert mem.shm.rx.tail == mem.shm.rx.head
    sock.close()
    mem.close()
