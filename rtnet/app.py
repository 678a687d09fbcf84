"""Application channels (csrc/app/rtn_app.c): real-time messages and TDMA cycle waits.

A channel is shared memory between this process and the station's real-time
thread.  ``send`` writes the frame straight into the TX ring and ``recv``
reads the RX ring; neither makes a system call unless ``recv`` has to wait.

>>> with Channel.open("rteth0", ethertype=0x88B5) as ch:          # doctest: +SKIP
...     seq = ch.send("ff:ff:ff:ff:ff:ff", b"hello")
...     msg = ch.recv(timeout=1.0)
...     info = ch.wait_cycle(timeout=0.1)

The cyclic helpers (``publish_cyclic``, ``subscribe``) live in rtnet.cyclic
and are re-exported here; rtnet.cyclic does not import this module (both take
the message sizes from rtnet.app_limits).
"""

from __future__ import annotations

import errno
import os
import socket
import weakref
from dataclasses import dataclass

from . import control_client, stages
from ._lowlevel import check, ffi, lib
from .app_limits import MAX_DEPTH, MAX_PAYLOAD, MSG_MAX, OVERHEAD, UDP_MAX_DGRAM
from .closeable import Closeable
from .cyclic import CyclicTask, latencies_ns, publish_cyclic, subscribe  # noqa: F401 (re-exported)
from .errors import ChannelError, ChannelFull, ConfigError
from .mac import format_mac, parse_mac
from .options import OPTIONS


@dataclass(frozen=True)
class Message:
    """A received message; times are global time in ns (0 if the sender did not stamp)."""

    src: str
    seq: int
    sched_ns: int
    tx_ns: int
    rx_ns: int
    payload: bytes
    ethertype: int
    dst: str  # where the frame was addressed: this station, broadcast, multicast
    # the other stage stamps (rtnet.stages): hand-over by the sending application, pick-up
    # by its RT thread, this station's RT thread, this application's take
    handover_ns: int = 0
    pickup_ns: int = 0
    rx_rt_ns: int = 0
    take_ns: int = 0


@dataclass(frozen=True)
class WaitInfo:
    """One TDMA cycle, as RTnet's struct rtmac_waitinfo."""

    cycle_no: int
    cycle_start_ns: int  # global time
    cycle_start_os_ns: int  # the same instant on this host's CLOCK_MONOTONIC
    clock_offset_ns: int
    cycle_ns: int


def _timeout_ns(timeout) -> int:
    """Seconds (None: forever) to the C convention (-1 forever, 0 poll)."""
    if timeout is None:
        return -1
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0:
        raise ConfigError(f"timeout {timeout!r}: seconds >= 0, or None to wait forever")
    return int(timeout * 1e9)


def _checked_payload(payload) -> bytes:
    payload = bytes(payload)
    if len(payload) > MAX_PAYLOAD:
        raise ConfigError(f"payload of {len(payload)} bytes: at most {MAX_PAYLOAD}")
    return payload


def _check_sent(rc: int, what: str) -> None:
    """A full TX ring is ChannelFull (the caller may retry), anything else ChannelError."""
    if rc == -errno.ENOBUFS:
        raise ChannelFull(errno.ENOBUFS, "channel TX ring full")
    check(rc, ChannelError, what)


def _validate_open(ethertype, slot, prio, max_size, depth, lifetime_us) -> None:
    for name, v in (
        ("ethertype", ethertype),
        ("slot", slot),
        ("prio", prio),
        ("max_size", max_size),
        ("depth", depth),
        ("lifetime_us", lifetime_us),
    ):
        if isinstance(v, bool) or not isinstance(v, int):
            raise ConfigError(f"{name} must be an integer, not {v!r}")
    if not 0x0600 <= ethertype <= 0xFFFF:
        raise ConfigError(f"EtherType 0x{ethertype:04x}: must be 0x0600..0xffff")
    slot_lo, slot_hi = OPTIONS["channel.slot"].limits  # the option table's ranges
    if not slot_lo <= slot <= slot_hi:
        raise ConfigError(f"slot {slot}: must be {slot_lo}..{slot_hi}")
    prio_lo, prio_hi = OPTIONS["channel.prio"].limits
    if not prio_lo <= prio <= prio_hi:
        raise ConfigError(f"priority {prio}: must be {prio_lo}..{prio_hi} (0 highest)")
    if not OVERHEAD <= max_size <= MSG_MAX:
        raise ConfigError(f"max_size {max_size}: must be {OVERHEAD}..{MSG_MAX} bytes")
    if depth <= 0 or depth & (depth - 1) or depth > MAX_DEPTH:
        raise ConfigError(f"depth {depth}: a power of two up to {MAX_DEPTH}")
    life_lo, life_hi = OPTIONS["channel.lifetime_us"].limits
    if not life_lo <= lifetime_us <= life_hi:
        raise ConfigError(f"lifetime_us {lifetime_us}: must be {life_lo}..{life_hi} (0: never)")


class Channel(Closeable):
    """One application channel; use Channel.open() or Channel.attach()."""

    def __init__(self, ch, ctl: socket.socket | None = None, chan_id: int | None = None):
        self._ch = ch
        self._ctl = ctl
        self._buf = ffi.new("uint8_t[]", MSG_MAX)
        self._info = ffi.new("struct rtn_app_msg_info *")
        self._wi = ffi.new("struct rtn_app_waitinfo *")
        self._seq = ffi.new("uint32_t *")
        self._to = ffi.new("struct rtn_app_msg_info *")
        self._tasks: weakref.WeakSet = weakref.WeakSet()
        st = self.stats()
        self.ethertype = st["ethertype"]
        self.station_mac = st["station_mac"]
        # the station's number for it (its status lists it so): the C library's open
        # keeps the daemon's word, a channel opened here gets it from the reply
        self.id = st["channel"] if chan_id is None else chan_id

    @classmethod
    def open(
        cls,
        dev: str = "rteth0",
        *,
        netns: str | None = None,
        ethertype: int,
        slot: int = OPTIONS["channel.slot"].default,
        prio: int = OPTIONS["channel.prio"].default,
        max_size: int = OPTIONS["channel.max_size"].default,
        depth: int = OPTIONS["channel.depth"].default,
        lifetime_us: int | None = None,
        redundant: bool | None = None,
    ) -> "Channel":
        """Ask the station daemon on ``dev`` for a channel (kept while this object is open).
        ``lifetime_us``: a message not on the wire by its scheduled time plus this is
        dropped and counted, as cyclic data that is stale by then should be (0: never;
        None: the daemon's ``[[channel]]`` setting).
        ``redundant``: on a station with two ports, send on both (None: the daemon's
        ``[[channel]]`` setting)."""
        _validate_open(
            ethertype, slot, prio, max_size, depth, 0 if lifetime_us is None else lifetime_us
        )
        request = {
            "cmd": "channel.open",
            "ethertype": ethertype,
            "slot": slot,
            "prio": prio,
            "max_size": max_size,
            "depth": depth,
        }
        if lifetime_us is not None:
            request["lifetime_us"] = lifetime_us
        if redundant is not None:
            request["redundant"] = OPTIONS["channel.redundant"].check(redundant)
        return cls._open_request(dev, request, netns)

    @classmethod
    def _open_request(cls, dev: str, request: dict, netns: str | None) -> "Channel":
        """Send a channel.open ``request`` to the daemon on ``dev``; the channel it gives."""
        try:
            sock, reply, fds = control_client.call_keep(dev, request, netns=netns, max_fds=4)
        except control_client.ControlClientError as exc:
            if exc.refused:
                raise ChannelError(exc.errno, f"{dev}: channel refused: {exc.strerror}") from None
            if exc.filename:  # the C library words this one the same way
                raise ChannelError(
                    exc.errno, f"no station daemon at {exc.filename} ({os.strerror(exc.errno)})"
                ) from None
            raise ChannelError(exc.errno, f"{dev}: {exc.strerror}") from None
        try:
            if len(fds) != 3:
                raise ChannelError(
                    errno.EPROTO,
                    f"{dev}: daemon sent {len(fds)} descriptors, "
                    "expected 3 (memfd, kickfd, notifyfd)",
                )
            out = ffi.new("struct rtn_app_chan **")
            check(lib.rtn_app_attach(fds[0], fds[1], out), ChannelError, dev)
        except BaseException:
            for fd in fds:
                os.close(fd)
            sock.close()
            raise
        lib.rtn_app_set_notifyfd(out[0], fds[2])  # the channel owns it from here
        cid = reply.get("channel") if isinstance(reply, dict) else None
        ok = isinstance(cid, int) and not isinstance(cid, bool) and cid >= 0
        return cls(out[0], sock, cid if ok else -1)

    @classmethod
    def attach(cls, memfd: int, kickfd: int) -> "Channel":
        """Use descriptors obtained elsewhere (e.g. Station.open_channel); takes them over."""
        out = ffi.new("struct rtn_app_chan **")
        check(lib.rtn_app_attach(memfd, kickfd, out), ChannelError, "channel")
        return cls(out[0])

    def _live(self):
        if self._ch is None:
            raise ChannelError(errno.EBADF, "channel is closed")
        return self._ch

    # -- messages -------------------------------------------------------------------
    def send(self, dst, payload: bytes = b"", sched_ns: int | None = None) -> int:
        """Queue ``payload`` for ``dst``; returns its sequence number."""
        ch = self._live()
        dst_b = parse_mac(dst)
        payload = _checked_payload(payload)
        sched = lib.RTN_APP_SCHED_NOW if sched_ns is None else int(sched_ns)
        _check_sent(lib.rtn_app_send(ch, dst_b, payload, len(payload), sched, self._seq), "send")
        return self._seq[0]

    def send_raw(self, frame: bytes) -> None:
        """Queue a whole Ethernet frame as built by the caller (no application header: the
        daemon's own protocols); its EtherType must be the channel's.  A raw frame received
        comes back from recv() as a Message whose payload follows the Ethernet header."""
        ch = self._live()
        frame = bytes(frame)
        _check_sent(lib.rtn_app_send_raw(ch, frame, len(frame)), "send_raw")

    def reply(self, msg: Message, payload: bytes = b"") -> None:
        """Send ``payload`` back to the sender of ``msg`` with ``msg``'s sequence number, so the
        sender can pair it with its request; the channel's own numbering does not advance."""
        ch = self._live()
        self._to.src = parse_mac(msg.src)
        self._to.seq = msg.seq
        payload = _checked_payload(payload)
        _check_sent(lib.rtn_app_reply(ch, self._to, payload, len(payload)), "reply")

    def recv(self, timeout: float | None = None) -> Message | None:
        """Next message, waiting up to ``timeout`` seconds (None: forever, 0: poll)."""
        ch = self._live()
        rc = lib.rtn_app_recv(ch, self._buf, MSG_MAX, self._info, _timeout_ns(timeout))
        if rc == -errno.EAGAIN:
            return None
        check(rc, ChannelError, "recv")
        i = self._info
        return Message(
            format_mac(i.src),
            i.seq,
            i.sched_ns,
            i.tx_ns,
            i.rx_ns,
            bytes(ffi.buffer(self._buf, rc)),
            i.ethertype,
            format_mac(i.dst),
            i.handover_ns,
            i.pickup_ns,
            i.rx_rt_ns,
            i.take_ns,
        )

    # -- cycles --------------------------------------------------------------------------
    def wait_cycle(self, timeout: float | None = None) -> WaitInfo | None:
        """Wait for the next TDMA cycle start; None on timeout."""
        rc = lib.rtn_app_wait_cycle(self._live(), self._wi, _timeout_ns(timeout))
        if rc == -errno.ETIMEDOUT:
            return None
        check(rc, ChannelError, "wait_cycle")
        return self._waitinfo()

    def cycle_info(self) -> WaitInfo | None:
        """The most recently started cycle, or None before the first."""
        if lib.rtn_app_cycle_info(self._live(), self._wi) < 0:
            return None
        return self._waitinfo()

    def _waitinfo(self) -> WaitInfo:
        w = self._wi
        return WaitInfo(w.cycle_no, w.cycle_start, w.cycle_start_os, w.clock_offset, w.cycle_ns)

    def global_now(self) -> int:
        return lib.rtn_app_global_now(self._live())

    # -- status and life cycle -----------------------------------------------------------
    def stats(self) -> dict:
        st = ffi.new("struct rtn_app_stats *")
        lib.rtn_app_stats(self._live(), st)
        out = {
            k: getattr(st, k)
            for k in (
                "channel",
                "ethertype",
                "slot",
                "depth",
                "max_size",
                "tx_sent",
                "tx_full",
                "kicks",
                "rx_received",
                "rx_drops",
                "tx_queued",
                "rx_queued",
                "rx_waiting",
                "cycle_waiting",
                "rx_bad_hdr",
            )
        }
        out["alive"] = bool(st.alive)
        out["station_mac"] = format_mac(st.station_mac)
        return out

    def set_stages(self, outlier_us: float | None = None, deadline_us: float | None = None) -> None:
        """Thresholds of the stage statistics of what this channel receives (None: keep)."""
        ns = stages.check_thresholds(outlier_us, deadline_us)
        check(lib.rtn_app_set_stages(self._live(), *ns), ChannelError, "set_stages")

    def stages(self, late: int | None = None) -> dict:
        """Stage statistics of the received messages, every stamp through the take."""
        return stages.summary(self._stages_ptr(), late=late)

    def late_reader(self, start_now: bool = False) -> stages.LateReader:
        """The over-deadline records of this channel, each once (from now on, or all kept)."""
        return stages.LateReader(self._stages_ptr(), start_now)

    def _stages_ptr(self):
        return ffi.cast("struct rtn_stages *", lib.rtn_app_stages(self._live()))

    @property
    def closed(self) -> bool:
        return self._ch is None

    def close(self) -> None:
        """Stop cyclic tasks on this channel, unmap it, release it at the daemon.  Idempotent."""
        if self._ch is None:
            return
        for task in list(self._tasks):
            task.stop()
        lib.rtn_app_close(self._ch)
        self._ch = None
        if self._ctl is not None:
            self._ctl.close()
            self._ctl = None


# -- UDP sockets ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Datagram:
    """What UdpSocket.recvfrom() returns: the data, the peer and the stamps (global time, ns;
    the sender's sched/handover/pickup/tx only when both sockets are stamped, else 0)."""

    data: bytes
    peer: tuple[str, int]
    seq: int
    sched_ns: int
    tx_ns: int
    rx_ns: int
    handover_ns: int = 0
    pickup_ns: int = 0
    rx_rt_ns: int = 0
    take_ns: int = 0
    dst: tuple[str, int] = ("", 0)  # where it was sent: this station or the broadcast

    def __iter__(self):  # data, (ip, port), stamps = sock.recvfrom()
        return iter((self.data, self.peer, self))


def _ip_int(ip) -> int:
    try:
        return int.from_bytes(socket.inet_aton(ip), "big") if isinstance(ip, str) else -1
    except OSError:
        return -1


def _ip_text(v: int) -> str:
    return socket.inet_ntoa(v.to_bytes(4, "big"))


class UdpSocket(Closeable):
    """A real-time UDP/IPv4 socket: a channel of the station daemon on ``dev`` bound to a
    port, sending in TDMA ``slot``.  ``stamped=True`` (both ends) carries the RTNX header
    at the start of each datagram, so recvfrom() has the sender's stamps too; without it
    the datagram is the data alone and any UDP peer can talk to the socket.
    ``lifetime_us``: a datagram not on the wire by its scheduled time (when it was sent)
    plus this is dropped and counted (0: never).

    >>> with UdpSocket("rteth0", slot=0) as s:                     # doctest: +SKIP
    ...     s.bind(5000)
    ...     s.sendto(b"hi", ("10.0.0.2", 5000))
    ...     data, (ip, port), stamps = s.recvfrom(timeout=1.0)
    """

    def __init__(
        self,
        dev: str = "rteth0",
        *,
        netns: str | None = None,
        stamped: bool = False,
        slot: int = OPTIONS["channel.slot"].default,
        prio: int = OPTIONS["channel.prio"].default,
        max_size: int = OPTIONS["channel.max_size"].default,
        depth: int = OPTIONS["channel.depth"].default,
        lifetime_us: int = OPTIONS["channel.lifetime_us"].default,
    ):
        _validate_open(lib.RTN_ETH_P_IPV4, slot, prio, max_size, depth, lifetime_us)
        self.dev, self.netns, self.stamped = dev, netns, bool(stamped)
        self._opts = {
            "slot": slot,
            "prio": prio,
            "max_size": max_size,
            "depth": depth,
            "lifetime_us": lifetime_us,
        }
        self._chan: Channel | None = None
        self._closed = False
        self.port: int | None = None
        self._seq = ffi.new("uint32_t *")
        self._from = ffi.new("struct rtn_app_udp_info *")
        # a datagram put together from its fragments is longer than a channel message
        self._rbuf = ffi.new("uint8_t[]", UDP_MAX_DGRAM)

    def bind(self, port: int) -> None:
        """Bind to ``port`` (1..65535): the station takes UDP to it from Linux from now on."""
        if self._closed:
            raise ChannelError(errno.EBADF, "socket is closed")
        if self._chan is not None:
            raise ChannelError(errno.EINVAL, f"already bound to port {self.port}")
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 0xFFFF:
            raise ConfigError(f"UDP port {port!r}: must be 1..65535")
        request = {"cmd": "channel.open", "udp_port": port, "stamped": self.stamped, **self._opts}
        self._chan = Channel._open_request(self.dev, request, self.netns)
        self.port = port

    def _live(self) -> Channel:
        if self._chan is None:
            raise ChannelError(
                errno.EBADF if self._closed else errno.ENOTCONN,
                "socket is closed" if self._closed else "socket is not bound",
            )
        return self._chan

    def sendto(self, data: bytes, addr: tuple[str, int], sched_ns: int | None = None) -> int:
        """Queue ``data`` for ``addr`` = (IPv4, port) in the socket's slot; returns its
        sequence number.  A datagram larger than one frame of the socket leaves in
        fragments, as RTnet's stack sends it.  OSError EHOSTUNREACH without a neighbour
        entry (rtroute add), EMSGSIZE beyond IPv4's limit or more fragments than the
        socket's ring holds."""
        ch = self._live()
        try:
            ip, port = addr
        except (TypeError, ValueError):
            raise ConfigError(f"address {addr!r}: expected (ip, port)") from None
        dst = _ip_int(ip)
        if dst < 0:
            raise ConfigError(f"address {ip!r} is not an IPv4 address")
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 0xFFFF:
            raise ConfigError(f"UDP port {port!r}: must be 1..65535")
        data = bytes(data)
        if len(data) > UDP_MAX_DGRAM:
            raise ChannelError(errno.EMSGSIZE, f"datagram of {len(data)} bytes: too large")
        sched = lib.RTN_APP_SCHED_NOW if sched_ns is None else int(sched_ns)
        _check_sent(
            lib.rtn_app_sendto(ch._live(), dst, port, data, len(data), sched, self._seq), "sendto"
        )
        return self._seq[0]

    def recvfrom(self, timeout: float | None = None) -> Datagram | None:
        """The next datagram, waiting up to ``timeout`` seconds (None: forever, 0: poll)."""
        ch = self._live()
        rc = lib.rtn_app_recvfrom(
            ch._live(), self._rbuf, UDP_MAX_DGRAM, ch._info, self._from, _timeout_ns(timeout)
        )
        if rc == -errno.EAGAIN:
            return None
        check(rc, ChannelError, "recvfrom")
        i, f = ch._info, self._from
        return Datagram(
            bytes(ffi.buffer(self._rbuf, rc)),
            (_ip_text(f.src_ip), f.src_port),
            i.seq,
            i.sched_ns,
            i.tx_ns,
            i.rx_ns,
            i.handover_ns,
            i.pickup_ns,
            i.rx_rt_ns,
            i.take_ns,
            (_ip_text(f.dst_ip), f.dst_port),
        )

    @property
    def channel(self) -> Channel:
        """The bound socket's channel, for the cyclic helpers (publish_cyclic to (ip, port),
        subscribe) and the stage statistics."""
        return self._live()

    def stats(self) -> dict:
        st = self._live().stats()
        c = ffi.new("struct rtn_app_stats *")
        lib.rtn_app_stats(self._live()._live(), c)
        st["tx_unreachable"] = c.tx_unreachable
        return st

    def global_now(self) -> int:
        return self._live().global_now()

    def wait_cycle(self, timeout: float | None = None) -> WaitInfo | None:
        return self._live().wait_cycle(timeout)

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Unbind (the port goes back to Linux) and release the channel.  Idempotent."""
        self._closed = True
        if self._chan is not None:
            self._chan.close()
            self._chan = None
