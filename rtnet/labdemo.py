"""The embedded default: `rtnetctl lab up` brings up a whole TDMA segment and shows it working.

Station 1 is the primary master, station 2 the backup master, the others are
slaves; each runs its own rtnetd.  The schedule comes from the planner
(rtmac/plan.py, ``rtmac tdma plan --stations N``): the master's Sync, then
for every station its RT slot 0 (200 bytes) and right after it its NRT
window (slot 1), the free wire time shared equally; the backup's Sync after
the master's window.  The cycle is 1 ms, or the shortest multiple of 500 us
that fits the stations (3 ms for 16).

Every station has vnic0 (198.19.0.N/24) carrying Linux traffic in its NRT
window.  A cyclic real-time publisher on the last station sends one message
per cycle, 50 us before its RT slot, to a subscriber on station 1; the view
shows the true end-to-end latency (scheduled send time to receipt by the
subscriber), missed slots and VNIC traffic while it runs, then a summary.
The lab stays up for exploring (rtnetctl -n rtn-lab-s1 status, rtmac ...);
`rtnetctl lab down` stops the daemons and removes everything.
"""
from __future__ import annotations

import dataclasses
import os
import subprocess
import threading
import time

import numpy as np

from . import paths, stationctl
from .errors import LabError
from .lab import Lab
from rtmac.tdma_config import Slot

RT_SLOT_SIZE = 200
NRT_SLOT_SIZE = 1500
APP_ETHERTYPE = 0x88B5
MAX_DEMO_STATIONS = 16


def segment_plan(n: int):
    """The demo segment's schedule for ``n`` stations (rtmac.plan)."""
    from rtmac.plan import plan, shortest_cycle_us
    kw = dict(rt_sizes=RT_SLOT_SIZE, nrt_size=NRT_SLOT_SIZE)
    return plan(n, cycle_us=shortest_cycle_us(n, **kw), **kw)


def station_toml(index: int, n: int, *, windows: bool = True) -> str:
    """rtnet.toml of demo station ``index`` (1-based) in a segment of ``n`` stations.

    ``windows=False``: RTnet's slot model instead, the baseline the planned windows
    are measured against (tools/bench_lab_vnic.py), as this demo ran before the
    planner: a 1 ms cycle, the backup's Sync at 100 us, RT slot 0 of station N at
    100 x N us, and one NRT slot 1 at 800 us (one full frame plus the guard)
    shared by all stations, station N in cycles n % stations == N - 1, as RTnet's
    tdma.conf examples share slot 1 (up to 7 stations).
    """
    p = segment_plan(n)
    st = p.station(index)
    if not windows:
        if n > 7:
            raise LabError(22, f"RTnet's slot layout of the demo holds 7 stations, not {n}")
        p = dataclasses.replace(p, cycle_us=1000, backup_offset_us=100)
        st = dataclasses.replace(st, rt=Slot(0, 100 * index, size=RT_SLOT_SIZE),
                                 window=Slot(1, 800, phasing=index, period=n,
                                             size=NRT_SLOT_SIZE))
    role = {"master": f'role = "master"\ncycle_us = {p.cycle_us}',
            "backup": f'role = "backup"\ncycle_us = {p.cycle_us}\n'
                      f"backup_offset_us = {p.backup_offset_us}",
            "slave": 'role = "slave"'}[st.role]
    return f"""# demo station {index} of {n}, written by rtnetctl lab up
[station]
name = "s{index}"
device = "rteth0"
ethertypes = [0x{APP_ETHERTYPE:04X}]
[rt]
cpu = {(index - 1) % max(1, os.cpu_count() or 1)}
priority = 80
allow_fallback = true
[tdma]
{role}
cal_rounds = 20
sync_loss_cycles = 20
[[tdma.slot]]
id = 0
offset_us = {st.rt.offset_us}
size = {st.rt.size}
[[tdma.slot]]
id = 1
offset_us = {st.window.offset_us}
size = {st.window.size}
phasing = "{st.window.phasing}/{st.window.period}"
{f"window_us = {st.window.window_us}" if st.window.window_us else ""}
[vnic]
enabled = true
name = "vnic0"
mode = "batched"
address = "198.19.0.{index}/24"
slot = 1
[[channel]]
ethertype = 0x{APP_ETHERTYPE:04X}
slot = 0
prio = 15
"""


class _Subscriber(threading.Thread):
    """Receives the publisher's messages and keeps their end-to-end latency."""

    def __init__(self, channel):
        super().__init__(name="demo-subscriber", daemon=True)
        self.channel = channel
        self.latency_ns: list[int] = []
        self.seqs: list[int] = []
        self.stop_event = threading.Event()

    def run(self):
        while not self.stop_event.is_set():
            msg = self.channel.recv(timeout=0.2)
            if msg is not None:
                self.latency_ns.append(msg.rx_ns - msg.sched_ns)
                self.seqs.append(msg.seq)


def _pct(values_ns, q) -> float:
    return float(np.percentile(np.asarray(values_ns, dtype=np.int64), q)) / 1000.0


def _status(ns: str) -> dict:
    return stationctl.request("rteth0", {"cmd": "status"}, netns=ns, timeout=5.0)["status"]


def _missed(statuses) -> int:
    return sum((s.get("tdma") or {}).get("missed_slots", 0) for s in statuses)


def _vnic_frames(statuses) -> int:
    return sum((s.get("vnic") or {}).get("tap_rx", 0) for s in statuses)


def run(name: str = "lab", stations: int = 3, duration: float = 5.0, out=print) -> dict:
    """Bring up the demo segment, show it for ``duration`` seconds, return the summary."""
    if not 2 <= stations <= MAX_DEMO_STATIONS:
        raise LabError(22, f"--stations {stations}: the demo runs 2..{MAX_DEMO_STATIONS} stations")
    if duration <= 0:
        raise LabError(22, f"--duration {duration:g}: must be positive")
    from .app import Channel
    from .cyclic import CyclicTask

    plan = segment_plan(stations)
    lab = Lab(name, stations).up()
    out(f"lab {lab.name}: {lab.n} stations, bridge {lab.wire_netns}/rtbr0, "
        f"TDMA cycle {plan.cycle_us} us, an NRT window of {plan.station(1).window.window_us} us "
        f"per station")
    out(plan.drawing())
    for st in lab.stations:
        conf = os.path.join(paths.station_dir(st.netns), "rtnet.toml")
        os.makedirs(os.path.dirname(conf), exist_ok=True)
        with open(conf, "w") as f:
            f.write(station_toml(st.index, lab.n))
        info = stationctl.up(conf, netns=st.netns)
        role = ("master", "backup master")[st.index - 1] if st.index <= 2 else "slave"
        out(f"  station {st.index} ({role}): rtnetd pid {info['pid']}, rteth0 {st.mac} "
            f"{st.ip}, vnic0 198.19.0.{st.index}, slot 0 at {plan.station(st.index).rt.offset_us} us")
    want = {1: "active", 2: "stand-by"}
    deadline = time.monotonic() + 20
    while True:
        states = {st.index: (_status(st.netns).get("tdma") or {}).get("state")
                  for st in lab.stations}
        if all(states[i] == want.get(i, "synchronised") for i in states):
            break
        if time.monotonic() > deadline:
            raise LabError(110, f"stations did not synchronise: {states}")
        time.sleep(0.1)  # the daemons are other processes: poll their state
    out("all stations synchronised and calibrated")

    pub_st, sub_st = lab.stations[-1], lab.stations[0]
    sub_ch = Channel.open(netns=sub_st.netns, ethertype=APP_ETHERTYPE)
    pub_ch = Channel.open(netns=pub_st.netns, ethertype=APP_ETHERTYPE)
    sub = _Subscriber(sub_ch)
    sub.start()
    task = CyclicTask(pub_ch, sub_st.mac, payload_size=32,
                      offset_us=max(0, plan.station(pub_st.index).rt.offset_us - 50),
                      priority=70, allow_fallback=True)
    ping = lab.spawn(lab.stations[1], ["ping", "-q", "-i", "0.2", "-w", str(int(duration) + 1),
                                       "-s", "1200", f"198.19.0.{pub_st.index}"],
                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    before = [_status(st.netns) for st in lab.stations]
    task.start()
    t0 = time.monotonic()
    out(f"publisher on station {pub_st.index} -> subscriber on station {sub_st.index}; "
        f"ping over vnic0 from station 2; {duration:g} s")
    out("   time   msgs  lat p50  lat p99  lat max (us)  missed slots  vnic frames")
    try:
        while (elapsed := time.monotonic() - t0) < duration:
            time.sleep(min(0.5, max(0.05, duration - elapsed)))
            now = [_status(st.netns) for st in lab.stations]
            lat = list(sub.latency_ns)
            row = (f"{time.monotonic() - t0:6.1f}s {len(lat):6d}  "
                   + (f"{_pct(lat, 50):7.1f}  {_pct(lat, 99):7.1f}  {max(lat) / 1000:8.1f}     "
                      if lat else "      -        -         -     ")
                   + f"{_missed(now) - _missed(before):8d}     "
                   f"{_vnic_frames(now) - _vnic_frames(before):8d}")
            out(row)
    finally:
        task.stop()
        sub.stop_event.set()
        sub.join()
        pub_ch.close()
        sub_ch.close()
        ping_out = ping.communicate(timeout=duration + 10)[0]
        lab.forget(ping)
    after = [_status(st.netns) for st in lab.stations]
    lat = sub.latency_ns
    lost = (max(sub.seqs) - min(sub.seqs) + 1 - len(set(sub.seqs))) if sub.seqs else 0
    summary = {
        "stations": [{
            "index": st.index, "netns": st.netns, "state": (a.get("tdma") or {}).get("state"),
            "missed_slots": (a.get("tdma") or {}).get("missed_slots", 0)
            - (b.get("tdma") or {}).get("missed_slots", 0),
            "sync_error_p99_us": ((a.get("tdma") or {}).get("sync_error") or {})
            .get("summary_us", {}).get("p99"),
            "wakeup_p99_us": (a.get("wakeup") or {}).get("summary_us", {}).get("p99"),
        } for st, b, a in zip(lab.stations, before, after)],
        "messages": len(lat), "lost": lost,
        "latency_us": ({k: _pct(lat, q) for k, q in (("p50", 50), ("p99", 99), ("p99.9", 99.9))}
                       | {"max": max(lat) / 1000.0} if lat else None),
        "vnic_ping": next((line for line in ping_out.splitlines() if "packet loss" in line), None),
    }
    out("summary:")
    for s in summary["stations"]:
        out(f"  station {s['index']}: {s['state']:<13} missed slots {s['missed_slots']:3d}  "
            f"sync error p99 {s['sync_error_p99_us'] if s['sync_error_p99_us'] is not None else '-'} us  "
            f"wake-up p99 {s['wakeup_p99_us'] if s['wakeup_p99_us'] is not None else '-'} us")
    if lat:
        L = summary["latency_us"]
        out(f"  cyclic messages: {len(lat)} received, {lost} lost; end-to-end (scheduled send -> "
            f"subscriber) p50 {L['p50']:.1f} us, p99 {L['p99']:.1f} us, p99.9 {L['p99.9']:.1f} us, "
            f"max {L['max']:.1f} us (cycle {plan.cycle_us} us)")
    out(f"  vnic0 ping: {summary['vnic_ping'] or 'no reply'}")
    out(f"the lab stays up: try rtnetctl -n {lab.stations[0].netns} status; "
        f"remove it with rtnetctl lab down{'' if name == 'lab' else ' --name ' + name}")
    return summary
