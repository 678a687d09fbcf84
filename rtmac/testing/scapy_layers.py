"""Scapy layers for RTmac and the TDMA v2 discipline (tests and tools only).

Normative sources: RTnet ``doc/RTmac.spec`` (RTmac header, tunnelling) and
``doc/TDMA.spec`` revision 2.1a, section "Frame Formats" (TDMA v2), checked
against RTnet's ``rtmac_proto.h``/``tdma_proto.h`` and Wireshark's RTnet
dissector.  All fields are big-endian; field names are RTnet's.

Layout: ``Ether(type=0x9021) / RTmac / (TdmaSync | TdmaReqCal | TdmaRplCal)``
for TDMA frames (RTmac ``type`` = 0x0001, flags 0), and
``Ether(type=0x9021) / RTmac(type=<EtherType>, flags="tunnel") / IP...`` for
frames tunnelled from the VNIC.  TDMA bodies have a fixed size, so the zeros
a NIC appends to reach 60 bytes dissect as scapy's ``Padding`` layer and
``bytes(Ether(raw)) == raw`` holds for padded and unpadded frames.

Not covered: TDMA v1 (RTmac version 1, type 0x9031, removed in RTnet
0.9.0).  RTcfg (EtherType 0x9022) has its own layers in scapy_rtcfg.

>>> raw = bytes(pad_frame(Ether(src="02:00:00:00:00:01", dst="ff:ff:ff:ff:ff:ff")
...                        / RTmac() / TdmaSync(cycle_no=5)))
>>> len(raw), Ether(raw)[TdmaSync].cycle_no, bytes(Ether(raw)) == raw
(60, 5, True)
"""

from __future__ import annotations

import struct

from scapy.fields import FlagsField, IntField, LongField, XByteField, XShortEnumField, XShortField
from scapy.layers import inet, inet6, l2  # noqa: F401  (Ether type bindings)
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Padding, Raw, bind_layers

ETH_RTMAC = 0x9021
RTMAC_TYPE_NOMAC = 0x0000
RTMAC_TYPE_TDMA = 0x0001
TDMA_VERSION = 0x0201
TDMA_FRM_SYNC = 0x0000
TDMA_FRM_REQ_CAL = 0x0010
TDMA_FRM_RPL_CAL = 0x0011
MIN_FRAME_LEN = 60

_TDMA_IDS = {TDMA_FRM_SYNC: "sync", TDMA_FRM_REQ_CAL: "req_cal", TDMA_FRM_RPL_CAL: "rpl_cal"}


class RTmac(Packet):
    """RTmac header: discipline id (or tunnelled EtherType), version, flags."""

    name = "RTmac"
    fields_desc = [
        XShortEnumField(
            "type", RTMAC_TYPE_TDMA, {RTMAC_TYPE_NOMAC: "NoMAC", RTMAC_TYPE_TDMA: "TDMA"}
        ),
        XByteField("ver", 0x02),
        FlagsField("flags", 0, 8, ["tunnel"]),
    ]

    def guess_payload_class(self, payload):
        if self.flags.tunnel:
            # Tunnelled VNIC frame: dispatch like Ether does on its type.
            for fields, cls in Ether.payload_guess:
                if fields.get("type") == self.type and len(fields) == 1:
                    return cls
            return Raw
        if self.type == RTMAC_TYPE_TDMA and len(payload) >= 4:
            kind = struct.unpack("!H", payload[2:4])[0]
            return _TDMA_CLASSES.get(kind, TdmaHead)
        return Raw

    def mysummary(self):
        if self.flags.tunnel:
            return self.sprintf("RTmac tunnel type=%RTmac.type%")
        return self.sprintf("RTmac %RTmac.type%")


class _TdmaBase(Packet):
    def extract_padding(self, s):
        # Fixed-size bodies: whatever follows is Ethernet padding.
        return b"", s


class TdmaHead(_TdmaBase):
    """TDMA header of a frame with an id this implementation does not know."""

    name = "TDMA"
    fields_desc = [XShortField("version", TDMA_VERSION), XShortEnumField("id", 0xFFFF, _TDMA_IDS)]

    def extract_padding(self, s):
        return s, b""


class TdmaSync(_TdmaBase):
    """Synchronisation frame (TDMA.spec: id 0x0000, broadcast)."""

    name = "TDMA Sync"
    fields_desc = [
        XShortField("version", TDMA_VERSION),
        XShortEnumField("id", TDMA_FRM_SYNC, _TDMA_IDS),
        IntField("cycle_no", 0),
        LongField("xmit_stamp", 0),
        LongField("sched_xmit_stamp", 0),
    ]


class TdmaReqCal(_TdmaBase):
    """Request Calibration frame (TDMA.spec: id 0x0010, unicast to the master)."""

    name = "TDMA Request Calibration"
    fields_desc = [
        XShortField("version", TDMA_VERSION),
        XShortEnumField("id", TDMA_FRM_REQ_CAL, _TDMA_IDS),
        LongField("xmit_stamp", 0),
        IntField("reply_cycle", 0),
        LongField("reply_slot_offset", 0),
    ]

    def hashret(self):
        return struct.pack("!Q", self.xmit_stamp)


class TdmaRplCal(_TdmaBase):
    """Reply Calibration frame (TDMA.spec: id 0x0011, unicast to the requester)."""

    name = "TDMA Reply Calibration"
    fields_desc = [
        XShortField("version", TDMA_VERSION),
        XShortEnumField("id", TDMA_FRM_RPL_CAL, _TDMA_IDS),
        LongField("request_xmit_stamp", 0),
        LongField("reception_stamp", 0),
        LongField("xmit_stamp", 0),
    ]

    def hashret(self):
        return struct.pack("!Q", self.request_xmit_stamp)

    def answers(self, other):
        # The master copies the request's xmit_stamp verbatim into the reply.
        return isinstance(other, TdmaReqCal) and other.xmit_stamp == self.request_xmit_stamp


_TDMA_CLASSES = {
    TDMA_FRM_SYNC: TdmaSync,
    TDMA_FRM_REQ_CAL: TdmaReqCal,
    TDMA_FRM_RPL_CAL: TdmaRplCal,
}

bind_layers(Ether, RTmac, type=ETH_RTMAC)
for _cls in (TdmaHead, *_TDMA_CLASSES.values()):
    bind_layers(RTmac, _cls, type=RTMAC_TYPE_TDMA)


def pad_frame(pkt: Packet) -> Packet:
    """Append zero ``Padding`` up to the 60-byte Ethernet minimum, as a NIC does."""
    missing = MIN_FRAME_LEN - len(pkt)
    return pkt / Padding(b"\0" * missing) if missing > 0 else pkt


def tunnel(inner: Packet, station_mac: str) -> Packet:
    """RTnet VNIC encapsulation of an Ether packet, built with these layers."""
    inner = Ether(bytes(inner))
    return (
        Ether(dst=inner.dst, src=station_mac, type=ETH_RTMAC)
        / RTmac(type=inner.type, flags="tunnel")
        / inner.payload
    )
