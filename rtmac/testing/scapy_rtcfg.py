"""Scapy layers for RTcfg, EtherType 0x9022 (tests and tools only).

Normative source: RTnet ``doc/RTcfg.spec`` rev 1.8, "Frame Formats", checked
against RTnet's ``rtcfg_frame.h`` and Wireshark's RTcfg dissector; the
stack's own codec is rtnet/rtcfg/frames.py, which these layers cross-check.
Layout: ``Ether(type=0x9022) / RTcfg(id=...) / <body>``; the body class is
chosen by ``id``.  Address fields are present only when ``addr_type`` is 1
(IP).  Bodies have a known size except the stage-2 data, so a NIC's padding
dissects as ``Padding`` after the fixed frames.

>>> raw = bytes(Ether(dst="ff:ff:ff:ff:ff:ff", src="02:00:00:00:00:01")
...             / RTcfg(id=1) / RtcfgAnnounce(addr_type=1, ip="10.0.0.2", flags=1, burstrate=4))
>>> raw[14:].hex(), Ether(raw)[RtcfgAnnounce].ip
('01010a0000020104', '10.0.0.2')
"""

from __future__ import annotations

from scapy.fields import (
    BitEnumField,
    BitField,
    ByteEnumField,
    ByteField,
    ConditionalField,
    FieldLenField,
    FlagsField,
    IntField,
    IPField,
    MACField,
    ShortField,
    StrFixedLenField,
    StrLenField,
    XStrField,
)
from scapy.layers.l2 import Ether
from scapy.packet import Packet, bind_layers

ETH_RTCFG = 0x9022
_IDS = {
    0: "stage_1_cfg",
    1: "announce_new",
    2: "announce_reply",
    3: "stage_2_cfg",
    4: "stage_2_cfg_frag",
    5: "ack_cfg",
    6: "ready",
    7: "heartbeat",
    8: "dead_station",
}
_ADDR = {0: "mac", 1: "ip"}


def _by_ip(pkt) -> bool:
    return pkt.addr_type == 1


class RTcfg(Packet):
    """Byte 0 of every RTcfg frame: version (3 bits) and frame id (5 bits)."""

    name = "RTcfg"
    fields_desc = [BitField("version", 0, 3), BitEnumField("id", 0, 5, _IDS)]


class _Fixed(Packet):
    def extract_padding(self, s):
        return b"", s


class RtcfgStage1(_Fixed):
    name = "RTcfg Stage 1 Config"
    fields_desc = [
        ByteEnumField("addr_type", 1, _ADDR),
        ConditionalField(IPField("client_ip", "0.0.0.0"), _by_ip),
        ConditionalField(IPField("server_ip", "0.0.0.0"), _by_ip),
        ByteField("burstrate", 4),
        FieldLenField("cfg_len", None, length_of="cfg_data", fmt="!H"),
        StrLenField("cfg_data", b"", length_from=lambda p: p.cfg_len),
    ]


class RtcfgAnnounce(_Fixed):
    """New Announcement (id 1) and Reply Announcement (id 2, ``burstrate`` is padding 0)."""

    name = "RTcfg Announcement"
    fields_desc = [
        ByteEnumField("addr_type", 1, _ADDR),
        ConditionalField(IPField("ip", "0.0.0.0"), _by_ip),
        FlagsField("flags", 0, 8, ["stage_2_data", "ready"]),
        ByteField("burstrate", 0),
    ]


class RtcfgStage2(Packet):
    name = "RTcfg Stage 2 Config"
    fields_desc = [
        FlagsField("flags", 0, 8, ["res0", "ready"]),
        IntField("active_stations", 0),
        ShortField("heartbeat_period", 0),
        IntField("cfg_len", 0),
        XStrField("cfg_data", b""),
    ]


class RtcfgStage2Frag(Packet):
    name = "RTcfg Stage 2 Fragment"
    fields_desc = [IntField("frag_offset", 0), XStrField("cfg_data", b"")]


class RtcfgAck(_Fixed):
    name = "RTcfg Acknowledge Config"
    fields_desc = [IntField("ack_len", 0)]


class RtcfgDeadStation(_Fixed):
    name = "RTcfg Dead Station"
    fields_desc = [
        ByteEnumField("addr_type", 1, _ADDR),
        ConditionalField(IPField("ip", "0.0.0.0"), _by_ip),
        MACField("mac", "00:00:00:00:00:00"),
        StrFixedLenField("physical_padding", b"\0" * 26, 26),
    ]


bind_layers(Ether, RTcfg, type=ETH_RTCFG)
for _id, _cls in (
    (0, RtcfgStage1),
    (1, RtcfgAnnounce),
    (2, RtcfgAnnounce),
    (3, RtcfgStage2),
    (4, RtcfgStage2Frag),
    (5, RtcfgAck),
    (8, RtcfgDeadStation),
):
    bind_layers(RTcfg, _cls, id=_id)
