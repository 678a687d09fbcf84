"""Capture inside the stack: the RT thread's own record of what it sent and received.

The RT thread mirrors each frame it hands to the AF_XDP socket and each one
it receives into a capture ring (csrc/station/rtn_capture.h), with the stack's
stamps; :meth:`rtnet.station.Station.capture_read` returns them as
:class:`CapturedFrame`.  A packet tap on the device would see none of this
on a real NIC (AF_XDP bypasses it), the RT thread sees all of it.

:func:`to_pcapng` writes them as pcapng (rtnet.pcapng): each packet's time
stamp is CLOCK_REALTIME, in nanoseconds, of its stack stamp (the TX
hand-over to the socket, the XDP program's RX stamp), converted from
CLOCK_MONOTONIC with the offset between the two clocks read once for the
whole capture; its direction is in epb_flags; its comment carries the
stack stamps in the segment's global time (the TDMA time).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import pcapng
from ._lowlevel import ffi, lib


@dataclass(frozen=True)
class CapturedFrame:
    outbound: bool  # sent by this station (else received)
    data: bytes  # the first snaplen bytes
    orig_len: int  # the frame's length
    stamp_ns: int  # global time of the TX hand-over / the RX stamp
    os_ns: int  # the same instant on CLOCK_MONOTONIC
    sched_ns: int | None  # TX under TDMA: the slot occurrence (Sync: cycle) start
    xdp_stamp: bool  # RX: the stamp is the XDP program's (else the poll time)

    @classmethod
    def from_c(cls, rec) -> "CapturedFrame":
        h = rec.h
        kept = min(h.cap_len, lib.RTN_CAP_SNAP_MAX)
        return cls(
            outbound=h.dir == lib.RTN_CAP_TX,
            data=bytes(ffi.buffer(rec.data, kept)),
            orig_len=h.orig_len,
            stamp_ns=h.stamp_ns,
            os_ns=h.os_ns,
            sched_ns=h.sched_ns if h.flags & lib.RTN_CAP_F_SCHED else None,
            xdp_stamp=bool(h.flags & lib.RTN_CAP_F_XDP_STAMP),
        )

    def comment(self) -> str:
        """The stack stamps, global time in ns: ``rtnet tx handover=... sched=...``,
        ``rtnet rx xdp=...`` (``poll=`` when the XDP program gave none)."""
        if self.outbound:
            sched = f" sched={self.sched_ns}" if self.sched_ns is not None else ""
            return f"rtnet tx handover={self.stamp_ns}{sched}"
        return f"rtnet rx {'xdp' if self.xdp_stamp else 'poll'}={self.stamp_ns}"


def to_pcapng(
    frames, *, realtime_minus_monotonic: int, snaplen: int, ifname: str | None = None
) -> bytes:
    """A pcapng file of ``frames`` (CapturedFrame), time-stamped in CLOCK_REALTIME."""
    out = bytearray(pcapng.section_header())
    out += pcapng.interface_description(snaplen, ifname)
    for f in frames:
        out += pcapng.enhanced_packet(
            max(0, f.os_ns + realtime_minus_monotonic),
            f.data,
            f.orig_len,
            outbound=f.outbound,
            comment=f.comment(),
        )
    return bytes(out)
