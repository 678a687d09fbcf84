"""rtnetd's real-time IPv4: the station's address, the neighbour table (rtroute) and rtping.

The station's real-time IPv4 address has one source, kept here: the
configuration's IPADDR (rtnet.conf) or ``ip`` (rtnet.toml), replaced when
RTcfg stage 1 assigns one (the daemon's ``station.ip`` step).  From it the XDP
program steers echo requests and UDP to bound ports, the RT thread answers
echo requests and UDP sockets take their source address.

Requests (rtnet.daemon's control protocol; ``route.list`` and ``route.get``
are read-only):

- ``route.list`` -> ``{"routes": [{"ip", "mac"}, ...]}``
- ``route.get`` (ip) -> ``{"ip", "mac"}``, or an error without an entry
- ``route.add`` (ip, mac), ``route.del`` (ip): one entry
- ``route.set`` (routes): the whole table at once (``rtroute -f``)
- ``route.solicit`` (ip, timeout_ms): an ARP request on the real-time path (in
  the ICMP slot, through the daemon's ARP channel); the reply, the one ARP frame
  the XDP program then takes from Linux, fills the table -> ``{"ip", "mac"}``

``ping`` to an IPv4 address (rtnet.daemon) from a station with a real-time
address is ICMP echo as RTnet's rtping (otherwise the echo service):
requests leave in the station's ICMP slot through the daemon's IPv4 channel
(the station hands it the echo replies whose identifier is steered); the
round trip is from the request's hand-over to the reply's XDP stamp, both in
the station's global time.
"""

from __future__ import annotations

import os
import queue
import random
import threading
import time

from .app import Channel
from .control_server import RequestError, int_arg
from .echo import ping_rounds
from .errors import ChannelError, ChannelFull, ConfigError, RtnetError
from .ipv4 import (
    ETH_P_ARP,
    ETH_P_IPV4,
    arp_reply_sender,
    arp_request,
    echo_frame,
    ip_text,
    parse,
    unicast_ipv4,
)
from .mac import parse_mac
from .neighbours import NeighbourTable, neighbour_mac
from .options import OPTIONS

ECHO_REPLY = 3  # rtn_ip_parse(): RTN_IP_ECHO_REPLY


class Ipv4Service:
    """The address, the table and the ping channel of one station (``station_of()``)."""

    def __init__(self, station_of):
        self._station_of = station_of
        # the table's own lock, not the daemon's: RTcfg's thread calls learn() holding its
        # own, and the daemon's is taken around RTcfg
        self._lock = threading.Lock()
        self.address: str | None = None
        self.table = NeighbourTable()
        self._chan: Channel | None = None
        self._cid: int | None = None
        self._send_lock = threading.Lock()
        self._waiters: dict[int, queue.Queue] = {}
        self._wlock = threading.Lock()
        self._stop = False
        self._thread: threading.Thread | None = None
        self._arp: Channel | None = None
        self._arp_lock = threading.Lock()  # one solicit at a time on the ARP channel

    @property
    def station(self):
        return self._station_of()

    # -- life cycle ----------------------------------------------------------------------
    def start(self, ip: str | None) -> list[int]:
        """Set the configured address and open the ping channel; returns its channel id."""
        if ip:
            self.set_address(ip)
        slot = OPTIONS["ip.icmp_slot"].default
        self._cid, memfd, kickfd = self.station.open_channel(
            ETH_P_IPV4, slot=slot, prio=0, cycles=False, max_size=1514, depth=64
        )
        try:
            self._chan = Channel.attach(memfd, kickfd)
        except BaseException:
            os.close(memfd)
            os.close(kickfd)
            self.station.close_channel(self._cid)
            raise
        self._thread = threading.Thread(target=self._run, name="rtnetd-rtping", daemon=True)
        self._thread.start()
        arp_cid, memfd, kickfd = self.station.open_channel(
            ETH_P_ARP, slot=slot, prio=0, cycles=False, max_size=1514, depth=16
        )
        try:
            self._arp = Channel.attach(memfd, kickfd)
        except BaseException:
            os.close(memfd)
            os.close(kickfd)
            self.station.close_channel(arp_cid)
            raise
        return [self._cid, arp_cid]

    def set_address(self, ip: str) -> None:
        ip = unicast_ipv4(ip, "station address")
        self.station.set_ipv4(ip, icmp_slot=OPTIONS["ip.icmp_slot"].default)
        self.address = ip

    def close(self) -> None:
        self._stop = True
        if self._thread is not None:
            self._thread.join(timeout=2)
            if self._thread.is_alive():
                return  # still inside recv: leave the channel mapped
        if self._chan is not None:
            self._chan.close()
            self._chan = None
        with self._arp_lock:
            if self._arp is not None:
                self._arp.close()
                self._arp = None

    def status(self) -> dict:
        return {
            "address": self.address,
            "neighbours": [{"ip": ip, "mac": mac} for ip, mac in self.table.as_dict().items()],
            **self.station.ip_stats(),
        }

    # -- the neighbour table ---------------------------------------------------------------
    def handlers(self) -> tuple[dict, dict]:
        """(read-only, changing) request handlers."""
        return (
            {"route.list": self.h_list, "route.get": self.h_get},
            {
                "route.add": self.h_add,
                "route.del": self.h_del,
                "route.set": self.h_set,
                "route.solicit": self.h_solicit,
            },
        )

    def _apply(self, entries: dict[str, str]) -> None:
        # the station checks and publishes the whole table, or refuses it and keeps the old one
        try:
            self.station.set_neighbours(entries)
        except RtnetError as exc:
            raise RequestError(exc.strerror or str(exc)) from None
        self.table.replace(entries)

    def learn(self, ip: str, mac: str) -> None:
        """A peer's address from RTcfg: added or updated, a bad one ignored (hostile frames)."""
        with self._lock:
            try:
                new = self.table.merged({ip: mac})
            except ConfigError:
                return
            if new != self.table.as_dict():
                try:
                    self._apply(new)
                except RequestError:
                    pass

    @staticmethod
    def _ip(req) -> str:
        try:
            return unicast_ipv4(req.get("ip"))
        except ConfigError as exc:
            raise RequestError(f"ip: {exc}") from None

    def h_list(self, req, conn):
        return {"routes": [{"ip": ip, "mac": mac} for ip, mac in self.table.as_dict().items()]}

    def h_get(self, req, conn):
        ip = self._ip(req)
        mac = self.table.get(ip)
        if mac is None:
            raise RequestError(f"no route to {ip}")
        return {"ip": ip, "mac": mac}

    def h_add(self, req, conn):
        ip = self._ip(req)
        try:
            mac = neighbour_mac(req.get("mac"))
            with self._lock:
                self._apply(self.table.merged({ip: mac}))
        except ConfigError as exc:
            raise RequestError(str(exc)) from None
        return {}

    def h_del(self, req, conn):
        ip = self._ip(req)
        try:
            with self._lock:
                self._apply(self.table.without(ip))
        except ConfigError as exc:
            raise RequestError(str(exc)) from None
        return {}

    def h_set(self, req, conn):
        routes = req.get("routes")
        if not isinstance(routes, list):
            raise RequestError("routes: a list of {ip, mac}")
        entries: dict[str, str] = {}
        try:
            for i, r in enumerate(routes):
                if not isinstance(r, dict):
                    raise ConfigError(f"route {i}: not an object")
                ip = unicast_ipv4(r.get("ip"))
                if ip in entries:
                    raise ConfigError(f"route {i}: {ip} given twice")
                entries[ip] = neighbour_mac(r.get("mac"))
            with self._lock:
                self._apply(NeighbourTable().merged(entries))
        except ConfigError as exc:
            raise RequestError(str(exc)) from None
        return {}

    def h_solicit(self, req, conn):
        ip = self._ip(req)
        timeout_ms = int_arg(req, "timeout_ms", 1000, 1, 60_000)
        if self.address is None:
            raise RequestError("the station has no IPv4 address (IPADDR or RTcfg)")
        mac = self.solicit(ip, timeout_ms / 1000)
        if mac is None:
            raise RequestError(f"{ip}: no ARP reply within {timeout_ms} ms")
        with self._lock:
            try:
                self._apply(self.table.merged({ip: mac}))
            except ConfigError as exc:
                raise RequestError(str(exc)) from None
        return {"ip": ip, "mac": mac}

    def solicit(self, ip: str, timeout_s: float) -> str | None:
        """Ask for ``ip``'s MAC with an ARP request in the station's slot; the MAC of the
        first reply from ``ip`` (a multicast one refused), or None."""
        station = self.station
        with self._arp_lock:
            if self._arp is None:
                raise RequestError("the ARP channel is closed")
            while self._arp.recv(timeout=0) is not None:
                pass  # replies of an earlier solicit
            station.steer_arp_replies(ip, True)
            try:
                try:
                    self._arp.send_raw(
                        arp_request(bytes.fromhex(station.mac.replace(":", "")), self.address, ip)
                    )
                except ChannelError as exc:
                    raise RequestError(f"ARP channel: {os.strerror(exc.errno)}") from None
                deadline = time.monotonic() + timeout_s
                while (left := deadline - time.monotonic()) > 0:
                    msg = self._arp.recv(timeout=left)
                    if msg is None:
                        break
                    # the channel gives what follows the Ethernet header
                    got = arp_reply_sender(bytes(12) + ETH_P_ARP.to_bytes(2, "big") + msg.payload)
                    if got is not None and got[0] == ip:
                        return got[1]
            finally:
                station.steer_arp_replies(ip, False)
        return None

    # -- rtping ---------------------------------------------------------------------------------
    def _run(self) -> None:
        while not self._stop:
            try:
                msg = self._chan.recv(timeout=0.2)
            except ChannelError:
                return
            if msg is None:
                continue
            frame = bytes(14) + msg.payload  # the parser reads whole frames
            verdict, pkt = parse(frame)
            if verdict != ECHO_REPLY:
                continue
            with self._wlock:
                q = self._waiters.get(pkt.sport)
            if q is not None:
                q.put((pkt.dport, ip_text(pkt.src), msg.rx_ns, pkt.data_len))

    def ping(self, dst: str, count: int, interval_ms: int, size: int, timeout_ms: int, emit):
        """``count`` ICMP echo requests of ``size`` data bytes to ``dst``; ``emit`` gets one
        event per request (as rtnet.echo's)."""
        dst = unicast_ipv4(dst, "destination")
        if self.address is None:
            raise RequestError("the station has no IPv4 address (IPADDR or RTcfg)")
        mac = self.table.get(dst)
        if mac is None:
            raise RequestError(f"{dst}: no route (rtroute add {dst} <mac> dev <dev>)")
        station = self.station
        with self._wlock:
            ident = random.randint(1, 0xFFFF)  # not guessable: replies are steered by it
            while ident in self._waiters:
                ident = random.randint(1, 0xFFFF)
            q = self._waiters[ident] = queue.Queue()
        data = bytes(i & 0xFF for i in range(size))
        sent_ns = 0

        def send(seq):
            nonlocal sent_ns
            n = seq & 0xFFFF
            frame = echo_frame(
                parse_mac(mac), parse_mac(station.mac), self.address, dst, ident, n, data, ip_id=n
            )
            with self._send_lock:
                sent_ns = self._chan.global_now()
                try:
                    self._chan.send_raw(frame)
                except ChannelFull:
                    raise RequestError("ICMP channel full") from None
                except ChannelError as exc:
                    raise RequestError(f"ICMP channel: {os.strerror(exc.errno)}") from None
            return lambda r: r[0] == n and r[3] == size

        station.steer_echo_replies(ident, True)
        try:
            return ping_rounds(
                count, interval_ms, timeout_ms, q, send, lambda r: (r[2] - sent_ns) / 1000, emit
            )
        finally:
            station.steer_echo_replies(ident, False)
            with self._wlock:
                del self._waiters[ident]
