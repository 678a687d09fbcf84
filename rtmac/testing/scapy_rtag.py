"""Scapy layer for the IEEE 802.1CB R-TAG (tests and tools only).

802.1CB-2017 clause 7.8, as Wireshark's ``ieee8021cb`` dissector reads it:
EtherType 0xF1C1 right after the MAC addresses, then 2 bytes reserved (0 on
transmit), the 16-bit sequence number and the EtherType of what follows.
The encapsulated frame dispatches like Ether does on its type, so RTmac and
TDMA (0x9021), IP and ARP decode behind the tag; an application channel's
EtherType (e.g. 0x88B5) stays Raw.

>>> from rtmac.testing.scapy_layers import RTmac, TdmaSync
>>> raw = bytes(Ether(src="02:52:54:00:00:01", dst="ff:ff:ff:ff:ff:ff")
...             / RTag(seq=7, type=0x9021) / RTmac() / TdmaSync(cycle_no=5))
>>> p = Ether(raw)
>>> p[RTag].seq, p[TdmaSync].cycle_no, bytes(p) == raw
(7, 5, True)
"""

from __future__ import annotations

from scapy.fields import ShortField, XShortEnumField, XShortField
from scapy.layers.l2 import ETHER_TYPES, Ether
from scapy.packet import Packet, Raw, bind_layers

from . import scapy_layers  # noqa: F401  (binds RTmac to EtherType 0x9021)

ETH_RTAG = 0xF1C1
RTAG_LEN = 6


class RTag(Packet):
    """802.1CB redundancy tag: reserved, sequence number, encapsulated EtherType."""

    name = "802.1CB R-TAG"
    fields_desc = [
        XShortField("reserved", 0),
        ShortField("seq", 0),
        XShortEnumField("type", scapy_layers.ETH_RTMAC, ETHER_TYPES),
    ]

    def guess_payload_class(self, payload):
        for fields, cls in Ether.payload_guess:
            if fields.get("type") == self.type and len(fields) == 1:
                return cls
        return Raw

    def mysummary(self):
        return self.sprintf("R-TAG seq=%RTag.seq% type=%RTag.type%")


bind_layers(Ether, RTag, type=ETH_RTAG)
