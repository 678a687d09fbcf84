"""rtnetd's RTcfg service: the ``rtcfg.*`` requests, a server or a client on the device.

The protocol lives in the pure machines (server.py, client.py); this module
gives them what they need from the daemon:

- a channel on EtherType 0x9022 (Station.open_channel with cycles=False,
  used through rtnet.app.Channel), in the NRT slot 1 at priority 30 as
  RTnet sends them (slot 1 falls back to slot 0); frames go out whole
  (Channel.send_raw) and come in as the bytes after the Ethernet header;
- one thread that receives and runs the timers: the server's tick every
  ``period_ms``, the client's every CLIENT_TICK_MS (heartbeats);
- one condition: every event and every command runs under it and wakes the
  blocking commands (wait, ready, client, announce), which wait in their own
  control connection's thread, so no other client of the daemon waits.

A refused frame is counted (``refused``; a heartbeat from a station the
server holds for dead also as ``dead_heartbeats``) and logged at most once
per LOG_INTERVAL_S for each kind.  A stage-1 or stage-2 payload refused while
``rtcfg client`` or ``announce`` waits fails that command with its message.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Callable

from rtnet.app import Channel
from rtnet.control_server import RequestError, int_arg
from rtnet.errors import ChannelError, ChannelFull, RtcfgError

from . import frames as fr
from . import payload
from .client import Client, ClientConfig, ClientState
from .server import Server, ServerConfig
from .step import (
    DEFAULT_BURSTRATE,
    DEFAULT_HEARTBEAT_MS,
    DEFAULT_MAX_STATIONS,
    DEFAULT_PERIOD_MS,
    DEFAULT_THRESHOLD,
    MAX_HEARTBEAT_MS,
    MAX_PERIOD_MS,
    Step,
)

log = logging.getLogger("rtnetd")

SLOT, PRIO = 1, 30  # RTnet's RTcfg frames: the NRT slot, low priority
CHANNEL_DEPTH = 64
CLIENT_TICK_MS = 100
LOG_INTERVAL_S = 10.0
STAGE_1_HEAD = 5 + 8  # Stage 1 Config without its data, with both IPv4 addresses
MAX_TIMEOUT_MS = 24 * 3_600_000
STOP_POLL_S = 0.5  # a blocking command looks at the daemon's stop this often
ETH_HLEN = 14

ApplyFn = Callable[[int, list, dict], None]


class RateLimitedLog:
    """One line per ``key`` at most every ``interval`` s; the lines held back are counted
    into the next one."""

    def __init__(self, interval: float = LOG_INTERVAL_S, clock=time.monotonic):
        self.interval, self.clock = interval, clock
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def warning(self, key: str, message: str) -> bool:
        now = self.clock()
        last = self._last.get(key)
        if last is not None and now - last < self.interval:
            self._held[key] = self._held.get(key, 0) + 1
            return False
        held = self._held.pop(key, 0)
        self._last[key] = now
        log.warning("%s%s", message, f" ({held} more since the last one)" if held else "")
        return True


def _timeout(req: dict) -> float | None:
    """The request's timeout_ms as seconds (None: 0, wait forever)."""
    ms = int_arg(req, "timeout_ms", 0, 0, MAX_TIMEOUT_MS)
    return ms / 1000 if ms else None


def _flag(req: dict, key: str) -> bool:
    value = req.get(key, False)
    if not isinstance(value, bool):
        raise RequestError(f"{key}: {value!r} is not true or false"[:120])
    return value


def _text(req: dict, key: str, required: bool = True) -> str | None:
    value = req.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value or len(value) > 100:
        raise RequestError(f"{key}: {value!r} is not an address"[:120])
    return value


class RtcfgService:
    """The RTcfg server or client of one station (at most one of them at a time).

    ``station_of()`` gives the daemon's Station (asked when a machine
    starts); ``apply`` applies a client's payload (all or nothing, raising
    RtcfgError); ``own_ip()`` gives the station's IPv4 address or None;
    ``nrt_mtu()`` the MTU of the slot the frames travel in.
    """

    def __init__(
        self,
        station_of: Callable,
        dev: str,
        apply: ApplyFn,
        own_ip: Callable[[], str | None],
        nrt_mtu: Callable[[], int],
        stopping: threading.Event,
    ):
        self._station_of, self.dev, self._apply = station_of, dev, apply
        self._own_ip, self._nrt_mtu, self._stopping = own_ip, nrt_mtu, stopping
        self._cond = threading.Condition()
        self.server: Server | None = None
        self.client: Client | None = None
        self._chan: Channel | None = None
        self._cid: int | None = None
        self._thread: threading.Thread | None = None
        self._generation = 0  # of the current machine's thread
        self._next_tick = 0
        self._refusal: str | None = None  # a payload refused while a command waits
        self._log = RateLimitedLog()
        self.counters = {
            "rx": 0,
            "tx": 0,
            "tx_full": 0,
            "refused": 0,
            "dead_heartbeats": 0,
            "errors": 0,
        }
        self.on_peer: Callable[[str, str], None] | None = None  # a peer's (IP, MAC) learnt

    @property
    def station(self):
        return self._station_of()

    # -- requests ----------------------------------------------------------------------
    def handlers(self) -> dict[str, Callable]:
        return {
            "rtcfg.server": self.h_server,
            "rtcfg.add": self.h_add,
            "rtcfg.del": self.h_del,
            "rtcfg.wait": self.h_wait,
            "rtcfg.client": self.h_client,
            "rtcfg.announce": self.h_announce,
            "rtcfg.ready": self.h_ready,
            "rtcfg.detach": self.h_detach,
            "rtcfg.commands": self.h_commands,
        }

    def h_server(self, req, conn=None) -> dict:
        config = ServerConfig(
            period_ms=int_arg(req, "period_ms", DEFAULT_PERIOD_MS, 1, MAX_PERIOD_MS),
            burstrate=int_arg(req, "burstrate", DEFAULT_BURSTRATE, 1, 255),
            heartbeat_ms=int_arg(req, "heartbeat_ms", DEFAULT_HEARTBEAT_MS, 0, MAX_HEARTBEAT_MS),
            threshold=int_arg(req, "threshold", DEFAULT_THRESHOLD, 1, 255),
            ready=_flag(req, "ready"),
            mtu=self._mtu(),
        )
        with self._cond:
            self._require_idle()
            server = Server(self.station.mac, self._own_ip(), config)
            self._start()
            self.server = server
        return {}

    def h_add(self, req, conn=None) -> dict:
        address, hw = _text(req, "address"), _text(req, "hw", required=False)
        timeout_ms = int_arg(req, "timeout_ms", 0, 0, MAX_TIMEOUT_MS)
        stage1 = self._stage(req, "stage1", 1, fr.MAX_STAGE1_LEN)
        stage2 = self._stage(req, "stage2", 2, payload.MAX_STAGE2_LEN)
        with self._cond:
            server = self._need_server()
            mtu = self._mtu()
            if STAGE_1_HEAD + len(stage1) > mtu:
                raise RequestError(
                    f"add: stage 1 of {len(stage1)} bytes does not fit the "
                    f"{mtu}-byte MTU of the NRT slot (at most "
                    f"{mtu - STAGE_1_HEAD})"
                )
            server.add(address, hw=hw, stage1=stage1, stage2=stage2, timeout_ms=timeout_ms)
        return {}

    def h_del(self, req, conn=None) -> dict:
        address = _text(req, "address")
        with self._cond:
            self._need_server().remove(address)
        return {}

    def h_wait(self, req, conn=None) -> dict:
        timeout = _timeout(req)
        with self._cond:
            server = self._need_server()
            self._wait(lambda: server.all_configured, timeout, "wait")
        return {}

    def h_ready(self, req, conn=None) -> dict:
        timeout = _timeout(req)
        with self._cond:
            now = time.monotonic_ns()
            if self.server is not None:
                server = self.server
                self._send(server.ready(now))
                self._wait(lambda: server.all_ready, timeout, "ready")
            elif self.client is not None:
                client = self.client
                self._send(client.ready(now))
                self._wait(lambda: client.barrier_done, timeout, "ready")
            else:
                raise RequestError(
                    "ready: no RTcfg server or client (run rtcfg server or rtcfg client first)"
                )
        return {}

    def h_client(self, req, conn=None) -> dict:
        timeout = _timeout(req)
        config = ClientConfig(
            max_stations=int_arg(req, "max_stations", DEFAULT_MAX_STATIONS, 1, 255)
        )
        with self._cond:
            self._require_idle()
            client = Client(
                self.dev, self.station.mac, self._apply_reporting, self._own_ip(), config
            )
            self._start()
            self.client, self._refusal = client, None
            self._send(client.start(time.monotonic_ns()))
            try:
                self._wait(lambda: client.state != ClientState.WAIT_STAGE_1, timeout, "client")
            except RequestError:
                self._stop_locked()  # a later rtcfg client starts afresh
                raise
            return {"config": client.stage1_data.decode("ascii", "replace")}

    def h_announce(self, req, conn=None) -> dict:
        timeout = _timeout(req)
        burstrate = int_arg(req, "burstrate", DEFAULT_BURSTRATE, 1, 255)
        ready = _flag(req, "ready")
        with self._cond:
            client = self.client
            if client is None:
                raise RequestError("announce: no RTcfg client (run rtcfg client first)")
            config = ClientConfig(
                max_stations=client.config.max_stations,
                burstrate=burstrate,
                ready_in_announce=ready,
            )
            self._refusal = None
            self._send(client.announce(time.monotonic_ns(), config))
            self._wait(lambda: client.announce_done, timeout, "announce")
            data = client.stage2.data if client.stage2 else b""
            return {"config": data.decode("ascii", "replace")}

    def h_detach(self, req, conn=None) -> dict:
        with self._cond:
            if self.server is None and self.client is None:
                raise RequestError("detach: no RTcfg server or client")
            self._stop_locked()
        return {}

    def h_commands(self, req, conn=None) -> dict:
        """A command list given after stage 2 (``STAGE_2_CMDS``): parsed and applied as a
        whole, as a payload from the server is."""
        text = req.get("commands")
        if not isinstance(text, str) or len(text) > payload.MAX_STAGE2_LEN:
            raise RequestError(f"commands: a text of at most {payload.MAX_STAGE2_LEN} bytes")
        try:
            requests = payload.parse(text, self.dev)
        except RtcfgError as exc:
            raise RequestError(f"commands: {exc.strerror}") from None
        with self._cond:
            ip = self.client.ip if self.client is not None else self._own_ip()
        try:
            self._apply(2, requests, {"ip": ip})
        except RtcfgError as exc:
            raise RequestError(f"commands refused: {exc.strerror}") from None
        return {}

    def status(self) -> dict | None:
        with self._cond:
            machine = self.server or self.client
            if machine is None:
                return None
            return {**machine.status(time.monotonic_ns()), "counters": dict(self.counters)}

    def close(self) -> None:
        with self._cond:
            self._stop_locked()

    # -- helpers for the requests ------------------------------------------------------
    def _mtu(self) -> int:
        try:
            return self._nrt_mtu()
        except (ValueError, OSError) as exc:
            raise RequestError(f"RTcfg: {exc}") from None

    def _stage(self, req: dict, key: str, stage: int, limit: int) -> bytes:
        """A stage file from the request: checked here again (it came from a socket)."""
        text = req.get(key)
        if text is None:
            return b""
        if not isinstance(text, str):
            raise RequestError(f"{key}: not a text")
        data = text.encode("utf-8", "surrogatepass")
        if len(data) > limit:
            raise RequestError(f"stage {stage}: {len(data)} bytes (at most {limit})")
        try:
            payload.parse(data, self.dev)
        except RtcfgError as exc:
            raise RequestError(f"stage {stage}: {exc.strerror}") from None
        return data

    def _require_idle(self) -> None:
        if self.server is not None or self.client is not None:
            what = "server" if self.server is not None else "client"
            raise RequestError(f"RTcfg {what} already running on {self.dev} (rtcfg detach first)")

    def _need_server(self) -> Server:
        if self.server is None:
            raise RequestError("no RTcfg server (run rtcfg server first)")
        return self.server

    def _wait(self, done: Callable[[], bool], timeout: float | None, what: str) -> None:
        """Under the condition: until ``done()``, a refused payload, the end of the machine or
        of the daemon, or ``timeout`` s."""
        machine = self.server or self.client
        deadline = None if timeout is None else time.monotonic() + timeout
        while not done():
            if self._refusal is not None and machine is self.client:
                message, self._refusal = self._refusal, None
                raise RequestError(f"{what}: {message}")
            if (self.server or self.client) is not machine:
                raise RequestError(f"{what}: RTcfg was detached")
            if self._stopping.is_set():
                raise RequestError(f"{what}: rtnetd is stopping")
            left = STOP_POLL_S if deadline is None else deadline - time.monotonic()
            if left <= 0:
                raise RequestError(f"{what}: timed out after {timeout * 1000:.0f} ms")
            self._cond.wait(min(left, STOP_POLL_S))

    def _apply_reporting(self, stage: int, requests: list, info: dict) -> None:
        """The client's apply: a refusal also fails the command that waits for it."""
        try:
            self._apply(stage, requests, info)
        except RtcfgError as exc:
            raise RtcfgError(
                f"RTcfg stage {stage} from {info.get('server_mac')} refused: {exc.strerror}"
            ) from None

    # -- the channel and its thread ----------------------------------------------------
    def _start(self) -> None:
        """Open the channel and start a thread for a new machine (under the condition); the
        caller makes the machine current only once this succeeded."""
        cid, memfd, kickfd = self.station.open_channel(
            fr.ETH_RTCFG,
            slot=SLOT,
            prio=PRIO,
            max_size=ETH_HLEN + 1500,
            depth=CHANNEL_DEPTH,
            cycles=False,
        )
        try:
            chan = Channel.attach(memfd, kickfd)  # owns both descriptors from here on
        except BaseException:
            os.close(memfd)
            os.close(kickfd)
            self.station.close_channel(cid)
            raise
        self._chan, self._cid, self._next_tick = chan, cid, 0
        self._generation += 1
        self._thread = threading.Thread(
            target=self._run, args=(chan, self._generation), name="rtnetd-rtcfg", daemon=True
        )
        self._thread.start()

    def _stop_locked(self) -> None:
        """Forget the machine, end its thread, close its channel (under the condition)."""
        self.server = self.client = None
        self._generation += 1  # the thread ends at its next look
        self._cond.notify_all()
        thread, chan, cid = self._thread, self._chan, self._cid
        self._thread = self._chan = self._cid = None
        if thread is not None and thread is not threading.current_thread():
            self._cond.release()  # the thread takes the condition for each event
            try:
                thread.join(timeout=2)
            finally:
                self._cond.acquire()
            if thread.is_alive():
                return  # still inside recv: keep the channel mapped
        if chan is not None:
            chan.close()
            try:
                self.station.close_channel(cid)
            except OSError as exc:
                log.warning("%s: closing the RTcfg channel: %s", self.dev, exc)

    def _period_ns(self) -> int:
        """The server's period; a client's tick, short enough for its heartbeats."""
        if self.server is not None:
            return self.server.config.period_ms * 1_000_000
        ms = CLIENT_TICK_MS
        stage2 = self.client.stage2 if self.client is not None else None
        if stage2 is not None and stage2.heartbeat_ms:
            ms = min(ms, max(1, stage2.heartbeat_ms // 2))
        return ms * 1_000_000

    def _run(self, chan: Channel, generation: int) -> None:
        while True:
            with self._cond:
                if generation != self._generation or self._stopping.is_set():
                    return
                now = time.monotonic_ns()
                if now >= self._next_tick:
                    self._guarded(self._tick, now)
                wait_s = max(0.0, (self._next_tick - now) / 1e9)
            try:
                msg = chan.recv(timeout=min(wait_s, STOP_POLL_S))
            except ChannelError as exc:
                log.warning("%s: RTcfg channel: %s", self.dev, exc)
                return  # the station closed the channel
            if msg is not None:
                with self._cond:
                    if generation == self._generation:
                        self._guarded(self._receive, msg, time.monotonic_ns())
                    self._cond.notify_all()

    def _guarded(self, call, *args) -> None:
        """``call(*args)``; a fault of ours is one log line, never the end of the service."""
        try:
            call(*args)
        except Exception as exc:
            self.counters["errors"] += 1
            self._log.warning(
                "error", f"{self.dev}: RTcfg internal error: {type(exc).__name__}: {exc}"
            )

    def _tick(self, now: int) -> None:
        self._next_tick = now + self._period_ns()  # first: a failing tick must not spin
        machine = self.server or self.client
        if machine is not None:
            self._send(machine.timer(now))
        self._cond.notify_all()

    def _receive(self, msg, now: int) -> None:
        self.counters["rx"] += 1
        body = msg.payload
        try:
            if self.server is not None:
                step = self.server.receive(msg.src, body, now)
            elif self.client is not None:
                step = self.client.receive(msg.src, msg.dst, body, now)
            else:
                return
        except RtcfgError as exc:
            self._refused(body, exc)
            return
        self._send(step)
        self._learn_peers()

    def _learn_peers(self) -> None:
        """Hand on_peer the stations whose IP and MAC the machine knows (the static
        neighbour table of the real-time IPv4 path: RTnet's RTcfg fills it too)."""
        machine = self.server or self.client
        if self.on_peer is None or machine is None:
            return
        for st in machine.status().get("stations", []):
            if st.get("ip") and st.get("mac"):
                self.on_peer(st["ip"], st["mac"])

    def _refused(self, body: bytes, exc: RtcfgError) -> None:
        self.counters["refused"] += 1
        message = exc.strerror
        if (
            self.server is not None
            and body[:1] == bytes([fr.FrameId.HEARTBEAT])
            and message.endswith("state dead")
        ):
            self.counters["dead_heartbeats"] += 1
            self._log.warning("heartbeat", f"{self.dev}: {message}")
            return
        if self.client is not None and message.startswith(("RTcfg stage 1 ", "RTcfg stage 2 ")):
            self._refusal = message
        self._log.warning("refused", f"{self.dev}: {message}")

    def _send(self, step: Step) -> None:
        """The frames of ``step`` (under the condition: one sender on the TX ring)."""
        if self._chan is None:
            return
        for tx in step.tx:
            try:
                self._chan.send_raw(tx.wire(self.station.mac))
                self.counters["tx"] += 1
            except ChannelFull:
                self.counters["tx_full"] += 1  # the protocol sends it again
            except ChannelError as exc:
                self._log.warning("send", f"{self.dev}: RTcfg send: {exc.strerror or exc}")
        for change in step.changes:
            log.info("%s: RTcfg %s: %s -> %s", self.dev, change.who, change.old, change.new)
