"""The daemon's echo service (``rtnetctl ping``): echo requests and replies through the slots.

The service is an application channel on :data:`PING_ETHERTYPE`
in slot 0, used through the same client as applications
(:class:`rtnet.app.Channel`, csrc/app/rtn_app.c); only the descriptors come
straight from :meth:`rtnet.station.Station.open_channel` instead of the
control socket.  Each frame is a channel message (struct rtn_app_hdr: magic,
seq, sched_ns, tx_ns) whose payload starts with::

    type (1 = request, 2 = reply), 3 pad bytes, target IPv4,
    the request's tx_ns (in a reply), ident

all big-endian.  A request to an IPv4 address goes to the broadcast MAC with
the address as target, and only the station owning it answers; a request to
a MAC has target 0.0.0.0.  A reply goes to the requester with the request's
sequence number (rtn_app_reply()), the requester's transmit stamp and its
ident, so the requester pairs it with its request and measures the round
trip between its own station's transmit and receive stamps.
"""

from __future__ import annotations

import os
import queue
import socket
import struct
import threading
import time

from ._lowlevel import lib
from .app import Channel, Message
from .control_server import RequestError
from .errors import ChannelError, ChannelFull
from .mac import format_mac, parse_mac
from .station import Station

PING_ETHERTYPE = 0x88B6  # the daemons' echo service (rtnetctl ping); real-time on every station

ECHO_REQUEST, ECHO_REPLY = 1, 2
ECHO = struct.Struct(">B3x4sqI")  # type, target IPv4, request tx_ns, ident
APP_HDR = lib.RTN_APP_OVERHEAD - lib.RTN_APP_ETH_HLEN  # the application header, before ECHO
BROADCAST = "ff:ff:ff:ff:ff:ff"
NO_TARGET = b"\0" * 4


def wait_reply(q: queue.Queue, deadline: float, match):
    """The first reply on ``q`` that ``match`` accepts before ``deadline`` (monotonic s), or
    None; late replies to earlier requests are skipped.  One wait for every ping."""
    while True:
        try:
            r = q.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return None
        if match(r):
            return r


def ping_rounds(
    count: int, interval_ms: int, timeout_ms: int, q: queue.Queue, send, on_reply, emit
):
    """``count`` requests, ``interval_ms`` apart, each answered on ``q`` within
    ``timeout_ms`` or counted lost; the summary every ping returns.  ``send(seq)`` sends
    request ``seq`` (from 1) and returns what its reply matches (as wait_reply's
    ``match``); ``on_reply(reply)`` gives that reply's round trip in us, ``reply[1]`` is
    who answered; ``emit`` gets one event per request.  One loop for every ping."""
    rtts = []
    for seq in range(1, count + 1):
        t0 = time.monotonic()
        got = wait_reply(q, t0 + timeout_ms / 1000, send(seq))
        if got is None:
            emit({"event": "timeout", "seq": seq})
        else:
            rtt_us = on_reply(got)
            rtts.append(rtt_us)
            emit({"event": "reply", "seq": seq, "from": got[1], "rtt_us": rtt_us})
        if seq < count:
            time.sleep(max(0.0, t0 + interval_ms / 1000 - time.monotonic()))
    return {
        "sent": count,
        "received": len(rtts),
        "rtts_us": rtts,
        "worst_us": max(rtts) if rtts else None,
    }


class EchoService:
    """A channel on PING_ETHERTYPE: answers echo requests, hands replies to waiting pings."""

    def __init__(self, station: Station, own_ips: set[str]):
        self.own_ips = {socket.inet_aton(ip) for ip in own_ips}
        self.cid, memfd, kickfd = station.open_channel(
            PING_ETHERTYPE, slot=0, prio=15, cycles=False, max_size=1514, depth=64
        )
        try:
            self.chan = Channel.attach(memfd, kickfd)  # owns both descriptors from here on
        except BaseException:
            os.close(memfd)
            os.close(kickfd)
            station.close_channel(self.cid)
            raise
        # one sender at a time on the TX ring: pings on the control threads, replies here
        self._send_lock = threading.Lock()
        self._waiters: dict[int, queue.Queue] = {}
        self._lock = threading.Lock()
        self._ident = os.getpid() << 8
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="rtnetd-echo", daemon=True)
        self._thread.start()

    def _send(self, send, *args):
        """``send(*args)`` on the channel; a refusal is one RequestError line."""
        with self._send_lock:
            try:
                return send(*args)
            except ChannelFull:
                raise RequestError("echo channel full") from None
            except ChannelError as exc:
                raise RequestError(f"echo channel: {os.strerror(exc.errno)}") from None

    def _run(self) -> None:
        while not self._stop:
            try:
                msg = self.chan.recv(timeout=0.2)
            except ChannelError:
                return  # the station closed the channel
            if msg is not None:
                self._handle(msg)

    def _handle(self, msg: Message) -> None:
        if len(msg.payload) < ECHO.size:
            return
        kind, target, orig_tx, ident = ECHO.unpack_from(msg.payload)
        if kind == ECHO_REQUEST:
            if msg.dst == BROADCAST and target not in self.own_ips:
                return
            reply = bytearray(msg.payload)
            ECHO.pack_into(reply, 0, ECHO_REPLY, target, msg.tx_ns, ident)
            try:
                self._send(self.chan.reply, msg, bytes(reply))
            except RequestError:
                pass  # full ring: the requester sees a timeout, as with a lost frame
        elif kind == ECHO_REPLY:
            with self._lock:
                q = self._waiters.get(ident)
            if q is not None:
                q.put((msg.seq, msg.src, msg.rx_ns - orig_tx))

    def ping(self, dst: str, count: int, interval_ms: int, size: int, timeout_ms: int, emit):
        """``count`` requests to ``dst`` (a MAC or an IPv4 address), ``size`` bytes after the
        Ethernet header (at least the headers); ``emit`` gets one event per request."""
        if ":" in dst:
            dst_mac, target = format_mac(parse_mac(dst)), NO_TARGET
        else:
            dst_mac, target = BROADCAST, socket.inet_aton(dst)
        with self._lock:
            self._ident += 1
            ident = self._ident & 0xFFFFFFFF
            q = self._waiters[ident] = queue.Queue()
        payload = bytearray(max(ECHO.size, size - APP_HDR))
        ECHO.pack_into(payload, 0, ECHO_REQUEST, target, 0, ident)

        def send(_seq):
            sent = self._send(self.chan.send, dst_mac, bytes(payload))
            return lambda r: r[0] == sent

        def on_reply(r):
            nonlocal dst_mac
            if dst_mac == BROADCAST:  # asked by address: the next requests go to who answered
                dst_mac = r[1]
            return r[2] / 1000

        try:
            return ping_rounds(count, interval_ms, timeout_ms, q, send, on_reply, emit)
        finally:
            with self._lock:
                del self._waiters[ident]

    def close(self) -> None:
        self._stop = True
        self._thread.join(timeout=2)
        if self._thread.is_alive():
            return  # still inside recv: leave the channel mapped rather than unmap under it
        self.chan.close()
