"""rtnetd's application channels: channel.open (an EtherType's channel, or a UDP socket's),
channel.close and a UDP socket's multicast joins (ipv4.join).

A channel belongs to the control connection that opened it: the connection holds it, and
it is closed when the client closes it or dies; so is a joined group given back.  The
daemon's own channels (echo, IPv4) are opened by the daemon and share ``chan_ids``.
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import os

from . import config as _config
from ._lowlevel import lib
from .control_server import RequestError, WithFds, int_arg
from .errors import RtnetError
from .options import OPTIONS

log = logging.getLogger("rtnetd")


CHANNEL_ARGS = ("slot", "prio", "max_size", "depth", "lifetime_us")


def channel_args(req: dict, base) -> dict:
    """A channel.open request's CHANNEL_ARGS: the ``[[channel]]`` ``base``'s or the
    table's defaults, in the table's ranges (a request may give a frame up to the C core's
    largest, RTN_CHAN_MSG_MAX, beyond what a file gives a channel)."""
    out = {}
    for k in CHANNEL_ARGS:
        opt = OPTIONS[f"channel.{k}"]
        hi = lib.RTN_CHAN_MSG_MAX if k == "max_size" else opt.hi
        out[k] = int_arg(req, k, getattr(base, k, opt.default) if base else opt.default, opt.lo, hi)
    return out


class ChannelService:
    """The channel requests of one daemon: ``station_of()`` is its station (None before
    start and after close), ``lock`` the daemon's change lock, ``chan_ids`` the set of
    its open channels (its status counts them)."""

    def __init__(self, station_of, cfg: _config.StationConfig, lock, chan_ids: set[int]):
        self._station = station_of
        self.cfg = cfg
        self.dev = cfg.device
        self._lock = lock
        self.chan_ids = chan_ids

    def handlers(self) -> dict:
        return {
            "channel.open": self.h_channel_open,
            "channel.close": self.h_channel_close,
            "ipv4.join": self.h_ipv4_join,
        }

    def h_channel_open(self, req, conn):
        if "udp_port" in req:
            return self._open_udp_channel(req, conn)
        et = req.get("ethertype")
        if isinstance(et, bool) or not isinstance(et, int):
            raise RequestError(f"ethertype: {et!r} is not an integer")
        if et == 0x0806:
            raise RequestError("ethertype 0x0806 is ARP: the daemon's (rtroute solicit)")
        if et == _config.PING_ETHERTYPE:
            raise RequestError(f"ethertype {et:#06x} is the daemon's echo service")
        if et in _config.STACK_ETHERTYPES:
            raise RequestError(
                f"ethertype {et:#06x} is {_config.STACK_ETHERTYPES[et]}, "
                "served by the daemon itself"
            )
        if et not in self.cfg.steered_ethertypes():
            raise RequestError(
                f"ethertype {et:#06x} is not real-time on {self.dev} "
                "(add a [[channel]] or station.ethertypes entry)"
            )
        base = next((c for c in self.cfg.channels if c.ethertype == et), None)
        args = channel_args(req, base)
        redundant = req.get("redundant", base.redundant if base else False)
        if not isinstance(redundant, bool):
            raise RequestError(f"redundant: {redundant!r} is not true or false")
        with self._lock:
            cid, memfd, kickfd = self._station().open_channel(et, redundant=redundant, **args)
            self.chan_ids.add(cid)
        return self._hand_over(cid, memfd, kickfd, conn)

    def _open_udp_channel(self, req, conn):
        """A UDP socket: a channel bound to ``udp_port`` (``stamped``: RTNX in its datagrams;
        ``share``: RTN_UDP_SHARE_* bits, its port shared with the sockets of the client's
        user)."""
        port = int_arg(req, "udp_port", 0, 1, 0xFFFF)
        share = int_arg(req, "share", 0, 0, lib.RTN_UDP_SHARE_ADDR | lib.RTN_UDP_SHARE_PORT)
        stamped = req.get("stamped", False)
        if not isinstance(stamped, bool):
            raise RequestError(f"stamped: {stamped!r} is not true or false")
        args = channel_args(req, None)
        with self._lock:
            cid, memfd, kickfd = self._station().open_channel(
                lib.RTN_ETH_P_IPV4,
                **args,
                udp_port=port,
                stamped=stamped,
                udp_share=share,
                # Linux asks SO_REUSEPORT's sockets to be one user's (SO_REUSEADDR's
                # nothing); here both are, so no other user's socket takes a datagram
                udp_owner=(conn.peer.uid + 1) & 0xFFFFFFFF,  # (uid_t)-1, no user: 0
            )
            self.chan_ids.add(cid)
        return self._hand_over(cid, memfd, kickfd, conn)

    def _hand_over(self, cid, memfd, kickfd, conn):
        # the channel belongs to the connection: closed when the client closes it or dies
        conn.hold(cid, lambda: self._close_channel(cid))
        notifyfd = -1
        try:
            size = os.fstat(memfd).st_size
            notifyfd = self._station().channel_notifyfd(cid)
        except (OSError, RtnetError):
            os.close(memfd)
            os.close(kickfd)
            raise
        # the third descriptor lets the reader wait for its ring in poll/epoll (rtn_chan.h)
        return WithFds({"channel": cid, "shm_size": size}, (memfd, kickfd, notifyfd))

    def h_ipv4_join(self, req, conn):
        """A UDP socket's IP_ADD_MEMBERSHIP / IP_DROP_MEMBERSHIP (``join``: true / false):
        the group is the station's while a connection holds it (rtnet-run's sockets)."""
        group, join = req.get("group"), req.get("join", True)
        if not isinstance(join, bool):
            raise RequestError(f"join: {join!r} is not true or false")
        try:
            if not isinstance(group, str) or not ipaddress.IPv4Address(group).is_multicast:
                raise ValueError
        except ValueError:
            raise RtnetError(
                errno.EADDRNOTAVAIL, f"group: {group!r} is not an IPv4 multicast address"
            ) from None
        key = ("ipv4.group", group)
        if not join:
            if not conn.let_go(key):
                raise RtnetError(errno.EADDRNOTAVAIL, f"{group} is not joined here")
            return {}
        if conn.holds(key):
            raise RtnetError(errno.EADDRINUSE, f"{group} is joined here already")
        with self._lock:
            self._station().ipv4_group(group, True)
        conn.hold(key, lambda: self._leave_group(group))
        return {}

    def _leave_group(self, group: str) -> None:
        with self._lock:
            if self._station() is not None:
                self._station().ipv4_group(group, False)

    def h_channel_close(self, req, conn):
        cid = req.get("channel")
        if isinstance(cid, bool) or not isinstance(cid, int) or not conn.let_go(cid):
            raise RequestError(f"channel {cid!r} is not open on this connection")
        return {}

    def _close_channel(self, cid: int) -> None:
        with self._lock:
            if self._station() is not None:
                try:
                    self.chan_ids.discard(cid)
                    self._station().close_channel(cid)
                except RtnetError as exc:
                    log.warning("closing channel %d: %s", cid, exc)
