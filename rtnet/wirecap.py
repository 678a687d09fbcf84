"""Capture what crosses the lab's wire, with kernel timestamps, for tests and tools.

An AF_PACKET socket bound to every interface of a namespace (the lab's wire
namespace sees each station's frames arrive on its bridge port) records
frames with SO_TIMESTAMPNS.  A frame counts once, as it entered the bridge from
its sender's port: the bridge's own interface, which sees every broadcast a
second time, is left out.  Kernel timestamps are CLOCK_REALTIME; they are
converted to CLOCK_MONOTONIC, the clock the stations schedule on, with the
offset between the two clocks read when the capture starts.
"""

from __future__ import annotations

import socket
import struct
import threading
from dataclasses import dataclass

from . import netns as _netns
from .clocks import realtime_minus_monotonic_ns
from .lab import BRIDGE

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SO_TIMESTAMPNS = 35
SO_RCVBUFFORCE = 33
SOL_PACKET = 263
PACKET_STATISTICS = 6  # struct tpacket_stats {tp_packets, tp_drops}, reset on each read


@dataclass(frozen=True)
class Captured:
    ts_ns: int  # CLOCK_MONOTONIC
    ifname: str  # the interface it entered (the sender's bridge port)
    data: bytes


class WireCapture:
    """Capture frames entering the interfaces of ``netns`` (outgoing copies are skipped)."""

    def __init__(self, netns: str | None, *, ethertypes=None, limit: int = 1_000_000):
        self.netns = netns
        self.ethertypes = set(ethertypes) if ethertypes else None
        self.limit = limit
        self.frames: list[Captured] = []
        self.drops = 0  # frames the kernel dropped for this socket (its buffer full)
        self._stop = threading.Event()
        with _netns.entered(netns):
            self._sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        self._sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        # a long capture must not lose frames while Python catches up: as root,
        # SO_RCVBUFFORCE goes past net.core.rmem_max (a few hundred KiB by default)
        try:
            self._sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)
        except PermissionError:
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 20)
        self._sock.settimeout(0.1)
        self._rt_minus_mono = realtime_minus_monotonic_ns()
        self._thread = threading.Thread(target=self._run, name="rtnet-wirecap", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set() and len(self.frames) < self.limit:
            try:
                self._take(*self._sock.recvmsg(2048, socket.CMSG_SPACE(16)))
            except socket.timeout:
                continue
            except OSError:
                return
        # what arrived before stop() was called is still in the socket: take it too
        self._sock.setblocking(False)
        while len(self.frames) < self.limit:
            try:
                self._take(*self._sock.recvmsg(2048, socket.CMSG_SPACE(16)))
            except OSError:  # BlockingIOError: drained
                return

    def _take(self, data, anc, _flags, addr) -> None:
        if addr[2] == PACKET_OUTGOING or addr[0] == BRIDGE:
            return
        if self.ethertypes and (
            len(data) < 14 or struct.unpack("!H", data[12:14])[0] not in self.ethertypes
        ):
            return
        ts = 0
        for level, kind, value in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                sec, nsec = struct.unpack("qq", value[:16])
                ts = sec * 1_000_000_000 + nsec - self._rt_minus_mono
        # addr = (ifname, proto, pkttype, hatype, hwaddr)
        self.frames.append(Captured(ts, addr[0], data))

    def stop(self) -> list[Captured]:
        self._stop.set()
        self._thread.join()
        _packets, drops = struct.unpack(
            "II", self._sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)
        )
        self.drops += drops
        self._sock.close()
        return self.frames

    def __enter__(self) -> "WireCapture":
        return self

    def __exit__(self, *exc) -> None:
        if not self._stop.is_set():
            self.stop()
