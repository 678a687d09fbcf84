"""Golden-bytes tests binding the C frame code (csrc/tdma/rtn_tdma_proto.c) to scapy.

Hex literals follow the frame tables of RTnet's TDMA.spec ("Frame Formats"):
Ethernet header at offset 0, RTmac header at 14, TDMA header at 18, body at 22.
"""

import random
import struct

import pytest
from scapy.layers.inet import ICMP, IP
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Padding, Raw

from rtmac import frames
from rtmac.frames import FrameError, FrameKind, Reject
from rtmac.testing.scapy_layers import (
    RTmac,
    TdmaHead,
    TdmaReqCal,
    TdmaRplCal,
    TdmaSync,
    pad_frame,
    tunnel,
)
from rtnet._lowlevel import check, ffi, lib
from rtnet.errors import RtnetError
from rtnet.mac import parse_mac

MASTER = "02:00:00:00:00:01"
SLAVE = "02:00:00:00:00:02"


def hx(s: str) -> bytes:
    return bytes.fromhex(s.replace("|", " "))


SYNC_GOLDEN = hx(
    "ff ff ff ff ff ff | 02 00 00 00 00 01 | 90 21 |"  # Ethernet
    "00 01 | 02 | 00 |"  # RTmac: TDMA, ver 2, flags 0
    "02 01 | 00 00 |"  # TDMA v2, id sync
    "00 00 00 05 |"  # cycle_no
    "01 02 03 04 05 06 07 08 |"  # xmit_stamp
    "11 12 13 14 15 16 17 18" + " 00" * 18
)  # sched_xmit_stamp, padding
REQ_CAL_GOLDEN = hx(
    "02 00 00 00 00 01 | 02 00 00 00 00 02 | 90 21 | 00 01 02 00 | 02 01 00 10 |"
    "21 22 23 24 25 26 27 28 |"  # xmit_stamp
    "31 32 33 34 |"  # reply_cycle
    "41 42 43 44 45 46 47 48" + " 00" * 18
)  # reply_slot_offset, padding
RPL_CAL_GOLDEN = hx(
    "02 00 00 00 00 02 | 02 00 00 00 00 01 | 90 21 | 00 01 02 00 | 02 01 00 11 |"
    "21 22 23 24 25 26 27 28 |"  # request_xmit_stamp
    "51 52 53 54 55 56 57 58 |"  # reception_stamp
    "61 62 63 64 65 66 67 68" + " 00" * 14
)  # xmit_stamp, padding

SYNC_FIELDS = dict(cycle_no=5, xmit_stamp=0x0102030405060708, sched_xmit_stamp=0x1112131415161718)
REQ_FIELDS = dict(
    xmit_stamp=0x2122232425262728, reply_cycle=0x31323334, reply_slot_offset=0x4142434445464748
)
RPL_FIELDS = dict(
    request_xmit_stamp=0x2122232425262728,
    reception_stamp=0x5152535455565758,
    xmit_stamp=0x6162636465666768,
)


def c_sync(**f):
    return frames.encode_sync(MASTER, **f)


def c_req(**f):
    return frames.encode_req_cal(MASTER, SLAVE, **f)


def c_rpl(**f):
    return frames.encode_rpl_cal(SLAVE, MASTER, **f)


def scapy_sync(**f):
    return Ether(dst="ff:ff:ff:ff:ff:ff", src=MASTER) / RTmac() / TdmaSync(**f)


def scapy_req(**f):
    return Ether(dst=MASTER, src=SLAVE) / RTmac() / TdmaReqCal(**f)


def scapy_rpl(**f):
    return Ether(dst=SLAVE, src=MASTER) / RTmac() / TdmaRplCal(**f)


CASES = {
    "sync": (c_sync, scapy_sync, SYNC_FIELDS, SYNC_GOLDEN, FrameKind.SYNC, 42, 26),
    "req_cal": (c_req, scapy_req, REQ_FIELDS, REQ_CAL_GOLDEN, FrameKind.REQ_CAL, 42, 22),
    "rpl_cal": (c_rpl, scapy_rpl, RPL_FIELDS, RPL_CAL_GOLDEN, FrameKind.RPL_CAL, 46, 38),
}


ENCODE_EX = {
    "sync": lambda **f: frames.encode_sync_ex(MASTER, **f),
    "req_cal": lambda **f: frames.encode_req_cal_ex(MASTER, SLAVE, **f),
    "rpl_cal": lambda **f: frames.encode_rpl_cal_ex(SLAVE, MASTER, **f),
}


@pytest.fixture(params=sorted(CASES))
def case_name(request):
    return request.param


@pytest.fixture
def case(case_name):
    return CASES[case_name]


def test_c_encoder_should_match_golden_bytes(case):
    c_enc, _, fields, golden, *_ = case
    assert c_enc(**fields) == golden


def test_scapy_build_should_match_golden_bytes(case):
    _, s_build, fields, golden, _, unpadded_len, _ = case
    pkt = s_build(**fields)
    assert len(pkt) == unpadded_len
    assert bytes(pkt) == golden[:unpadded_len]
    assert bytes(pad_frame(pkt)) == golden


def test_scapy_should_round_trip_c_frames(case):
    c_enc, _, fields, _, _, unpadded_len, _ = case
    raw = c_enc(**fields)
    pkt = Ether(raw)
    assert bytes(pkt) == raw
    assert len(pkt[Padding].load) == 60 - unpadded_len
    assert bytes(Ether(raw[:unpadded_len])) == raw[:unpadded_len]
    for name, value in fields.items():
        assert getattr(pkt[RTmac].payload, name) == value


def test_c_decoder_should_decode_scapy_frames_field_for_field(case):
    _, s_build, fields, _, kind, _, _ = case
    rng = random.Random(1)
    for _ in range(50):
        values = {
            name: rng.getrandbits(32 if name in ("cycle_no", "reply_cycle") else 64)
            for name in fields
        }
        pkt = s_build(**values)
        for raw in (bytes(pkt), bytes(pad_frame(pkt))):
            msg = frames.decode(raw)
            assert msg.kind == kind
            assert msg.dst == pkt.dst and msg.src == pkt.src
            for name, value in values.items():
                assert getattr(msg, name) == value


def test_xmit_stamp_offset_should_point_at_the_xmit_stamp_field(case_name, case):
    c_enc, _, fields, _, _, _, offset = case
    raw, off = ENCODE_EX[case_name](**dict(fields, xmit_stamp=0))
    assert off == offset
    patched = raw[:off] + struct.pack("!Q", 0xA1A2A3A4A5A6A7A8) + raw[off + 8 :]
    assert patched == c_enc(**dict(fields, xmit_stamp=0xA1A2A3A4A5A6A7A8))


def expected_truncation(n: int) -> Reject:
    if n < 14:
        return Reject.TRUNC_ETH
    if n < 18:
        return Reject.TRUNC_RTMAC
    if n < 22:
        return Reject.TRUNC_TDMA
    return Reject.TRUNC_BODY


def test_decoder_should_reject_every_truncation(case):
    c_enc, _, fields, _, kind, unpadded_len, _ = case
    full = c_enc(**fields)
    for n in range(unpadded_len):
        with pytest.raises(FrameError) as err:
            frames.decode(full[:n])
        assert err.value.reason == expected_truncation(n), n
    assert frames.decode(full[:unpadded_len]).kind == kind


def test_decoder_should_not_read_past_len():
    # The whole valid frame sits in the buffer; only len says it is short.
    full = c_rpl(**RPL_FIELDS)
    msg = ffi.new("struct rtn_tdma_msg *")
    for n in range(46):
        assert lib.rtn_tdma_decode(full, n, msg) == expected_truncation(n)
    assert lib.rtn_tdma_decode(full, 46, msg) == FrameKind.RPL_CAL


def patched(raw: bytes, offset: int, new: bytes) -> bytes:
    return raw[:offset] + new + raw[offset + len(new) :]


SYNC_RAW = c_sync(**SYNC_FIELDS)


@pytest.mark.parametrize(
    "raw, reason",
    [
        (patched(SYNC_RAW, 12, b"\x08\x00"), Reject.NOT_RTMAC),
        (patched(SYNC_RAW, 12, b"\x90\x22"), Reject.NOT_RTMAC),  # RTcfg
        (patched(SYNC_RAW, 16, b"\x01"), Reject.BAD_RTMAC_VER),
        (patched(SYNC_RAW, 14, b"\x90\x31\x01"), Reject.BAD_RTMAC_VER),  # TDMA v1 frame
        (patched(SYNC_RAW, 17, b"\x01"), Reject.TUNNEL),
        (patched(SYNC_RAW, 14, b"\x00\x00"), Reject.FOREIGN_DISC),  # NoMAC
        (patched(SYNC_RAW, 14, b"\x90\x31"), Reject.FOREIGN_DISC),
        (patched(SYNC_RAW, 18, b"\x01\x01"), Reject.BAD_TDMA_VER),
        (patched(SYNC_RAW, 18, b"\x02\x02"), Reject.BAD_TDMA_VER),
        (patched(SYNC_RAW, 20, b"\x00\x12"), Reject.UNKNOWN_ID),
        (patched(SYNC_RAW, 20, b"\x00\x01"), Reject.UNKNOWN_ID),
    ],
)
def test_decoder_should_reject_crafted_frames_with_their_reason(raw, reason):
    with pytest.raises(FrameError) as err:
        frames.decode(raw)
    assert err.value.reason == reason
    assert str(err.value)  # a readable one-line reason


def test_reserved_rtmac_flags_should_be_ignored_like_rtnet():
    assert frames.decode(patched(SYNC_RAW, 17, b"\xfe")).cycle_no == 5


def test_every_reject_reason_should_have_its_own_text():
    texts = {ffi.string(lib.rtn_frm_reason(int(r))) for r in Reject}
    assert len(texts) == len(Reject)


def test_random_bytes_should_never_crash_the_decoder():
    rng = random.Random(20240607)
    prefixes = [
        b"",
        SYNC_RAW[:14],
        SYNC_RAW[:18],
        SYNC_RAW[:22],
        REQ_CAL_GOLDEN[:22],
        RPL_CAL_GOLDEN[:22],
    ]
    seen = set()
    for i in range(4000):
        prefix = prefixes[i % len(prefixes)]
        raw = prefix + rng.randbytes(rng.randrange(0, 80))
        try:
            msg = frames.decode(raw)
        except FrameError as err:
            seen.add(err.reason)
            continue
        seen.add(msg.kind)
        # Whatever C accepts, scapy dissects to the same values.
        body = Ether(raw)[RTmac].payload
        assert isinstance(body, (TdmaSync, TdmaReqCal, TdmaRplCal))
        assert body.xmit_stamp == msg.xmit_stamp
    assert {
        FrameKind.SYNC,
        FrameKind.REQ_CAL,
        FrameKind.RPL_CAL,
        Reject.NOT_RTMAC,
        Reject.TRUNC_BODY,
    } <= seen


def test_scapy_should_dispatch_tdma_bodies_on_id():
    assert isinstance(Ether(c_req(**REQ_FIELDS))[RTmac].payload, TdmaReqCal)
    assert isinstance(Ether(c_rpl(**RPL_FIELDS))[RTmac].payload, TdmaRplCal)
    unknown = Ether(patched(SYNC_RAW, 20, b"\x00\x12"))[RTmac].payload
    assert type(unknown) is TdmaHead and unknown.id == 0x12


def test_scapy_reply_should_answer_its_request_only():
    req = Ether(c_req(**REQ_FIELDS))
    rpl = Ether(c_rpl(**RPL_FIELDS))
    other = Ether(c_rpl(**dict(RPL_FIELDS, request_xmit_stamp=1)))
    assert rpl.answers(req)
    assert not other.answers(req)
    assert not req.answers(rpl)
    assert rpl.hashret() == req.hashret()


def test_encoder_should_refuse_small_buffers_and_bad_values():
    buf = ffi.new("uint8_t[]", 59)
    with pytest.raises(RtnetError):
        check(lib.rtn_tdma_encode_sync(buf, 59, b"\x02" * 6, 0, 0, 0, ffi.NULL))
    with pytest.raises(ValueError):
        frames.encode_sync(MASTER, cycle_no=1 << 32, xmit_stamp=0, sched_xmit_stamp=0)
    with pytest.raises(ValueError):
        frames.encode_sync("02:00:00:00:01", cycle_no=1, xmit_stamp=0, sched_xmit_stamp=0)


# --- tunnelled VNIC frames (RTmac.spec; RTnet rtmac_vnic.c) -----------------------------

STATION = "02:00:00:00:00:0a"
IPV4 = (
    Ether(dst="02:00:00:00:00:0b", src=STATION)
    / IP(src="198.18.0.1", dst="198.18.0.2")
    / ICMP(id=7, seq=1)
    / Raw(b"payload")
)
ARP_REQ = Ether(dst="ff:ff:ff:ff:ff:ff", src=STATION) / ARP(
    hwsrc=STATION, psrc="198.18.0.1", pdst="198.18.0.2"
)


@pytest.mark.parametrize("inner", [IPV4, ARP_REQ], ids=["ipv4", "arp"])
def test_tunnel_should_round_trip_and_match_scapy(inner):
    raw_inner = bytes(inner)
    outer = frames.tunnel_encapsulate(raw_inner, STATION)
    assert len(outer) == len(raw_inner) + 4
    assert outer == bytes(tunnel(inner, STATION))
    assert frames.tunnel_decapsulate(outer) == raw_inner
    dissected = Ether(outer)
    assert dissected[RTmac].flags.tunnel
    assert bytes(dissected) == outer
    assert type(dissected[RTmac].payload) is type(inner.payload)
    with pytest.raises(FrameError) as err:
        frames.decode(outer)
    assert err.value.reason == Reject.TUNNEL


def test_tunnelled_ipv4_should_have_rtnets_layout():
    raw_inner = bytes(IPV4)
    outer = frames.tunnel_encapsulate(raw_inner, "02:00:00:00:00:0c")
    # [dst6][src6][90 21][08 00][02][01][IPv4 ...]; outer src is the station MAC.
    assert outer == (hx("02 00 00 00 00 0b 02 00 00 00 00 0c 90 21 08 00 02 01") + raw_inner[14:])


def test_tunnel_decap_should_rebuild_header_from_the_outer_one():
    outer = bytes(
        Ether(dst="02:00:00:00:00:0b", src="02:00:00:00:00:0c")
        / RTmac(type=0x86DD, flags="tunnel")
        / Raw(b"\x60" + b"\0" * 39)
    )
    inner = frames.tunnel_decapsulate(outer)
    assert inner == hx("02 00 00 00 00 0b 02 00 00 00 00 0c 86 dd") + outer[18:]


@pytest.mark.parametrize(
    "raw, reason",
    [
        (SYNC_RAW, Reject.NOT_TUNNEL),
        (bytes(IPV4), Reject.NOT_RTMAC),
        (b"\x02" * 13, Reject.TRUNC_ETH),
        (hx("ff ff ff ff ff ff 02 00 00 00 00 01 90 21 08 00 02"), Reject.TRUNC_RTMAC),
        (
            patched(frames.tunnel_encapsulate(bytes(IPV4), STATION), 16, b"\x01"),
            Reject.BAD_RTMAC_VER,
        ),
    ],
)
def test_tunnel_decap_should_reject_non_tunnel_frames(raw, reason):
    with pytest.raises(FrameError) as err:
        frames.tunnel_decapsulate(raw)
    assert err.value.reason == reason


def test_tunnel_encap_should_refuse_frames_without_ethernet_header():
    with pytest.raises(RtnetError) as err:
        frames.tunnel_encapsulate(b"\0" * 13, STATION)
    assert "Ethernet header" in str(err.value)


def test_tunnel_encap_and_decap_should_work_in_place():
    raw_inner = bytes(ARP_REQ)
    buf = ffi.new("uint8_t[]", 4 + len(raw_inner))
    ffi.memmove(buf + 4, raw_inner, len(raw_inner))
    n = lib.rtn_rtmac_tunnel_encap(
        buf, len(raw_inner) + 4, buf + 4, len(raw_inner), parse_mac(STATION)
    )
    assert bytes(ffi.buffer(buf, n)) == frames.tunnel_encapsulate(raw_inner, STATION)
    m = lib.rtn_rtmac_tunnel_decap(buf, n, buf, n)
    assert bytes(ffi.buffer(buf, m)) == raw_inner
