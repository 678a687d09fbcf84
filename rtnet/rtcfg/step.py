"""What an RTcfg state machine hands back for one event: frames to send and state changes.

The server and client (server.py, client.py) are driven by ``(event, now)``
calls and never touch a socket, a thread or a clock: ``now`` is the caller's
monotonic time in nanoseconds, and each call returns a :class:`Step`.  The
defaults are RTnet's (``utils/net/rtcfg.c``, RTcfg.spec).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rtnet.errors import RtcfgError
from rtnet.mac import format_mac, parse_mac

from .frames import Frame, ether_frame

NS_PER_MS = 1_000_000
DEFAULT_PERIOD_MS = 1000  # server: Stage 1 invitations and the timer tick
DEFAULT_BURSTRATE = 4  # stage-2 frames sent before waiting for an Ack
DEFAULT_HEARTBEAT_MS = 1000  # 0: no heartbeats
DEFAULT_THRESHOLD = 2  # missed heartbeats before a station is dead
DEFAULT_MAX_STATIONS = 32  # a client's station list
DEFAULT_MTU = 1500  # of the NRT channel the frames travel on
MAX_PERIOD_MS = 3_600_000  # an hour: beyond any configuration round
MAX_HEARTBEAT_MS = 0xFFFF  # the Stage 2 frame's heartbeat_period is 16 bits


@dataclass(frozen=True)
class Tx:
    """One frame to send: destination MAC text (or BROADCAST) and the frame."""

    dst: str
    frame: Frame

    def wire(self, src: str) -> bytes:
        """The Ethernet frame, padded to 60 bytes, from ``src``."""
        return ether_frame(self.dst, src, self.frame.encode())


@dataclass(frozen=True)
class Change:
    """A state change: ``who`` is a station's address (server) or "client"."""

    who: str
    old: str
    new: str


@dataclass
class Step:
    tx: list[Tx] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)

    def send(self, dst: str, frame: Frame) -> None:
        self.tx.append(Tx(dst, frame))

    def change(self, who: str, old: str, new: str) -> None:
        if old != new:
            self.changes.append(Change(who, old, new))


def mac_text(mac) -> str:
    """A MAC (text or six bytes) in the canonical form the machines compare."""
    try:
        return format_mac(parse_mac(mac))
    except ValueError:
        raise RtcfgError(f"not a MAC address: {mac!r}"[:80]) from None
