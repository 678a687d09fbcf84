"""The TDMA schedule planner: Sync, RT slots, NRT windows and gaps for a whole segment.

From the cycle, the modelled link rate, the stations and their RT slot sizes it
lays out one cycle (``rtmac tdma plan``; also used by ``rtnetctl lab up`` and
``vnic bench``)::

    0            the master's Sync; station 1 (the master) follows right after the
                 Sync frame, so that one wake-up sends the Sync, its RT frame and
                 its window
    for station 1, 2, ... N:
      RT slot 0  one frame of the station's RT size (RTnet's slot: frame + guard)
      window     slot 1, the station's NRT window, from the end of the RT frame
                 (inside the RT slot's guard, which only the station's own lateness
                 can use), so that one wake-up of the station serves both
      gap        gap_us before the next station's RT slot
    after station 1's window and gap: the backup master's Sync (when there is a
                 backup: its backup offset); station 2 is the backup, and its RT
                 slot follows right after that Sync frame, like the master's

The wire time left after the fixed part is divided among the stations' windows
(equally, or by weights; some windows may be given a fixed length).  Every
window holds at least one full NRT frame.

The gap (default 20 us) is what separates two stations: a station whose clock
estimate is behind the master's sends late, and its window's last frame can end
that much after the window.  20 us covers the synchronisation error this lab's
slaves show under CPU load with software timestamps (p50 -13 to -17 us in the
soak benchmark); with hardware timestamps a few microseconds would do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rtnet.errors import ConfigError

from .tdma_config import DEFAULT_GUARD_NS, ETH_HLEN, Slot, TdmaConfig, validate, wire_time_ns

SYNC_FRAME_LEN = 60  # a Sync on the wire: padded to the Ethernet minimum
DEFAULT_GAP_US = 20
DEFAULT_BACKUP_OFFSET = True


def _us_up(ns: int) -> int:
    return -(-ns // 1000)


@dataclass(frozen=True)
class StationPlan:
    index: int  # 1-based, as the lab numbers stations
    role: str  # "master", "backup" or "slave"
    rt: Slot  # slot 0
    window: Slot  # slot 1, with window_us

    @property
    def window_end_us(self) -> int:
        return self.window.offset_us + self.window.window_us


@dataclass(frozen=True)
class Plan:
    cycle_us: int
    link_rate_mbps: int
    guard_ns: int
    gap_us: int
    backup_offset_us: int | None
    nrt_size: int
    stations: tuple[StationPlan, ...]

    def station(self, index: int) -> StationPlan:
        return self.stations[index - 1]

    def window_share(self, index: int) -> float:
        """The station's NRT window as a share of the cycle."""
        return self.station(index).window.window_us / self.cycle_us

    def tcp_capacity_mbps(self, index: int) -> float:
        """TCP payload the window can carry: whole full-size frames per cycle."""
        frames = (
            self.station(index).window.window_us
            * 1000
            // wire_time_ns(self.nrt_size + ETH_HLEN, self.link_rate_mbps)
        )
        mss = self.nrt_size - 4 - 20 - 32  # tunnel header, IPv4, TCP with timestamps
        return frames * mss * 8 / self.cycle_us

    def tdma_config(
        self, index: int, *, cal_rounds: int = 100, sync_loss_cycles: int = 5
    ) -> TdmaConfig:
        st = self.station(index)
        master = st.role in ("master", "backup")
        return validate(
            TdmaConfig(
                role="master" if master else "slave",
                cycle_us=self.cycle_us if master else None,
                backup_offset_us=self.backup_offset_us if st.role == "backup" else None,
                cal_rounds=cal_rounds,
                slots={0: st.rt, 1: st.window},
                link_rate_mbps=self.link_rate_mbps,
                guard_ns=self.guard_ns,
                sync_loss_cycles=sync_loss_cycles,
            )
        )

    # ---- output --------------------------------------------------------------
    def tdma_conf(self, ips: list[str] | None = None) -> str:
        """The whole segment as an extended tdma.conf: RTnet's sections, plus a
        ``window <slot> <us>`` line per NRT window (a line RTnet files never contain).
        ``ips`` default to the lab's 198.18.0.N."""
        ips = ips or [f"198.18.0.{st.index}" for st in self.stations]
        out = [
            f"# {len(self.stations)} stations, cycle {self.cycle_us} us at "
            f"{self.link_rate_mbps} Mbit/s, planned by rtmac tdma plan"
        ]
        for st, ip in zip(self.stations, ips):
            kind = {"master": "master:", "backup": "backup-master:", "slave": "slave:"}[st.role]
            out += ["", kind, f"ip {ip}"]
            if st.role == "master":
                out.append(f"cycle {self.cycle_us}")
            elif st.role == "backup":
                out.append(f"backup-offset {self.backup_offset_us}")
            out.append(f"slot 0 {st.rt.offset_us} 1/1 {st.rt.size}")
            out.append(f"slot 1 {st.window.offset_us} 1/1 {st.window.size}")
            out.append(f"window 1 {st.window.window_us}")
        return "\n".join(out) + "\n"

    def toml(self, index: int) -> str:
        """The station's [link] and [tdma] sections of rtnet.toml."""
        st = self.station(index)
        head = {
            "master": f'role = "master"\ncycle_us = {self.cycle_us}',
            "backup": f'role = "backup"\ncycle_us = {self.cycle_us}\n'
            f"backup_offset_us = {self.backup_offset_us}",
            "slave": 'role = "slave"',
        }[st.role]
        out = [
            f"[link]\nlink_rate_mbps = {self.link_rate_mbps}\n[tdma]\n{head}\n"
            f"guard_ns = {self.guard_ns}"
        ]
        for s in (st.rt, st.window):
            out.append(
                f"[[tdma.slot]]\nid = {s.id}\noffset_us = {s.offset_us}\nsize = {s.size}"
                + (f"\nwindow_us = {s.window_us}" if s.window_us else "")
            )
        return "\n".join(out) + "\n"

    def segments(self) -> list[tuple[int, int, str, str]]:
        """(start us, end us, kind, label) of everything in the cycle, in order."""
        sync_len = _us_up(wire_time_ns(SYNC_FRAME_LEN, self.link_rate_mbps))
        seg = [(0, sync_len, "sync", "Sync")]
        if self.backup_offset_us is not None:
            seg.append(
                (self.backup_offset_us, self.backup_offset_us + sync_len, "sync", "backup Sync")
            )
        for st in self.stations:
            rt_frame = _us_up(wire_time_ns(st.rt.size + ETH_HLEN, self.link_rate_mbps))
            seg.append((st.rt.offset_us, st.rt.offset_us + rt_frame, "rt", f"RT {st.index}"))
            seg.append((st.window.offset_us, st.window_end_us, "nrt", f"NRT {st.index}"))
        return seg

    def drawing(self, width: int = 100) -> str:
        """The cycle as text: one character per cycle_us / width microseconds."""
        scale = self.cycle_us / width
        row = [" "] * width
        marks = {"sync": "S", "rt": "R", "nrt": "="}
        # the Sync drawn last: it is short and must not vanish under the slot after it
        for start, end, kind, _ in sorted(self.segments(), key=lambda x: x[2] == "sync"):
            a, b = int(start / scale), max(int(start / scale) + 1, int(math.ceil(end / scale)))
            for i in range(a, min(b, width)):
                row[i] = marks[kind]
        lines = [
            f"cycle {self.cycle_us} us at {self.link_rate_mbps} Mbit/s, "
            f"1 char = {scale:g} us (S Sync, R RT slot, = NRT window)",
            "|" + "".join(row) + "|",
        ]
        for st in self.stations:
            lines.append(
                f"  station {st.index:2d} {st.role:<6}  RT slot 0 at {st.rt.offset_us:5d} us "
                f"({st.rt.size} B)   NRT window at {st.window.offset_us:5d} us for "
                f"{st.window.window_us:4d} us ({self.window_share(st.index):.0%}, "
                f"TCP {self.tcp_capacity_mbps(st.index):.1f} Mbit/s)"
            )
        return "\n".join(lines)

    def png(self, path: str) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        colours = {"sync": "#444444", "rt": "#d62728", "nrt": "#1f77b4"}
        fig, ax = plt.subplots(figsize=(12, 1.2 + 0.25 * len(self.stations)))
        for start, end, kind, label in self.segments():
            y = 0 if kind == "sync" else int(label.split()[1])
            ax.barh(y, end - start, left=start, color=colours[kind], height=0.8)
        ax.set_yticks(
            range(len(self.stations) + 1), ["Sync"] + [f"station {s.index}" for s in self.stations]
        )
        ax.invert_yaxis()
        ax.set_xlim(0, self.cycle_us)
        ax.set_xlabel("us after the cycle start")
        ax.set_title(
            f"TDMA cycle {self.cycle_us} us, {self.link_rate_mbps} Mbit/s: "
            "Sync (grey), RT slots (red), NRT windows (blue)"
        )
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)


def plan(
    stations: int,
    *,
    cycle_us: int = 1000,
    link_rate_mbps: int = 100,
    rt_sizes: int | list[int] = 200,
    nrt_size: int = 1500,
    backup: bool = True,
    guard_ns: int = DEFAULT_GUARD_NS,
    gap_us: int = DEFAULT_GAP_US,
    weights: list[float] | None = None,
    windows_us: dict[int, int] | None = None,
) -> Plan:
    """Lay out a cycle for ``stations`` stations (station 1 master, 2 backup if ``backup``).

    ``weights`` divide the free wire time among the windows (default equal);
    ``windows_us`` fixes the length of some stations' windows (index -> us), the
    others share the rest.  Raises ConfigError naming the numbers when it cannot fit.
    """
    if not isinstance(stations, int) or not 1 <= stations <= 64:
        raise ConfigError(f"stations: {stations!r} outside 1..64")
    if link_rate_mbps <= 0:
        raise ConfigError("the planner needs a modelled link rate (link_rate_mbps > 0)")
    sizes = [rt_sizes] * stations if isinstance(rt_sizes, int) else list(rt_sizes)
    if len(sizes) != stations:
        raise ConfigError(f"{len(sizes)} RT slot sizes for {stations} stations")
    weights = [1.0] * stations if weights is None else list(weights)
    if len(weights) != stations or any(not w > 0 for w in weights):
        raise ConfigError(f"weights: {weights!r}: one positive weight per station")
    windows_us = dict(windows_us or {})
    if any(not 1 <= i <= stations for i in windows_us):
        raise ConfigError(f"windows_us names a station outside 1..{stations}")
    backup = backup and stations >= 2

    sync_frame = _us_up(wire_time_ns(SYNC_FRAME_LEN, link_rate_mbps))
    backup_len = sync_frame if backup else 0
    rt_frame = [_us_up(wire_time_ns(s + ETH_HLEN, link_rate_mbps)) for s in sizes]
    rt_len = [_us_up(wire_time_ns(s + ETH_HLEN, link_rate_mbps) + guard_ns) for s in sizes]
    min_window = _us_up(wire_time_ns(nrt_size + ETH_HLEN, link_rate_mbps))
    fixed = sync_frame + backup_len + sum(rt_frame) + stations * gap_us + sum(windows_us.values())
    free = cycle_us - fixed
    shared = [i for i in range(1, stations + 1) if i not in windows_us]
    total_w = sum(weights[i - 1] for i in shared)
    lengths = {}
    for i in range(1, stations + 1):
        if i in windows_us:
            lengths[i] = windows_us[i]
        else:
            lengths[i] = int(free * weights[i - 1] / total_w) if free > 0 else 0
        # the window covers at least the RT slot's guard (it starts inside it)
        need = max(min_window, rt_len[i - 1] - rt_frame[i - 1])
        if lengths[i] < need:
            raise ConfigError(
                f"{stations} stations do not fit a {cycle_us} us cycle at {link_rate_mbps} "
                f"Mbit/s: Sync {sync_frame + backup_len} us + RT frames {sum(rt_frame)} us + "
                f"gaps {stations * gap_us} us leave station {i} a window of {lengths[i]} us, "
                f"less than one {nrt_size + ETH_HLEN}-byte frame plus the RT guard ({need} us); "
                f"use a longer cycle or fewer stations"
            )
    out, t, backup_offset = [], sync_frame, None
    for i in range(1, stations + 1):
        role = "master" if i == 1 else "backup" if (i == 2 and backup) else "slave"
        rt = Slot(0, t, size=sizes[i - 1])
        win = Slot(1, t + rt_frame[i - 1], size=nrt_size, window_us=lengths[i])
        out.append(StationPlan(i, role, rt, win))
        t = win.offset_us + win.window_us + gap_us
        if i == 1 and backup:
            backup_offset, t = t, t + backup_len
    if t - gap_us > cycle_us:
        raise ConfigError(f"the plan ends at {t - gap_us} us, past the {cycle_us} us cycle")
    p = Plan(cycle_us, link_rate_mbps, guard_ns, gap_us, backup_offset, nrt_size, tuple(out))
    for st in p.stations:  # every station's schedule passes the normal validation
        p.tdma_config(st.index)
    return p


def shortest_cycle_us(stations: int, *, step_us: int = 500, **kw) -> int:
    """The shortest multiple of ``step_us`` (from 1000 us) that fits the stations."""
    cycle = 1000
    while cycle <= 1_000_000:
        try:
            plan(stations, cycle_us=cycle, **kw)
            return cycle
        except ConfigError:
            cycle += step_us
    raise ConfigError(f"{stations} stations do not fit any cycle up to 1 s")
