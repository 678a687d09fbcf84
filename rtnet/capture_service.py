"""rtnetd's ``capture`` request: the frames the station's RT thread sent and received
while it ran, mirrored by that thread into a capture ring it never waits on
(rtnet.capture), returned as pcapng (rtnet.pcapng) in the reply."""

from __future__ import annotations

import base64
import threading
import time

from .capture import to_pcapng
from .clocks import realtime_minus_monotonic_ns
from .control_server import RequestError, int_arg

CAPTURE_MAX_FRAMES = 10_000
CAPTURE_SNAPLEN = 2048  # bytes kept of each frame: a whole Ethernet frame, VLAN tag included
CAPTURE_DEPTH = 1024  # capture ring entries: ~40 ms of a saturated 100 Mbit/s link
CAPTURE_MAX_DEPTH = 4096
CAPTURE_POLL_S = 0.005  # how often the ring is emptied while capturing


class CaptureService:
    """``capture`` on the station ``station()`` gives; ``stop`` (the daemon's) ends a
    capture early."""

    def __init__(self, station, dev: str, stop: threading.Event):
        self._station = station
        self.dev = dev
        self._stop = stop

    def handle(self, req, conn):
        count = int_arg(req, "count", 100, 1, CAPTURE_MAX_FRAMES)
        duration = int_arg(req, "duration_ms", 10_000, 1, 60_000)
        depth = int_arg(req, "depth", CAPTURE_DEPTH, 2, CAPTURE_MAX_DEPTH)
        if depth & (depth - 1):
            raise RequestError(f"depth: {depth} is not a power of two")
        station = self._station()
        frames = []
        drops_before = station.stats()["capture"]["drops"]
        # the RT thread fills the ring; this thread empties it and never holds it up
        station.capture_start(snaplen=CAPTURE_SNAPLEN, depth=depth)
        realtime_minus_monotonic = realtime_minus_monotonic_ns()
        try:
            deadline = time.monotonic() + duration / 1000
            while len(frames) < count and not self._stop.is_set():
                frames += station.capture_read(min(256, count - len(frames)))
                if len(frames) >= count or time.monotonic() >= deadline:
                    break
                self._stop.wait(CAPTURE_POLL_S)
        finally:
            station.capture_stop()
        dropped = station.stats()["capture"]["drops"] - drops_before
        # CAPTURE_MAX_FRAMES records of CAPTURE_SNAPLEN bytes fit in MAX_REPLY once in base64
        data = to_pcapng(
            frames,
            realtime_minus_monotonic=realtime_minus_monotonic,
            snaplen=CAPTURE_SNAPLEN,
            ifname=self.dev,
        )
        return {
            "frames": len(frames),
            "dropped": dropped,
            "pcapng_b64": base64.b64encode(data).decode(),
        }
