"""Pythonic access to the C frame encoders and decoder (csrc/tdma/rtn_tdma_proto.c).

The C functions are the ones the real-time path uses; this module exists for
tests, tools and the control thread.  Frame layouts are RTnet's TDMA v2
frames (doc/TDMA.spec rev 2.1a, "Frame Formats") inside the RTmac header
(doc/RTmac.spec).

>>> frame = encode_sync("02:00:00:00:00:01", cycle_no=5, xmit_stamp=1000, sched_xmit_stamp=900)
>>> len(frame), decode(frame).cycle_no
(60, 5)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from rtnet._lowlevel import check, ffi, lib
from rtnet.mac import format_mac, parse_mac

ETH_RTMAC = lib.ETH_RTMAC
ETH_RTCFG = lib.ETH_RTCFG
RTMAC_VERSION = lib.RTMAC_VERSION
RTMAC_FLAG_TUNNEL = lib.RTMAC_FLAG_TUNNEL
RTMAC_TYPE_NOMAC = lib.RTMAC_TYPE_NOMAC
RTMAC_TYPE_TDMA = lib.RTMAC_TYPE_TDMA
TDMA_VERSION = lib.TDMA_VERSION
MIN_FRAME_LEN = lib.ETH_ZLEN_RTN

_BUF_LEN = 2048


class FrameKind(enum.IntEnum):
    """TDMA v2 frame ids (the ``id`` field of the TDMA header)."""

    SYNC = lib.TDMA_FRM_SYNC
    REQ_CAL = lib.TDMA_FRM_REQ_CAL
    RPL_CAL = lib.TDMA_FRM_RPL_CAL


class Reject(enum.IntEnum):
    """Why the decoder refused a frame (values of C ``enum rtn_frm_result``)."""

    TRUNC_ETH = lib.RTN_FRM_TRUNC_ETH
    NOT_RTMAC = lib.RTN_FRM_NOT_RTMAC
    TRUNC_RTMAC = lib.RTN_FRM_TRUNC_RTMAC
    BAD_RTMAC_VER = lib.RTN_FRM_BAD_RTMAC_VER
    TUNNEL = lib.RTN_FRM_TUNNEL
    FOREIGN_DISC = lib.RTN_FRM_FOREIGN_DISC
    TRUNC_TDMA = lib.RTN_FRM_TRUNC_TDMA
    BAD_TDMA_VER = lib.RTN_FRM_BAD_TDMA_VER
    UNKNOWN_ID = lib.RTN_FRM_UNKNOWN_ID
    TRUNC_BODY = lib.RTN_FRM_TRUNC_BODY
    NOT_TUNNEL = lib.RTN_FRM_NOT_TUNNEL


class FrameError(ValueError):
    """A frame the decoder rejects; ``.reason`` is a :class:`Reject`."""

    def __init__(self, reason: Reject):
        self.reason = reason
        super().__init__(ffi.string(lib.rtn_frm_reason(int(reason))).decode())


@dataclass(frozen=True)
class TdmaFrame:
    """A decoded TDMA frame; fields that the frame kind lacks are 0."""

    kind: FrameKind
    dst: str
    src: str
    cycle_no: int = 0
    xmit_stamp: int = 0
    sched_xmit_stamp: int = 0
    reply_cycle: int = 0
    reply_slot_offset: int = 0
    request_xmit_stamp: int = 0
    reception_stamp: int = 0


def _u(value: int, bits: int, name: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < (1 << bits):
        raise ValueError(f"{name} must be an unsigned {bits}-bit integer, got {value!r}")
    return value


def _encoded(fn, *args) -> tuple[bytes, int]:
    buf = ffi.new("uint8_t[]", _BUF_LEN)
    off = ffi.new("uint32_t *")
    n = check(fn(buf, _BUF_LEN, *args, off))
    return bytes(ffi.buffer(buf, n)), off[0]


def encode_sync_ex(src, cycle_no: int, xmit_stamp: int, sched_xmit_stamp: int) -> tuple[bytes, int]:
    """Sync frame and the offset of its ``xmit_stamp`` field."""
    return _encoded(
        lib.rtn_tdma_encode_sync,
        parse_mac(src),
        _u(cycle_no, 32, "cycle_no"),
        _u(xmit_stamp, 64, "xmit_stamp"),
        _u(sched_xmit_stamp, 64, "sched_xmit_stamp"),
    )


def encode_req_cal_ex(
    dst, src, xmit_stamp: int, reply_cycle: int, reply_slot_offset: int
) -> tuple[bytes, int]:
    """Request Calibration frame and the offset of its ``xmit_stamp`` field."""
    return _encoded(
        lib.rtn_tdma_encode_req_cal,
        parse_mac(dst),
        parse_mac(src),
        _u(xmit_stamp, 64, "xmit_stamp"),
        _u(reply_cycle, 32, "reply_cycle"),
        _u(reply_slot_offset, 64, "reply_slot_offset"),
    )


def encode_rpl_cal_ex(
    dst, src, request_xmit_stamp: int, reception_stamp: int, xmit_stamp: int
) -> tuple[bytes, int]:
    """Reply Calibration frame and the offset of its ``xmit_stamp`` field."""
    return _encoded(
        lib.rtn_tdma_encode_rpl_cal,
        parse_mac(dst),
        parse_mac(src),
        _u(request_xmit_stamp, 64, "request_xmit_stamp"),
        _u(reception_stamp, 64, "reception_stamp"),
        _u(xmit_stamp, 64, "xmit_stamp"),
    )


def encode_sync(src, cycle_no: int, xmit_stamp: int, sched_xmit_stamp: int) -> bytes:
    """Broadcast Sync frame, padded to 60 bytes (TDMA.spec "Synchronisation Frame")."""
    return encode_sync_ex(src, cycle_no, xmit_stamp, sched_xmit_stamp)[0]


def encode_req_cal(dst, src, xmit_stamp: int, reply_cycle: int, reply_slot_offset: int) -> bytes:
    """Request Calibration frame, padded to 60 bytes."""
    return encode_req_cal_ex(dst, src, xmit_stamp, reply_cycle, reply_slot_offset)[0]


def encode_rpl_cal(
    dst, src, request_xmit_stamp: int, reception_stamp: int, xmit_stamp: int
) -> bytes:
    """Reply Calibration frame, padded to 60 bytes."""
    return encode_rpl_cal_ex(dst, src, request_xmit_stamp, reception_stamp, xmit_stamp)[0]


def decode(frame: bytes) -> TdmaFrame:
    """Decode a received TDMA frame or raise :class:`FrameError` with the reason."""
    frame = bytes(frame)
    msg = ffi.new("struct rtn_tdma_msg *")
    rc = lib.rtn_tdma_decode(frame, len(frame), msg)
    if rc < 0:
        raise FrameError(Reject(rc))
    return TdmaFrame(
        kind=FrameKind(rc),
        dst=format_mac(msg.dst),
        src=format_mac(msg.src),
        cycle_no=msg.cycle_no,
        xmit_stamp=msg.xmit_stamp,
        sched_xmit_stamp=msg.sched_xmit_stamp,
        reply_cycle=msg.reply_cycle,
        reply_slot_offset=msg.reply_slot_offset,
        request_xmit_stamp=msg.request_xmit_stamp,
        reception_stamp=msg.reception_stamp,
    )


def tunnel_encapsulate(inner: bytes, station_mac) -> bytes:
    """Linux Ethernet frame -> RTmac tunnel frame (RTnet VNIC transmit path)."""
    inner = bytes(inner)
    size = len(inner) + lib.RTMAC_HLEN
    out = ffi.new("uint8_t[]", size)
    n = check(lib.rtn_rtmac_tunnel_encap(out, size, inner, len(inner), parse_mac(station_mac)))
    return bytes(ffi.buffer(out, n))


def tunnel_decapsulate(frame: bytes) -> bytes:
    """RTmac tunnel frame -> Linux Ethernet frame; :class:`FrameError` if it is none."""
    frame = bytes(frame)
    size = max(len(frame), 1)
    out = ffi.new("uint8_t[]", size)
    rc = lib.rtn_rtmac_tunnel_decap(out, size, frame, len(frame))
    if rc <= lib.RTN_FRM_TRUNC_ETH:
        raise FrameError(Reject(rc))
    return bytes(ffi.buffer(out, check(rc)))
