"""rtnetd: the station daemon, one per real-time device (``python3 -m rtnet.daemon -c rtnet.toml``).

It owns a :class:`rtnet.station.Station` (AF_XDP socket, real-time thread,
TDMA or NoMAC, VNIC, application channels) and serves requests on a control
socket.  In the lab one daemon runs in each station's network namespace.

Files (rtnet.paths, per network namespace): ``<dev>.ctl`` the control
socket, ``<dev>.pid`` the PID file, held with an exclusive flock for the
daemon's lifetime, so a second daemon on the same device fails cleanly and a
lock that can be taken means any previous owner is dead: its socket and its
XDP program are then removed before starting (crash recovery).  SIGTERM and
SIGINT stop the station and remove socket and PID file.

Access control: the socket is mode 0600 (root only).  ``[control]
status_group`` makes it 0660 with that group, so its members may send the
read-only requests (status, tdma.show, tdma.misses).  Every request that changes
something or sends traffic (tdma.*, nomac.*, ping, capture, channel.open,
shutdown) needs peer uid 0 or membership (primary or supplementary, as the
kernel recorded it at connect) of ``[control] group``.

Protocol: newline-delimited JSON on a Unix stream socket; a connection may
carry several requests, answered in order.  Each request is one object of
at most 64 KiB with a ``"cmd"`` (``"dev"``, if given, must name this
daemon's device).  Each reply is one line ``{"ok": true, ...}`` or
``{"ok": false, "error": "one-line message"}``; a bad request never ends
the daemon, and a line that is too long also ends the connection after the
error reply.  Connections, time-outs and limits: rtnet.control_server;
sizes shared with the clients: rtnet.control_protocol.

- ``status`` -> ``{"status": {...}}``: Station.stats() made JSON-safe (each
  histogram becomes ``{"summary_us": {...}, "buckets_us": {"<us>": n}}``),
  plus ``"daemon"`` (pid, name, device, config source, uptime_s, channels)
  and ``"tdma_config"`` (TdmaConfig.to_dict() or None).
- ``tdma.master``, ``tdma.slave``, ``tdma.slot``, ``tdma.remove_slot``,
  ``tdma.detach``, ``tdma.show``, ``nomac.attach``, ``nomac.detach``: as
  sent by rtmac (see rtmac.control).  A change is validated as a whole
  (rtmac.tdma_config) before it reaches the station; a refused change leaves
  the running schedule untouched.  ``tdma.master``/``tdma.slave``/
  ``nomac.attach`` need a device without a discipline (detach first, as in
  RTnet).  ``tdma.slot`` with ``cal_results`` waits (``cal_timeout_ms``,
  default 10 s) until calibration is done and replies ``"cal_results":
  [delay_ns]`` (the median delay; the engine keeps it with min/max, not every round).
- ``tdma.misses`` (read-only): ``from`` (a record number, default 0) -> ``"misses"``:
  [{at_ns, woke_late_ns, slots, slot0}], ``"next"``: the RT thread's records of missed
  slot occurrences (rtnet.discipline_service), for putting them next to a stall detector's.
- ``ping`` (rtnet.echo): dst (MAC, or IPv4 address of the peer's device), count,
  interval_ms, size (payload bytes, 44..1500), timeout_ms.  Echo requests go
  through this station's slot 0 on EtherType 0x88B6, the peer daemon's
  echo service answers through its own slot 0.  One line per reply
  ``{"event": "reply", "seq": n, "from": mac, "rtt_us": x}`` (or ``"event":
  "timeout"``), then ``{"ok": true, "sent": n, "received": m, "worst_us":
  x, "rtts_us": [...]}``.  rtt is measured on the real-time path: from the
  moment this station's RT thread sent the request to the moment it
  received the reply (both RT-thread time stamps).  A request to an IPv4
  address is broadcast with the address inside; only the station owning it
  answers, and its MAC is used from then on.
- ``capture``: count (1..10000), duration_ms (max 60000), depth (capture ring
  entries, a power of two, 2..4096, default 1024) -> ``{"frames": n,
  "dropped": d, "pcapng_b64": "..."}``: the frames the station's RT thread
  sent and received while it ran, mirrored by that thread into a capture
  ring it never waits on (rtnet.capture), as pcapng (rtnet.pcapng: the
  first 2048 bytes of each frame, ns CLOCK_REALTIME time stamps of the
  stack's own stamps, direction per packet, the stack stamps in the
  comment).  ``dropped``: frames the ring had no room for.
- ``channel.open``: ethertype, slot, prio, max_size, depth, redundant (a
  bool: on a station with two ports the EtherType goes out on both; defaults
  from the matching ``[[channel]]``; the EtherType must be configured as
  real-time, in station.ethertypes or a ``[[channel]]``) ->
  ``{"ok": true, "channel": id, "shm_size": bytes}`` sent in one sendmsg
  together with two file descriptors as SCM_RIGHTS: the channel's memfd
  (map ``shm_size`` bytes, layout csrc/core/rtn_chan.h) and the kick eventfd.
  The channel belongs to the connection: when the client closes it (or
  dies) the daemon closes the channel.  ``channel.close`` (channel) closes
  one of the connection's channels earlier.  With ``udp_port`` (and
  ``stamped``) instead of an EtherType: a real-time UDP socket bound to that
  port (rtnet.app.UdpSocket; the station needs its IPv4 address); ``share``
  (1 SO_REUSEADDR, 2 SO_REUSEPORT) lets other sockets of the client's user
  that set the same share the port, as Linux does.
- ``route.list``, ``route.get``, ``route.add``, ``route.del``, ``route.set``,
  ``route.solicit``:
  the neighbour table, as sent by rtroute (rtnet.ipv4_service); ``ping`` to an
  IPv4 address is ICMP echo (RTnet's rtping) unless ``echo`` asks for the
  echo service above; ``status`` has the address, the table and the IPv4
  counters under ``"ipv4"``.
- ``rtcfg.server``, ``rtcfg.add``, ``rtcfg.del``, ``rtcfg.wait``,
  ``rtcfg.client``, ``rtcfg.announce``, ``rtcfg.ready``, ``rtcfg.detach``: as
  sent by rtcfg (rtnet.rtcfg.cli), served by rtnet.rtcfg.service on the
  daemon's own 0x9022 channel (applications cannot open one).  The blocking
  ones wait in their connection's thread only.  A client's payload is checked
  whole (rtnet.rtcfg.apply) and applied through the ``tdma.*`` handlers
  above; ``status`` carries the server's or client's state under ``"rtcfg"``.
  ``rtcfg.commands`` (commands: a command list, rtnetctl up's STAGE_2_CMDS) is
  checked and applied the same way.  A VNIC whose slot the schedule lacks yet
  (an RTcfg slave starts without slots) is opened when a payload first sets
  its address, once the slots before it in the payload carry it.
- ``shutdown``: replies, then stops the daemon like SIGTERM.
"""

from __future__ import annotations

import argparse
import fcntl
import grp
import ipaddress
import logging
import os
import signal
import socket
import struct
import sys
import threading
import time
from dataclasses import replace

from rtmac.tdma_config import TdmaConfig, effective_slot

from . import config as _config
from . import configfile, nicqueues, paths, procs
from ._lowlevel import last_error, lib
from .argtypes import interface_name
from .capture_service import CaptureService
from .channel_service import ChannelService
from .control_server import Command, ControlServer, RequestError, group_policy, int_arg
from .discipline_service import DisciplineService
from .echo import EchoService
from .errors import ConfigError, RtcfgError, RtnetError
from .hist import Histogram
from .ipv4_service import Ipv4Service
from .linkwatch import LinkWatch
from .mac import parse_mac as mac_bytes
from .rtcfg import apply as rtcfg_apply
from .rtcfg import payload as rtcfg_payload
from .rtcfg.service import RtcfgService
from .station import Station
from .vnic_setup import open_vnic

log = logging.getLogger("rtnetd")


class StartError(Exception):
    """The daemon cannot start; the message is its one-line error."""


# -- helpers ---------------------------------------------------------------------------------


def read_pid(path: str) -> int | None:
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def json_safe(obj):
    """Histograms -> summaries plus non-zero buckets; dict keys -> str."""
    if isinstance(obj, Histogram):
        return {
            "summary_us": obj.summary_us(),
            "buckets_us": {str(k): v for k, v in obj.nonzero_bins_us().items()},
        }
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    return obj


def interface_ipv4(dev: str) -> set[str]:
    siocgifaddr = 0x8915
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            res = fcntl.ioctl(s.fileno(), siocgifaddr, struct.pack("256s", dev.encode()[:15]))
        except OSError:
            return set()
    return {socket.inet_ntoa(res[20:24])}


# -- the daemon ------------------------------------------------------------------------------


class Daemon:
    def __init__(self, cfg: _config.StationConfig):
        self.cfg = cfg
        self.dev = cfg.device
        self.sock_path = paths.control_socket(self.dev)
        self.pid_path = paths.pid_file(self.dev)
        self.station: Station | None = None
        self.echo: EchoService | None = None
        self.ips: set[str] = set()  # the station's IPv4 addresses (echo, RTcfg)
        self.tap = None  # vnic.tap.Tap while the VNIC is attached
        self.control: ControlServer | None = None
        self._pid_fd: int | None = None
        # serialises changes (Python only); re-entrant: an RTcfg payload is checked and
        # applied under it, through the same handlers as the requests
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._started = time.monotonic()
        self.queues = nicqueues.PortQueues(
            (self.dev, cfg.redundant_dev), paths.queue_record(self.dev)
        )
        self.linkwatch: LinkWatch | None = None
        self.port_gone: str | None = None  # the port that went away, which stopped rtnetd
        self._chan_ids: set[int] = set()
        self._rtcfg_ip: str | None = None  # the IP of the RTcfg payload being applied
        self.ipv4 = Ipv4Service(lambda: self.station)
        self.capture = CaptureService(lambda: self.station, self.dev, self._stop)
        self.disciplines = DisciplineService(
            lambda: self.station, self.dev, cfg.link_rate_mbps, self._lock, self._stop
        )
        self.channels = ChannelService(lambda: self.station, cfg, self._lock, self._chan_ids)
        self.rtcfg = RtcfgService(
            lambda: self.station,
            self.dev,
            self._rtcfg_apply,
            self._own_ip,
            self._nrt_mtu,
            self._stop,
        )
        self.rtcfg.on_peer = self.ipv4.learn  # peers' IP and MAC fill the table
        self.admin_gid = self._gid(cfg.group, "control.group")
        self.status_gid = self._gid(cfg.status_group, "control.status_group")

    def _gid(self, name, key):
        if name is None:
            return None
        try:
            return grp.getgrnam(name).gr_gid
        except KeyError:
            raise StartError(f"{self.cfg.source}: {key}: group {name!r} does not exist") from None

    # -- start-up / shut-down ----------------------------------------------------------------
    def acquire(self) -> None:
        """Take the device: PID file lock, then clean what a dead daemon left."""
        os.makedirs(os.path.dirname(self.pid_path), mode=0o755, exist_ok=True)
        fd = os.open(self.pid_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        deadline = time.monotonic() + 5.0
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                other = read_pid(self.pid_path)
                # A killed daemon keeps the lock until its last thread has exited
                # (its main thread already shows as a zombie): wait for that.
                if other is None or procs.running(other) or time.monotonic() > deadline:
                    os.close(fd)
                    raise StartError(
                        f"{self.dev}: rtnetd already running (pid {other}, {self.pid_path})"
                    ) from None
                time.sleep(0.05)
        self._pid_fd = fd
        stale = read_pid(self.pid_path)
        if stale is not None and stale != os.getpid():
            log.warning(
                "%s: cleaning up after rtnetd %d that did not stop cleanly", self.dev, stale
            )
        if os.path.exists(self.sock_path):
            os.unlink(self.sock_path)
        self.queues.recover()
        for dev in (self.dev, self.cfg.redundant_dev):  # the second port's too
            if dev and lib.rtn_xdp_attached(dev.encode()) > 0:
                rc = lib.rtn_xdp_detach(dev.encode())
                if rc < 0:
                    raise StartError(last_error())
                log.warning("%s: removed %d XDP program(s) left on the device", dev, rc)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)

    def start(self) -> None:
        cfg = self.cfg
        self.acquire()
        try:  # each port's NIC to the one receive queue its socket binds
            self.queues.take()
        except OSError as exc:
            raise StartError(exc.strerror) from None
        try:
            self.station = Station(
                cfg.device,
                mac=cfg.mac,
                xdp_mode=cfg.xdp_mode,
                zerocopy=cfg.zerocopy,
                ethertypes=cfg.steered_ethertypes(),
                rt=cfg.rt,
                clock_offset_ns=cfg.clock_offset_ns,
                drift_ppm=cfg.drift_ppm,
                link_rate_mbps=cfg.link_rate_mbps,
                redundant_dev=cfg.redundant_dev,
                frer_history_len=cfg.frer_history_len,
                frer_reset_ms=cfg.frer_reset_ms,
            )
        except (RtnetError, ConfigError) as exc:
            raise StartError(
                exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            ) from None
        st = self.station
        try:
            self.linkwatch = LinkWatch(
                {d: socket.if_nametoindex(d) for d in (self.dev, cfg.redundant_dev) if d},
                self._port_went_away,
            )
            if cfg.discipline == "tdma":
                st.attach_tdma(cfg.tdma)
            elif cfg.discipline == "nomac":
                st.attach_nomac()
            # the real-time address and its echo answer before the first Sync goes out: a
            # slave that synchronises may ping at once (RTnet configures the interface's
            # address before tdmacfg starts the master)
            self.ips = interface_ipv4(self.dev) | ({cfg.ip} if cfg.ip else set())
            self.echo = EchoService(st, self.ips)
            self._chan_ids.add(self.echo.cid)
            self._chan_ids.update(self.ipv4.start(cfg.ip))
            st.start()
            self.queues.check_attached()
            if cfg.vnic.enabled and self._vnic_slot_ready(cfg.tdma):
                self._open_vnic()
            elif cfg.vnic.enabled:
                log.info("%s: %s waits for its slot (from RTcfg)", self.dev, cfg.vnic.name)
        except (RtnetError, ConfigError, OSError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise StartError(f"{self.dev}: {why}") from None
        try:
            listener = self._listen()
        except OSError as exc:
            raise StartError(f"{self.sock_path}: {exc.strerror or exc}") from None
        self.control = self.control_server(listener)

    def _listen(self) -> socket.socket:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        old = os.umask(0o177)
        try:
            s.bind(self.sock_path)
        finally:
            os.umask(old)
        if self.status_gid is not None:
            os.chown(self.sock_path, 0, self.status_gid)
            os.chmod(self.sock_path, 0o660)
        else:
            os.chmod(self.sock_path, 0o600)
        s.listen(16)
        return s

    def close(self) -> None:
        if self.linkwatch is not None:
            self.linkwatch.close()
            self.linkwatch = None
        if self.control is not None:
            try:
                os.unlink(self.sock_path)
            except FileNotFoundError:
                pass
            self.control.close()  # ends the connections; they release their channels
            self.control = None
        self.rtcfg.close()  # before the station: it holds a channel
        self.ipv4.close()  # so does rtping
        if self.echo is not None:
            self.echo.close()
            self.echo = None
        if self.station is not None:
            self.station.close()
            self.station = None
        if self.tap is not None:
            self.tap.close()
            self.tap = None
        self.queues.restore()
        if self._pid_fd is not None:
            try:
                os.unlink(self.pid_path)
            except FileNotFoundError:
                pass
            os.close(self._pid_fd)
            self._pid_fd = None

    def _port_went_away(self, dev: str) -> None:
        """The link watch saw ``dev`` go: the station stops, as it would on SIGTERM (its
        XDP program and socket went with the device; the rest is taken down in order)."""
        log.error(
            "%s: the device went away (deleted, unplugged or moved to another namespace); "
            "rtnetd stops",
            dev,
        )
        self.port_gone = dev
        self.request_stop()

    def request_stop(self, *_):
        self._stop.set()
        if self.control is not None:
            self.control.stop()

    def serve(self) -> None:
        if not self._stop.is_set():
            self.control.serve()

    # -- the control socket --------------------------------------------------------------------
    def control_server(self, listener: socket.socket) -> ControlServer:
        """The control protocol on ``listener``, with this daemon's commands and groups."""
        group = f" or group {self.cfg.group}" if self.cfg.group else ""
        return ControlServer(
            listener,
            self._commands(),
            privileged=group_policy(self.admin_gid),
            who=f"root{group}",
            check_request=self._check_dev,
        )

    def _commands(self) -> dict[str, Command]:
        ip_read, ip_changes = self.ipv4.handlers()
        disc_read, disc_changes = self.disciplines.handlers()
        read_only = {"status": self.h_status, **disc_read, **ip_read}
        changes = {
            **disc_changes,
            "ping": self.h_ping,
            "capture": self.capture.handle,
            **self.channels.handlers(),
            "shutdown": self.h_shutdown,
            **self.rtcfg.handlers(),
            **ip_changes,
        }
        return {
            **{cmd: Command(h, read_only=True) for cmd, h in read_only.items()},
            **{cmd: Command(h) for cmd, h in changes.items()},
        }

    def _check_dev(self, req: dict) -> None:
        dev = req.get("dev", self.dev)
        if dev != self.dev:
            raise RequestError(f"this daemon runs {self.dev}, not {dev!r}")

    # -- request handlers -------------------------------------------------------------------
    def h_status(self, req, conn):
        with self._lock:
            stats = self.station.stats()
            tdma_cfg = self.station.tdma_config
            chans = [self.station.channel_stats(c) for c in sorted(self._chan_ids)]
        stats = json_safe(stats)
        stats["channels"] = chans
        stats["daemon"] = {
            "pid": os.getpid(),
            "name": self.cfg.name,
            "device": self.dev,
            "config": self.cfg.source,
            "uptime_s": round(time.monotonic() - self._started, 3),
            "channels": len(self._chan_ids),
            **self.queues.status(),
            # what an application may open a channel for (rtnet-run's rules)
            "ethertypes": [
                et for et in self.cfg.steered_ethertypes() if et != _config.PING_ETHERTYPE
            ],
        }
        stats["tdma_config"] = tdma_cfg.to_dict() if tdma_cfg else None
        stats["rtcfg"] = self.rtcfg.status()  # outside self._lock: RTcfg applies under it
        stats["ipv4"] = self.ipv4.status()
        return {"status": stats}

    def h_ping(self, req, conn):
        dst = req.get("dst")
        if not isinstance(dst, str):
            raise RequestError("dst: a MAC or IPv4 address")
        try:
            if ":" in dst:
                mac_bytes(dst)
            else:
                socket.inet_aton(dst)
        except (OSError, ValueError, ConfigError):
            raise RequestError(f"dst: {dst!r} is not a MAC or IPv4 address") from None
        count = int_arg(req, "count", 4, 1, 100_000)
        interval = int_arg(req, "interval_ms", 1000, 1, 60_000)
        size = int_arg(req, "size", 56, 0, 1500)
        timeout = int_arg(req, "timeout_ms", 500, 1, 60_000)
        echo = req.get("echo", False)
        if not isinstance(echo, bool):
            raise RequestError(f"echo: {echo!r} is not true or false")
        if ":" not in dst and not echo and self.ipv4.address is not None:
            # RTnet's rtping: ICMP echo, size counts the echo data (at most 1472 bytes);
            # a station without a real-time address has only the echo service
            if size > 1472:
                raise RequestError(f"size: {size} outside 0..1472")
            return self.ipv4.ping(dst, count, interval, size, timeout, emit=conn.send)
        return self.echo.ping(dst, count, interval, size, timeout, emit=conn.send)

    # -- RTcfg: what a client's payload may do (rtnet.rtcfg.apply) --------------------------
    def _own_ip(self) -> str | None:
        return min(self.ips) if self.ips else None

    def _nrt_mtu(self) -> int:
        """The MTU of the slot RTcfg frames travel in: slot 1, else 0, under TDMA."""
        cfg = self.station.tdma_config
        slot = effective_slot(cfg, 1) if cfg is not None else None
        return min(slot.size, 1500) if slot is not None else 1500

    def _rtcfg_apply(self, stage: int, requests: list, info: dict) -> None:
        """A client's stage-1 or stage-2 payload: checked whole, then applied (RtcfgError)."""
        _read, disc = self.disciplines.handlers()
        handlers = {
            **{cmd: h for cmd, h in disc.items() if cmd.startswith("tdma.")},
            "vnic.address": self._vnic_address,
            "vnic.up": self._vnic_up,
            "station.ip": self._station_ip,
        }
        with self._lock:
            view = rtcfg_apply.StationView(
                self.station.discipline,
                self.station.tdma_config,
                self.tap is not None,
                info.get("ip"),
                self.disciplines.master_config,
                self.disciplines.slave_config,
                vnic_slot=self.cfg.vnic.slot if self.cfg.vnic.enabled else None,
            )
            rtcfg_apply.check(requests, view)
            self._rtcfg_ip = info.get("ip")  # station.ip may change it on the way
            try:
                rtcfg_apply.run(
                    requests, {c: (lambda r, h=h: h(r, None)) for c, h in handlers.items()}
                )
            except (RequestError, RtnetError, ConfigError, OSError) as exc:
                # checked as a whole above: only the system can refuse here
                message = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
                raise RtcfgError(f"applying: {message}") from None
            self._rtcfg_real_time_ip()

    def _rtcfg_real_time_ip(self) -> None:
        """The address RTcfg's stage 1 gave (its frame or a station.ip line) is the station's
        real-time one from now on; one that cannot be is a log line, not a failed stage."""
        ip = self._rtcfg_ip
        if not ip or ip == self.ipv4.address:
            return
        try:
            self.ipv4.set_address(ip)
        except (ConfigError, RtnetError) as exc:
            log.warning(
                "%s: RTcfg address %s not taken as the real-time one: %s",
                self.dev,
                ip,
                exc.strerror if isinstance(exc, OSError) and exc.strerror else exc,
            )

    def _vnic_slot_ready(self, tdma: TdmaConfig | None) -> bool:
        """Whether the schedule carries the VNIC: an RTcfg slave gets its slot later."""
        return self.cfg.discipline != "tdma" or (
            tdma is not None and effective_slot(tdma, self.cfg.vnic.slot) is not None
        )

    def _open_vnic(self) -> None:
        """The TAP, sized for the slot the running schedule gives it."""
        cfg = self.cfg
        if self.station.tdma_config is not None:
            cfg = replace(cfg, tdma=self.station.tdma_config)
        self.tap = open_vnic(cfg, self.station.mac)
        self.station.attach_vnic(self.tap.fd, cfg.vnic.mode, cfg.vnic.slot)

    def _vnic_address(self, req, conn=None):
        if self.tap is None:
            self._open_vnic()
        self.tap.set_address(req["cidr"])

    def _vnic_up(self, req, conn=None):
        ip = ipaddress.IPv4Address(self._rtcfg_ip)  # RTnet's ifconfig vnic0 up $IPADDR
        self._vnic_address({"cidr": f"{ip}/{rtcfg_payload.classful_prefix(ip)}"})

    def _station_ip(self, req, conn=None):
        self.ips.add(req["ip"])
        self._rtcfg_ip = req["ip"]  # the real-time address too, once applied
        if self.echo is not None:
            self.echo.own_ips.add(socket.inet_aton(req["ip"]))

    def h_shutdown(self, req, conn):
        self.request_stop()
        return {}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="rtnetd", description="rtnet-xdp station daemon")
    p.add_argument("-c", "--config", required=True, help="rtnet.toml or rtnet.conf")
    p.add_argument("--dev", help="real-time device (overrides the configuration)")
    p.add_argument(
        "--rtcfg",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="read the configuration for a segment brought up with RTcfg "
        "(default: rtnet.conf yes, rtnet.toml as [rtcfg] enabled says)",
    )
    p.add_argument(
        "--redundant-dev",
        type=interface_name,
        help="second device for IEEE 802.1CB redundancy (overrides link.redundant_dev)",
    )
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="rtnetd: %(message)s",
        stream=sys.stderr,
    )
    try:
        cfg = configfile.load(args.config, rtcfg=args.rtcfg)
        if args.dev:
            cfg = _config.with_overrides(cfg, device=args.dev)
        if args.redundant_dev:
            cfg = _config.with_overrides(cfg, redundant_dev=args.redundant_dev)
        daemon = Daemon(cfg)
    except (ConfigError, StartError) as exc:
        print(f"rtnetd: {exc}", file=sys.stderr, flush=True)
        return 1
    signal.signal(signal.SIGTERM, daemon.request_stop)
    signal.signal(signal.SIGINT, daemon.request_stop)
    try:
        daemon.start()
    except StartError as exc:
        daemon.close()
        print(f"rtnetd: {exc}", file=sys.stderr, flush=True)
        return 1
    log.info(
        "%s: running (pid %d, %s, control %s)",
        cfg.device,
        os.getpid(),
        cfg.discipline,
        daemon.sock_path,
    )
    print("rtnetd: ready", file=sys.stderr, flush=True)
    try:
        daemon.serve()
    finally:
        daemon.close()
    if daemon.port_gone:
        print(f"rtnetd: {daemon.port_gone}: the device went away; stopped", file=sys.stderr)
        return 1
    log.info("%s: stopped", cfg.device)
    return 0


if __name__ == "__main__":
    sys.exit(main())
