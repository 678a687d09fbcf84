"""The two-station pairs the benchmarks and tests use: TDMA (with a VNIC each) or NoMAC,
the TDMA slot plan and the wiring.

The plan (:func:`plan`) comes from the schedule planner (rtmac/plan.py): the
master (station 1, the sender of the benchmarks) gets an NRT transmit window
of most of the cycle, the slave (the reverse direction: ACKs, replies) a
window of one full frame.

``windows=False`` plans RTnet's slot model instead, the baseline the windows
are measured against: an NRT slot owns the wire time of one full ``size + 14``
byte frame plus the guard, so it carries one full-size frame per occurrence;
the master gets as many NRT slot occurrences per cycle as fit (slot 1 and
joint slots 2, 3, ...), the slave one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import time

from rtmac.plan import plan as segment_plan
from rtmac.tdma_config import (
    DEFAULT_GUARD_NS,
    Slot,
    TdmaConfig,
    slot_extent_ns,
    validate,
    wire_time_ns,
)
from rtnet.errors import ConfigError, RtnetError
from rtnet.station import RtSettings, Station

from .tap import OFFLOAD_BY_MODE, RTMAC_HLEN, Tap, txqueuelen_for

RT_SLOT_SIZE = 200
NRT_SLOT_SIZE = 1500
GAP_US = 1


def vnic_address(index: int) -> str:
    return f"198.19.0.{index}/24"


@dataclasses.dataclass(frozen=True)
class SlotPlan:
    master: TdmaConfig
    slave: TdmaConfig
    cycle_us: int
    link_rate_mbps: int
    master_nrt_ns: int  # NRT wire time per cycle: the window, or the slots' frames
    slave_nrt_ns: int
    windows: bool

    @property
    def master_capacity_mbps(self) -> float:
        """The master's NRT share of the cycle x link rate."""
        return self.master_nrt_ns / (self.cycle_us * 1000) * self.link_rate_mbps

    @property
    def slave_capacity_mbps(self) -> float:
        return self.slave_nrt_ns / (self.cycle_us * 1000) * self.link_rate_mbps

    @property
    def master_tcp_capacity_mbps(self) -> float:
        """TCP payload the master's NRT time carries: window x rate x 1448/1538."""
        return self.master_capacity_mbps * 1448 / 1538

    def describe(self) -> str:
        if self.windows:
            return (
                f"NRT window {self.master_nrt_ns / 1000:g} us/cycle "
                f"({self.master_nrt_ns / self.cycle_us / 10:.0f}%)"
            )
        n = self.master_nrt_ns // wire_time_ns(NRT_SLOT_SIZE + 14, self.link_rate_mbps)
        return f"{n} NRT slots/cycle (RTnet's slot model)"

    def to_dict(self) -> dict:
        return {
            "cycle_us": self.cycle_us,
            "link_rate_mbps": self.link_rate_mbps,
            "windows": self.windows,
            "master_nrt_us": self.master_nrt_ns / 1000,
            "slave_nrt_us": self.slave_nrt_ns / 1000,
            "master_nrt_capacity_mbps": round(self.master_capacity_mbps, 2),
            "slave_nrt_capacity_mbps": round(self.slave_capacity_mbps, 2),
            "master_tcp_capacity_mbps": round(self.master_tcp_capacity_mbps, 2),
            "master": self.master.to_dict(),
            "slave": self.slave.to_dict(),
        }


def plan(
    cycle_us: int = 1000,
    link_rate_mbps: int = 100,
    *,
    windows: bool = True,
    max_master_nrt: int = 62,
    guard_ns: int = DEFAULT_GUARD_NS,
) -> SlotPlan:
    """The benchmark pair's schedule: NRT windows (default) or RTnet's NRT slots.
    ``guard_ns``: the RT slots' guard, the lateness a station's RT thread may have and still
    send in its slot (windows only: a station's window starts inside its RT slot's guard, so
    a longer guard costs the other stations nothing)."""
    if windows:
        return _window_plan(cycle_us, link_rate_mbps, guard_ns)
    if guard_ns != DEFAULT_GUARD_NS:
        raise ConfigError("the NRT slot plan keeps the default guard")
    return _slot_plan(cycle_us, link_rate_mbps, max_master_nrt)


def _window_plan(cycle_us: int, link_rate_mbps: int, guard_ns: int) -> SlotPlan:
    # the slave's window: one full frame, and at least its RT slot's guard it starts in
    one_frame_us = -(-wire_time_ns(NRT_SLOT_SIZE + 14, link_rate_mbps) // 1000)
    slave_us = max(one_frame_us, -(-guard_ns // 1000))
    p = segment_plan(
        2,
        cycle_us=cycle_us,
        link_rate_mbps=link_rate_mbps,
        backup=False,
        rt_sizes=RT_SLOT_SIZE,
        nrt_size=NRT_SLOT_SIZE,
        windows_us={2: slave_us},
        guard_ns=guard_ns,
    )
    master = validate(dataclasses.replace(p.tdma_config(1), max_slot_id=63, cal_rounds=10))
    slave = validate(dataclasses.replace(p.tdma_config(2), max_slot_id=63, cal_rounds=10))
    return SlotPlan(
        master,
        slave,
        cycle_us,
        link_rate_mbps,
        p.station(1).window.window_us * 1000,
        p.station(2).window.window_us * 1000,
        True,
    )


def _slot_plan(cycle_us: int, link_rate_mbps: int, max_master_nrt: int) -> SlotPlan:
    base = dict(cycle_us=cycle_us, link_rate_mbps=link_rate_mbps, max_slot_id=63, cal_rounds=10)
    probe = TdmaConfig(role="master", **base)

    def end_us(slot: Slot) -> int:
        return -(-slot_extent_ns(probe, slot)[1] // 1000) + GAP_US

    sync_end = -(-wire_time_ns(60, link_rate_mbps) // 1000) + GAP_US
    m_rt = Slot(0, sync_end, size=RT_SLOT_SIZE)
    s_rt = Slot(0, end_us(m_rt), size=RT_SLOT_SIZE)
    s_nrt = Slot(1, end_us(s_rt), size=NRT_SLOT_SIZE)
    m_slots = {0: m_rt}
    off = end_us(s_nrt)
    sid = 1
    while sid <= max_master_nrt:
        s = Slot(sid, off, size=NRT_SLOT_SIZE, joint=None if sid == 1 else 1)
        if slot_extent_ns(probe, s)[1] > cycle_us * 1000:
            break
        m_slots[sid] = s
        off = end_us(s)
        sid += 1
    master = validate(TdmaConfig(role="master", slots=m_slots, **base))
    slave = validate(TdmaConfig(role="slave", slots={0: s_rt, 1: s_nrt}, **base))
    frame_ns = wire_time_ns(NRT_SLOT_SIZE + 14, link_rate_mbps)
    return SlotPlan(
        master, slave, cycle_us, link_rate_mbps, (len(m_slots) - 1) * frame_ns, frame_ns, False
    )


def lab_station(lab, idx: int, rt: RtSettings, **options) -> Station:
    """A Station on station ``idx`` of ``lab``: its device, namespace and MAC, RT thread
    settings ``rt``, and Station's other ``options``."""
    ls = lab.station(idx)
    return Station(ls.ifname, netns=ls.netns, mac=ls.mac, rt=rt, **options)


def attach_vnics(stack, lab, stations, mode, mtu, qlen, offload, slot_size=None) -> list:
    """vnic0 on each of ``stations`` (stations 1, 2, ... of ``lab``) in ``mode``, sending in
    slot 1, entered on ``stack``; none when ``mode`` is None.  Returns the Taps."""
    taps = []
    for idx, st in enumerate(stations if mode else (), 1):
        ls = lab.station(idx)
        tap = stack.enter_context(
            Tap(
                "vnic0",
                mac=ls.mac,
                mtu=mtu,
                netns=ls.netns,
                address=vnic_address(idx),
                slot_size=slot_size,
                txqueuelen=qlen,
                offload=OFFLOAD_BY_MODE[mode] if offload is None else offload,
            )
        )
        st.attach_vnic(tap.fd, mode, slot=1)
        taps.append(tap)
    return taps


@contextlib.contextmanager
def tdma_pair(
    lab,
    slot_plan: SlotPlan,
    *,
    mode: str | None = "batched",
    mtu: int | None = None,
    rt: RtSettings = RtSettings(priority=80),
    sync_timeout: float = 10.0,
    ethertypes=(),
    offload: bool | None = None,
    rt2: RtSettings | None = None,
    xdp_mode: str = "auto",
    redundant_dev: str | None = None,
):
    """Stations 1 (master) and 2 (slave) of ``lab`` under TDMA, each with vnic0 when ``mode``.

    Yields (stations, taps).  ``mtu`` defaults to the slot's limit (size - 4);
    ``ethertypes`` are steered to the stations as well (application channels);
    ``offload`` opens the TAPs with TSO/checksum offload (vnic.tap.Tap; default:
    the mode's, OFFLOAD_BY_MODE);
    ``rt2``: station 2's RT thread settings when they differ from ``rt``;
    ``xdp_mode``: the stations' XDP attach mode (rtnet.config.XDP_MODES);
    ``redundant_dev``: each station's second port (802.1CB), in a redundant lab.
    """
    mtu = mtu or NRT_SLOT_SIZE - RTMAC_HLEN
    qlen = txqueuelen_for(slot_plan.cycle_us, slot_plan.link_rate_mbps)
    with contextlib.ExitStack() as stack:
        stations = []
        for idx, cfg, settings in ((1, slot_plan.master, rt), (2, slot_plan.slave, rt2 or rt)):
            st = stack.enter_context(
                lab_station(
                    lab,
                    idx,
                    settings,
                    ethertypes=ethertypes,
                    xdp_mode=xdp_mode,
                    redundant_dev=redundant_dev,
                )
            )
            st.attach_tdma(cfg)
            stations.append(st)
        for st in stations:
            st.start()
        wait_synced(stations, sync_timeout)
        taps = attach_vnics(stack, lab, stations, mode, mtu, qlen, offload, NRT_SLOT_SIZE)
        yield stations, taps
        for tap in taps:
            tap.close()  # before the stations close: the namespaces outlive neither


@contextlib.contextmanager
def nomac_pair(
    lab,
    *,
    mode: str | None = "batched",
    mtu: int | None = None,
    rt: RtSettings = RtSettings(priority=80),
    ethertypes=(),
    link_rate_mbps: int = 100,
    offload: bool | None = None,
    rt2: RtSettings | None = None,
    redundant_dev: str | None = None,
):
    """Stations 1 and 2 of ``lab`` under NoMAC (no gate: one FIFO per station, paced at the
    modelled link rate), each with vnic0 when ``mode``.  Yields (stations, taps).
    ``rt2``: station 2's RT thread settings when they differ from ``rt``;
    ``redundant_dev``: each station's second port (802.1CB), in a redundant lab."""
    mtu = mtu or NRT_SLOT_SIZE - RTMAC_HLEN
    qlen = txqueuelen_for(1000, link_rate_mbps)
    with contextlib.ExitStack() as stack:
        stations = []
        for idx, settings in ((1, rt), (2, rt2 or rt)):
            st = stack.enter_context(
                lab_station(
                    lab,
                    idx,
                    settings,
                    ethertypes=ethertypes,
                    link_rate_mbps=link_rate_mbps,
                    redundant_dev=redundant_dev,
                )
            )
            st.attach_nomac()
            st.start()
            stations.append(st)
        taps = attach_vnics(stack, lab, stations, mode, mtu, qlen, offload)
        yield stations, taps
        for tap in taps:
            tap.close()  # before the stations close: the namespaces outlive neither


def wait_synced(stations, timeout: float) -> None:
    """Wait until the master is active and the slave synchronised and calibrated."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = [st.stats()["tdma"]["state"] for st in stations]
        if states[0] == "active" and all(s == "synchronised" for s in states[1:]):
            return
        time.sleep(0.05)  # polling the engine's published state; there is no event for it
    raise RtnetError(
        errno.ETIMEDOUT, f"TDMA did not synchronise within {timeout:g} s: states {states}"
    )
