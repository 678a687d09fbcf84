"""Linux fills in its own UDP and TCP checksums on a device (``ethtool -K DEV tx off``).

A veth leaves them to "the NIC" (CHECKSUM_PARTIAL), which a real NIC fills in on its way
out and a veth never does: a real-time path behind the peer then reads a partial sum and
refuses the datagram (``udp_csum``).  With transmit checksum offload off, Linux sums them
itself, so a plain Linux socket and a real-time one talk across a lab's wire.
"""

from __future__ import annotations

import ctypes
import fcntl
import socket
import struct

from . import netns

SIOCETHTOOL = 0x8946
ETHTOOL_STXCSUM = 0x17  # linux/ethtool.h: transmit checksum offload, set


def kernel_fills_checksums(dev: str, ns: str | None = None) -> None:
    """Turn transmit checksum offload off on ``dev`` in namespace ``ns``; OSError as the
    driver gives it."""
    value = ctypes.create_string_buffer(struct.pack("II", ETHTOOL_STXCSUM, 0), 8)
    ifreq = struct.pack("16sP", dev.encode(), ctypes.addressof(value))
    with netns.entered(ns), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        fcntl.ioctl(s.fileno(), SIOCETHTOOL, ifreq)
