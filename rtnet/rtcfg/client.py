"""The RTcfg client as a pure state machine (``rtcfg <dev> client``, ``announce``, ``ready``).

States, after RTnet's ``rtcfg_event.c`` (CLIENT_0 ... CLIENT_READY):

- ``off``: no command yet; every frame is ignored.
- ``wait_stage_1`` (``rtcfg client``): waits for a Stage 1 frame addressed to
  this station (by MAC, or by IP: a broadcast for its own IP, or a unicast
  whose IP it adopts).  Its payload (payload.py) is refused whole if one line
  is bad; else it goes to the ``apply`` callback, and only if that accepts it:
- ``stage_1``: configured; ``rtcfg announce`` broadcasts a New Announcement.
- ``announced``: receives Stage 2 (first frame and fragments), acknowledges
  every ``burstrate`` frames and the last one, and collects the stations of
  the segment from their Reply Announcements until it knows
  ``active_stations`` of them; the stage-2 payload, read like stage 1, goes
  to ``apply`` before the final Ack.
- ``stage_2``: ``rtcfg announce`` returns; ``rtcfg ready`` broadcasts Ready.
- ``ready``: heartbeats to the server every ``heartbeat_period`` ms;
  :attr:`Client.barrier_done` once every known station is ready.

Every frame is hostile: a refused one raises :class:`RtcfgError` (one line)
and changes nothing; a frame for another station is ignored.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Callable

from rtnet.errors import RtcfgError

from . import frames as fr
from . import payload
from .step import DEFAULT_BURSTRATE, DEFAULT_MAX_STATIONS, NS_PER_MS, Step, mac_text

# apply(stage, requests, info): the daemon applies a whole payload or raises RtcfgError
ApplyFn = Callable[[int, list, dict], None]


class ClientState(str, enum.Enum):
    OFF = "off"
    WAIT_STAGE_1 = "wait_stage_1"
    STAGE_1 = "stage_1"
    ANNOUNCED = "announced"
    STAGE_2 = "stage_2"
    READY = "ready"


@dataclass(frozen=True)
class ClientConfig:
    max_stations: int = DEFAULT_MAX_STATIONS  # client -m
    burstrate: int = DEFAULT_BURSTRATE  # announce -b
    want_stage2: bool = True
    ready_in_announce: bool = False  # announce -r: no Ready frame will follow


@dataclass
class _Station:
    ip: str | None
    ready: bool = False


@dataclass
class _Stage2:
    """Stage-2 reception in progress."""

    flags: int
    active_stations: int
    heartbeat_ms: int
    cfg_len: int
    data: bytes = b""
    frames: int = 0  # since the last Ack
    done: bool = False


@dataclass
class Client:
    """Client of one device (``dev``, ``mac``; ``ip`` None when it has none yet)."""

    dev: str
    mac: str
    apply: ApplyFn
    ip: str | None = None
    config: ClientConfig = ClientConfig()
    state: ClientState = ClientState.OFF
    server_mac: str | None = None
    server_ip: str | None = None
    stage1_data: bytes = b""
    stage2: _Stage2 | None = None
    stations: dict = field(default_factory=dict)  # MAC -> _Station (the server included)
    by_ip: bool = False
    burstrate: int = DEFAULT_BURSTRATE
    server_burstrate: int = DEFAULT_BURSTRATE  # from its Stage 1 frame
    next_heartbeat: int = 0

    def __post_init__(self):
        self.mac = mac_text(self.mac)

    # --- commands ---------------------------------------------------------------------

    def start(self, now: int) -> Step:
        """``rtcfg client``: wait for Stage 1."""
        if self.state != ClientState.OFF:
            raise RtcfgError(f"client: already {self.state.value}")
        return self._move(ClientState.WAIT_STAGE_1, Step())

    def announce(self, now: int, config: ClientConfig | None = None) -> Step:
        """``rtcfg announce``: broadcast the New Announcement; ``config`` carries the command's
        burstrate and ready flag (the burstrate is at most the server's)."""
        if self.state != ClientState.STAGE_1:
            raise RtcfgError(f"announce: needs stage 1 first (state {self.state.value})")
        if config is not None:
            self.config = config
            self.burstrate = min(config.burstrate, self.server_burstrate)
        step = Step()
        step.send(fr.BROADCAST, fr.AnnounceNew(self._own_ip(), self._flags(), self.burstrate))
        return self._move(ClientState.ANNOUNCED, step)

    def ready(self, now: int) -> Step:
        """``rtcfg ready``: broadcast Ready; heartbeats start."""
        if self.state != ClientState.STAGE_2:
            raise RtcfgError(f"ready: needs stage 2 first (state {self.state.value})")
        step = Step()
        if not self.config.ready_in_announce:
            step.send(fr.BROADCAST, fr.Ready())
        self.next_heartbeat = now + self.stage2.heartbeat_ms * NS_PER_MS
        return self._move(ClientState.READY, step)

    @property
    def announce_done(self) -> bool:
        return self.state in (ClientState.STAGE_2, ClientState.READY)

    @property
    def barrier_done(self) -> bool:
        """``rtcfg ready`` returns: this and every station it knows are ready."""
        return (
            self.state == ClientState.READY
            and self._all_known()
            and all(s.ready for s in self.stations.values())
        )

    def status(self, now: int | None = None) -> dict:
        return {
            "role": "client",
            "mac": self.mac,
            "ip": self.ip,
            "state": self.state.value,
            "server": self.server_mac,
            "stations": [
                {"mac": m, "ip": s.ip, "ready": s.ready} for m, s in sorted(self.stations.items())
            ],
        }

    # --- events -----------------------------------------------------------------------

    def timer(self, now: int) -> Step:
        """Heartbeats, due every ``heartbeat_period`` once ready (missed ones are skipped)."""
        step = Step()
        period = self.stage2.heartbeat_ms * NS_PER_MS if self.stage2 else 0
        if self.state == ClientState.READY and period and now >= self.next_heartbeat:
            step.send(self.server_mac, fr.Heartbeat())
            while self.next_heartbeat <= now:
                self.next_heartbeat += period
        return step

    def receive(self, src: str, dst: str, data: bytes, now: int) -> Step:
        """A frame from ``src`` to ``dst`` (MAC texts); RtcfgError if refused."""
        src, dst = mac_text(src), mac_text(dst)
        frame = fr.decode(data)
        step = Step()
        if self.state == ClientState.OFF or src == self.mac:
            return step
        handler = {
            fr.Stage1Cfg: self._stage_1,
            fr.AnnounceNew: self._announce_new,
            fr.AnnounceReply: self._announce_reply,
            fr.Stage2Cfg: self._stage_2,
            fr.Stage2Frag: self._fragment,
            fr.Ready: self._ready,
            fr.DeadStation: self._dead,
        }.get(type(frame))
        if handler is None:
            raise RtcfgError(f"RTcfg {fr.frame_name(frame)} from {src}: not for a client")
        handler(src, dst, frame, step)
        return step

    # --- frame handlers (checks first, then changes) ----------------------------------

    def _stage_1(self, src: str, dst: str, frame: fr.Stage1Cfg, step: Step) -> None:
        if frame.client_ip is not None and dst == fr.BROADCAST and frame.client_ip != self.ip:
            return  # an invitation for another station
        if frame.client_ip is None and dst != self.mac:
            return
        if self.state != ClientState.WAIT_STAGE_1:
            if self.state in (ClientState.ANNOUNCED, ClientState.STAGE_2, ClientState.READY):
                # a restarted server, or one that took us for dead: we are still configured
                step.send(src, fr.AnnounceReply(self._own_ip(), self._flags() & fr.FLAG_READY))
            return
        try:
            requests = payload.parse(frame.cfg_data, self.dev)
        except RtcfgError as exc:
            raise RtcfgError(f"RTcfg stage 1 from {src} refused: {exc}") from None
        ip = frame.client_ip if frame.client_ip is not None else self.ip
        self.apply(1, requests, {"server_mac": src, "server_ip": frame.server_ip, "ip": ip})
        self.ip, self.by_ip = ip, frame.client_ip is not None
        self.server_mac, self.server_ip, self.stage1_data = src, frame.server_ip, frame.cfg_data
        self.server_burstrate = frame.burstrate
        self.burstrate = min(self.config.burstrate, frame.burstrate)
        self._move(ClientState.STAGE_1, step)

    def _announce_new(self, src: str, dst: str, frame: fr.AnnounceNew, step: Step) -> None:
        if self.state not in (ClientState.ANNOUNCED, ClientState.STAGE_2, ClientState.READY):
            return
        self._add_station(src, frame.ip, bool(frame.flags & fr.FLAG_READY))
        step.send(src, fr.AnnounceReply(self._own_ip(), self._flags() & fr.FLAG_READY))

    def _announce_reply(self, src: str, dst: str, frame: fr.AnnounceReply, step: Step) -> None:
        if self.state not in (ClientState.ANNOUNCED, ClientState.STAGE_2, ClientState.READY):
            return
        self._add_station(src, frame.ip, bool(frame.flags & fr.FLAG_READY))
        self._maybe_done(step)

    def _stage_2(self, src: str, dst: str, frame: fr.Stage2Cfg, step: Step) -> None:
        self._from_server(src, frame, ClientState.ANNOUNCED)
        if frame.cfg_len > payload.MAX_STAGE2_LEN:
            raise RtcfgError(
                f"RTcfg Stage 2 Config from {src}: cfg_len {frame.cfg_len} "
                f"(at most {payload.MAX_STAGE2_LEN})"
            )
        if frame.cfg_len and not self.config.want_stage2:
            raise RtcfgError(f"RTcfg Stage 2 Config from {src}: data that was not asked for")
        if src not in self.stations and not self._room():
            raise RtcfgError(f"RTcfg Stage 2 Config from {src}: station list full")
        s2 = _Stage2(frame.flags, frame.active_stations, frame.heartbeat_period, frame.cfg_len)
        self._take(s2, frame.cfg_data, src, step)
        self.stations[src] = _Station(self.server_ip, bool(frame.flags & fr.FLAG_READY))
        self._maybe_done(step)

    def _fragment(self, src: str, dst: str, frame: fr.Stage2Frag, step: Step) -> None:
        self._from_server(src, frame, ClientState.ANNOUNCED)
        s2 = self.stage2
        if s2 is None or s2.done:
            raise RtcfgError(f"RTcfg Stage 2 Fragment from {src}: no stage 2 in progress")
        if frame.frag_offset != len(s2.data):
            # lost or reordered: tell the server where we are, it resends from there
            step.send(src, fr.AckCfg(len(s2.data)))
            return
        data = frame.cfg_data[: s2.cfg_len - len(s2.data)]  # the rest is padding
        if not data:
            raise RtcfgError(f"RTcfg Stage 2 Fragment from {src}: no data left to receive")
        self._take(dataclasses.replace(s2), data, src, step)
        self._maybe_done(step)

    def _ready(self, src: str, dst: str, frame: fr.Ready, step: Step) -> None:
        station = self.stations.get(src)
        if station is not None:
            station.ready = True

    def _dead(self, src: str, dst: str, frame: fr.DeadStation, step: Step) -> None:
        if src != self.server_mac:
            raise RtcfgError(f"RTcfg Dead Station from {src}: not our server")
        if frame.mac != self.server_mac:
            self.stations.pop(frame.mac, None)

    # --- helpers ----------------------------------------------------------------------

    def _take(self, s2: _Stage2, data: bytes, src: str, step: Step) -> None:
        """Add ``data`` to ``s2`` (a new or copied reception), apply the payload when it is
        complete, and only then make ``s2`` the reception: a refusal leaves all as it was."""
        s2.data += data
        s2.frames += 1
        s2.done = len(s2.data) >= s2.cfg_len
        if s2.done and s2.cfg_len:
            try:
                requests = payload.parse(s2.data, self.dev)
            except RtcfgError as exc:
                raise RtcfgError(f"RTcfg stage 2 from {src} refused: {exc}") from None
            self.apply(2, requests, {"server_mac": src, "server_ip": self.server_ip, "ip": self.ip})
        if s2.done or s2.frames >= self.burstrate:
            step.send(src, fr.AckCfg(len(s2.data)))
            s2.frames = 0
        self.stage2 = s2

    def _maybe_done(self, step: Step) -> None:
        if (
            self.state == ClientState.ANNOUNCED
            and self.stage2 is not None
            and self.stage2.done
            and self._all_known()
        ):
            self._move(ClientState.STAGE_2, step)

    def _all_known(self) -> bool:
        return self.stage2 is not None and len(self.stations) >= self.stage2.active_stations

    def _room(self) -> bool:
        return len(self.stations) < self.config.max_stations

    def _add_station(self, mac: str, ip: str | None, ready: bool) -> None:
        if mac not in self.stations and not self._room():
            raise RtcfgError(
                f"RTcfg announcement from {mac}: station list full ({self.config.max_stations})"
            )
        station = self.stations.setdefault(mac, _Station(ip))
        station.ip, station.ready = ip, station.ready or ready

    def _from_server(self, src: str, frame, state: ClientState) -> None:
        if src != self.server_mac:
            raise RtcfgError(f"RTcfg {fr.frame_name(frame)} from {src}: not our server")
        if self.state != state:
            raise RtcfgError(
                f"RTcfg {fr.frame_name(frame)} from {src}: unexpected in state {self.state.value}"
            )

    def _own_ip(self) -> str | None:
        return self.ip if self.by_ip else None

    def _flags(self) -> int:
        flags = fr.FLAG_STAGE_2_DATA if self.config.want_stage2 else 0
        ready = self.config.ready_in_announce or self.state == ClientState.READY
        return flags | (fr.FLAG_READY if ready else 0)

    def _move(self, state: ClientState, step: Step) -> Step:
        step.change("client", self.state.value, state.value)
        self.state = state
        return step
