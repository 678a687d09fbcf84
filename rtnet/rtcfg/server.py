"""The RTcfg server as a pure state machine (``rtcfg <dev> server``, ``add``, ``del``).

Connection states follow RTnet's ``rtcfg_conn_event.c``: SEARCHING (invited
with Stage 1 every period) -> STAGE_1 (New Announcement received, stage 2
being sent in bursts of ``burstrate`` frames, each burst acknowledged) ->
STAGE_2 (final Ack) -> READY (Ready frame, or the ready flag of the
announcement) -> DEAD (no heartbeat for ``heartbeat x threshold``; Dead
Station broadcast, invited again).  A half-configured station whose
``timeout`` passes goes back to SEARCHING.

Readmission: a station that kept its configuration answers the Stage 1
invitation with a Reply Announcement.  RTnet accepts that in SEARCHING (a
restarted server) and leaves it as a to-do in DEAD; here it readmits the
station in both, so a station that was cut off returns without a restart.

Every frame is hostile: a refused one raises :class:`RtcfgError` (one line)
and changes nothing.
"""

from __future__ import annotations

import enum
import ipaddress
from dataclasses import dataclass, field

from rtnet.errors import RtcfgError

from . import frames as fr
from .step import (
    DEFAULT_BURSTRATE,
    DEFAULT_HEARTBEAT_MS,
    DEFAULT_MTU,
    DEFAULT_PERIOD_MS,
    DEFAULT_THRESHOLD,
    NS_PER_MS,
    Step,
    mac_text,
)

STAGE_2_HEAD = 12  # Stage 2 Config without its data
FRAG_HEAD = 5  # Stage 2 Fragment without its data
MAX_CONNECTIONS = 256


class ConnState(str, enum.Enum):
    SEARCHING = "searching"
    STAGE_1 = "stage_1"
    STAGE_2 = "stage_2"
    READY = "ready"
    DEAD = "dead"


@dataclass(frozen=True)
class ServerConfig:
    period_ms: int = DEFAULT_PERIOD_MS
    burstrate: int = DEFAULT_BURSTRATE
    heartbeat_ms: int = DEFAULT_HEARTBEAT_MS
    threshold: int = DEFAULT_THRESHOLD
    ready: bool = False  # -r: the server declares itself ready in its Stage 2 frames
    mtu: int = DEFAULT_MTU


@dataclass
class _Conn:
    ip: str | None
    mac: str | None  # None until learnt from the station's announcement
    assign_by_mac: bool  # add <ip> -hw <mac>: the station adopts the IP
    stage1: bytes
    stage2: bytes
    timeout_ms: int
    state: ConnState = ConnState.SEARCHING
    burstrate: int = 0
    flags: int = 0
    cfg_offs: int = 0
    last_frame: int = 0
    counters: dict = field(default_factory=lambda: {"invited": 0, "dead": 0})

    @property
    def key(self) -> str:
        return self.ip or self.mac


class Server:
    """Server of one device: ``mac`` (and ``ip``, None when addressing by MAC only)."""

    def __init__(self, mac: str, ip: str | None = None, config: ServerConfig = ServerConfig()):
        self.mac, self.ip, self.config = mac_text(mac), ip, config
        self._conns: list[_Conn] = []
        self._cursor = 0  # round-robin start of the next invitations
        self.is_ready = config.ready

    # --- commands ---------------------------------------------------------------------

    def add(
        self,
        address: str,
        *,
        hw: str | None = None,
        stage1: bytes = b"",
        stage2: bytes = b"",
        timeout_ms: int = 0,
    ) -> str:
        """``rtcfg add``: a station by IP (optionally with its MAC) or by MAC; its key."""
        ip, mac = self._address(address)
        if hw is not None:
            if ip is None:
                raise RtcfgError("add: -hw needs an IP address")
            mac = mac_text(hw)
        if len(stage1) > fr.MAX_STAGE1_LEN:
            raise RtcfgError(f"add: stage 1 of {len(stage1)} bytes (at most {fr.MAX_STAGE1_LEN})")
        if len(self._conns) >= MAX_CONNECTIONS:
            raise RtcfgError(f"add: already {MAX_CONNECTIONS} stations")
        for conn in self._conns:
            if (ip and conn.ip == ip) or (mac and conn.mac == mac):
                raise RtcfgError(f"add: {address} is already added")
        conn = _Conn(ip, mac, hw is not None, bytes(stage1), bytes(stage2), timeout_ms)
        self._conns.append(conn)
        return conn.key

    def remove(self, address: str) -> None:
        """``rtcfg del``."""
        self._conns.remove(self._by_key(address))

    def ready(self, now: int) -> Step:
        """``rtcfg ready`` on the server: broadcast Ready (then wait for ``all_ready``)."""
        step = Step()
        self.is_ready = True
        step.send(fr.BROADCAST, fr.Ready())
        return step

    @property
    def all_configured(self) -> bool:
        """``rtcfg wait`` returns: every added station has its configuration."""
        return all(c.state in (ConnState.STAGE_2, ConnState.READY) for c in self._conns)

    @property
    def all_ready(self) -> bool:
        return all(c.state == ConnState.READY for c in self._conns)

    def state_of(self, address: str) -> ConnState:
        return self._by_key(address).state

    def status(self, now: int | None = None) -> dict:
        """For ``rtnetctl status``: the stations seen, alive and dead; with ``now``, how
        long ago each was last heard from (its last frame, a heartbeat once ready, or its
        last change of state; None if never)."""

        def age_ms(conn):
            if now is None or not conn.last_frame:
                return None
            return max(0, now - conn.last_frame) // NS_PER_MS

        configured = (ConnState.STAGE_2, ConnState.READY)
        return {
            "role": "server",
            "mac": self.mac,
            "ip": self.ip,
            "ready": self.is_ready,
            "configured": sum(c.state in configured for c in self._conns),
            "ready_stations": sum(c.state == ConnState.READY for c in self._conns),
            "stations": [
                {
                    "ip": c.ip,
                    "mac": c.mac,
                    "state": c.state.value,
                    "last_frame_age_ms": age_ms(c),
                    **c.counters,
                }
                for c in self._conns
            ],
        }

    # --- events -----------------------------------------------------------------------

    def timer(self, now: int) -> Step:
        """The periodic tick (every ``period_ms``): timeouts, heartbeats, invitations."""
        step = Step()
        dead_after = self.config.heartbeat_ms * self.config.threshold * NS_PER_MS
        for conn in self._conns:
            half = conn.state in (ConnState.STAGE_1, ConnState.STAGE_2)
            if half and conn.timeout_ms and now >= conn.last_frame + conn.timeout_ms * NS_PER_MS:
                self._reset(conn, ConnState.SEARCHING, step)
            elif (
                conn.state == ConnState.READY and dead_after and now >= conn.last_frame + dead_after
            ):
                step.send(fr.BROADCAST, fr.DeadStation(conn.ip, conn.mac))
                conn.counters["dead"] += 1
                self._reset(conn, ConnState.DEAD, step)
        waiting = [c for c in self._conns if c.state in (ConnState.SEARCHING, ConnState.DEAD)]
        if waiting:
            start = self._cursor % len(waiting)
            for conn in (waiting[start:] + waiting[:start])[: self.config.burstrate]:
                step.send(
                    conn.mac or fr.BROADCAST,
                    fr.Stage1Cfg(
                        conn.ip,
                        conn.ip and (self.ip or "0.0.0.0"),
                        self.config.burstrate,
                        conn.stage1,
                    ),
                )
                conn.counters["invited"] += 1
            self._cursor = start + self.config.burstrate
        return step

    def receive(self, src: str, data: bytes, now: int) -> Step:
        """A frame from ``src`` (MAC text); RtcfgError if refused (nothing changed)."""
        src = mac_text(src)
        frame = fr.decode(data)
        handler = {
            fr.AnnounceNew: self._announce_new,
            fr.AnnounceReply: self._announce_reply,
            fr.AckCfg: self._ack,
            fr.Ready: self._ready,
            fr.Heartbeat: self._heartbeat,
        }.get(type(frame))
        if handler is None:
            raise RtcfgError(f"RTcfg {fr.frame_name(frame)} from {src}: not for a server")
        step = Step()
        handler(self._sender(src, frame), src, frame, now, step)
        return step

    # --- frame handlers (checks first, then changes) ----------------------------------

    def _announce_new(self, conn: _Conn, src: str, frame, now: int, step: Step) -> None:
        self._expect(conn, frame, ConnState.SEARCHING, ConnState.DEAD)
        conn.mac, conn.flags = src, frame.flags
        conn.burstrate = min(self.config.burstrate, frame.burstrate)
        self._move(conn, ConnState.STAGE_1, now, step)
        others = sum(
            c is not conn and c.state in (ConnState.STAGE_1, ConnState.STAGE_2, ConnState.READY)
            for c in self._conns
        )
        data = conn.stage2 if conn.flags & fr.FLAG_STAGE_2_DATA else b""
        if not data:
            conn.flags &= ~fr.FLAG_STAGE_2_DATA
        first = data[: self.config.mtu - STAGE_2_HEAD]
        step.send(
            src,
            fr.Stage2Cfg(
                fr.FLAG_READY if self.is_ready else 0,
                others + 1,
                self.config.heartbeat_ms,
                len(data),
                first,
            ),
        )
        conn.cfg_offs = len(first)
        self._burst(conn, conn.burstrate - 1, step)

    def _announce_reply(self, conn: _Conn, src: str, frame, now: int, step: Step) -> None:
        self._expect(conn, frame, ConnState.SEARCHING, ConnState.DEAD)
        conn.mac = src
        self._move(conn, ConnState.READY, now, step)

    def _ack(self, conn: _Conn, src: str, frame, now: int, step: Step) -> None:
        self._expect(conn, frame, ConnState.STAGE_1)
        total = len(conn.stage2) if conn.flags & fr.FLAG_STAGE_2_DATA else 0
        if frame.ack_len > total:
            raise RtcfgError(
                f"RTcfg Acknowledge Config from {src}: ack_len {frame.ack_len} "
                f"beyond the {total} bytes of stage 2"
            )
        conn.last_frame, conn.cfg_offs = now, frame.ack_len
        if frame.ack_len == total:
            ready = conn.flags & fr.FLAG_READY
            self._move(conn, ConnState.READY if ready else ConnState.STAGE_2, now, step)
        else:
            self._burst(conn, conn.burstrate, step)

    def _ready(self, conn: _Conn, src: str, frame, now: int, step: Step) -> None:
        if conn.state == ConnState.READY:
            return  # the broadcast reached us again: nothing new
        self._expect(conn, frame, ConnState.STAGE_2)
        conn.flags |= fr.FLAG_READY
        self._move(conn, ConnState.READY, now, step)

    def _heartbeat(self, conn: _Conn, src: str, frame, now: int, step: Step) -> None:
        self._expect(conn, frame, ConnState.READY)
        conn.last_frame = now

    # --- helpers ----------------------------------------------------------------------

    def _burst(self, conn: _Conn, count: int, step: Step) -> None:
        size = self.config.mtu - FRAG_HEAD
        while count > 0 and conn.cfg_offs < len(conn.stage2):
            chunk = conn.stage2[conn.cfg_offs : conn.cfg_offs + size]
            step.send(conn.mac, fr.Stage2Frag(conn.cfg_offs, chunk))
            conn.cfg_offs += len(chunk)
            count -= 1

    def _sender(self, src: str, frame) -> _Conn:
        ip = getattr(frame, "ip", None)
        for conn in self._conns:
            if ip is not None and conn.ip == ip:
                if conn.mac is not None and conn.mac != src and conn.assign_by_mac:
                    raise RtcfgError(
                        f"RTcfg {fr.frame_name(frame)}: {ip} is claimed by {src}, "
                        f"added with {conn.mac}"
                    )
                return conn
            if ip is None and conn.mac == src:
                return conn
        raise RtcfgError(
            f"RTcfg {fr.frame_name(frame)} from {src}"
            + (f" ({ip})" if ip else "")
            + ": not an added station"
        )

    @staticmethod
    def _expect(conn: _Conn, frame, *states: ConnState) -> None:
        if conn.state not in states:
            raise RtcfgError(
                f"RTcfg {fr.frame_name(frame)} from {conn.key}: unexpected in "
                f"state {conn.state.value}"
            )

    @staticmethod
    def _move(conn: _Conn, state: ConnState, now: int, step: Step) -> None:
        step.change(conn.key, conn.state.value, state.value)
        conn.state, conn.last_frame = state, now

    def _reset(self, conn: _Conn, state: ConnState, step: Step) -> None:
        step.change(conn.key, conn.state.value, state.value)
        conn.state, conn.cfg_offs, conn.flags = state, 0, 0
        if conn.ip is not None and not conn.assign_by_mac:
            conn.mac = None  # learnt again from the next announcement

    def _by_key(self, address: str) -> _Conn:
        ip, mac = self._address(address)
        for conn in self._conns:
            if (ip and conn.ip == ip) or (mac and conn.mac == mac):
                return conn
        raise RtcfgError(f"no station {address} added")

    @staticmethod
    def _address(address: str) -> tuple[str | None, str | None]:
        try:
            return str(ipaddress.IPv4Address(address)), None
        except ValueError:
            pass
        try:
            return None, mac_text(address)
        except RtcfgError:
            raise RtcfgError(f"{address!r} is neither an IPv4 nor a MAC address"[:100]) from None
