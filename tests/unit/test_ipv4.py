"""The real-time IPv4 path's parser and builders (csrc/ip/rtn_ipv4.c), with scapy as the
reference: scapy builds the frames we parse and checks the checksums of those we build."""

import pytest
from scapy.layers.inet import ICMP, IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from rtnet import ipv4
from rtnet._lowlevel import ffi, lib

A_MAC, B_MAC = "02:00:00:00:00:0a", "02:00:00:00:00:0b"
A_IP, B_IP = "10.0.0.1", "10.0.0.2"
REASON = {name: n for n, name in ipv4.BAD_REASONS.items()}


def mac(text):
    return bytes.fromhex(text.replace(":", ""))


def udp_frame(payload=b"hello", **ip):
    return bytes(
        Ether(src=A_MAC, dst=B_MAC)
        / IP(src=A_IP, dst=B_IP, **ip)
        / UDP(sport=4000, dport=5000)
        / Raw(payload)
    )


def built_udp(payload: bytes, sport=5000, dport=6000, ip_id=7) -> bytes:
    buf = ffi.new("uint8_t[]", 1536)
    ffi.memmove(buf + lib.RTN_UDP_HLEN, payload, len(payload))
    n = lib.rtn_udp_finish(
        buf,
        mac(B_MAC),
        mac(A_MAC),
        ipv4.ip_int(A_IP),
        ipv4.ip_int(B_IP),
        sport,
        dport,
        ip_id,
        len(payload),
    )
    return bytes(ffi.buffer(buf, n))


def checksums_ok(frame: bytes) -> bool:
    """scapy's word: the checksums as sent equal the ones scapy computes itself."""
    p = Ether(frame)
    sent_ip, sent_l4 = p[IP].chksum, p[IP].payload.chksum
    del p[IP].chksum
    del p[IP].payload.chksum
    q = Ether(bytes(p))
    return sent_ip == q[IP].chksum and sent_l4 == q[IP].payload.chksum


# -- building -------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, 56, 1000, lib.RTN_UDP_MAX_PAYLOAD])
def test_a_built_udp_datagram_should_be_what_scapy_reads_with_good_checksums(size):
    data = bytes(range(256)) * 6
    frame = built_udp(data[:size])
    p = Ether(frame)
    assert (p.src, p.dst, p[IP].src, p[IP].dst) == (A_MAC, B_MAC, A_IP, B_IP)
    assert p[IP].ttl == 64 and p[IP].flags == "DF" and p[IP].ihl == 5 and p[IP].id == 7
    assert (p[UDP].sport, p[UDP].dport, p[UDP].len) == (5000, 6000, 8 + size)
    assert bytes(p[UDP].payload) == data[:size]
    assert checksums_ok(frame) and p[UDP].chksum != 0


def test_an_echo_request_built_should_be_icmp_echo_to_scapy():
    frame = ipv4.echo_frame(mac(B_MAC), mac(A_MAC), A_IP, B_IP, 0x1234, 9, b"x" * 56)
    p = Ether(frame)
    assert p[ICMP].type == 8 and p[ICMP].code == 0
    assert (p[ICMP].id, p[ICMP].seq) == (0x1234, 9) and bytes(p[ICMP].payload) == b"x" * 56
    assert checksums_ok(frame)


def test_the_answer_to_an_echo_request_should_swap_addresses_and_keep_id_seq_and_data():
    req = bytes(
        Ether(src=A_MAC, dst=B_MAC)
        / IP(src=A_IP, dst=B_IP)
        / ICMP(type=8, id=77, seq=3)
        / Raw(b"abcdefgh" * 7)
    )
    v, pkt = ipv4.parse(req)
    assert v == lib.RTN_IP_ECHO_REQUEST
    out = ffi.new("uint8_t[]", 1536)
    n = lib.rtn_icmp_echo_answer(req, pkt, out, 1536, 42)
    p = Ether(bytes(ffi.buffer(out, n)))
    assert (p.src, p.dst, p[IP].src, p[IP].dst) == (B_MAC, A_MAC, B_IP, A_IP)
    assert (p[ICMP].type, p[ICMP].id, p[ICMP].seq) == (0, 77, 3)
    assert bytes(p[ICMP].payload) == b"abcdefgh" * 7
    assert checksums_ok(bytes(ffi.buffer(out, n)))
    assert lib.rtn_icmp_echo_answer(req, pkt, out, 60, 42) == 0  # does not fit: none


@pytest.mark.parametrize("off", [lib.RTN_UDP_TX_OFF, lib.RTN_UDP_PICKUP_OFF])
@pytest.mark.parametrize("value", [0, 1, 0x0123456789ABCDEF, 2**64 - 1, 0xFFFF0000FFFF0000])
def test_a_stamp_written_into_a_datagram_should_keep_its_udp_checksum_right(off, value):
    frame = bytearray(built_udp(bytes(range(100))))
    assert lib.rtn_udp_stamp(ffi.from_buffer(frame), len(frame), off, value) == 0
    assert int.from_bytes(frame[off : off + 8], "big") == value
    assert checksums_ok(bytes(frame))


def test_a_stamp_that_does_not_fit_should_write_nothing():
    frame = bytearray(built_udp(b"abc"))
    before = bytes(frame)
    assert lib.rtn_udp_stamp(ffi.from_buffer(frame), len(frame), len(frame) - 7, 5) == -1
    assert bytes(frame) == before


# -- parsing ----------------------------------------------------------------------------------


def test_a_scapy_datagram_should_parse_with_its_addresses_ports_and_data():
    frame = udp_frame(b"payload!")
    v, p = ipv4.parse(frame)
    assert v == lib.RTN_IP_UDP
    assert (ipv4.ip_text(p.src), ipv4.ip_text(p.dst), p.sport, p.dport) == (A_IP, B_IP, 4000, 5000)
    assert frame[p.data_off : p.data_off + p.data_len] == b"payload!"


def test_a_datagram_without_a_checksum_should_be_taken_and_a_padded_short_one_too():
    raw = bytearray(udp_frame(b"x"))
    raw[40:42] = b"\0\0"  # UDP checksum 0: not computed (RFC 768)
    assert ipv4.parse(bytes(raw))[0] == lib.RTN_IP_UDP
    padded = udp_frame(b"x") + bytes(60 - len(udp_frame(b"x")))  # the NIC's minimum size
    v, p = ipv4.parse(padded)
    assert v == lib.RTN_IP_UDP and p.data_len == 1


def _with(frame: bytes, at: int, value: bytes, fix_ip=True) -> bytes:
    b = bytearray(frame)
    b[at : at + len(value)] = value
    if fix_ip:  # keep the IP checksum right: one fault at a time
        b[24:26] = b"\0\0"
        b[24:26] = lib.rtn_inet_csum(bytes(b[14:34]), 20).to_bytes(2, "big")
    return bytes(b)


BAD = {
    "truncated": udp_frame()[:30],
    "version": _with(udp_frame(), 14, b"\x65"),
    "ihl": _with(udp_frame(), 14, b"\x44"),
    "options": bytes(
        Ether() / IP(src=A_IP, dst=B_IP, options=b"\x01\x01\x01\x00") / UDP() / Raw(b"x" * 40)
    ),
    "totlen_long": _with(udp_frame(b"x" * 40), 16, (200).to_bytes(2, "big")),
    "totlen_short": udp_frame(b"x" * 40) + b"trailing garbage",
    "fragment": bytes(Ether() / IP(src=A_IP, dst=B_IP, flags="MF") / UDP() / Raw(b"x" * 40)),
    "csum": _with(udp_frame(), 26, b"\x01", fix_ip=False),
    "proto": bytes(Ether() / IP(src=A_IP, dst=B_IP, proto=6) / Raw(b"x" * 40)),
    "udp_len": _with(udp_frame(b"x" * 40), 38, (7).to_bytes(2, "big")),
    "udp_csum": _with(udp_frame(b"x" * 40), 45, b"\xff"),
    "icmp_short": bytes(Ether() / IP(src=A_IP, dst=B_IP, proto=1) / Raw(b"\x08\0\0\0")) + bytes(20),
    "icmp_csum": _with(
        bytes(Ether() / IP(src=A_IP, dst=B_IP) / ICMP(type=8) / Raw(b"x" * 20)), 50, b"y"
    ),
    "icmp_type": bytes(Ether() / IP(src=A_IP, dst=B_IP) / ICMP(type=3, code=1) / Raw(b"x" * 28)),
}


@pytest.mark.parametrize("reason", sorted(BAD))
def test_each_bad_frame_should_be_refused_for_its_own_reason(reason):
    assert ipv4.parse(BAD[reason])[0] == -REASON[reason]


def test_every_parser_reason_should_have_a_test_and_the_station_ones_a_name():
    # the station's, and the collectors' (tests/unit/test_ip_defrag.py)
    station_only = {"not_ours", "no_port", "stamp_hdr", "frag_size", "frag_no_room", "frag_timeout"}
    assert set(BAD) | station_only == set(REASON)


def test_an_udp_length_beyond_the_ip_payload_should_be_refused():
    frame = _with(udp_frame(b"x" * 10), 38, (100).to_bytes(2, "big"))
    assert ipv4.parse(frame)[0] == -REASON["udp_len"]


def test_no_truncation_of_a_good_frame_should_parse_as_good():
    frame = udp_frame(b"z" * 100)
    for n in range(len(frame)):
        assert ipv4.parse(frame[:n])[0] < 0


def test_the_status_lines_should_name_the_address_counters_and_routes():
    lines = ipv4.format_status(
        {
            "address": A_IP,
            "rx_udp": 3,
            "bad": {"udp_csum": 2, "ihl": 0},
            "neighbours": [{"ip": B_IP, "mac": B_MAC}],
        }
    )
    assert lines[0].startswith(f"  ipv4 {A_IP}: udp rx 3")
    assert lines[1] == "    refused: udp_csum 2" and B_MAC in lines[2]


# -- ARP (rtroute solicit) ----------------------------------------------------------------------


def test_an_arp_request_should_be_what_scapy_reads_as_one():
    from scapy.layers.l2 import ARP

    p = Ether(ipv4.arp_request(mac(A_MAC), A_IP, B_IP))
    assert p.dst == "ff:ff:ff:ff:ff:ff" and p.src == A_MAC and len(bytes(p)) == 60
    assert (p[ARP].op, p[ARP].hwsrc, p[ARP].psrc, p[ARP].pdst) == (1, A_MAC, A_IP, B_IP)


def test_an_arp_reply_should_give_its_sender_and_anything_else_none():
    from scapy.layers.l2 import ARP

    reply = bytes(Ether() / ARP(op=2, hwsrc=B_MAC, psrc=B_IP, hwdst=A_MAC, pdst=A_IP))
    assert ipv4.arp_reply_sender(reply) == (B_IP, B_MAC)
    request = bytes(Ether() / ARP(op=1, hwsrc=B_MAC, psrc=B_IP, pdst=A_IP))
    multicast = bytes(Ether() / ARP(op=2, hwsrc="01:00:5e:00:00:01", psrc=B_IP, pdst=A_IP))
    for bad in (request, multicast, reply[:41], udp_frame(), b""):
        assert ipv4.arp_reply_sender(bad) is None


@pytest.mark.parametrize("frame_max", [42, 50, 60, 200, 214, 576, 1514, 9018])
@pytest.mark.parametrize("frags", [1, 2, 3, 8, 45, 64, 1024])
def test_the_largest_payload_in_n_fragments_should_be_the_edge_of_the_fragment_count(
    frame_max, frags
):
    most = lib.rtn_udp_frag_max_payload(frame_max, frags)
    count = lib.rtn_udp_frag_count
    if most:
        assert 1 <= count(most, frame_max) <= frags
    # one byte more takes more fragments than that, or more than IPv4 carries
    assert count(most + 1, frame_max) == 0 or count(most + 1, frame_max) > frags
    # and the spans of ``most`` cover the datagram: 8-byte multiples but the last
    n_frags = count(most, frame_max)
    off, n, at = ffi.new("uint32_t *"), ffi.new("uint32_t *"), 0
    for i in range(n_frags):
        lib.rtn_udp_frag_span(most, frame_max, i, off, n)
        assert off[0] == at and lib.RTN_L4_OFF + n[0] <= frame_max
        assert n_frags == 1 or i == n_frags - 1 or n[0] % 8 == 0
        at += n[0]
    assert n_frags == 0 or at == 8 + most
