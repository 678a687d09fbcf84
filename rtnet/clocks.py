"""The offset between the kernel's clocks, read so that a stall cannot skew it.

Stations schedule on CLOCK_MONOTONIC; kernel packet stamps and pcap files use
CLOCK_REALTIME.  Converting between them takes the offset of one clock against the
other, and two plain reads in a row are as far apart as whatever stalled the thread
between them: on this VM the hypervisor takes a vCPU for milliseconds, and every
timestamp converted would move by that much.
"""

from __future__ import annotations

import time


def realtime_minus_monotonic_ns(tries: int = 20) -> int:
    """CLOCK_REALTIME - CLOCK_MONOTONIC, from the narrowest of ``tries``
    monotonic-realtime-monotonic brackets (its width bounds the error)."""
    best_width, best = None, 0
    for _ in range(tries):
        a = time.monotonic_ns()
        rt = time.clock_gettime_ns(time.CLOCK_REALTIME)
        b = time.monotonic_ns()
        if best_width is None or b - a < best_width:
            best_width, best = b - a, rt - (a + b) // 2
    return best
