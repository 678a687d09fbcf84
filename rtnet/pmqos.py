"""Hold a PM QoS CPU latency request (/dev/cpu_dma_latency) while a measurement runs.

Waking a halted vCPU from a deep C-state costs tens of microseconds; writing 0
to /dev/cpu_dma_latency keeps CPUs out of deep idle states for as long as the
file stays open.
"""

import contextlib
import os
import struct

PATH = "/dev/cpu_dma_latency"


@contextlib.contextmanager
def cpu_latency(us: int | None = 0):
    """Yield True while the request is held, False if it could not be made (or us is None)."""
    if us is None:
        yield False
        return
    try:
        fd = os.open(PATH, os.O_WRONLY | os.O_CLOEXEC)
    except OSError:
        yield False
        return
    try:
        os.write(fd, struct.pack("=i", us))
        yield True
    finally:
        os.close(fd)
