"""RTcfg frames (EtherType 0x9022): the bytes after the Ethernet header, both ways.

Normative source: RTnet ``doc/RTcfg.spec`` rev 1.8, "Frame Formats", checked
against RTnet's ``stack/include/rtcfg/rtcfg_frame.h`` and Wireshark's RTcfg
dissector.  Multi-byte fields are big-endian; IPv4 addresses are in network
order.  Byte 0 of every frame holds the version (bits 7-5, always 0) and the
frame id (bits 4-0).  Address type 0 (MAC) carries no address field; type 1
(IP) carries 4 bytes per address.

Whatever follows a frame's last field is Ethernet padding (a NIC pads to 60
bytes) and is ignored; so is what follows ``cfg_len`` bytes of stage-1 data.
A Stage 2 fragment keeps all its trailing bytes: only the receiver knows how
many of them are configuration (``cfg_len`` minus the offset).  Anything the
frame claims but does not hold is refused with one :class:`RtcfgError` line
naming the frame and the field.

>>> body = AckCfg(ack_len=1024).encode()
>>> body.hex(), decode(body + bytes(40))
('0500000400', AckCfg(ack_len=1024))
"""

from __future__ import annotations

import enum
import ipaddress
import struct
from dataclasses import dataclass

from rtnet.errors import RtcfgError
from rtnet.mac import format_mac, parse_mac

ETH_RTCFG = 0x9022
RTCFG_VERSION = 0
ADDR_MAC = 0
ADDR_IP = 1
FLAG_STAGE_2_DATA = 0x01  # announce: the client wants stage-2 data
FLAG_READY = 0x02  # announce: the client is ready; stage 2: the server is ready
PHYSICAL_ADDR_LEN = 32  # Dead Station: the MAC, zero-padded to 32 bytes
MAX_STAGE1_LEN = 0xFFFF  # cfg_len is 16 bits
BROADCAST = "ff:ff:ff:ff:ff:ff"
MIN_FRAME_LEN = 60  # Ethernet minimum without the FCS


class FrameId(enum.IntEnum):
    """The frame ids of RTcfg.spec (``RTCFG_ID_*``)."""

    STAGE_1_CFG = 0
    ANNOUNCE_NEW = 1
    ANNOUNCE_REPLY = 2
    STAGE_2_CFG = 3
    STAGE_2_CFG_FRAG = 4
    ACK_CFG = 5
    READY = 6
    HEARTBEAT = 7
    DEAD_STATION = 8


def _head(fid: FrameId) -> bytes:
    return bytes([(RTCFG_VERSION << 5) | fid])


def _ip_bytes(ip: str | None) -> bytes:
    return b"" if ip is None else ipaddress.IPv4Address(ip).packed


def _addr_type(ip: str | None) -> int:
    return ADDR_MAC if ip is None else ADDR_IP


def _byte(name: str, value: int) -> int:
    if not 0 <= value <= 0xFF:
        raise RtcfgError(f"{name} {value} does not fit in a byte")
    return value


@dataclass(frozen=True)
class Stage1Cfg:
    """Id 0, server -> client: the client's address and the stage-1 configuration."""

    client_ip: str | None  # None: addressed by MAC (address type 0)
    server_ip: str | None
    burstrate: int
    cfg_data: bytes

    def encode(self) -> bytes:
        if (self.client_ip is None) != (self.server_ip is None):
            raise RtcfgError("Stage 1 Config: client and server IP go together")
        if len(self.cfg_data) > MAX_STAGE1_LEN:
            raise RtcfgError(
                f"Stage 1 Config: {len(self.cfg_data)} bytes of data (at most {MAX_STAGE1_LEN})"
            )
        return (
            _head(FrameId.STAGE_1_CFG)
            + bytes([_addr_type(self.client_ip)])
            + _ip_bytes(self.client_ip)
            + _ip_bytes(self.server_ip)
            + struct.pack("!BH", _byte("burstrate", self.burstrate), len(self.cfg_data))
            + self.cfg_data
        )


@dataclass(frozen=True)
class AnnounceNew:
    """Id 1, client -> broadcast: a station that has its stage 1 joins."""

    ip: str | None
    flags: int
    burstrate: int

    def encode(self) -> bytes:
        return (
            _head(FrameId.ANNOUNCE_NEW)
            + bytes([_addr_type(self.ip)])
            + _ip_bytes(self.ip)
            + bytes([_byte("flags", self.flags), _byte("burstrate", self.burstrate)])
        )


@dataclass(frozen=True)
class AnnounceReply:
    """Id 2, existing station -> newcomer (or a client -> a restarted server)."""

    ip: str | None
    flags: int

    def encode(self) -> bytes:
        return (
            _head(FrameId.ANNOUNCE_REPLY)
            + bytes([_addr_type(self.ip)])
            + _ip_bytes(self.ip)
            + bytes([_byte("flags", self.flags), 0])
        )  # the second byte is padding


@dataclass(frozen=True)
class Stage2Cfg:
    """Id 3, server -> client: stage-2 parameters and the first part of the data."""

    flags: int
    active_stations: int
    heartbeat_period: int  # ms, 0 = no heartbeats
    cfg_len: int  # the whole stage-2 data, of which cfg_data is the start
    cfg_data: bytes

    def encode(self) -> bytes:
        if len(self.cfg_data) > self.cfg_len:
            raise RtcfgError("Stage 2 Config: more data than cfg_len")
        return (
            _head(FrameId.STAGE_2_CFG)
            + struct.pack(
                "!BIHI",
                _byte("flags", self.flags),
                self.active_stations,
                self.heartbeat_period,
                self.cfg_len,
            )
            + self.cfg_data
        )


@dataclass(frozen=True)
class Stage2Frag:
    """Id 4, server -> client: stage-2 data from ``frag_offset`` on."""

    frag_offset: int
    cfg_data: bytes

    def encode(self) -> bytes:
        return _head(FrameId.STAGE_2_CFG_FRAG) + struct.pack("!I", self.frag_offset) + self.cfg_data


@dataclass(frozen=True)
class AckCfg:
    """Id 5, client -> server: ``ack_len`` bytes of stage 2 received in order."""

    ack_len: int

    def encode(self) -> bytes:
        return _head(FrameId.ACK_CFG) + struct.pack("!I", self.ack_len)


@dataclass(frozen=True)
class Ready:
    """Id 6, broadcast: this station has finished its configuration."""

    def encode(self) -> bytes:
        return _head(FrameId.READY)


@dataclass(frozen=True)
class Heartbeat:
    """Id 7, client -> server: still alive."""

    def encode(self) -> bytes:
        return _head(FrameId.HEARTBEAT)


@dataclass(frozen=True)
class DeadStation:
    """Id 8, server -> broadcast: a station missed its heartbeats."""

    ip: str | None
    mac: str

    def encode(self) -> bytes:
        physical = parse_mac(self.mac).ljust(PHYSICAL_ADDR_LEN, b"\0")
        return (
            _head(FrameId.DEAD_STATION)
            + bytes([_addr_type(self.ip)])
            + _ip_bytes(self.ip)
            + physical
        )


Frame = (
    Stage1Cfg
    | AnnounceNew
    | AnnounceReply
    | Stage2Cfg
    | Stage2Frag
    | AckCfg
    | Ready
    | Heartbeat
    | DeadStation
)


class _Reader:
    """Reads fields in order; a field the frame does not hold is one RtcfgError."""

    def __init__(self, name: str, data: bytes):
        self.name, self.data, self.pos = name, data, 1

    def take(self, field: str, size: int) -> bytes:
        if self.pos + size > len(self.data):
            raise RtcfgError(
                f"RTcfg {self.name}: truncated at {field} "
                f"({len(self.data)} bytes, {field} needs {self.pos + size})"
            )
        out = self.data[self.pos : self.pos + size]
        self.pos += size
        return out

    def num(self, field: str, size: int) -> int:
        return int.from_bytes(self.take(field, size), "big")

    def addr_type(self) -> int:
        kind = self.num("addr_type", 1)
        if kind not in (ADDR_MAC, ADDR_IP):
            raise RtcfgError(f"RTcfg {self.name}: unknown addr_type {kind}")
        return kind

    def ip(self, field: str, kind: int) -> str | None:
        return str(ipaddress.IPv4Address(self.take(field, 4))) if kind == ADDR_IP else None

    def burstrate(self) -> int:
        rate = self.num("burstrate", 1)
        if rate == 0:
            raise RtcfgError(f"RTcfg {self.name}: burstrate 0")
        return rate

    def rest(self) -> bytes:
        return self.data[self.pos :]


def _stage_1(r: _Reader) -> Stage1Cfg:
    kind = r.addr_type()
    client, server = r.ip("client IP", kind), r.ip("server IP", kind)
    rate = r.burstrate()
    size = r.num("cfg_len", 2)
    return Stage1Cfg(client, server, rate, r.take(f"cfg_data (cfg_len {size})", size))


def _announce_new(r: _Reader) -> AnnounceNew:
    kind = r.addr_type()
    ip = r.ip("IP", kind)
    flags = r.num("flags", 1)
    return AnnounceNew(ip, flags, r.burstrate())


def _announce_reply(r: _Reader) -> AnnounceReply:
    kind = r.addr_type()
    ip = r.ip("IP", kind)
    flags = r.num("flags", 1)
    r.take("padding", 1)
    return AnnounceReply(ip, flags)


def _stage_2(r: _Reader) -> Stage2Cfg:
    flags = r.num("flags", 1)
    stations = r.num("active_stations", 4)
    period = r.num("heartbeat_period", 2)
    size = r.num("cfg_len", 4)
    return Stage2Cfg(flags, stations, period, size, r.rest()[:size])


def _stage_2_frag(r: _Reader) -> Stage2Frag:
    return Stage2Frag(r.num("frag_offset", 4), r.rest())


def _dead_station(r: _Reader) -> DeadStation:
    kind = r.addr_type()
    ip = r.ip("IP", kind)
    return DeadStation(ip, format_mac(r.take("physical address", PHYSICAL_ADDR_LEN)[:6]))


_DECODERS = {
    FrameId.STAGE_1_CFG: ("Stage 1 Config", _stage_1),
    FrameId.ANNOUNCE_NEW: ("New Announcement", _announce_new),
    FrameId.ANNOUNCE_REPLY: ("Reply Announcement", _announce_reply),
    FrameId.STAGE_2_CFG: ("Stage 2 Config", _stage_2),
    FrameId.STAGE_2_CFG_FRAG: ("Stage 2 Fragment", _stage_2_frag),
    FrameId.ACK_CFG: ("Acknowledge Config", lambda r: AckCfg(r.num("ack_len", 4))),
    FrameId.READY: ("Ready", lambda r: Ready()),
    FrameId.HEARTBEAT: ("Heartbeat", lambda r: Heartbeat()),
    FrameId.DEAD_STATION: ("Dead Station", _dead_station),
}


_IDS = {
    Stage1Cfg: FrameId.STAGE_1_CFG,
    AnnounceNew: FrameId.ANNOUNCE_NEW,
    AnnounceReply: FrameId.ANNOUNCE_REPLY,
    Stage2Cfg: FrameId.STAGE_2_CFG,
    Stage2Frag: FrameId.STAGE_2_CFG_FRAG,
    AckCfg: FrameId.ACK_CFG,
    Ready: FrameId.READY,
    Heartbeat: FrameId.HEARTBEAT,
    DeadStation: FrameId.DEAD_STATION,
}


def frame_id(frame: Frame) -> FrameId:
    return _IDS[type(frame)]


def frame_name(frame: Frame) -> str:
    """RTcfg.spec's name of a frame, for messages and counters."""
    return _DECODERS[frame_id(frame)][0]


def mac_of(raw: bytes) -> str:
    """The MAC text of six header bytes."""
    return format_mac(raw)


def ether_frame(dst: str, src: str, body: bytes) -> bytes:
    """A whole Ethernet frame carrying ``body``, zero-padded to 60 bytes as a NIC sends it."""
    frame = parse_mac(dst) + parse_mac(src) + struct.pack("!H", ETH_RTCFG) + body
    return frame.ljust(MIN_FRAME_LEN, b"\0")


def decode(data: bytes) -> Frame:
    """The frame in ``data`` (the bytes after the EtherType); RtcfgError if refused."""
    data = bytes(data)
    if not data:
        raise RtcfgError("RTcfg frame: empty")
    version, fid = data[0] >> 5, data[0] & 0x1F
    if version != RTCFG_VERSION:
        raise RtcfgError(f"RTcfg frame: version {version} (only {RTCFG_VERSION} is defined)")
    if fid not in _DECODERS:
        raise RtcfgError(f"RTcfg frame: unknown frame id {fid}")
    name, parse = _DECODERS[FrameId(fid)]
    return parse(_Reader(name, data))
