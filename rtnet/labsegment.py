"""N stations on the lab's wire with a planned schedule, each sending in its RT slot.

Used by the scale test (8 stations) and tools/bench_scale.py (16): every
station runs its own SCHED_FIFO thread in this process, takes its TDMA
configuration from the schedule planner (rtmac.plan: station 1 master,
station 2 backup, the rest slaves, the slaves' clocks given offsets and
drifts of their own), and sends one probe frame per cycle in RT slot 0.  A
capture on the wire checks each probe against its sender's slot on the cycle
grid of the captured Syncs, and each station reports its sync error and slot
lateness.

>>> report = run_segment("sc", 8, cycles=2000)      # doctest: +SKIP
>>> report["stations"][2]["probes_in_slot"]         # doctest: +SKIP
0.9995
"""

from __future__ import annotations

import bisect
import errno
import os
import time
from dataclasses import dataclass

from rtmac.frames import FrameKind, decode
from rtmac.plan import plan, shortest_cycle_us
from rtmac.tdma_config import wire_time_ns

from .cpuacct import run_time_s
from .errors import LabError
from .lab import Lab
from .mac import format_mac
from .rtthread import THREAD_NAME as RT_THREAD_NAME
from .station import RtSettings, Station
from .wirecap import WireCapture

PROBE_ETHERTYPE = 0x88B5
PROBE_LEN = 64
TX_STAMP_OFF = 30  # the probe's transmit stamp (csrc/station/rtn_probe.c, RTN_APP_TX_OFF)
CAL_ROUNDS = 20
SYNC_LOSS_CYCLES = 20  # longer than this VM's hypervisor stalls (a few ms)
RT_PRIORITY = 80
STAMP_SLACK_NS = 20_000  # a wake-up may stamp this much after the window's modelled end


def slave_clock(index: int) -> dict:
    """A distinct clock model per slave: offsets of tens of us, drifts of +-100 ppm."""
    if index <= 2:
        return {}
    return {
        "clock_offset_ns": (index * 13_000) % 90_000 - 45_000,
        "drift_ppm": ((index * 37) % 200) - 100.0,
    }


def _wait(pred, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise LabError(errno.ETIMEDOUT, f"timed out waiting for {what}")


def _expected_state(role: str) -> str:
    return {"master": "active", "backup": "stand-by"}.get(role, "synchronised")


def run_segment(
    name: str,
    n: int,
    *,
    cycles: int,
    cycle_us: int | None = None,
    progress=None,
    on_capture=None,
    wake_early: bool = False,
) -> dict:
    """Bring up ``n`` stations, run ``cycles`` cycles of probes, report per station.
    ``on_capture(seg, macs, frames)``, if given, sees the plan, the stations' MACs and the
    captured frames before the report is made of them (a test's own checks).
    ``wake_early``: the stations' RT threads wake before their slots and spin to them
    (``[rt] wake_early``)."""
    cycle_us = cycle_us or shortest_cycle_us(n)
    seg = plan(n, cycle_us=cycle_us)
    ncpu = os.cpu_count() or 1
    say = progress or (lambda _msg: None)
    stations: list[Station] = []
    with Lab(name, n) as lab:
        try:
            for i, st in enumerate(lab.stations, 1):
                s = Station(
                    st.ifname,
                    netns=st.netns,
                    rt=RtSettings(cpu=(i - 1) % ncpu, priority=RT_PRIORITY, wake_early=wake_early),
                    **slave_clock(i),
                )
                s.attach_tdma(
                    seg.tdma_config(i, cal_rounds=CAL_ROUNDS, sync_loss_cycles=SYNC_LOSS_CYCLES)
                )
                s.start()
                stations.append(s)
            roles = [p.role for p in seg.stations]
            _wait(
                lambda: all(
                    s.stats()["tdma"]["state"] == _expected_state(r)
                    for s, r in zip(stations, roles)
                ),
                timeout=30 + n,
                what=f"{n} stations to synchronise",
            )
            say(f"{n} stations synchronised on a {cycle_us} us cycle")
            before = [s.stats() for s in stations]
            cpu0 = (time.monotonic(), run_time_s("/proc/self/task", RT_THREAD_NAME))
            with WireCapture(lab.wire_netns, ethertypes={0x9021, PROBE_ETHERTYPE}) as cap:
                for s in stations:
                    s.set_probe(0, ethertype=PROBE_ETHERTYPE, length=PROBE_LEN)
                start = stations[0].stats()["tdma"]["cycle_no"]
                _wait(
                    lambda: stations[0].stats()["tdma"]["cycle_no"] >= start + cycles + 20,
                    timeout=cycles * cycle_us / 1e6 * 3 + 30,
                    what=f"{cycles} cycles",
                )
                for s in stations:
                    s.set_probe(None)
            cpu1 = (time.monotonic(), run_time_s("/proc/self/task", RT_THREAD_NAME))
            after = [s.stats() for s in stations]
            macs = [s.mac for s in stations]
        finally:
            for s in stations:
                s.close()
    if on_capture is not None:
        on_capture(seg, macs, cap.frames)
    report = _report(seg, macs, cap.frames, before, after, cycles)
    # every station's RT thread, spinning included: what wake_early costs
    report["rt_cpu_s_per_s"] = (cpu1[1] - cpu0[1]) / (cpu1[0] - cpu0[0])
    return report


@dataclass(frozen=True)
class ProbeCheck:
    """One captured probe: its sender's index, the start of the cycle it was sent in (global
    time, from the captured Syncs), its transmit stamp, its capture stamp (CLOCK_MONOTONIC)
    and whether it left inside its sender's slot window."""

    station: int
    cycle_start: int
    tx: int
    captured: int
    in_slot: bool


@dataclass
class Captured:
    """What the capture shows: the cycle grid, every probe checked against it, and for each
    of the master's Syncs its capture stamp minus its transmit stamp."""

    syncs: int
    grid: list[int]
    probes: list[ProbeCheck]
    master_sync_lag_ns: list[int]


def check_capture(seg, macs, frames) -> Captured:
    """Each probe of ``frames`` (captured on the segment's bridge) against its sender's slot
    window in the cycle grid the captured Syncs give; probes of no station, or sent before
    the first captured Sync, are left out."""
    syncs, probes, lag = {}, [], []
    for c in frames:
        if c.data[12:14] == b"\x90\x21":
            try:
                m = decode(c.data)
            except ValueError:
                continue
            if m.kind == FrameKind.SYNC:
                syncs.setdefault(m.cycle_no, m.sched_xmit_stamp)
                if m.src == macs[0]:
                    lag.append(c.ts_ns - m.xmit_stamp)
        elif len(c.data) >= TX_STAMP_OFF + 8:
            probes.append(c)
    grid = sorted(syncs.values())
    index = {mac: i for i, mac in enumerate(macs)}
    probe_wire = wire_time_ns(PROBE_LEN, seg.link_rate_mbps)
    checks = []
    for c in probes:
        i = index.get(format_mac(c.data[6:12]))
        tx = int.from_bytes(c.data[TX_STAMP_OFF : TX_STAMP_OFF + 8], "big")
        k = bisect.bisect_right(grid, tx) - 1
        if i is None or k < 0:
            continue  # not ours, or sent before the first captured Sync
        rt = seg.stations[i].rt
        lo = rt.offset_us * 1000
        hi = lo + wire_time_ns(rt.size + 14, seg.link_rate_mbps) + seg.guard_ns
        rel = tx - grid[k]
        inside = lo <= rel and rel + probe_wire <= hi + STAMP_SLACK_NS
        checks.append(ProbeCheck(i, grid[k], tx, c.ts_ns, inside))
    return Captured(len(syncs), grid, checks, lag)


def _report(seg, macs, frames, before, after, cycles) -> dict:
    cap = check_capture(seg, macs, frames)
    counts = [{"probes": 0, "in_slot": 0} for _ in macs]
    for p in cap.probes:
        counts[p.station]["probes"] += 1
        counts[p.station]["in_slot"] += p.in_slot
    out = []
    for i, (sp, b_st, a_st) in enumerate(zip(seg.stations, before, after)):
        b, a = b_st["tdma"], a_st["tdma"]
        err = a["sync_error"].since(b["sync_error"])
        delay = a["sync_delay"].since(b["sync_delay"])
        late = a["slot0_lateness"].since(b["slot0_lateness"])
        out.append(
            {
                "index": sp.index,
                "role": sp.role,
                "mac": macs[i],
                "state": a["state"],
                "slot_offset_us": sp.rt.offset_us,
                "probes": counts[i]["probes"],
                "probes_in_slot": counts[i]["in_slot"] / counts[i]["probes"]
                if counts[i]["probes"]
                else 0.0,
                "missed_slots": a["missed_slots"] - b["missed_slots"],
                "sync_error_us": err.summary_us() if err.count else None,
                "sync_delay_us": delay.summary_us() if delay.count else None,
                "calibrated_delay_us": a["calibration"]["delay_ns"] / 1000,
                "slot_lateness_us": late.summary_us(),
                "wakeup_us": a_st["wakeup"].since(b_st["wakeup"]).summary_us(),
                "wake_early_us": a_st["wake_early_ns"] / 1000,
                "early_wakes": a_st["early_wakes"] - b_st["early_wakes"],
                # frames taken while early, not between a deadline and its send
                "rx_early": a_st["rx_early"] - b_st["rx_early"],
            }
        )
    return {
        "stations_n": len(macs),
        "cycle_us": seg.cycle_us,
        "cycles": cycles,
        "link_rate_mbps": seg.link_rate_mbps,
        "syncs_captured": cap.syncs,
        "stations": out,
    }


def format_report(report: dict) -> list[str]:
    """One line per station, cyclictest style (us)."""
    lines = [
        f"# {report['stations_n']} stations, cycle {report['cycle_us']} us, "
        f"{report['cycles']} cycles, {report['syncs_captured']} Syncs captured; the RT "
        f"threads' CPU {report['rt_cpu_s_per_s']:.3f} s/s"
    ]
    for s in report["stations"]:
        late, err = s["slot_lateness_us"], s["sync_error_us"]
        e = (
            f"sync error p50 {err['p50']:7.1f} p99 {err['p99']:7.1f} min {err['min']:7.1f} "
            f"max {err['max']:7.1f}"
            if err
            else "sync error      -  (the master's clock)"
        )
        delay = s.get("sync_delay_us")
        if err and delay:
            # the error's cause: the Syncs' path against the calibrated round trip's half
            e += f"  delay p50 {delay['p50']:6.1f} calibrated {s['calibrated_delay_us']:6.1f}"
        lines.append(
            f"S{s['index']:<2} {s['role']:6} slot {s['slot_offset_us']:5} us  "
            f"probes {s['probes']:6} in slot {100 * s['probes_in_slot']:6.2f}%  "
            f"lateness p50 {late['p50']:6.1f} p99 {late['p99']:6.1f} max "
            f"{late['max'] or 0:7.1f}  missed {s['missed_slots']:4}  "
            + (f"wakes {s['wake_early_us']:4.0f} us early  " if s["wake_early_us"] else "")
            + e
        )
    return lines
