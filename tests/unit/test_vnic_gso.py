"""Software TSO and receive coalescing for the VNIC's TAP (csrc/vnic/rtn_vnic_gso.c) through cffi."""

import os
import struct

import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from rtnet._core import ffi, lib

MAC1, MAC2 = "02:00:00:00:00:01", "02:00:00:00:00:02"
MAX_FRAME = 1514
MSS = 1448
TS = [("NOP", None), ("NOP", None), ("Timestamp", (12345, 678))]  # 12 option bytes


def vnet(flags=0, gso_type=0, hdr_len=0, gso_size=0, csum_start=0, csum_offset=0) -> bytes:
    return struct.pack("=BBHHHH", flags, gso_type, hdr_len, gso_size, csum_start, csum_offset)


def csum16(data: bytes) -> int:
    """Ones' complement sum of big-endian 16-bit words, folded (not inverted)."""
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def pseudo_v4(ip: IP, l4_len: int, proto: int) -> bytes:
    return (
        bytes(map(int, ip.src.split(".")))
        + bytes(map(int, ip.dst.split(".")))
        + struct.pack("!BBH", 0, proto, l4_len)
    )


def tcp4(payload: bytes, flags="PA", seq=1000, ip_id=100, dport=5001) -> Ether:
    return (
        Ether(src=MAC1, dst=MAC2)
        / IP(src="198.19.0.1", dst="198.19.0.2", id=ip_id, flags="DF")
        / TCP(sport=40000, dport=dport, seq=seq, ack=777, flags=flags, window=501, options=TS)
        / payload
    )


def tcp6(payload: bytes, flags="PA", seq=1000) -> Ether:
    return (
        Ether(src=MAC1, dst=MAC2)
        / IPv6(src="2001:db8::1", dst="2001:db8::2")
        / TCP(sport=40000, dport=5001, seq=seq, ack=777, flags=flags, window=501, options=TS)
        / payload
    )


def segment(packet: bytes, max_frame=MAX_FRAME):
    """(rtn_gso_begin's result, the frames it yields)."""
    buf = ffi.new("uint8_t[]", packet)
    g = ffi.new("struct rtn_gso_seg *")
    n = lib.rtn_gso_begin(g, buf, len(packet), max_frame)
    if n < 0:
        return n, []
    out = ffi.new("uint8_t[2048]")
    frames = []
    while (m := lib.rtn_gso_next(g, out, 2048)) > 0:
        frames.append(bytes(ffi.buffer(out, m)))
    assert m == 0 and lib.rtn_gso_left(g) == 0
    return n, frames


class Coalescer:
    def __init__(self):
        self.buf = ffi.new("uint8_t[]", lib.RTN_GSO_BUF)
        self.g = ffi.new("struct rtn_gro *")
        lib.rtn_gro_init(self.g)

    def run(self, frames):
        """Merge like the station's TAP writer: [(vnet header fields, frame), ...] per write."""
        writes, i = [], 0
        while i < len(frames):
            f = frames[i]
            is_open = lib.rtn_gro_begin(self.g, f, len(f))
            i += 1
            while (
                is_open
                and i < len(frames)
                and lib.rtn_gro_append(self.g, frames[i], len(frames[i]))
            ):
                i += 1
            n = lib.rtn_gro_finish(self.g)
            assert lib.rtn_gro_flatten(self.g, self.buf, lib.RTN_GSO_BUF) == n
            raw = bytes(ffi.buffer(self.buf, n))
            writes.append((struct.unpack("=BBHHHH", raw[:10]), raw[10:]))
        return writes


def checksums_valid(frame: bytes) -> bool:
    """scapy's recomputation of the IP and TCP/UDP checksums equals what the frame carries."""
    p = Ether(frame)
    q = p.copy()
    l4 = q[TCP] if TCP in q else q[UDP]
    del l4.chksum
    if IP in q:
        del q[IP].chksum
    r = Ether(bytes(q))
    ok = (r[TCP] if TCP in r else r[UDP]).chksum == (p[TCP] if TCP in p else p[UDP]).chksum
    if IP in p:
        ok = ok and r[IP].chksum == p[IP].chksum
    return ok and lib.rtn_l4_csum_ok(frame, len(frame)) == 1


def gso4(payload: bytes, flags="PA", gso_type=lib.RTN_VNET_GSO_TCPV4, **kw) -> bytes:
    pkt = bytes(tcp4(payload, flags, **kw))
    return vnet(lib.RTN_VNET_F_NEEDS_CSUM, gso_type, 66, MSS, 34, 16) + pkt


def test_tcpv4_super_packet_is_cut_into_valid_mtu_frames():
    payload = os.urandom(65535 - 20 - 32)  # the largest IPv4 packet
    n, frames = segment(gso4(payload, flags="FPAC"))
    assert n == len(frames) == -(-len(payload) // MSS)
    assert b"".join(bytes(Ether(f)[TCP].payload) for f in frames) == payload
    for i, f in enumerate(frames):
        p = Ether(f)
        last = i == len(frames) - 1
        assert len(f) <= MAX_FRAME
        assert p[IP].len == len(f) - 14 and p[IP].id == 100 + i and p[IP].flags == "DF"
        assert p[TCP].seq == 1000 + i * MSS and p[TCP].ack == 777
        assert p[TCP].options == Ether(bytes(tcp4(b"")))[TCP].options
        assert ("F" in p[TCP].flags) == last and ("P" in p[TCP].flags) == last
        assert ("C" in p[TCP].flags) == (i == 0) and "A" in p[TCP].flags
        assert len(p[TCP].payload) == (MSS if not last else len(payload) - i * MSS)
        assert checksums_valid(f), f"segment {i}"


def test_tcpv6_super_packet_is_cut_into_valid_mtu_frames():
    payload = os.urandom(40000)
    pkt = bytes(tcp6(payload))
    n, frames = segment(vnet(1, lib.RTN_VNET_GSO_TCPV6, 86, MSS - 20, 54, 16) + pkt)
    assert n == len(frames) == -(-len(payload) // (MSS - 20))
    assert b"".join(bytes(Ether(f)[TCP].payload) for f in frames) == payload
    for i, f in enumerate(frames):
        p = Ether(f)
        assert len(f) <= MAX_FRAME and p[IPv6].plen == len(f) - 54
        assert p[TCP].seq == 1000 + i * (MSS - 20)
        assert ("P" in p[TCP].flags) == (i == len(frames) - 1)
        assert checksums_valid(f), f"segment {i}"
    # IPv6 is not merged: each segment goes to Linux alone, untouched
    writes = Coalescer().run(frames[:3])
    assert [w[1] for w in writes] == frames[:3] and all(w[0] == (0,) * 6 for w in writes)


def test_segments_coalesce_back_into_the_original():
    payload = os.urandom(30 * MSS + 100)
    pkt = gso4(payload)
    _, frames = segment(pkt)
    writes = Coalescer().run(frames)
    assert len(writes) == 1
    (flags, gso_type, hdr_len, gso_size, cstart, coff), merged = writes[0]
    assert (flags, gso_type, hdr_len, gso_size, cstart, coff) == (
        lib.RTN_VNET_F_NEEDS_CSUM,
        lib.RTN_VNET_GSO_TCPV4,
        66,
        MSS,
        34,
        16,
    )
    p = Ether(merged)
    assert bytes(p[TCP].payload) == payload
    assert p[IP].len == len(merged) - 14 and p[TCP].seq == 1000 and p[TCP].flags == "PA"
    q = p.copy()
    del q[IP].chksum
    assert Ether(bytes(q))[IP].chksum == p[IP].chksum
    # CHECKSUM_PARTIAL: the field holds the folded pseudo-header sum
    l4_len = len(merged) - 34
    assert p[TCP].chksum == csum16(pseudo_v4(p[IP], l4_len, 6))
    # completing it gives a valid checksum over the whole super-packet
    body = bytearray(merged[34:])
    body[16:18] = b"\0\0"
    full = 0xFFFF - csum16(pseudo_v4(p[IP], l4_len, 6) + bytes(body))
    body[16:18] = struct.pack("!H", full)
    assert lib.rtn_l4_csum_ok(merged[:34] + bytes(body), len(merged)) == 1
    # and cutting the merged packet again gives the very same wire frames
    assert segment(struct.pack("=BBHHHH", *writes[0][0]) + merged)[1] == frames


def test_only_the_same_flow_in_sequence_is_merged():
    _, a = segment(gso4(os.urandom(4 * MSS)))
    _, other = segment(gso4(os.urandom(2 * MSS), seq=1000 + 4 * MSS, dport=5002))
    bad = bytearray(a[2])
    bad[-1] ^= 0xFF  # payload corrupted: TCP checksum wrong
    gap = a[:1] + a[2:]  # a missing segment
    c = Coalescer()
    w = c.run([a[0], a[1], bytes(bad), a[3]])
    assert [x[0][1] for x in w] == [1, 0, 0]  # a[0]+a[1] merged, the bad one alone, a[3] alone
    assert w[1][1] == bytes(bad) and w[1][0] == (0,) * 6
    assert [x[0][1] for x in c.run(gap)] == [0, 1]  # a[0] alone; a[2]+a[3] merged
    assert [x[0][1] for x in c.run(a[:2] + other)] == [1, 1]  # one write per flow
    syn = bytes(tcp4(b"", flags="S"))
    assert c.run([syn, syn]) == [((0,) * 6, syn), ((0,) * 6, syn)]


def seg4(i: int, tsval: int, tsecr: int = 678, flags="A") -> bytes:
    """Segment i of one flow (MSS bytes of i), sent with the given timestamps."""
    ts = [("NOP", None), ("NOP", None), ("Timestamp", (tsval, tsecr))]
    p = tcp4(bytes([i]) * MSS, flags=flags, seq=1000 + i * MSS, ip_id=i)
    p[TCP].options = ts
    return bytes(p)


def test_a_round_merges_past_pushes_and_newer_timestamps():
    """A round's segments stamped in different milliseconds and pushed (as Linux's TCP sends
    them) go in one write: the first's header and TSval, PSH kept; the payload whole."""
    frames = [
        seg4(0, 5000),
        seg4(1, 5000, flags="PA"),
        seg4(2, 5001),
        seg4(3, 5003, flags="PA"),
        seg4(4, 5003),
    ]
    writes = Coalescer().run(frames)
    assert len(writes) == 1
    hdr, merged = writes[0]
    assert hdr[1] == lib.RTN_VNET_GSO_TCPV4 and hdr[3] == MSS
    p = Ether(merged)
    assert p[TCP].seq == 1000 and p[TCP].flags == "PA"
    assert dict(p[TCP].options)["Timestamp"] == (5000, 678)
    assert bytes(p[TCP].payload) == b"".join(bytes([i]) * MSS for i in range(5))
    # cut again: the same segments, but each with the first's TSval and PSH only on the last
    cut = segment(struct.pack("=BBHHHH", *hdr) + merged)[1]
    assert [bytes(Ether(c)[TCP].payload) for c in cut] == [bytes([i]) * MSS for i in range(5)]
    assert [str(Ether(c)[TCP].flags) for c in cut] == ["A"] * 4 + ["PA"]
    assert {dict(Ether(c)[TCP].options)["Timestamp"] for c in cut} == {(5000, 678)}


def test_an_older_timestamp_a_new_echo_or_other_options_end_the_packet():
    """A TSval older than the first's goes alone (PAWS judges it), a new TSecr starts a new
    write (it is the ACK's news the sender clocks by), other options must be identical."""
    c = Coalescer()
    older = c.run([seg4(0, 5000), seg4(1, 4999), seg4(2, 4999)])
    assert [len(Ether(m)[TCP].payload) // MSS for _, m in older] == [1, 2]
    echo = c.run([seg4(0, 5000), seg4(1, 5000, tsecr=679)])
    assert [dict(Ether(m)[TCP].options)["Timestamp"] for _, m in echo] == [
        (5000, 678),
        (5000, 679),
    ]
    other = tcp4(bytes([1]) * MSS, flags="A", seq=1000 + MSS, ip_id=1)
    other[TCP].options = [("SAckOK", b""), ("Timestamp", (5000, 678))]  # not Linux's layout
    assert len(bytes(other)) == len(seg4(1, 5000))
    assert len(c.run([seg4(0, 5000), bytes(other)])) == 2
    wrapped = c.run([seg4(0, 0xFFFFFFFF), seg4(1, 2)])  # TSval wraps: still later
    assert len(wrapped) == 1


def test_lone_frame_checked_here_goes_as_checksum_partial():
    """A TCP/IPv4 frame whose checksum the merger verified reaches Linux as CHECKSUM_PARTIAL
    (NEEDS_CSUM at the TCP header, the pseudo-header sum in the field), which Linux trusts:
    it ignores DATA_VALID on a TAP write, so that mark would have had it summed again.
    Anything the merger did not verify goes as it came, unmarked, for Linux to check."""
    good = bytes(tcp4(os.urandom(300)))
    bad = bytearray(good)
    bad[-1] ^= 0xFF
    udp = bytes(Ether(src=MAC1, dst=MAC2) / IP(src="198.19.0.1", dst="198.19.0.2") / UDP() / b"x")
    v6 = bytes(tcp6(b"y" * 100))
    writes = Coalescer().run([good, bytes(bad), udp, v6])
    assert [w[0] for w in writes] == [
        (lib.RTN_VNET_F_NEEDS_CSUM, lib.RTN_VNET_GSO_NONE, 0, 0, 34, 16),
        (0,) * 6,
        (0,) * 6,
        (0,) * 6,
    ]
    assert [w[1] for w in writes[1:]] == [bytes(bad), udp, v6]
    lone = writes[0][1]
    assert len(lone) == len(good) and lone[:50] + lone[52:] == good[:50] + good[52:]
    l4_len = len(good) - 34
    assert Ether(lone)[TCP].chksum == csum16(pseudo_v4(Ether(good)[IP], l4_len, 6))


def test_one_write_gathers_at_most_its_piece_limit():
    """Small segments of one flow: a write takes at most RTN_GRO_MAX_SEGS of them (the
    pieces of one writev), the next write goes on with the rest, nothing lost."""
    mss = 100
    n = lib.RTN_GRO_MAX_SEGS + 6
    frames = [
        bytes(tcp4(bytes([i]) * mss, flags="A", seq=1000 + i * mss, ip_id=i)) for i in range(n)
    ]
    writes = Coalescer().run(frames)
    assert [w[0][1] for w in writes] == [lib.RTN_VNET_GSO_TCPV4] * 2
    assert [len(Ether(m)[TCP].payload) // mss for _, m in writes] == [lib.RTN_GRO_MAX_SEGS, 6]
    assert b"".join(bytes(Ether(m)[TCP].payload) for _, m in writes) == b"".join(
        bytes([i]) * mss for i in range(n)
    )


def test_super_packet_is_capped_at_64k():
    _, f1 = segment(gso4(os.urandom(44 * MSS), flags="A"))
    _, f2 = segment(gso4(os.urandom(10 * MSS), seq=1000 + 44 * MSS, ip_id=200))
    frames = f1 + f2
    for f in frames[:-1]:  # no PSH before the very end
        assert "P" not in Ether(f)[TCP].flags
    writes = Coalescer().run(frames)
    assert [len(Ether(m)[TCP].payload) // MSS for _, m in writes] == [45, 9]
    assert all(len(m) - 14 <= 0xFFFF for _, m in writes)
    assert writes[0][0][1] == lib.RTN_VNET_GSO_TCPV4
    assert sum(len(Ether(m)[TCP].payload) for _, m in writes) == 54 * MSS


def test_udp_checksum_is_completed():
    payload = os.urandom(777)
    p = (
        Ether(src=MAC1, dst=MAC2)
        / IP(src="198.19.0.1", dst="198.19.0.2")
        / UDP(sport=1, dport=2)
        / payload
    )
    raw = bytearray(bytes(p))
    l4_len = len(raw) - 34
    raw[40:42] = struct.pack("!H", csum16(pseudo_v4(p[IP], l4_len, 17)))  # as Linux leaves it
    assert lib.rtn_l4_csum_ok(bytes(raw), len(raw)) == 0
    n, frames = segment(vnet(lib.RTN_VNET_F_NEEDS_CSUM, 0, 0, 0, 34, 6) + bytes(raw))
    assert n == 1 and len(frames) == 1
    assert frames[0][:40] == bytes(raw[:40]) and frames[0][42:] == bytes(raw[42:])
    assert checksums_valid(frames[0])
    # a complete frame without NEEDS_CSUM passes untouched
    assert segment(vnet() + bytes(p))[1] == [bytes(p)]


@pytest.mark.parametrize(
    "case",
    [
        "gso_size 0",
        "hdr_len beyond the frame",
        "UDP GSO",
        "unknown type",
        "TCPV4 type on IPv6",
        "truncated TCP header",
        "csum field beyond the frame",
        "ECN without GSO",
        "segment too big",
        "no payload",
        "too short",
    ],
)
def test_malformed_packets_are_refused(case):
    pkt = bytes(tcp4(os.urandom(5000)))
    hdr = dict(
        flags=1,
        gso_type=lib.RTN_VNET_GSO_TCPV4,
        hdr_len=66,
        gso_size=MSS,
        csum_start=34,
        csum_offset=16,
    )
    if case == "gso_size 0":
        hdr["gso_size"] = 0
    elif case == "hdr_len beyond the frame":
        hdr["hdr_len"] = len(pkt) + 1
    elif case == "UDP GSO":
        hdr["gso_type"] = lib.RTN_VNET_GSO_UDP
    elif case == "unknown type":
        hdr["gso_type"] = 5
    elif case == "TCPV4 type on IPv6":
        pkt = bytes(tcp6(os.urandom(5000)))
    elif case == "truncated TCP header":
        pkt = pkt[: 34 + 10]
        hdr["hdr_len"] = 0
    elif case == "csum field beyond the frame":
        hdr.update(gso_type=0, csum_start=len(pkt) - 1, csum_offset=0)
    elif case == "ECN without GSO":
        hdr["gso_type"] = lib.RTN_VNET_GSO_ECN
    elif case == "segment too big":
        hdr["gso_size"] = MAX_FRAME - 66 + 1
    elif case == "no payload":
        pkt = bytes(tcp4(b""))
    elif case == "too short":
        pkt = pkt[:10]
        hdr.update(gso_type=0, flags=0, hdr_len=0)
    n, frames = segment(vnet(**hdr) + pkt)
    assert n < 0 and frames == []


def test_ecn_flag_is_allowed_with_tso():
    payload = os.urandom(3 * MSS)
    n, frames = segment(
        gso4(payload, flags="PAC", gso_type=lib.RTN_VNET_GSO_TCPV4 | lib.RTN_VNET_GSO_ECN)
    )
    assert n == 3 and ["C" in Ether(f)[TCP].flags for f in frames] == [True, False, False]


@pytest.mark.parametrize(
    "payload_len, fill",
    [*((n, None) for n in (*range(140), 1471, 1472, 1473, 65000)), (1472, 0xFF), (65000, 0xFF)],
)
def test_checksum_agrees_with_the_16_bit_sum_at_every_tail_length(payload_len, fill):
    """Every remainder of the 64-byte add-with-carry rounds (x86-64), the 32-byte rounds,
    8-byte words, 4-, 2- and 1-byte tails; and all-ones words, a carry out of every add."""
    payload = os.urandom(payload_len) if fill is None else bytes([fill]) * payload_len
    p = (
        Ether(src=MAC1, dst=MAC2)
        / IP(src="198.19.0.1", dst="198.19.0.2")
        / UDP(sport=1, dport=2, chksum=0)
        / payload
    )
    raw = bytearray(bytes(p))
    l4_len = len(raw) - 34
    full = csum16(pseudo_v4(p[IP], l4_len, 17) + bytes(raw[34:]))
    raw[40:42] = struct.pack("!H", (0xFFFF - full) or 0xFFFF)
    assert lib.rtn_l4_csum_ok(bytes(raw), len(raw)) == 1
    if payload_len:
        raw[-1] ^= 0x01  # one bit off in the last byte: the last tail's word
        assert lib.rtn_l4_csum_ok(bytes(raw), len(raw)) == 0


def cut_scattered(read: bytes, hdr: int, mss: int, max_frame=MAX_FRAME):
    """The VNIC pump's in-place path: ``read`` (vnet header + packet) laid out as its TAP
    read scatters it (the first hdr + mss bytes in frame 0, each next mss bytes at frame k's
    offset hdr), begun with rtn_gso_begin_scattered and cut where it lies, the first
    segment last.  (its result, the frames)."""
    pkt = read[10:]
    n_frames = -(-65536 // mss) + 1
    frames = [ffi.new("uint8_t[2048]") for _ in range(n_frames)]
    ffi.memmove(frames[0], pkt[: hdr + mss], min(len(pkt), hdr + mss))
    at, k = hdr + mss, 1
    while at < len(pkt):
        chunk = pkt[at : at + mss]
        ffi.memmove(frames[k] + hdr, chunk, len(chunk))
        at, k = at + len(chunk), k + 1
    g = ffi.new("struct rtn_gso_seg *")
    n = lib.rtn_gso_begin_scattered(g, read[:10], frames[0], len(pkt), max_frame, hdr, mss)
    if n <= 0:
        return n, []
    lengths = [lib.rtn_gso_fix_in_place(g, i, frames[i]) for i in reversed(range(n))][::-1]
    return n, [bytes(ffi.buffer(frames[i], m)) for i, m in enumerate(lengths)]


@pytest.mark.parametrize("size", [1, MSS, MSS + 1, 40000, 65535 - 20 - 32])
def test_a_super_packet_read_in_place_is_cut_as_the_copying_path_cuts_it(size):
    read = gso4(os.urandom(size), flags="FPAC")
    n, frames = cut_scattered(read, 66, MSS)
    assert n > 0 and (n, frames) == segment(read)
    assert all(checksums_valid(f) for f in frames)


def test_a_packet_that_does_not_lie_as_laid_out_is_left_to_be_gathered():
    read = gso4(os.urandom(20000))
    # another MSS or header length than the flow's: 0, the pump gathers it and cuts it as before
    assert cut_scattered(read, 66, MSS - 8) == (0, [])
    assert cut_scattered(read, 54, MSS) == (0, [])
    # a lone frame that fits the first frame is in place whatever the guess
    udp = bytes(Ether(src=MAC1, dst=MAC2) / IP(src="198.19.0.1", dst="198.19.0.2") / UDP() / b"x")
    assert cut_scattered(vnet() + udp, 66, 1000) == (1, [udp])
    # one that does not fit it spills into the next frame: gathered
    assert cut_scattered(vnet() + udp, 20, 10) == (0, [])
    # a bad packet wholly in the first frame is refused as the copying path refuses it
    bad = vnet(0, lib.RTN_VNET_GSO_TCPV4, 66, 0) + udp
    assert cut_scattered(bad, 66, MSS)[0] == segment(bad)[0] < 0
