"""A station: AF_XDP socket, real-time thread, discipline, channels and VNIC (csrc/station/rtn_station.c).

>>> with Station("rteth0", netns="rtn-lab-s1", mac="02:52:54:00:00:01") as st:  # doctest: +SKIP
...     st.attach_tdma(TdmaConfig(role="master", cycle_us=1000, slots={0: Slot(0, 0)}))
...     st.start()
...     st.stats()["tdma"]["state"]
'active'
"""

from __future__ import annotations

import errno
import fcntl
import logging
import socket
import struct
from dataclasses import dataclass

from . import netns as _netns
from . import stages
from ._lowlevel import check, ffi, lib
from .capture import CapturedFrame
from .closeable import Closeable
from .errors import ConfigError, RtnetError
from .hist import Histogram
from .mac import format_mac, parse_mac
from .names import interface_name_problem
from .options import OPTIONS
from .rtthread import fill_rt_opts
from .tdma_stats import SlotMiss, stats_from_c
from .xsk import MODE_NAMES, STAMP_PLACES, fill_xsk_opts, validate_ethertypes

log = logging.getLogger("rtnet.station")

DISCIPLINES = {lib.RTN_DISC_NONE: "none", lib.RTN_DISC_TDMA: "tdma", lib.RTN_DISC_NOMAC: "nomac"}
# the C code of each of the option table's VNIC modes (vnic.mode's choices)
# station.zerocopy's words (rtnet.config.ZEROCOPY_MODES) as rtnet.xsk.fill_xsk_opts takes them
ZEROCOPY_ARGS = {"auto": "auto", "on": True, "off": False}


def zerocopy_arg(zerocopy: str):
    if zerocopy not in ZEROCOPY_ARGS:
        raise ConfigError(f"zerocopy {zerocopy!r} is not one of {', '.join(ZEROCOPY_ARGS)}")
    return ZEROCOPY_ARGS[zerocopy]


VNIC_MODES = dict(
    zip(OPTIONS["vnic.mode"].choices, (lib.RTN_VNIC_BATCHED, lib.RTN_VNIC_PER_PACKET), strict=True)
)
UMEM_FRAMES = 4096  # frames of RTN_XSK_FRAME_SIZE bytes, all locked in memory
STATUS_LATE_RECORDS = 16  # the newest over-deadline records stats() shows


@dataclass(frozen=True)
class RtSettings:
    """Real-time thread settings (cpu None: not pinned)."""

    cpu: int | None = OPTIONS["rt.cpu"].default
    priority: int = OPTIONS["rt.priority"].default
    allow_fallback: bool = OPTIONS["rt.allow_fallback"].default
    hold_dma_latency: bool = True
    wake_early: bool = OPTIONS["rt.wake_early"].default


def interface_mac(ifname: str, netns: str | None) -> str:
    """MAC of ``ifname`` in ``netns`` (sysfs shows the mounting namespace, so ask the kernel)."""
    siocgifhwaddr = 0x8927
    with _netns.entered(netns), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            res = fcntl.ioctl(
                sock.fileno(), siocgifhwaddr, struct.pack("256s", ifname.encode()[:15])
            )
        except OSError:
            raise RtnetError(errno.ENODEV, f"{ifname}: no such interface") from None
    return format_mac(res[18:24])


def _fill_second_port(
    opts,
    ifname: str,
    redundant_dev: str | None,
    queue: int,
    ethertypes,
    xdp_mode: str,
    zerocopy,
    history_len: int,
    reset_ms: int,
) -> list:
    """The second port of ``opts`` (IEEE 802.1CB, rtn_station_frer.h): the same socket
    settings on ``redundant_dev``; returns the cdata to keep alive."""
    opts.frer_history = OPTIONS["link.frer_history_len"].check(history_len)
    opts.frer_reset_ms = OPTIONS["link.frer_reset_ms"].check(reset_ms)
    if redundant_dev is None:
        return []
    problem = interface_name_problem(redundant_dev)
    if problem or redundant_dev == ifname:
        raise ConfigError(f"second device {redundant_dev!r}: {problem or 'the first port already'}")
    return fill_xsk_opts(
        opts.xsk_b,
        redundant_dev,
        queue=queue,
        extra=validate_ethertypes(ethertypes),
        mode=xdp_mode,
        frames=UMEM_FRAMES,
        zerocopy=zerocopy,
    )


def frer_stats(s) -> dict:
    """The two-port counters of station ``s`` (struct rtn_station *): per port, and the
    802.1CB counters of every received stream, per port and in total."""
    st = ffi.new("struct rtn_station_frer_stats *")
    lib.rtn_station_frer_stats(s, st)
    port_keys = ("rx_frames", "rx_tagged", "rx_untagged", "bad_tags", "tx_copies", "tx_errors")
    counter_keys = ("passed", "discarded", "out_of_order", "rogue", "tagless")
    out = {
        "ports": st.ports,
        "history_len": st.history_len,
        "reset_ms": st.reset_ms,
        "streams_refused": st.streams_refused,
        "tx_redundant": st.tx_redundant,
        "port": [{k: getattr(st.port[i], k) for k in port_keys} for i in range(st.ports)],
        "streams": [],
    }
    xs = ffi.new("struct rtn_xsk_stats *")
    for i in range(st.ports):
        if lib.rtn_station_port_xsk_stats(s, i, xs) == 0:
            out["port"][i].update(
                xsk_rx=xs.rx_frames, xsk_tx=xs.tx_frames, xsk_tx_ring_full=xs.tx_ring_full
            )
    one = ffi.new("struct rtn_station_frer_stream *")
    for i in range(st.streams):
        if lib.rtn_station_frer_stream(s, i, one):
            break
        out["streams"].append(
            {
                "src": format_mac(bytes(one.src)),
                "ethertype": one.ethertype,
                "lost": one.lost,
                "resets": one.resets,
                "total": {k: getattr(one.total, k) for k in counter_keys},
                "port": [
                    {k: getattr(one.port[p], k) for k in counter_keys}
                    for p in range(lib.RTN_STATION_PORTS)
                ],
            }
        )
    return out


class Station(Closeable):
    """One station on ``ifname``; the real-time thread runs between start() and close()."""

    def __init__(
        self,
        ifname: str,
        *,
        netns: str | None = None,
        mac: str | None = None,
        queue: int = 0,
        xdp_mode: str = "auto",
        zerocopy: str = "auto",
        ethertypes=(),
        rt: RtSettings = RtSettings(),
        clock_offset_ns: int = OPTIONS["clock.offset_ns"].default,
        drift_ppm: float = OPTIONS["clock.drift_ppm"].default,
        link_rate_mbps: int = OPTIONS["link.link_rate_mbps"].default,
        redundant_dev: str | None = None,
        frer_history_len: int = OPTIONS["link.frer_history_len"].default,
        frer_reset_ms: int = OPTIONS["link.frer_reset_ms"].default,
    ):
        if netns is not None and not _netns.exists(netns):
            raise ConfigError(f"network namespace {netns!r} does not exist")
        OPTIONS["clock.offset_ns"].check(clock_offset_ns)  # the lab clock model's ranges
        OPTIONS["clock.drift_ppm"].check(drift_ppm)
        self.ifname = ifname
        self.netns = netns
        self.mac = mac or interface_mac(ifname, netns)
        opts = ffi.new("struct rtn_station_opts *")
        self._keep = fill_xsk_opts(
            opts.xsk,
            ifname,
            queue=queue,
            extra=validate_ethertypes(ethertypes),
            mode=xdp_mode,
            frames=UMEM_FRAMES,
            zerocopy=zerocopy_arg(zerocopy),
        )
        fill_rt_opts(
            ffi.addressof(opts, "rt"),
            cpu=rt.cpu,
            priority=rt.priority,
            allow_fallback=rt.allow_fallback,
            hold_dma_latency=rt.hold_dma_latency,
        )
        opts.mac = parse_mac(self.mac)
        opts.clock_offset_ns = clock_offset_ns
        opts.drift_ppm = drift_ppm
        opts.link_rate_mbps = link_rate_mbps
        opts.wake_early = int(bool(rt.wake_early))
        self.redundant_dev = redundant_dev
        self._keep += _fill_second_port(
            opts,
            ifname,
            redundant_dev,
            queue,
            ethertypes,
            xdp_mode,
            zerocopy_arg(zerocopy),
            frer_history_len,
            frer_reset_ms,
        )
        out = ffi.new("struct rtn_station **")
        with _netns.entered(netns):
            check(lib.rtn_station_open(opts, out), RtnetError, ifname)
        self._s = out[0]
        self.tdma_config = None  # the TdmaConfig attached last
        self.xdp_mode = MODE_NAMES[lib.rtn_station_xdp_mode(self._s)]
        self.xdp_fallback = ffi.string(lib.rtn_station_xdp_fallback(self._s)).decode() or None
        if self.xdp_fallback:
            log.warning("%s: XDP in SKB mode, not native: %s", ifname, self.xdp_fallback)

    def _live(self):
        if self._s is None:
            raise RtnetError(errno.EBADF, f"{self.ifname}: station is closed")
        return self._s

    # -- life cycle ---------------------------------------------------------------
    def start(self) -> "Station":
        s = self._live()
        if not lib.rtn_station_running(s):
            check(lib.rtn_station_start(s), RtnetError, self.ifname)
        return self

    @property
    def running(self) -> bool:
        return self._s is not None and bool(lib.rtn_station_running(self._s))

    def close(self) -> None:
        """Stop the RT thread and release socket, XDP program, channels and VNIC.  Idempotent."""
        if self._s is not None:
            with _netns.entered(self.netns if self.netns and _netns.exists(self.netns) else None):
                lib.rtn_station_close(self._s)
            self._s = None

    # -- disciplines ------------------------------------------------------------------
    def attach_tdma(self, config) -> None:
        """Attach TDMA with ``config`` (an rtmac.tdma_config.TdmaConfig, which validates
        and converts itself), or hand the change to the running engine when it can stage
        it without a restart (rtn_tdma_cfg_live(): all but the role and the grid)."""
        s = self._live()
        running = self.discipline == "tdma" and self.tdma_config is not None
        learned = self.stats()["tdma"]["cycle_ns"] // 1000 if running else 0
        config = config.validated(learned_cycle_us=learned or None)
        new = config.to_c()
        if running and lib.rtn_tdma_cfg_live(self.tdma_config.to_c(), new):
            check(lib.rtn_station_tdma_update(s, new), RtnetError, self.ifname)
        else:
            check(lib.rtn_station_attach_tdma(s, new), RtnetError, self.ifname)
        self.tdma_config = config

    def attach_nomac(self) -> None:
        check(lib.rtn_station_attach_nomac(self._live()), RtnetError, self.ifname)
        self.tdma_config = None

    def detach(self) -> None:
        check(lib.rtn_station_detach(self._live()), RtnetError, self.ifname)
        self.tdma_config = None

    @property
    def discipline(self) -> str:
        st = ffi.new("struct rtn_station_stats *")
        lib.rtn_station_stats(self._live(), st)
        return DISCIPLINES.get(st.discipline, "none")

    # -- channels and VNIC -----------------------------------------------------------
    def open_channel(
        self,
        ethertype: int,
        *,
        slot: int = OPTIONS["channel.slot"].default,
        prio: int = OPTIONS["channel.prio"].default,
        max_size: int = OPTIONS["channel.max_size"].default,
        depth: int = OPTIONS["channel.depth"].default,
        lifetime_us: int = OPTIONS["channel.lifetime_us"].default,
        cycles: bool = True,
        redundant: bool = False,
        udp_port: int = 0,
        stamped: bool = False,
        udp_share: int = 0,
        udp_owner: int = 0,
    ) -> tuple[int, int, int]:
        """Open an application channel: returns (id, memfd, kickfd); the caller owns the fds.

        ``cycles=False``: nobody waits on it for cycle starts, so it lets the engine
        start each cycle at its first job (one wake-up a cycle less for a slave).
        ``lifetime_us``: a message not on the wire by its scheduled time (its hand-over
        for one sent "now") plus this is dropped and counted (0: never).
        ``redundant=True``: on a station with two ports, every frame of the channel's
        EtherType goes out on both, with an IEEE 802.1CB R-TAG.
        ``udp_port``: a UDP socket bound to that port (``ethertype`` is then IPv4's),
        ``stamped`` with the RTNX header in its datagrams (rtn_app.h), sharing its port
        with owner ``udp_owner``'s other sockets (not 0) as ``udp_share`` says
        (RTN_UDP_SHARE_ADDR, RTN_UDP_SHARE_PORT: Linux's SO_REUSEADDR and SO_REUSEPORT)."""
        o = ffi.new("struct rtn_chan_opts *")
        lib.rtn_chan_opts_init(o)
        o.ethertype, o.slot, o.prio, o.max_size, o.depth = ethertype, slot, prio, max_size, depth
        o.lifetime_ns = lifetime_us * 1000
        o.no_cycles = not cycles
        o.redundant = bool(redundant)
        o.udp_port = udp_port
        o.udp_flags = lib.RTN_UDP_F_STAMPED if stamped else 0
        o.udp_share, o.udp_owner = udp_share, udp_owner
        memfd, kickfd = ffi.new("int *"), ffi.new("int *")
        cid = check(
            lib.rtn_station_chan_open(self._live(), o, memfd, kickfd), RtnetError, self.ifname
        )
        return cid, memfd[0], kickfd[0]

    def ipv4_group(self, group: str, on: bool) -> None:
        """Join (``on``) or leave multicast ``group`` for the station's UDP sockets (joins
        are counted; rtn_station_ip.h)."""
        addr = struct.unpack(">I", socket.inet_aton(group))[0]
        check(lib.rtn_station_ipv4_group(self._live(), addr, bool(on)), RtnetError, self.ifname)

    def channel_notifyfd(self, cid: int) -> int:
        """A new descriptor (the caller's) of channel ``cid``'s notify eventfd: the station
        writes it when a delivery finds the reader armed, so the ring can be polled."""
        return check(lib.rtn_station_chan_notifyfd(self._live(), cid), RtnetError, self.ifname)

    # -- real-time IPv4 (csrc/station/rtn_station_ip.c) ----------------------------------------------
    def set_ipv4(self, ip: str | None, *, icmp_slot: int = 0, icmp_prio: int = 0) -> None:
        """The station's real-time IPv4 address (None: none), from which the XDP program
        steers, UDP sockets send and echo requests are answered (in ``icmp_slot``)."""
        addr = struct.unpack(">I", socket.inet_aton(ip))[0] if ip else 0
        check(
            lib.rtn_station_set_ipv4(self._live(), addr, icmp_slot, icmp_prio),
            RtnetError,
            self.ifname,
        )

    def set_neighbours(self, table: dict[str, str]) -> None:
        """Replace the neighbour table ({IPv4: MAC}) that UDP sockets read, all at once."""
        entries = ffi.new("struct rtn_neigh[]", max(1, len(table)))
        for i, (ip, mac) in enumerate(sorted(table.items())):
            entries[i].ip = struct.unpack(">I", socket.inet_aton(ip))[0]
            entries[i].mac = parse_mac(mac)
        check(lib.rtn_station_neigh_set(self._live(), entries, len(table)), RtnetError, self.ifname)

    def steer_echo_replies(self, ident: int, on: bool) -> None:
        """Take the ICMP echo replies of identifier ``ident`` from Linux (a ping of ours)."""
        check(lib.rtn_station_icmp_id(self._live(), ident, int(on)), RtnetError, self.ifname)

    def steer_arp_replies(self, ip: str, on: bool) -> None:
        """Take ARP replies from ``ip`` from Linux (rtroute solicit in progress)."""
        addr = struct.unpack(">I", socket.inet_aton(ip))[0]
        check(lib.rtn_station_arp_solicit(self._live(), addr, int(on)), RtnetError, self.ifname)

    def ip_stats(self) -> dict:
        """The IPv4 counters; ``bad`` by reason (rtnet.ipv4.BAD_REASONS)."""
        from .ipv4 import BAD_REASONS

        st = ffi.new("struct rtn_ip_stats *")
        lib.rtn_station_ip_stats(self._live(), st)
        out = {
            k: getattr(st, k)
            for k in (
                "rx_udp",
                "rx_echo_request",
                "rx_echo_reply",
                "tx_echo_reply",
                "echo_reply_drops",
                "tx_refused",
                "rx_fragments",
                "rx_reassembled",
            )
        }
        out["bad"] = {name: st.bad[n] for n, name in BAD_REASONS.items()}
        return out

    def close_channel(self, cid: int) -> None:
        check(lib.rtn_station_chan_close(self._live(), cid), RtnetError, self.ifname)

    def channel_stats(self, cid: int) -> dict:
        st = ffi.new("struct rtn_chan_stats *")
        check(lib.rtn_station_chan_stats(self._live(), cid, st), RtnetError, self.ifname)
        return {"lifetime_us": st.lifetime_ns // 1000} | {
            k: getattr(st, k)
            for k in (
                "id",
                "ethertype",
                "slot",
                "tx_msgs",
                "tx_drops",
                "tx_expired",
                "rx_msgs",
                "rx_drops",
                "ring_errors",
                "rx_bad_hdr",
                "rx_notifies",
            )
        }

    def set_stages(self, outlier_us: float | None = None, deadline_us: float | None = None) -> None:
        """Thresholds of the stage statistics of received application messages (None: keep)."""
        check(
            lib.rtn_station_set_stages(
                self._live(), *stages.check_thresholds(outlier_us, deadline_us)
            ),
            RtnetError,
            self.ifname,
        )

    def stages(self, late: int | None = None) -> dict:
        """Stage statistics of received application messages, through this RT thread's stamp."""
        return stages.summary(self._stages_ptr(), late=late)

    def late_reader(self, start_now: bool = False) -> stages.LateReader:
        return stages.LateReader(self._stages_ptr(), start_now)

    def _stages_ptr(self):
        return ffi.cast("struct rtn_stages *", lib.rtn_station_stages(self._live()))

    def attach_vnic(
        self,
        tap_fd: int,
        mode: str = OPTIONS["vnic.mode"].default,
        slot: int = OPTIONS["vnic.slot"].default,
    ) -> None:
        mode = OPTIONS["vnic.mode"].check_type(mode, "VNIC mode")
        check(
            lib.rtn_station_vnic_attach(self._live(), tap_fd, VNIC_MODES[mode], slot),
            RtnetError,
            self.ifname,
        )

    def detach_vnic(self) -> None:
        """Stop the VNIC's pump and close its TAP descriptor; the frames the pump was lent go
        back to the socket, written or not.  Nothing happens without a VNIC."""
        check(lib.rtn_station_vnic_detach(self._live()), RtnetError, self.ifname)

    def set_probe(self, slot: int | None, *, ethertype: int = 0x88B5, length: int = 64) -> None:
        """Benchmark traffic: one frame per occurrence of ``slot``, made on the RT thread (None: off)."""
        check(
            lib.rtn_station_set_probe(
                self._live(), -1 if slot is None else slot, ethertype, length
            ),
            RtnetError,
            self.ifname,
        )

    def generate(
        self,
        rate_pps: int,
        count: int,
        *,
        ethertype: int = 0x88B5,
        length: int = 64,
        backlog_ns: int = 0,
        dst: str | None = None,
    ) -> None:
        """NoMAC only: send ``count`` probe frames at ``rate_pps`` from the RT thread (RFC 2544).
        A frame that finds the FIFO full waits up to ``backlog_ns`` behind its schedule
        for room (0: dropped at once), with its scheduled time as its send time.  The
        frames go to ``dst`` (a MAC address), or to broadcast."""
        raw = ffi.new("uint8_t[6]", parse_mac(dst)) if dst is not None else ffi.NULL
        check(
            lib.rtn_station_set_rate_probe(
                self._live(), ethertype, length, rate_pps, count, backlog_ns, raw
            ),
            RtnetError,
            self.ifname,
        )

    def count_probes(self, ethertype: int = 0x88B5) -> None:
        """Count received probe frames of ``ethertype`` and their one-way latency."""
        lib.rtn_station_set_probe_rx(self._live(), ethertype)

    def probe_rx(self) -> dict:
        s = self._live()
        frames, nbytes, left = ffi.new("uint64_t *"), ffi.new("uint64_t *"), ffi.new("uint64_t *")
        lib.rtn_station_probe_rx(s, frames, nbytes, left)
        return {
            "frames": frames[0],
            "bytes": nbytes[0],
            "generator_left": left[0],
            "sent": lib.rtn_station_probe_sent(s),
            "latency": Histogram.from_c(lib.rtn_station_probe_latency(s)),
        }

    def slot_misses(self, first: int = 0) -> tuple[list[SlotMiss], int]:
        """TDMA slot occurrences missed, one record per RT wake-up that found some, from
        record number ``first`` on (the newest RTN_MISS_RECS are kept); and the number to
        pass next time."""
        buf = ffi.new("struct rtn_miss_rec[]", lib.RTN_MISS_RECS)
        nxt = ffi.new("uint64_t *")
        n = lib.rtn_station_misses(self._live(), first, buf, lib.RTN_MISS_RECS, nxt)
        return [SlotMiss.from_c(buf[i]) for i in range(n)], int(nxt[0])

    def slot0_lateness(self, first: int = 0) -> tuple[list[tuple[int, int]], int]:
        """(when, lateness) in ns of every slot 0 occurrence that sent, from record number
        ``first`` on (the newest RTN_LATE_RECS are kept); and the number to pass next."""
        buf = ffi.new("struct rtn_late_rec[]", lib.RTN_LATE_RECS)
        nxt = ffi.new("uint64_t *")
        n = lib.rtn_station_slot0_lateness(self._live(), first, buf, lib.RTN_LATE_RECS, nxt)
        return [(int(buf[i].at_ns), int(buf[i].late_ns)) for i in range(n)], int(nxt[0])

    # -- capture inside the stack (rtnet.capture) ---------------------------------------
    def capture_start(self, *, snaplen: int = 2048, depth: int = 1024) -> None:
        """From now on the RT thread mirrors what it sends and receives into a ring of
        ``depth`` (a power of two) entries of ``snaplen`` bytes; a full ring drops the
        frame and counts it (stats()["capture"]).  One capture at a time."""
        check(lib.rtn_station_capture_start(self._live(), snaplen, depth), RtnetError, self.ifname)

    def capture_read(self, max_frames: int = 256) -> list[CapturedFrame]:
        """The oldest frames of the running capture, at most ``max_frames``."""
        recs = ffi.new("struct rtn_cap_rec[]", max_frames)
        n = check(
            lib.rtn_station_capture_read(self._live(), recs, max_frames), RtnetError, self.ifname
        )
        return [CapturedFrame.from_c(recs[i]) for i in range(n)]

    def capture_stop(self) -> None:
        """Switch the capture off (what was not read is gone).  Idempotent."""
        lib.rtn_station_capture_stop(self._live())

    # -- status ------------------------------------------------------------------------
    def local_now(self) -> int:
        return lib.rtn_station_local_now(self._live())

    def stats(self) -> dict:
        s = self._live()
        st = ffi.new("struct rtn_station_stats *")
        lib.rtn_station_stats(s, st)
        out = {
            "ifname": self.ifname,
            "mac": self.mac,
            "netns": self.netns,
            "discipline": DISCIPLINES.get(st.discipline, "none"),
            "running": bool(lib.rtn_station_running(s)),
            "xdp_mode": self.xdp_mode,
            "xdp_fallback": self.xdp_fallback,
            "loops": st.loops,
            "timer_wakeups": st.timer_wakeups,
            "spin_waits": st.spin_waits,
            "early_wakes": st.early_wakes,
            "rx_early": st.rx_early,
            "rx_tunnel_after_send": st.rx_tunnel_after_send,
            "wake_early_ns": st.wake_early_ns,
            "rx_wakeups": st.rx_wakeups,
            "rx_polls": st.rx_polls,
            "miss_late_wake": st.miss_late_wake,
            "miss_other": st.miss_other,
            "rx_frames": st.rx_frames,
            "rx_other": st.rx_other,
            "probe_sent": lib.rtn_station_probe_sent(s),
            "nomac_tx": st.nomac_tx,
            "nomac_drops": st.nomac_drops,
            "generator_lag_max_ns": st.generator_lag_max_ns,
            "capture": {"frames": st.capture_frames, "drops": st.capture_drops},
            "clock_model": {"offset_ns": st.clock_offset_ns, "drift_ppm": st.drift_ppm},
            "vnic": {
                k: getattr(st.vnic, k)
                for k in (
                    "tap_rx",
                    "tap_rx_bytes",
                    "tap_tx",
                    "tap_tx_bytes",
                    "tx_dropped",
                    "rx_dropped",
                    "rx_bad",
                    "tap_errors",
                    "wakeups",
                    "tap_reads",
                    "tap_writes",
                    "tx_bad",
                    "pump_wakeups",
                    "pump_kicks",
                    "ring_full",
                    "queue_drops",
                    "pump_yields",
                    "tx_copy_bytes",
                    "rx_copy_bytes",
                )
            },
            "wakeup": Histogram.from_c(lib.rtn_station_wake_hist(s)),
            "stages": self.stages(late=STATUS_LATE_RECORDS),
        }
        out["vnic"]["mode"] = {0: "off", 1: "batched", 2: "per-packet"}[st.vnic.mode]
        rts = ffi.new("struct rtn_rt_stats *")
        lib.rtn_station_rt_stats(s, rts)
        out["rt"] = {
            "policy": "SCHED_FIFO" if rts.policy == 1 else "SCHED_OTHER",
            "priority": rts.priority,
            "cpu": rts.cpu,
            "tid": rts.tid,
            "fallback": bool(rts.fallback),
            "dma_latency_held": bool(rts.dma_latency_held),
            "memory_locked": bool(rts.memory_locked),
        }
        out["frer"] = frer_stats(s)
        td = ffi.new("struct rtn_tdma_stats *")
        out["tdma"] = stats_from_c(td) if lib.rtn_station_tdma_stats(s, td) == 0 else None
        xs = ffi.new("struct rtn_xsk_stats *")
        lib.rtn_station_xsk_stats(s, xs)
        out["xsk"] = {
            k: getattr(xs, k)
            for k in (
                "rx_frames",
                "rx_kernel_ts",
                "tx_frames",
                "tx_in_place",
                "tx_ring_full",
                "tx_kicks",
                "fill_fail",
                "invalid_desc",
                "truncated",
                "rx_kept",
                "xdp_redirected",
                "xdp_passed",
                "xdp_unbound",
            )
        }
        out["xsk"]["xdp_unbound_queue"] = {
            str(q): n for q, n in enumerate(xs.xdp_unbound_queue) if n
        }
        out["xsk"]["zerocopy"] = bool(xs.zerocopy)
        out["xsk"]["xdp_stamps"] = STAMP_PLACES.get(xs.xdp_stamps)
        return out
