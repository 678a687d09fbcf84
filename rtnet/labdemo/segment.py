"""The demo segment: the planner's schedule for N stations, each station's rtnet.toml, the
daemons brought up in their TDMA states, their neighbour tables (rtroute -f) and an ICMP echo
over the real-time path."""

from __future__ import annotations

import dataclasses
import errno
import os
import time

from rtmac.tdma_config import Slot
from rtnet import paths, stationctl, txchecksum
from rtnet.errors import LabError
from rtnet.lab import STATION_IF, STATION_IF_B, Lab, Station

from .stations import station_status

RT_SLOT_SIZE = 200
NRT_SLOT_SIZE = 1500
APP_ETHERTYPE = 0x88B5
MAX_DEMO_STATIONS = 16


def segment_plan(n: int):
    """The demo segment's schedule for ``n`` stations (rtmac.plan)."""
    from rtmac.plan import plan, shortest_cycle_us

    kw = dict(rt_sizes=RT_SLOT_SIZE, nrt_size=NRT_SLOT_SIZE)
    return plan(n, cycle_us=shortest_cycle_us(n, **kw), **kw)


def station_cpu(index: int, ncpu: int) -> int:
    """The CPU of demo station ``index``'s RT thread: station 1 alone on CPU 0 where there
    are two CPUs or more, the others in turn on the rest.

    Station 1 (the subscriber, sockperf's client) and the last station (the publisher,
    sockperf's server) send each other the demo's traffic, and an RT thread with an
    application channel open wakes for every frame it receives.  On one CPU, at one
    SCHED_FIFO priority, the receiver's wake-up would wait behind the sender's run and
    the sender's next slot behind the receiver's delivery."""
    if ncpu < 2:
        return 0
    return 0 if index == 1 else 1 + (index - 2) % (ncpu - 1)


def station_toml(index: int, n: int, *, windows: bool = True, redundant: bool = False) -> str:
    """rtnet.toml of demo station ``index`` (1-based) in a segment of ``n`` stations.

    Its real-time IPv4 address is 198.18.0.``index``.  ``redundant``: a second port
    (rteth1, wire B of a redundant lab) and the application channel sent on both.

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
            raise LabError(
                errno.EINVAL, f"RTnet's slot layout of the demo holds 7 stations, not {n}"
            )
        p = dataclasses.replace(p, cycle_us=1000, backup_offset_us=100)
        st = dataclasses.replace(
            st,
            rt=Slot(0, 100 * index, size=RT_SLOT_SIZE),
            window=Slot(1, 800, phasing=index, period=n, size=NRT_SLOT_SIZE),
        )
    role = {
        "master": f'role = "master"\ncycle_us = {p.cycle_us}',
        "backup": f'role = "backup"\ncycle_us = {p.cycle_us}\n'
        f"backup_offset_us = {p.backup_offset_us}",
        "slave": 'role = "slave"',
    }[st.role]
    link = f'[link]\nredundant_dev = "{STATION_IF_B}"\n' if redundant else ""
    return f"""# demo station {index} of {n}, written by rtnetctl lab up
[station]
name = "s{index}"
device = "rteth0"
ip = "{station_ip(index)}"
ethertypes = [0x{APP_ETHERTYPE:04X}]
{link}[rt]
cpu = {station_cpu(index, os.cpu_count() or 1)}
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
redundant = {"true" if redundant else "false"}
"""


def station_ip(index: int) -> str:
    """Station ``index``'s real-time IPv4 address: its rteth0 address in the lab (rtnet.lab)."""
    return Station("lab", index).ip


def kernel_fills_checksums(lab: Lab) -> None:
    """Every station port's Linux fills in its own checksums (rtnet.txchecksum), so a plain
    Linux UDP socket and a real-time one talk across the demo segment."""
    for st in lab.stations:
        for dev in [STATION_IF] + ([STATION_IF_B] if lab.redundant else []):
            try:
                txchecksum.kernel_fills_checksums(dev, st.netns)
            except OSError as exc:
                raise LabError(
                    exc.errno or errno.EIO,
                    f"{st.netns}: ethtool -K {dev} tx off: {exc.strerror or exc}",
                ) from None


def start_segment(lab: Lab, plan, out, redundant: bool) -> None:
    """One rtnetd per station with its real-time address, wait until every station is in
    its TDMA state, then load every station's neighbour table."""
    kernel_fills_checksums(lab)
    for st in lab.stations:
        conf = os.path.join(paths.station_dir(st.netns), "rtnet.toml")
        os.makedirs(os.path.dirname(conf), exist_ok=True)
        with open(conf, "w") as f:
            f.write(station_toml(st.index, lab.n, redundant=redundant))
        info = stationctl.up(conf, netns=st.netns)
        role = ("master", "backup master")[st.index - 1] if st.index <= 2 else "slave"
        ports = f"rteth0 {st.mac} {station_ip(st.index)}"
        if redundant:
            ports = f"rteth0 (wire A) + rteth1 (wire B) {st.mac} {station_ip(st.index)}"
        out(
            f"  station {st.index} ({role}): rtnetd pid {info['pid']}, {ports}, "
            f"vnic0 198.19.0.{st.index}, slot 0 at {plan.station(st.index).rt.offset_us} us"
        )
    want = {1: "active", 2: "stand-by"}
    deadline = time.monotonic() + 20
    while True:
        states = {
            st.index: (station_status(st.netns).get("tdma") or {}).get("state")
            for st in lab.stations
        }
        if all(states[i] == want.get(i, "synchronised") for i in states):
            break
        if time.monotonic() > deadline:
            raise LabError(errno.ETIMEDOUT, f"stations did not synchronise: {states}")
        time.sleep(0.1)  # the daemons are other processes: poll their state
    out("all stations synchronised and calibrated")
    load_neighbours(lab)
    out(
        f"real-time IPv4: station N is {station_ip(1).rsplit('.', 1)[0]}.N; each station's "
        f"neighbour table holds the other {lab.n - 1} (rtroute -f "
        f"{hosts_file(lab.stations[0])})"
    )


def hosts_file(st: Station) -> str:
    return os.path.join(paths.station_dir(st.netns), "hosts")


def load_neighbours(lab: Lab) -> None:
    """Give every station's rtnetd the others as static host routes, from a host-routes file
    (RTnet's ``rtroute -f``, ``<ip> <mac> <dev>`` a line), as RTnet's manual start does."""
    from rtmac import control
    from rtnet import rtroute

    for st in lab.stations:
        path = hosts_file(st)
        with open(path, "w") as f:
            f.write("# the lab's stations, written by rtnetctl lab up\n")
            for peer in lab.stations:
                if peer.index != st.index:
                    f.write(f"{station_ip(peer.index)} {peer.mac} rteth0\n")
        try:
            rtroute.apply_file({"file": path, "netns": st.netns})
        except (control.ControlError, OSError) as exc:
            raise LabError(
                exc.errno or errno.EIO, f"rtroute -n {st.netns} -f {path}: {exc.strerror or exc}"
            ) from None


def rt_ping(lab: Lab, src: int, dst: int, count: int = 3, interval_ms: int = 100) -> dict:
    """``rtnetctl -n <src> ping <dst's address>``: ICMP echo on the real-time path; the
    daemon's reply (sent, received, rtts_us, worst_us) and its per-echo events."""
    req = {
        "cmd": "ping",
        "dst": station_ip(dst),
        "count": count,
        "interval_ms": interval_ms,
        "size": 56,
        "timeout_ms": 500,
        "echo": False,
    }
    events: list[dict] = []  # one per echo: reply or timeout
    reply = stationctl.request(
        "rteth0",
        req,
        netns=lab.station(src).netns,
        timeout=count * (interval_ms + 500) / 1000 + 10,
        on_event=events.append,
    )
    return reply | {"events": events}
