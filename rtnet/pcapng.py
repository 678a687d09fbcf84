"""pcapng files (IETF draft-ietf-opsawg-pcapng): one section, one Ethernet interface.

Only what a capture of the stack needs: a Section Header Block, an Interface
Description Block with nanosecond time stamps (if_tsresol = 9), and an
Enhanced Packet Block per frame carrying its direction in ``epb_flags``
(inbound/outbound) and, optionally, an ``opt_comment``.  Little-endian, as
the host writes it; tshark and scapy read it.
"""

from __future__ import annotations

import struct

LINKTYPE_ETHERNET = 1

_SHB = 0x0A0D0D0A
_IDB = 0x00000001
_EPB = 0x00000006
_BYTE_ORDER_MAGIC = 0x1A2B3C4D

_OPT_END = 0
_OPT_COMMENT = 1
_IF_NAME = 2
_IF_TSRESOL = 9
_EPB_FLAGS = 2
_DIR_INBOUND = 0b01
_DIR_OUTBOUND = 0b10


def _pad4(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 4)


def _option(code: int, value: bytes) -> bytes:
    return struct.pack("<HH", code, len(value)) + _pad4(value)


def _options(opts: list[bytes]) -> bytes:
    return b"".join(opts) + struct.pack("<HH", _OPT_END, 0) if opts else b""


def _block(kind: int, body: bytes) -> bytes:
    total = 12 + len(body)  # type, total length, body, total length again
    return struct.pack("<II", kind, total) + body + struct.pack("<I", total)


def section_header() -> bytes:
    """Version 1.0, section length unknown (-1)."""
    return _block(_SHB, struct.pack("<IHHq", _BYTE_ORDER_MAGIC, 1, 0, -1))


def interface_description(snaplen: int, name: str | None = None) -> bytes:
    """Interface 0: Ethernet, time stamps in nanoseconds."""
    opts = [_option(_IF_TSRESOL, bytes([9]))]
    if name:
        opts.insert(0, _option(_IF_NAME, name.encode()))
    return _block(_IDB, struct.pack("<HHI", LINKTYPE_ETHERNET, 0, snaplen) + _options(opts))


def enhanced_packet(
    ts_ns: int,
    data: bytes,
    orig_len: int | None = None,
    *,
    outbound: bool | None = None,
    comment: str | None = None,
) -> bytes:
    """One frame of interface 0 at ``ts_ns`` (ns since the epoch); ``data`` as kept,
    ``orig_len`` its length on the wire (default: ``len(data)``)."""
    if ts_ns < 0:
        raise ValueError(f"time stamp {ts_ns} before the epoch")
    opts = []
    if outbound is not None:
        opts.append(
            _option(_EPB_FLAGS, struct.pack("<I", _DIR_OUTBOUND if outbound else _DIR_INBOUND))
        )
    if comment:
        opts.append(_option(_OPT_COMMENT, comment.encode()))
    body = struct.pack(
        "<IIIII",
        0,
        ts_ns >> 32,
        ts_ns & 0xFFFFFFFF,
        len(data),
        len(data) if orig_len is None else orig_len,
    )
    return _block(_EPB, body + _pad4(data) + _options(opts))
